import Foundation
import KlaxonStore
import KlaxonTesting
import Logging
import Synchronization
import Testing

@testable import KlaxonPostgres

/// The throw-away server itself, and what only the PostgreSQL store has to say.
@Suite(.timeLimit(.minutes(10))) struct PostgresServerTests {
    @Test("a server starts, answers, and is gone with its folder after its stop")
    func startsAndStops() async throws {
        let server = try await PostgresServer.with { server in
            try await use(server)
            return server
        }
        #expect(kill(pid_t(server.pid), 0) != 0)
        #expect(!FileManager.default.fileExists(atPath: server.folder))
        print("PostgreSQL test server started in \(server.startup)")
    }

    func use(_ server: PostgresServer) async throws {
        let db = try await server.createDatabase()
        let configuration = PostgresStore.Configuration(
            host: db.host, port: db.port, username: db.user, database: db.name)
        try await PostgresStore.with(configuration, logger: Backend.quiet) { store in
            // A query, not `isReachable()`: that answers within 3 s for a readiness probe, and a soak's
            // loaded machine took longer; here the question is whether the server answers at all.
            #expect(try await store.readingCount() == 0)
            // Migrating again (a second daemon starting) finds nothing to do.
            try await store.migrate()
        }
        try await server.dropDatabase(db.name)
    }

    @Test("stores migrating one database at once: one migrates, the others find nothing to do")
    func concurrentMigrations() async throws {
        try await PostgresServer.withDatabase { db in
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let count = try await PostgresStore.with(configuration, logger: Backend.quiet) { store in
                            try await store.readingCount()
                        }
                        #expect(count == 0)
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("a store waits out another's migration however long it takes: the statement deadline is not for migrations")
    func migrationWaitsPastTheStatementDeadline() async throws {
        try await PostgresServer.withDatabase { db in
            var configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, database: db.name)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { _ in }
            // Another daemon's migration holds the lock for 3 s: six times this store's deadline.
            configuration.statementTimeout = .milliseconds(500)
            let done = Mutex(false)
            let holder = Task {
                defer { done.withLock { $0 = true } }
                try await db.run("SELECT pg_advisory_xact_lock(\(PostgresStore.migrationLock)), pg_sleep(3)")
            }
            try await poll(until: "the other migration holds its lock") {
                let held = try await db.run("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted")
                return held > 0 || done.withLock { $0 }
            }
            let count = try await PostgresStore.with(configuration, logger: Backend.quiet) { store in
                try await store.readingCount()
            }
            #expect(count == 0)
            try await holder.value
        }
    }

    @Test("the store's path and errors say what failed and never show the password")
    func noSecretsInPathOrErrors() async throws {
        try await PostgresServer.withDatabase { db in
            let configuration = PostgresStore.Configuration(
                host: db.host, port: db.port, username: db.user, password: "hunter2-secret", database: db.name)
            try await PostgresStore.with(configuration, logger: Backend.quiet) { store in
                #expect(store.path == "postgres://127.0.0.1:\(db.port)/\(db.name)")
                for shown in [
                    "\(configuration)", String(reflecting: configuration), String(describing: [configuration]),
                ] {
                    #expect(shown == store.path || shown == "[\(store.path)]")
                }
                var dumped = ""
                dump(configuration, to: &dumped)
                #expect(!dumped.contains("hunter2"))
                // A station id must not be empty: the server refuses the row.
                let error = await #expect(throws: (any Error).self) {
                    try await store.upsert(station: StationRecord(id: ""))
                }
                let text = error.map { "\($0)" } ?? ""
                #expect(text.hasPrefix("database \(store.path): new row for relation \"stations\" violates check"))
                #expect(!text.contains("hunter2"))
            }
        }
    }
}
