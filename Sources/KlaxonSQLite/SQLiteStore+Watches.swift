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
            return w
        }
    }

    public func removeWatch(id: Int64) async throws -> Watch? {
        try await requireWriter().write { db in
            guard let w = try Self.watches(db, sql: "WHERE id = ?", [id]).first else { return nil }
            try db.execute(sql: "DELETE FROM watches WHERE id = ?", arguments: [w.id])
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

    static func watches(_ db: Database, sql clause: String, _ arguments: StatementArguments) throws -> [Watch] {
        try Row.fetchAll(db, sql: "SELECT id, number, created_at, body FROM watches " + clause, arguments: arguments)
            .compactMap {
                WatchJSON.decode(id: $0["id"], number: $0["number"], createdAt: $0["created_at"], body: $0["body"])
            }
    }
}
