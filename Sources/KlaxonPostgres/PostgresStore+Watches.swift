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
        try await watches(
            "DELETE FROM watches WHERE owner = \(owner) AND number = \(number) RETURNING id, number, created_at, body"
        ).first
    }

    public func removeWatch(id: Int64) async throws -> Watch? {
        try await watches("DELETE FROM watches WHERE id = \(id) RETURNING id, number, created_at, body").first
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
