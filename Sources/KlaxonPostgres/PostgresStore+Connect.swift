import Foundation
import Logging
import PostgresNIO

extension PostgresStore {
    /// Connects once, outside the pool, and closes the connection again. The pool retries a server it
    /// cannot reach for a minute and then fails with no reason; this fails at once and says why: the
    /// connection refused or timed out, or what the server said (`password authentication failed for
    /// user …`, `database … does not exist`). The error names `postgres://host:port/database`, never
    /// the password. The connection is made without TLS, as every configuration `klaxon` builds is.
    public static func checkConnection(_ configuration: Configuration, logger: Logger) async throws {
        let c = PostgresConnection.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: .disable)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: c, id: 0, logger: logger)
        } catch {
            throw PostgresStoreError.server(
                path: configuration.description, message: "cannot connect: \(connectFailure(error))")
        }
        try? await connection.close()
    }

    /// `with(_:logger:_:)` after `checkConnection(_:logger:)`: a wrong address, user, password or
    /// database fails at once with its reason.
    public static func withChecked<T>(
        _ configuration: Configuration, logger: Logger, isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresStore) async throws -> T
    ) async throws -> T {
        try await checkConnection(configuration, logger: logger)
        return try await with(configuration, logger: logger, body)
    }

    /// Why a connection failed, for people: the server's message, or the socket's error. Never the
    /// configuration (which holds the password).
    static func connectFailure(_ error: any Error) -> String {
        guard let e = error as? PSQLError else { return "\(error)" }
        if let message = e.serverInfo?[.message] {
            return message + (e.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        if let underlying = e.underlying { return "\(underlying)" }
        return "\(e.code)"
    }
}
