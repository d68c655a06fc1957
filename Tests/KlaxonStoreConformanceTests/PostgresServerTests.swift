import Foundation
import KlaxonPostgres
import KlaxonStore
import KlaxonTesting
import Logging
import Testing

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
            #expect(await store.isReachable())
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
