import Foundation
import GRDB

/// A process that claims outbox rows. A claim names its instance; a process that restarts on the
/// same host finds the instances whose process is gone and takes their claims back at once.
public struct InstanceRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "instances"

    public var id: String
    public var host: String
    public var pid: Int32
    /// The process's start time in clock ticks since boot (`/proc/PID/stat`), 0 where unknown.
    public var processStart: Int64
    /// Milliseconds since the epoch.
    public var registeredAt: Int64
    public var heartbeatAt: Int64

    enum CodingKeys: String, CodingKey {
        case id, host, pid
        case processStart = "process_start"
        case registeredAt = "registered_at"
        case heartbeatAt = "heartbeat_at"
    }

    public init(id: String, host: String, pid: Int32, processStart: Int64, registeredAt: Int64, heartbeatAt: Int64) {
        self.id = id
        self.host = host
        self.pid = pid
        self.processStart = processStart
        self.registeredAt = registeredAt
        self.heartbeatAt = heartbeatAt
    }
}

extension SQLiteStore {
    /// Records this process as an instance (before its first claim).
    public func register(_ instance: InstanceRecord) async throws {
        try await requireWriter().write { db in
            try instance.save(db)
            // Instances that hold nothing and have not been heard of for a day are forgotten.
            try db.execute(
                sql: """
                    DELETE FROM instances WHERE heartbeat_at < ? AND id <> ?
                      AND NOT EXISTS (SELECT 1 FROM outbox WHERE claimed_by = instances.id AND state = 'sending')
                    """, arguments: [instance.heartbeatAt - 86_400_000, instance.id])
        }
    }

    /// Extends the lease of every row this instance is still sending, and records its heartbeat.
    /// Returns the rows renewed.
    @discardableResult
    public func renewLeases(instance: String, until: Int64, now: Int64) async throws -> Int {
        try await requireWriter().write { db in
            try db.execute(
                sql: "UPDATE outbox SET lease_until = ? WHERE claimed_by = ? AND state = 'sending'",
                arguments: [until, instance])
            let renewed = db.changesCount
            try db.execute(sql: "UPDATE instances SET heartbeat_at = ? WHERE id = ?", arguments: [now, instance])
            return renewed
        }
    }

    /// Other instances that hold rows being sent (a read: an idle check writes nothing).
    public func claimHolders(excluding instance: String) async throws -> [InstanceRecord] {
        try await reader.read { db in
            try InstanceRecord.fetchAll(
                db,
                sql: """
                    SELECT * FROM instances i WHERE i.id <> ?
                      AND EXISTS (SELECT 1 FROM outbox o WHERE o.claimed_by = i.id AND o.state = 'sending')
                    """, arguments: [instance])
        }
    }

    /// Gives the claims of dead instances back to the outbox, due now, keeping their batch (and so
    /// their idempotency key), and forgets the instances. Returns the rows taken back.
    @discardableResult
    public func releaseClaims(of instances: [String]) async throws -> Int {
        guard !instances.isEmpty else { return 0 }
        return try await requireWriter().write { db in
            var released = 0
            for id in instances {
                try db.execute(
                    sql:
                        "UPDATE outbox SET state = 'pending', lease_until = NULL, claimed_by = NULL WHERE claimed_by = ? AND state = 'sending'",
                    arguments: [id])
                released += db.changesCount
                try db.execute(sql: "DELETE FROM instances WHERE id = ?", arguments: [id])
            }
            return released
        }
    }
}

extension SQLiteStore {
    /// One machine's store: every duty is this process's (see `Store.holding(duty:_:)`).
    public func holding<T: Sendable>(duty: String, _ body: @escaping @Sendable () async throws -> T) async throws
        -> T?
    {
        try await body()
    }
}
