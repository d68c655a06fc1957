import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    public func addWatch(_ watch: Watch, limit: Int) async throws -> WatchAddOutcome {
        let owner = watch.owner.key
        return try await transaction { c in
            // One add per owner at a time, on every daemon: the count and the next number hold.
            try await self.execute("SELECT pg_advisory_xact_lock(hashtext(\("watch:" + owner)))", on: c)
            let mine = try await self.watches(
                "SELECT id, number, created_at, body FROM watches WHERE owner = \(owner) ORDER BY number", on: c)
            if let same = mine.first(where: { WatchJSON.same($0, watch) }) { return .duplicate(same) }
            guard mine.count < limit else { return .full(limit: limit) }
            var w = watch
            w.number = (mine.map(\.number).max() ?? 0) + 1
            let number = w.number
            let kind = w.target.kindName.rawValue
            let body = WatchJSON.encode(w)
            let created = w.createdAt
            guard
                let id = try await self.scalar(
                    """
                    INSERT INTO watches (owner, number, kind, body, created_at)
                    VALUES (\(owner), \(number), \(kind), \(body), \(created)) RETURNING id
                    """, as: Int64.self, on: c)
            else { throw PostgresStoreError.server(path: self.path, message: "INSERT INTO watches returned no id") }
            w.id = id
            try await self.watchesChanged(on: c)
            return .added(w)
        }
    }

    public func watches(owner: String) async throws -> [Watch] {
        try await watches("SELECT id, number, created_at, body FROM watches WHERE owner = \(owner) ORDER BY number")
    }

    public func watches(after: Int64, limit: Int) async throws -> [Watch] {
        let limit = min(max(limit, 1), 100_000)
        return try await watches(
            "SELECT id, number, created_at, body FROM watches WHERE id > \(after) ORDER BY id LIMIT \(limit)")
    }

    public func removeWatch(owner: String, number: Int) async throws -> Watch? {
        try await transaction { c in
            let gone = try await self.watches(
                "DELETE FROM watches WHERE owner = \(owner) AND number = \(number) RETURNING id, number, created_at, body",
                on: c
            ).first
            if gone != nil { try await self.watchesChanged(on: c) }
            return gone
        }
    }

    public func removeWatch(id: Int64) async throws -> Watch? {
        try await transaction { c in
            let gone = try await self.watches(
                "DELETE FROM watches WHERE id = \(id) RETURNING id, number, created_at, body", on: c
            ).first
            if gone != nil { try await self.watchesChanged(on: c) }
            return gone
        }
    }

    public func watchGeneration() async throws -> Int64 {
        try await scalar("SELECT generation FROM watch_changes WHERE id = 1", as: Int64.self) ?? 0
    }

    public func watchQuietHours(owner: String) async throws -> WatchQuietHours? {
        try await quietHours(
            "SELECT owner, start_minute, end_minute, time_zone FROM watch_quiet_hours WHERE owner = \(owner)"
        ).first?.1
    }

    public func allWatchQuietHours() async throws -> [String: WatchQuietHours] {
        Dictionary(
            try await quietHours("SELECT owner, start_minute, end_minute, time_zone FROM watch_quiet_hours"),
            uniquingKeysWith: { a, _ in a })
    }

    @discardableResult
    public func setWatchQuietHours(owner: String, _ quiet: WatchQuietHours?, now: Int64) async throws
        -> WatchQuietHours?
    {
        try await transaction { c in
            let before = try await self.quietHours(
                """
                SELECT owner, start_minute, end_minute, time_zone FROM watch_quiet_hours
                WHERE owner = \(owner) FOR UPDATE
                """, on: c
            ).first?.1
            if let quiet {
                let (from, to, zone) = (quiet.from, quiet.to, quiet.timeZone)
                try await self.execute(
                    """
                    INSERT INTO watch_quiet_hours (owner, start_minute, end_minute, time_zone, updated_at)
                    VALUES (\(owner), \(from), \(to), \(zone), \(now))
                    ON CONFLICT (owner) DO UPDATE SET start_minute = excluded.start_minute,
                        end_minute = excluded.end_minute, time_zone = excluded.time_zone,
                        updated_at = excluded.updated_at
                    """, on: c)
            } else {
                try await self.execute("DELETE FROM watch_quiet_hours WHERE owner = \(owner)", on: c)
            }
            if before != quiet { try await self.watchesChanged(on: c) }
            return before
        }
    }

    /// Bumps `watch_changes` in the transaction that changed the watches or quiet hours (the row
    /// stays locked until it commits: two changes at once each move it).
    func watchesChanged(on c: PostgresConnection) async throws {
        try await execute("UPDATE watch_changes SET generation = generation + 1 WHERE id = 1", on: c)
    }

    /// Quiet-hours rows as (owner, quiet hours); a zone this system no longer knows reads as UTC.
    func quietHours(_ query: PostgresQuery, on c: PostgresConnection? = nil) async throws
        -> [(String, WatchQuietHours)]
    {
        try await rows(query, on: c).compactMap { row -> (String, WatchQuietHours)? in
            let owner = try row[0].decode(String.self)
            let from = Int(try row[1].decode(Int32.self))
            let to = Int(try row[2].decode(Int32.self))
            let zone = try row[3].decode(String.self)
            guard let q = WatchQuietHours(from: from, to: to, timeZone: zone) ?? WatchQuietHours(from: from, to: to)
            else { return nil }
            return (owner, q)
        }
    }

    public func watchCounts() async throws -> [WatchKind: Int] {
        var out: [WatchKind: Int] = [:]
        for row in try await rows("SELECT kind, count(*) FROM watches GROUP BY kind") {
            if let kind = WatchKind(rawValue: try row[0].decode(String.self)) {
                out[kind] = Int(try row[1].decode(Int64.self))
            }
        }
        return out
    }

    func watches(_ query: PostgresQuery, on c: PostgresConnection? = nil) async throws -> [Watch] {
        try await rows(query, on: c).compactMap { row in
            WatchJSON.decode(
                id: try row[0].decode(Int64.self), number: Int(try row[1].decode(Int32.self)),
                createdAt: try row[2].decode(Int64.self), body: try row[3].decode(String.self))
        }
    }
}
