import Foundation
import KlaxonCore
import KlaxonPostgres
import KlaxonStore
import KlaxonTesting
import PostgresNIO
import Synchronization
import Testing

/// Duties: one holder at a time among the processes sharing a store; a dead holder's duty is free.
@Suite(.timeLimit(.minutes(10))) struct DutyConformanceTests {
    @Test("a duty held runs its work and hands back its value", arguments: Backend.allCases)
    func holdingRunsTheWork(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let value = try await f.store.holding(duty: "evaluator") { 42 }
            #expect(value == 42)
            // Let go: it can be held again.
            let again = try await f.store.holding(duty: "evaluator") { "again" }
            #expect(again == "again")
        }
    }

    /// Two stores on one database stand for two daemons.
    func twoStores(_ body: (PostgresStore, PostgresStore, PostgresServer.Database) async throws -> Void) async throws {
        try await PostgresServer.withDatabase { db in
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name, maximumConnections: 4)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { a in
                try await PostgresStore.with(configuration, logger: Backend.quiet) { b in
                    try await body(a, b, db)
                }
            }
        }
    }

    @Test("PostgreSQL: while one daemon holds a duty another gets nil at once; once let go, the other takes it")
    func oneHolderAtATime() async throws {
        try await twoStores { a, b, _ in
            let (started, go) = AsyncStream<Void>.makeStream()
            let (release, letGo) = AsyncStream<Void>.makeStream()
            let held = Task {
                try await a.holding(duty: "source:river") {
                    go.yield()
                    for await _ in release { break }
                    return "a"
                }
            }
            for await _ in started { break }
            let refused = try await b.holding(duty: "source:river") { "b" }
            #expect(refused == nil)
            // Another duty is free.
            let other = try await b.holding(duty: "evaluator") { "b" }
            #expect(other == "b")
            letGo.yield()
            let first = try await held.value
            #expect(first == "a")
            let taken = try await b.holding(duty: "source:river") { "b" }
            #expect(taken == "b")
        }
    }

    @Test("PostgreSQL: a holder whose connection ends loses the duty (its work cancelled), and another takes it")
    func lostConnectionHandsTheDutyOver() async throws {
        try await twoStores { a, b, db in
            let (started, go) = AsyncStream<Void>.makeStream()
            let cancelled = Flag()
            let held = Task {
                try await a.holding(duty: "evaluator") {
                    go.yield()
                    do {
                        // Work that runs until it is cancelled.
                        while true { try await Task.sleep(for: .milliseconds(50)) }
                    } catch {
                        cancelled.set()
                        throw error
                    }
                }
            }
            for await _ in started { break }
            // The server ends the holder's connection (as when its process or machine dies).
            // A bigint advisory key shows in pg_locks as its high and low 32 bits, `objsubid` 1.
            let key = UInt64(bitPattern: PostgresStore.dutyKey("evaluator"))
            let high = UInt32(truncatingIfNeeded: key >> 32)
            let low = UInt32(truncatingIfNeeded: key)
            // Advisory locks are per database; the test server holds other tests' databases too.
            let holders = """
                FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND classid = \(high)
                  AND objid = \(low) AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """
            let f = Fixture(store: a, sql: .postgres(db))
            #expect(try await f.integer("SELECT count(*) \(holders)") == 1)
            #expect(try await f.integer("SELECT count(*) FROM (SELECT pg_terminate_backend(pid) \(holders)) t") == 1)
            await #expect(throws: DutyLost.self) { try await held.value }
            #expect(cancelled.isSet)
            let taken = try await b.holding(duty: "evaluator") { "b" }
            #expect(taken == "b")
        }
    }

    @Test("duty keys are stable and distinct")
    func dutyKeys() {
        #expect(PostgresStore.dutyKey("evaluator") == PostgresStore.dutyKey("evaluator"))
        #expect(PostgresStore.dutyKey("evaluator") != PostgresStore.dutyKey("source:river"))
    }
}

/// A flag one task sets and another reads.
final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
