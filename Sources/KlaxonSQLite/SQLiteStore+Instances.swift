import Foundation
import GRDB
import KlaxonStore

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

    /// Extends the lease of the rows `ids` this instance is still sending, and records its heartbeat.
    /// Returns the rows renewed.
    @discardableResult
    public func renewLeases(instance: String, ids: [String], until: Int64, now: Int64) async throws -> Int {
        try await requireWriter().write { db in
            let renew = try db.cachedStatement(
                sql: "UPDATE outbox SET lease_until = ? WHERE id = ? AND claimed_by = ? AND state = 'sending'")
            var renewed = 0
            for id in ids {
                try renew.execute(arguments: [until, id, instance])
                renewed += db.changesCount
            }
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
    public var sharesDuties: Bool { false }

    /// One machine's store: every duty is this process's (see `Store.holding(duty:_:)`).
    public func holding<T: Sendable>(duty: String, _ body: @escaping @Sendable () async throws -> T) async throws
        -> T?
    {
        try await body()
    }
}
