import Foundation
import KlaxonPostgres
import KlaxonSQLite
import KlaxonStore
import Logging

/// Where the store lives: a SQLite file (the default) or a PostgreSQL server. `database:` in
/// `klaxon.yaml` and `--db` are read into one of these, and every command opens its store through
/// `withStore`. Printed, it shows the SQLite path or `postgres://host:port/database`: never a user's
/// password.
public enum StoreLocation: Sendable, CustomStringConvertible {
    case sqlite(path: String)
    case postgres(PostgresStore.Configuration)

    /// The SQLite file used when neither `--db` nor `database:` names one.
    public static let defaultPath = "klaxon.sqlite"

    public var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let c): c.description
        }
    }

    /// The SQLite file, or nil for PostgreSQL.
    public var sqlitePath: String? {
        if case .sqlite(let path) = self { path } else { nil }
    }

    /// True for `postgres://…` and `postgresql://…`.
    public static func isPostgresURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    /// `--db` or `database:` text: a `postgres://user[:password]@host[:port]/database` URL selects
    /// PostgreSQL; anything else is a SQLite file. In a URL, `${NAME}` is taken from `environment` (its
    /// value as it is, not percent-decoded, so a password needs no escaping); `password` comes from a
    /// `password_file:` and may not be given beside a password in the URL. Errors never quote the URL.
    public static func parse(_ text: String, environment: [String: String], password: String? = nil) throws
        -> StoreLocation
    {
        guard isPostgresURL(text) else { return .sqlite(path: text) }
        return .postgres(try postgres(url: text, environment: environment, password: password))
    }

    static func postgres(url: String, environment: [String: String], password file: String?) throws
        -> PostgresStore.Configuration
    {
        let example = "postgres://USER@HOST:PORT/DATABASE"
        guard let scheme = url.range(of: "://") else { throw UserError("database URL must look like \(example)") }
        var rest = url[scheme.upperBound...]
        if let q = rest.firstIndex(of: "?") {
            for pair in rest[rest.index(after: q)...].split(separator: "&") {
                let key = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                let value = pair.split(separator: "=", maxSplits: 1).dropFirst().first.map(String.init)
                guard key == "sslmode", value == "disable" else {
                    throw UserError(
                        "database URL: the parameter \"\(key)\" is not supported (TLS is not supported yet: only sslmode=disable)"
                    )
                }
            }
            rest = rest[..<q]
        }
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<slash]
        let databaseText = slash < rest.endIndex ? rest[rest.index(after: slash)...] : ""
        guard let at = authority.lastIndex(of: "@") else {
            throw UserError("database URL needs a user: \(example)")
        }
        let userInfo = authority[..<at]
        authority = authority[authority.index(after: at)...]
        let userText = userInfo.firstIndex(of: ":").map { userInfo[..<$0] } ?? userInfo
        let passwordText = userInfo.firstIndex(of: ":").map { userInfo[userInfo.index(after: $0)...] }
        var hostText = authority
        var port = 5432
        if let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]") {
            hostText = authority[..<colon]
            guard let p = Int(authority[authority.index(after: colon)...]), (1...65_535).contains(p) else {
                throw UserError("database URL: the port must be a number from 1 to 65535")
            }
            port = p
        }
        if hostText.hasPrefix("["), hostText.hasSuffix("]") { hostText = hostText.dropFirst().dropLast() }
        let user = try expand(userText, environment: environment, part: "user")
        let host = try expand(hostText, environment: environment, part: "host")
        var database = try expand(databaseText, environment: environment, part: "database")
        guard !user.isEmpty else { throw UserError("database URL needs a user: \(example)") }
        guard !host.isEmpty else { throw UserError("database URL needs a host: \(example)") }
        if database.isEmpty { database = user }
        var password = try passwordText.map { try expand($0, environment: environment, part: "password") }
        if let given = password { try checkPassword(given) }
        if let file {
            guard password == nil else {
                throw UserError("database: give the password in the URL or in password/password_file, not both")
            }
            password = file
        }
        return PostgresStore.Configuration(
            host: host, port: port, username: user, password: password, database: database)
    }

    /// A password in the URL (after `${NAME}` and %-escapes) must be a real one: `user:@host` or an
    /// empty `${PGPASSWORD}` is a mistake, not "no password" (leave out the `:` for that). The error
    /// never quotes it.
    static func checkPassword(_ password: String) throws {
        if password.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw UserError(
                "database URL: the password is empty or only whitespace (an environment variable that is set but "
                    + "empty?); give one, or no \":\" after the user for none")
        }
        if password.utf8.count > 4 << 10 {
            throw UserError("database URL: the password is longer than 4096 bytes")
        }
        if password.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw UserError("database URL: the password contains a control character (a line break?)")
        }
    }

    /// A URL part with `${NAME}` replaced by the variable's value (as is) and the rest percent-decoded.
    static func expand(_ text: Substring, environment: [String: String], part: String) throws -> String {
        func decoded(_ literal: Substring) throws -> String {
            guard let d = String(literal).removingPercentEncoding else {
                throw UserError("database URL: the \(part) has a malformed %-escape")
            }
            return d
        }
        var out = ""
        var rest = text
        while let open = rest.range(of: "${") {
            out += try decoded(rest[..<open.lowerBound])
            guard let close = rest[open.upperBound...].firstIndex(of: "}") else {
                throw UserError("database URL: unterminated ${ in the \(part)")
            }
            let name = String(rest[open.upperBound..<close])
            guard let value = environment[name] else {
                throw UserError("database URL: environment variable \(name) is not set")
            }
            out += value
            rest = rest[rest.index(after: close)...]
        }
        return out + (try decoded(rest))
    }

    /// Runs `body` with the store at `location` open for the call, or with nil when there is none.
    public static func withOptionalStore<T>(
        _ location: StoreLocation?, readOnly: Bool, isolation: isolated (any Actor)? = #isolation,
        _ body: ((any Store)?) async throws -> T
    ) async throws -> T {
        guard let location else { return try await body(nil) }
        var logger = Logger(label: "klaxon.store")
        logger.logLevel = .error
        return try await location.withStore(readOnly: readOnly, logger: logger) { store in try await body(store) }
    }

    /// `body` with the SQLite file at `path` open read-only; closed when this returns.
    static func withReadOnly<T>(
        path: String, isolation: isolated (any Actor)? = #isolation, _ body: (any Store) async throws -> T
    ) async throws -> T {
        try await body(try SQLiteStore.openReadOnly(path: path))
    }

    /// Runs `body` with the store open: a SQLite file (read-only if asked), or PostgreSQL through a
    /// pool that runs for the call, after one connection has shown the server answers (else an error
    /// naming `postgres://host:port/database` and the reason). Everything opened is closed before this
    /// returns. On PostgreSQL, `readOnly` makes no difference: a normal connection reads, and the pool
    /// gets `dutyConnections` more connections than its default: each duty the daemon holds keeps one.
    /// With `create: false` (a command that expects a database: `silence add`, `outbox list`) a SQLite
    /// path with no Klaxon database is an error naming it, and nothing is created; `klaxon run` and
    /// `ingest` create one. (A PostgreSQL database is made by its server's administrator, and a
    /// mistyped name fails to connect; any command may create Klaxon's schema in it.)
    public func withStore<T>(
        readOnly: Bool = false, create: Bool = true, sqliteWriterCacheMiB: Int = 32, sqliteReaderCacheMiB: Int = 4,
        dutyConnections: Int = 0, logger: Logger,
        isolation: isolated (any Actor)? = #isolation, _ body: (any Store) async throws -> T
    ) async throws -> T {
        switch self {
        case .sqlite(let path) where readOnly:
            // A read-only connection leaves -wal and -shm behind; remove those it made.
            let hadLog = SQLiteStore.hasWriteAheadLog(path: path)
            defer { if !hadLog { SQLiteStore.closeLeftovers(path: path) } }
            return try await Self.withReadOnly(path: path, body)
        case .sqlite(let path):
            let store =
                readOnly
                ? try SQLiteStore.openReadOnly(path: path)
                : try SQLiteStore.open(
                    path: path, writerCacheMiB: sqliteWriterCacheMiB, readerCacheMiB: sqliteReaderCacheMiB,
                    create: create)
            return try await body(store)
        case .postgres(var configuration):
            configuration.maximumConnections += max(0, dutyConnections)
            return try await PostgresStore.withChecked(configuration, logger: logger) { store in
                try await body(store)
            }
        }
    }
}
