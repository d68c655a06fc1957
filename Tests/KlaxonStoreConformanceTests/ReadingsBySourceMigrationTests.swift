import Foundation
import GRDB
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import PostgresNIO
import Testing

@testable import KlaxonPostgres
@testable import KlaxonSQLite

/// An existing database's `klaxon_readings_total`: counted by the station's origin before, by the
/// name each ingest recorded after the migration (SQLite `v16-readings-by-source`, PostgreSQL
/// `v5-readings-by-source`); rows logged without a name count as `unknown`.
@Suite struct ReadingsBySourceMigrationTests {
    /// A USGS station whose series has one batch fetched by the configured source `texas` (2
    /// readings) and one pushed before sources were recorded (3), as the old trigger counted them.
    static let history = [
        "INSERT INTO stations (id, source) VALUES ('A', 'USGS')",
        "INSERT INTO series (id, station, metric) VALUES (1, 'A', 'gage_height')",
        "INSERT INTO ingest_log (series_id, min_time, count, source) VALUES (1, 0, 2, 'texas')",
        "INSERT INTO ingest_log (series_id, min_time, count, source) VALUES (1, 0, 3, NULL)",
    ]

    /// After the migration: recounted, and new writes counted by their source.
    static func check(_ store: any Store) async throws {
        #expect(try await store.metrics().readingsBySource == ["texas": 2, "unknown": 3])
        _ = try await store.readingWriter(source: "api").write([reading("B", "2026-01-01T00:00:00Z", 1)])
        _ = try await store.readingWriter().write([reading("C", "2026-01-01T00:15:00Z", 1)])
        #expect(try await store.metrics().readingsBySource == ["texas": 2, "unknown": 3, "api": 1, "file": 1])
    }

    @Test("SQLite v16-readings-by-source recounts the readings by the source each ingest recorded")
    func sqlite() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-v16-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("k.sqlite").path
        let queue = try DatabaseQueue(path: path)
        try SQLiteStore.migrator.migrate(queue, upTo: "v15-transition-extra")
        let before = try await queue.write { db in
            for statement in Self.history { try db.execute(sql: statement) }
            return try Row.fetchAll(db, sql: "SELECT a, n FROM metric_counts WHERE family = 'readings' ORDER BY a")
                .map { "\($0[0] as String)=\($0[1] as Int)" }
        }
        // Before: the pushed batch counted under the station's origin.
        #expect(before == ["USGS=3", "texas=2"])
        try queue.close()
        try await Self.check(try SQLiteStore.open(path: path))
    }

    @Test("PostgreSQL v5-readings-by-source recounts the readings by the source each ingest recorded")
    func postgres() async throws {
        try await PostgresServer.withDatabase { db in
            var statements = [
                "CREATE TABLE schema_migrations (id TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
            ]
            for m in PostgresStore.migrations where m.id != "v5-readings-by-source" {
                statements += PostgresStore.statements(m.sql)
                statements.append("INSERT INTO schema_migrations (id) VALUES ('\(m.id)')")
            }
            statements += Self.history
            statements.append("SELECT setval(pg_get_serial_sequence('series', 'id'), 1)")
            try await Fixture.postgres(db, statements)
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name, maximumConnections: 2)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { store in
                try await Self.check(store)
            }
        }
    }
}
