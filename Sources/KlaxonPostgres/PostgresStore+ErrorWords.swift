import KlaxonCore
import PostgresNIO

/// PostgreSQL's errors in words (`ErrorWords.describe`): what the server said with its SQLSTATE, or
/// the socket's error, else the error's code. (`PSQLError`'s description is deliberately generic,
/// and its debug description may hold the query's text.) Never the connection's password: the
/// server's messages do not contain it.
extension PostgresNIO.PSQLError: KlaxonCore.WordedError {
    public var words: String {
        if let message = serverInfo?[.message] {
            return "PostgreSQL: " + message + (serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? "")
        }
        if let underlying { return "PostgreSQL: \(ErrorWords.describe(underlying))" }
        return "PostgreSQL: \(code)"
    }
}
