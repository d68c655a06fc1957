import Foundation
import Logging
import PostgresNIO

extension PostgresServer {
    /// Makes the server ask for a password: a superuser `user` with `password` is created, and from
    /// then on every user but the trusted test superuser (`PostgresServer.user`, which creates and
    /// drops databases) must give its password over 127.0.0.1 (scram-sha-256). For tests of a wrong
    /// password; use it on a server of the test's own (`PostgresServer.with`). Returns when the server
    /// refuses `user` without its password (bounded by `limit`).
    public func requirePassword(user: String, password: String) async throws {
        try await superuser { connection in
            try await connection.query(
                PostgresQuery(unsafeSQL: "CREATE ROLE \(user) LOGIN SUPERUSER PASSWORD '\(password)'"),
                logger: Self.quiet)
        }
        let hba = URL(fileURLWithPath: folder).appendingPathComponent("data/pg_hba.conf")
        let rules = """
            host all \(Self.user) 127.0.0.1/32 trust
            host all all 127.0.0.1/32 scram-sha-256

            """
        // Written in place: the file keeps its owner (the server's user).
        let handle = try FileHandle(forWritingTo: hba)
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(rules.utf8))
        try handle.close()
        try await superuser { connection in
            try await connection.query("SELECT pg_reload_conf()", logger: Self.quiet)
        }
        // The reload is a signal to the server: wait until it asks `user` for a password.
        let deadline = ContinuousClock.now + Self.limit
        while ContinuousClock.now < deadline {
            var c = PostgresConnection.Configuration(
                host: "127.0.0.1", port: port, username: user, password: nil, database: "postgres", tls: .disable)
            c.options.connectTimeout = .seconds(30)
            do {
                let connection = try await PostgresConnection.connect(configuration: c, id: 2, logger: Self.quiet)
                try? await connection.close()
            } catch {
                return
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw SinkError(message: "PostgreSQL on port \(port) did not start asking \(user) for a password")
    }

    private func superuser(_ body: (PostgresConnection) async throws -> Void) async throws {
        let connection = try await PostgresConnection.connect(
            configuration: configuration(database: "postgres"), id: 2, logger: Self.quiet)
        let outcome = await Result { try await body(connection) }
        try? await connection.close()
        try outcome.get()
    }
}
