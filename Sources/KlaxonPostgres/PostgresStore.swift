import Foundation
import KlaxonCore
import KlaxonStore
import Logging
import PostgresNIO
import Synchronization

/// The PostgreSQL `Store`: the same tables, constraints and semantics as `SQLiteStore`, on a server
/// several daemons can share. Every call is async and runs on a connection of the store's pool
/// (postgres-nio's `PostgresClient`); no call blocks a thread.
///
/// The pool needs a task to run in: use `PostgresStore.with(_:logger:_:)`, which runs it, migrates
/// the schema and hands the store to its body; or run `run()` yourself (a ServiceLifecycle service)
/// and call `migrate()` once before anything else.
public final class PostgresStore: Store {
    /// Where the store lives, for messages: `postgres://host:port/database`. Never the user or the
    /// password.
    public let path: String
    let client: PostgresClient
    let logger: Logger
    let configuration: Configuration
    /// Whether the server is known to be unreachable (calls then fail at once).
    let outage = Outage()

    /// Where and how to connect. Printed (also by `dump` or `String(reflecting:)`), it shows
    /// `postgres://host:port/database` only.
    public struct Configuration: Sendable, CustomStringConvertible, CustomDebugStringConvertible,
        CustomReflectable
    {
        public var host: String
        public var port: Int
        public var username: String
        /// Never logged nor shown in `path` or errors.
        public var password: String?
        public var database: String
        /// TLS to the server; off by default (a loopback or private-network server).
        public var tls: PostgresClient.Configuration.TLS
        /// The most connections the pool opens.
        public var maximumConnections: Int
        /// The longest one statement may run on the server (`statement_timeout`), migrations aside:
        /// retention and copies work in batches far shorter than this.
        public var statementTimeout: Duration = PostgresStore.statementTimeout

        public init(
            host: String, port: Int = 5432, username: String, password: String? = nil, database: String,
            tls: PostgresClient.Configuration.TLS = .disable, maximumConnections: Int = 8
        ) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
            self.database = database
            self.tls = tls
            self.maximumConnections = max(1, maximumConnections)
        }

        /// `postgres://host:port/database`: what messages may show.
        public var description: String { "postgres://\(host):\(port)/\(database)" }
        public var debugDescription: String { description }
        public var customMirror: Mirror { Mirror(self, children: ["description": description]) }
    }

    /// A store on a pool that is not running yet: run `run()` in a task of its own, then `migrate()`.
    public init(_ configuration: Configuration, logger: Logger) {
        var c = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: configuration.tls)
        c.options.maximumConnections = configuration.maximumConnections
        c.options.connectTimeout = .seconds(10)
        // Every statement has a deadline on the server, and the server notices a client that
        // vanished (keepalives after 10 s idle, 3 probes 5 s apart) and ends its session.
        var parameters = [
            ("tcp_keepalives_idle", "10"), ("tcp_keepalives_interval", "5"), ("tcp_keepalives_count", "3"),
        ]
        let timeout = configuration.statementTimeout.components
        let milliseconds = max(1, timeout.seconds * 1000 + timeout.attoseconds / 1_000_000_000_000_000)
        parameters.append(("statement_timeout", "\(milliseconds)"))
        c.options.additionalStartupParameters = parameters
        self.client = PostgresClient(configuration: c, backgroundLogger: logger)
        self.configuration = configuration
        self.path = configuration.description
        self.logger = logger
    }

    /// Runs the connection pool until the task running it is cancelled.
    public func run() async { await client.run() }

    /// Runs `body` with a migrated store whose pool runs for the call; the pool is closed (its task
    /// cancelled and awaited) before this returns, also when `body` throws.
    public static func with<T>(
        _ configuration: Configuration, logger: Logger, isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresStore) async throws -> T
    ) async throws -> T {
        let store = PostgresStore(configuration, logger: logger)
        // The first query waits until the pool runs (postgres-nio warns of a lease before `run()`).
        let started = Mutex(false)
        let running = Task.detached {
            started.withLock { $0 = true }
            await store.run()
        }
        while !started.withLock({ $0 }) { await Task.yield() }
        let outcome: Result<T, any Error>
        do {
            try await store.migrate()
            outcome = .success(try await body(store))
        } catch {
            outcome = .failure(error)
        }
        running.cancel()
        await running.value
        return try outcome.get()
    }

    /// True when the server answers a query within `reachableWithin`. A server that is down, or a
    /// network that has gone silent, makes a query wait (for a connection, or forever on a connection
    /// whose peer vanished): `/readyz` says "unreachable" after this long instead of waiting with it.
    public func isReachable() async -> Bool {
        if outage.isDown { return false }
        let ok = await Self.first(within: Self.reachableWithin, otherwise: false) { [self] in
            (try? await scalar("SELECT 1::bigint", as: Int64.self)) == 1
        }
        if !ok { suspectOutage("no answer within \(Self.reachableWithin)") }
        return ok && !outage.isDown
    }

    static let reachableWithin = Duration.seconds(3)
    /// The longest one statement may run on the server (`statement_timeout`): retention and copies
    /// work in batches far shorter than this.
    static let statementTimeout = Duration.seconds(60)

    /// `work`'s value, or `fallback` if it has not answered within `limit` (the work is then cancelled
    /// and left to end in its own time: a query on a vanished connection may never end).
    /// The caller's cancellation does not cut the wait short: the duty's unlock runs as the work it
    /// guarded is being cancelled.
    static func first<T: Sendable>(
        within limit: Duration, otherwise fallback: T, _ work: @escaping @Sendable () async -> T
    ) async -> T {
        let task = Task { await work() }
        guard let result = await Bounded.result(of: task, within: limit) else {
            task.cancel()
            return fallback
        }
        return result.get()
    }

    // MARK: Helpers

    /// Runs `body` in a transaction on one connection of the pool: committed if it returns, rolled
    /// back if it throws. Errors come out as `PostgresStoreError`, naming the server's message.
    func transaction<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresConnection) async throws -> sending T
    ) async throws -> sending T {
        try checkReachable()
        do {
            return try await client.withTransaction(logger: logger, isolation: isolation, body)
        } catch let e as PostgresTransactionError {
            throw e.closureError.map(describe) ?? describe(e.beginError ?? e.commitError ?? e)
        } catch {
            throw describe(error)
        }
    }

    /// A postgres-nio error as a `PostgresStoreError` saying what the server said (never a password:
    /// the server's messages do not contain the connection's secrets). Other errors pass unchanged.
    func describe(_ error: any Error) -> any Error {
        if Outage.isConnectionLoss(error) {
            noteFailure(error)
            return PostgresStoreError.unreachable(path: path, message: Self.connectFailure(error))
        }
        switch error {
        case let e as PSQLError:
            if let message = e.serverInfo?[.message] {
                let state = e.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
                return PostgresStoreError.server(path: path, message: message + state)
            }
            return PostgresStoreError.server(path: path, message: "\(e.code)")
        case let e as PostgresTransactionError:
            return e.closureError.map(describe) ?? describe(e.beginError ?? e.commitError ?? e.rollbackError ?? e)
        default:
            return error
        }
    }

    /// Every row of a query, for random access by column index.
    func rows(_ query: PostgresQuery, on connection: PostgresConnection? = nil) async throws
        -> [PostgresRandomAccessRow]
    {
        do {
            if let connection {
                var out: [PostgresRandomAccessRow] = []
                for try await row in try await connection.query(query, logger: logger) {
                    out.append(row.makeRandomAccess())
                }
                return out
            }
            // On the pool: a wait for a connection ends as soon as the server is found unreachable.
            return try await racingOutage { [client, logger] in
                var out: [PostgresRandomAccessRow] = []
                for try await row in try await client.query(query, logger: logger) {
                    out.append(row.makeRandomAccess())
                }
                return out
            }
        } catch let e as PostgresStoreError {
            throw e
        } catch {
            throw describe(error)
        }
    }

    /// The first column of the first row (nil without a row or for NULL).
    func scalar<T: PostgresDecodable>(_ query: PostgresQuery, as: T.Type, on connection: PostgresConnection? = nil)
        async throws -> T? where T._DecodableType == T
    {
        guard let row = try await rows(query, on: connection).first else { return nil }
        return try row[0].decode(T?.self)
    }

    /// Runs a statement; returns how many rows it returned (add `RETURNING 1` to count changed rows).
    @discardableResult
    func execute(_ query: PostgresQuery, on connection: PostgresConnection? = nil) async throws -> Int {
        try await rows(query, on: connection).count
    }

    /// Rows of a `SELECT to_jsonb(x)::text …` decoded as the `Codable` record whose coding keys are the
    /// table's column names.
    func records<T: Decodable>(_ query: PostgresQuery, as: T.Type, on connection: PostgresConnection? = nil)
        async throws -> [T]
    {
        try await rows(query, on: connection).map { row in
            try Self.decoder.decode(T.self, from: Data(try row[0].decode(String.self).utf8))
        }
    }

    static let decoder = JSONDecoder()
}

/// What the PostgreSQL store reports to people.
public struct PostgresStoreError: Error, CustomStringConvertible, Sendable, BackendStoreError {
    private enum Code: Sendable { case server, unreachable }
    private let code: Code
    public let description: String

    /// The server refused a statement, or could not be reached.
    public static func server(path: String, message: String) -> PostgresStoreError {
        PostgresStoreError(code: .server, description: "database \(path): \(message)")
    }

    /// The server cannot be reached now (down, restarting, or the connection was lost).
    public static func unreachable(path: String, message: String) -> PostgresStoreError {
        PostgresStoreError(code: .unreachable, description: "database \(path) is unreachable: \(message)")
    }

    /// An unreachable server is the database failing (a request gets 503); other errors are not.
    public var storeFailure: StoreFailure? {
        code == .unreachable ? StoreFailure(kind: .failing, words: description) : nil
    }
}
