import Foundation
import GRDB
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import PostgresNIO
import Testing

@testable import KlaxonPostgres
@testable import KlaxonSQLite

/// An existing database's silences, stored as `name=value` lines, after the migration (SQLite
/// `v17-silence-matchers`, PostgreSQL `v6-silence-matchers`): rewritten as {name, type, value}. A
/// silence made from chat or the site holds equality matchers only, so `rule=~.*` from `slack:U1`
/// is the rule named `~.*` and `station="S2"` the station `"S2"`; others mean what they meant.
@Suite struct SilenceMatchersMigrationTests {
    static let far: Int64 = 4_000_000_000
    /// (id, matchers as the old format stored them, author).
    static let rows: [(String, String, String)] = [
        ("chat", "rule=~.*", "slack:U1"),
        ("button", "rule=high\nstation=~.*", "mattermost:abc"),
        ("site", "rule=high\nstation=\"S2\"", "web:alice"),
        ("api", "station=~S.*\nseverity!=info", "ops"),
        ("old-regex", "rule=~a(?=b)", "ops"),
    ]

    static func check(_ store: any Store) async throws {
        let byID = Dictionary(
            uniqueKeysWithValues: try await store.silences(now: 0).map { ($0.id, $0.matchers) })
        func m(_ name: String, _ op: Matcher.Op, _ value: String) throws -> Matcher {
            try Matcher(name: name, op: op, value: value)
        }
        #expect(byID["chat"] == [try m("rule", .equal, "~.*")])
        #expect(byID["button"] == [try m("rule", .equal, "high"), try m("station", .equal, "~.*")])
        #expect(byID["site"] == [try m("rule", .equal, "high"), try m("station", .equal, "\"S2\"")])
        #expect(byID["api"] == [try m("station", .regex, "S.*"), try m("severity", .notEqual, "info")])
        // A matcher that did not parse still matches nothing: the silence mutes nothing.
        #expect(byID["old-regex"]?.count == 1 && byID["old-regex"]?.first?.problem != nil)
        let chat = try #require(try await store.silences(now: 0).first { $0.id == "chat" })
        #expect(!chat.mutes(["rule": "high", "station": "S1"], at: 1))
        let button = try #require(try await store.silences(now: 0).first { $0.id == "button" })
        #expect(!button.mutes(["rule": "high", "station": "S1"], at: 1))
        #expect(button.mutes(["rule": "high", "station": "~.*"], at: 1))
    }

    static func insert(_ r: (String, String, String)) -> String {
        func q(_ s: String) -> String { "'" + s.replacingOccurrences(of: "'", with: "''") + "'" }
        return """
            INSERT INTO silences (id, matchers, starts_at, ends_at, comment, created_by, created_at)
            VALUES (\(q(r.0)), \(q(r.1)), 0, \(far), 'c', \(q(r.2)), 0)
            """
    }

    @Test("SQLite v17-silence-matchers rewrites name=value lines as {name, type, value}")
    func sqlite() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-v17-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("k.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue, upTo: "v16-readings-by-source")
        try await queue.write { db in
            for r in Self.rows { try db.execute(sql: Self.insert(r)) }
        }
        try queue.close()
        let store = try SQLiteStore.open(path: path)
        try await Self.check(store)
        let stored = try await store.reader.read { db in
            try String.fetchAll(db, sql: "SELECT matchers FROM silences ORDER BY id")
        }
        #expect(stored.allSatisfy { $0.hasPrefix("[{") }, "\(stored)")
    }

    @Test("PostgreSQL v6-silence-matchers rewrites name=value lines as {name, type, value}")
    func postgres() async throws {
        try await PostgresServer.withDatabase { db in
            var statements = [
                "CREATE TABLE schema_migrations (id TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            ]
            for m in PostgresStore.migrations where m.id != "v6-silence-matchers" {
                statements += PostgresStore.statements(m.sql)
                statements.append("INSERT INTO schema_migrations (id) VALUES ('\(m.id)')")
            }
            statements += Self.rows.map(Self.insert)
            try await Fixture.postgres(db, statements)
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name, maximumConnections: 2)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { store in
                try await Self.check(store)
                #expect(
                    try await store.scalar(
                        "SELECT count(*) FROM silences WHERE matchers NOT LIKE '[{%'", as: Int64.self) == 0)
            }
        }
    }
}
