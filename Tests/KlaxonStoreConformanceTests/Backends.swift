import Foundation
import GRDB
import KlaxonCore
import KlaxonPostgres
import KlaxonTesting
import Logging
import PostgresNIO
import Testing

@testable import KlaxonSQLite
@testable import KlaxonStore

/// The stores every conformance test runs against: SQLite on a temporary file, SQLite in memory (the store
/// tests above the store use), PostgreSQL on a fresh database of the throw-away test server.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, memory, postgres

    var testDescription: String { rawValue }

    /// Runs `body` with a fresh, empty store of this backend; everything it opened or started is
    /// closed or stopped before this returns, also when `body` throws.
    func withStore(
        isolation: isolated (any Actor)? = #isolation, _ body: (Fixture) async throws -> Void
    ) async throws {
        switch self {
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-conf-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let outcome = await Result {
                let store = try SQLiteStore.open(path: dir.appendingPathComponent("k.sqlite").path)
                try await body(Fixture(store: store, sql: .sqlite(store)))
            }
            try? FileManager.default.removeItem(at: dir)
            try outcome.get()
        case .memory:
            let store = try SQLiteStore.inMemory()
            try await body(Fixture(store: store, sql: .sqlite(store)))
        case .postgres:
            try await PostgresServer.withDatabase { db in
                let configuration = PostgresStore.Configuration(
                    host: db.host, port: db.port, username: db.user, database: db.name, maximumConnections: 6)
                try await PostgresStore.with(configuration, logger: Self.quiet) { store in
                    try await body(Fixture(store: store, sql: .postgres(db)))
                }
            }
        }
    }

    static let quiet = Logger(label: "klaxon.test.store", factory: { _ in SwiftLogNoOpLogHandler() })
}

/// A store under test, and a way to run SQL on it behind the store's back (to make a write fail).
struct Fixture {
    enum SQL {
        case sqlite(SQLiteStore)
        case postgres(PostgresServer.Database)
    }

    let store: any Store
    let sql: SQL

    /// Makes every insert into the transition log fail, until `repairTransitions()`.
    func breakTransitions() async throws {
        switch sql {
        case .sqlite(let s):
            try await s.writer!.write { db in
                try db.execute(
                    sql: "CREATE TRIGGER boom BEFORE INSERT ON transitions BEGIN SELECT RAISE(ABORT, 'boom'); END")
            }
        case .postgres(let db):
            try await Self.postgres(
                db,
                [
                    "CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$",
                    "CREATE TRIGGER boom BEFORE INSERT ON transitions FOR EACH ROW EXECUTE FUNCTION boom()",
                ])
        }
    }

    func repairTransitions() async throws {
        switch sql {
        case .sqlite(let s):
            try await s.writer!.write { db in try db.execute(sql: "DROP TRIGGER boom") }
        case .postgres(let db):
            try await Self.postgres(db, ["DROP TRIGGER boom ON transitions", "DROP FUNCTION boom()"])
        }
    }

    /// An integer a query behind the store's back returns (its first column of its first row).
    func integer(_ sql: String) async throws -> Int64? {
        switch self.sql {
        case .sqlite(let s):
            return try await s.reader.read { db in try Int64.fetchOne(db, sql: sql) }
        case .postgres(let db):
            let connection = try await PostgresConnection.connect(
                configuration: .init(
                    host: db.host, port: db.port, username: db.user, password: nil, database: db.name, tls: .disable),
                id: 1, logger: Backend.quiet)
            let outcome = await Result { () async throws -> Int64? in
                for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: Backend.quiet) {
                    return try row.decode(Int64?.self)
                }
                return nil
            }
            try? await connection.close()
            return try outcome.get()
        }
    }

    static func postgres(_ db: PostgresServer.Database, _ statements: [String]) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: .init(
                host: db.host, port: db.port, username: db.user, password: nil, database: db.name, tls: .disable),
            id: 1, logger: Backend.quiet)
        let outcome = await Result {
            for s in statements { try await connection.query(PostgresQuery(unsafeSQL: s), logger: Backend.quiet) }
        }
        try? await connection.close()
        try outcome.get()
    }
}

func t(_ s: String) -> Int64 { Timestamp.parse(s)! }

func reading(_ station: String, _ time: String, _ value: Double, metric: String = "gage_height", quality: String? = nil)
    -> Reading
{
    Reading(station: station, metric: metric, time: t(time), value: value, unit: "ft", quality: quality)
}

func transition(
    rule: String = "river-levels", station: String = "01646500", state: TransitionState = .firing,
    level: String? = "minor", at: String = "2026-03-01T06:15:00Z"
) -> Transition {
    Transition(
        rule: rule, kind: "levels", station: station, metric: "gage_height", state: state, level: level,
        fromLevel: nil, at: Timestamp.parse(at)!, value: 12.4, unit: "ft", severity: .warning,
        labels: ["team": "water"], summary: "gage_height at \(station) reached \(level ?? "-")",
        explanation: "gage_height 12.4 ft ≥ minor (12)")
}

extension Store {
    /// Records transitions, each queued for the receivers at `now` (ms).
    func queue(_ transitions: [Transition], receivers: [String], now: Int64) async throws {
        try await record(
            transitions.map { t in
                (
                    t, t.summary,
                    receivers.map {
                        PlannedDelivery(receiver: $0, route: nil, groupKey: "rule=\(t.rule),station=\(t.station)")
                    }
                )
            }, now: now)
    }

    /// Evaluates readings only (no quake or trip rules); `route` decides deliveries.
    func evaluate(
        engine: RuleEngine, now: Int64, route: (@Sendable (Transition) -> [PlannedDelivery])? = nil,
        keepTransitions: Bool = true
    ) async throws -> EvaluationResult {
        var e = Evaluation(
            engine: engine, quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []), now: now,
            queuedAt: now * 1000, render: \.summary, route: route)
        e.keepTransitions = keepTransitions
        return try await evaluate(e)
    }
}
