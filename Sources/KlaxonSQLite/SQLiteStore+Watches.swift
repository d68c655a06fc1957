import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    public func addWatch(_ watch: Watch, limit: Int) async throws -> WatchAddOutcome {
        try await requireWriter().write { db in
            let mine = try Self.watches(db, sql: "WHERE owner = ? ORDER BY number", [watch.owner.key])
            if let same = mine.first(where: { WatchJSON.same($0, watch) }) { return .duplicate(same) }
            guard mine.count < limit else { return .full(limit: limit) }
            var w = watch
            w.number = (mine.map(\.number).max() ?? 0) + 1
            try db.execute(
                sql: "INSERT INTO watches (owner, number, kind, body, created_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [w.owner.key, w.number, w.target.kindName.rawValue, WatchJSON.encode(w), w.createdAt])
            w.id = db.lastInsertedRowID
            try Self.watchesChanged(db)
            return .added(w)
        }
    }

    public func watches(owner: String) async throws -> [Watch] {
        try await reader.read { db in try Self.watches(db, sql: "WHERE owner = ? ORDER BY number", [owner]) }
    }

    public func watches(after: Int64, limit: Int) async throws -> [Watch] {
        try await reader.read { db in
            try Self.watches(db, sql: "WHERE id > ? ORDER BY id LIMIT ?", [after, min(max(limit, 1), 100_000)])
        }
    }

    public func removeWatch(owner: String, number: Int) async throws -> Watch? {
        try await requireWriter().write { db in
            guard let w = try Self.watches(db, sql: "WHERE owner = ? AND number = ?", [owner, number]).first else {
                return nil
            }
            try db.execute(sql: "DELETE FROM watches WHERE id = ?", arguments: [w.id])
            try Self.watchesChanged(db)
            return w
        }
    }

    public func removeWatch(id: Int64) async throws -> Watch? {
        try await requireWriter().write { db in
            guard let w = try Self.watches(db, sql: "WHERE id = ?", [id]).first else { return nil }
            try db.execute(sql: "DELETE FROM watches WHERE id = ?", arguments: [w.id])
            try Self.watchesChanged(db)
            return w
        }
    }

    public func watchCounts() async throws -> [WatchKind: Int] {
        try await reader.read { db in
            var out: [WatchKind: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT kind, count(*) AS n FROM watches GROUP BY kind") {
                if let kind = WatchKind(rawValue: row["kind"]) { out[kind] = row["n"] }
            }
            return out
        }
    }

    public func watchGeneration() async throws -> Int64 {
        try await reader.read { db in
            try Int64.fetchOne(db, sql: "SELECT generation FROM watch_changes WHERE id = 1") ?? 0
        }
    }

    public func watchQuietHours(owner: String) async throws -> WatchQuietHours? {
        try await reader.read { db in try Self.quietHours(db, sql: "WHERE owner = ?", [owner]).first?.1 }
    }

    public func allWatchQuietHours() async throws -> [String: WatchQuietHours] {
        try await reader.read { db in
            Dictionary(try Self.quietHours(db, sql: "", []), uniquingKeysWith: { a, _ in a })
        }
    }

    @discardableResult
    public func setWatchQuietHours(owner: String, _ quiet: WatchQuietHours?, now: Int64) async throws
        -> WatchQuietHours?
    {
        try await requireWriter().write { db in
            let before = try Self.quietHours(db, sql: "WHERE owner = ?", [owner]).first?.1
            if let quiet {
                try db.execute(
                    sql: """
                        INSERT INTO watch_quiet_hours (owner, start_minute, end_minute, time_zone, updated_at)
                        VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (owner) DO UPDATE SET start_minute = excluded.start_minute,
                            end_minute = excluded.end_minute, time_zone = excluded.time_zone,
                            updated_at = excluded.updated_at
                        """, arguments: [owner, quiet.from, quiet.to, quiet.timeZone, now])
            } else {
                try db.execute(sql: "DELETE FROM watch_quiet_hours WHERE owner = ?", arguments: [owner])
            }
            if before != quiet { try Self.watchesChanged(db) }
            return before
        }
    }

    /// Bumps `watch_changes` in the transaction that changed the watches or quiet hours.
    static func watchesChanged(_ db: Database) throws {
        try db.execute(sql: "UPDATE watch_changes SET generation = generation + 1 WHERE id = 1")
    }

    /// Quiet-hours rows as (owner, quiet hours); a row whose zone this system no longer knows is
    /// read as UTC rather than lost.
    static func quietHours(_ db: Database, sql clause: String, _ arguments: StatementArguments) throws
        -> [(String, WatchQuietHours)]
    {
        try Row.fetchAll(
            db, sql: "SELECT owner, start_minute, end_minute, time_zone FROM watch_quiet_hours " + clause,
            arguments: arguments
        ).compactMap { (row: Row) -> (String, WatchQuietHours)? in
            let (owner, zone): (String, String) = (row["owner"], row["time_zone"])
            let (from, to): (Int, Int) = (row["start_minute"], row["end_minute"])
            guard let q = WatchQuietHours(from: from, to: to, timeZone: zone) ?? WatchQuietHours(from: from, to: to)
            else { return nil }
            return (owner, q)
        }
    }

    static func watches(_ db: Database, sql clause: String, _ arguments: StatementArguments) throws -> [Watch] {
        try Row.fetchAll(db, sql: "SELECT id, number, created_at, body FROM watches " + clause, arguments: arguments)
            .compactMap {
                WatchJSON.decode(id: $0["id"], number: $0["number"], createdAt: $0["created_at"], body: $0["body"])
            }
    }
}
