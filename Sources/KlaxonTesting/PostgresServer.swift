import Foundation
import Logging
import PostgresNIO
import Synchronization

/// A throw-away PostgreSQL server for tests: `initdb` into a fresh temporary folder (as `nobody`
/// when the tests run as root, since `initdb` refuses root), trust authentication, listening on a
/// free port of 127.0.0.1 only, no Unix socket. Debian's `postgresql` package provides the binaries
/// (`Deploy/setup.sh` installs it).
///
/// Tests take a fresh database of the one shared server with `PostgresServer.withDatabase { … }`:
/// the server starts with the first test that needs it and stops (awaited, its folder removed) when
/// the last test using it returns, so nothing a test started outlives it.
public final class PostgresServer: TestServer, @unchecked Sendable {
    /// The superuser `initdb` creates; trust authentication, so no password.
    public static let user = "klaxon"
    /// How long a start or a stop may take before it counts as broken (not how fast it should be:
    /// on two busy cores a start takes a few seconds).
    public static let limit = Duration.seconds(90)

    public let port: Int
    /// The server's process id (a new one after `start()` following `crash()` or `stopFast()`).
    public var pid: Int32 { current.withLock { $0.process.processIdentifier } }
    /// The folder holding the cluster (removed by `stop()`).
    public var folder: String { dir.path }
    /// How long the start took (initdb, the server, the first connection).
    public let startup: Duration
    let dir: URL
    /// The running `postgres` process: replaced when a test stops and starts the server again.
    private let current: Mutex<(process: Process, exit: ProcessExit)>
    private var process: Process { current.withLock { $0.process } }
    private var exit: ProcessExit { current.withLock { $0.exit } }
    /// The command line the server was started with (to start it again on the same port and data).
    private let arguments: [String]
    private let asRoot: Bool

    private init(
        port: Int, startup: Duration, dir: URL, process: Process, exit: ProcessExit, arguments: [String], asRoot: Bool
    ) {
        self.port = port
        self.startup = startup
        self.dir = dir
        self.current = Mutex((process, exit))
        self.arguments = arguments
        self.asRoot = asRoot
    }

    /// One database of the server.
    public struct Database: Sendable {
        public var host = "127.0.0.1"
        public var port: Int
        public var user = PostgresServer.user
        public var name: String
        /// A `postgres://` URL (no password: the server trusts loopback).
        public var url: String { "postgres://\(user)@\(host):\(port)/\(name)" }
    }

    /// Runs `body` with a new, empty database of the shared server (started if needed), then drops the
    /// database and, if no other test is using the server, stops it — awaited, also when `body` throws.
    public static func withDatabase<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (Database) async throws -> T
    ) async throws -> T {
        let server = try await shared.acquire()
        let outcome = await Result {
            let database = try await server.createDatabase()
            let value = await Result { try await body(database) }
            try await server.dropDatabase(database.name)
            return try value.get()
        }
        let stopped = await shared.release()
        let value = try outcome.get()
        guard stopped else { throw SinkError(message: "PostgreSQL did not stop within \(limit)") }
        return value
    }

    /// Starts a server of its own for `body` (a test that stops or kills it, say), and stops it
    /// before returning, also when `body` throws.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (PostgresServer) async throws -> T
    ) async throws -> T {
        try await serving(try await start(), body)
    }

    /// The server tests share, if one is running (for reports: its port and startup time).
    public static func running() async -> PostgresServer? { await shared.current }

    private static let shared = SharedServer()

    /// The folder of the newest PostgreSQL server binaries Debian installed.
    static func binaries() throws -> URL {
        let root = URL(fileURLWithPath: "/usr/lib/postgresql")
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [])
            .compactMap(Int.init).sorted()
        for v in versions.reversed() {
            let bin = root.appendingPathComponent("\(v)/bin")
            if FileManager.default.isExecutableFile(atPath: bin.appendingPathComponent("initdb").path) { return bin }
        }
        throw SinkError(message: "PostgreSQL server binaries not found under /usr/lib/postgresql: run Deploy/setup.sh")
    }

    /// Starts a new server; stop it with `stop()`. Nothing here blocks a thread: child processes are
    /// awaited through their termination handlers.
    public static func start() async throws -> PostgresServer {
        let began = ContinuousClock.now
        let bin = try binaries()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        do {
            let asRoot = getuid() == 0
            if asRoot {
                // initdb and postgres refuse to run as root: the cluster belongs to `nobody`.
                guard chown(dir.path, nobody, nogroup) == 0 else {
                    throw SinkError(message: "cannot hand \(dir.path) to nobody (errno \(errno))")
                }
            }
            let data = dir.appendingPathComponent("data")
            let initLog = dir.appendingPathComponent("initdb.log")
            let initdb = try launch(
                bin.appendingPathComponent("initdb"),
                ["-D", data.path, "-U", user, "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"],
                in: dir, log: initLog, asRoot: asRoot)
            guard await initdb.exit.wait(within: limit) else {
                kill(initdb.process.processIdentifier, SIGKILL)
                _ = await initdb.exit.wait(within: limit)
                throw SinkError(message: "initdb did not finish within \(limit)")
            }
            guard initdb.process.terminationStatus == 0 else {
                throw SinkError(message: "initdb failed: \(tail(initLog))")
            }
            // A free port may be taken by another test's server between our probe and postgres's bind:
            // then postgres exits at once and we try another.
            var attempt = 0
            while true {
                attempt += 1
                let (fd, port) = try loopbackSocket()
                close(fd)
                let log = dir.appendingPathComponent("server-\(attempt).log")
                let arguments = [
                    "-D", data.path, "-p", "\(port)", "-c", "listen_addresses=127.0.0.1",
                    "-c", "unix_socket_directories=", "-c", "fsync=off", "-c", "synchronous_commit=off",
                    "-c", "full_page_writes=off", "-c", "max_connections=300", "-c", "shared_buffers=32MB",
                ]
                let server = try launch(
                    bin.appendingPathComponent("postgres"), arguments, in: dir, log: log, asRoot: asRoot)
                switch try await awaitReady(port: port, server.process, server.exit) {
                case .ready:
                    return PostgresServer(
                        port: port, startup: ContinuousClock.now - began, dir: dir, process: server.process,
                        exit: server.exit, arguments: arguments, asRoot: asRoot)
                case .exited where attempt < 5 && tail(log).contains("could not bind"):
                    continue
                case .exited:
                    throw SinkError(message: "postgres exited at startup: \(tail(log))")
                }
            }
        } catch {
            try? FileManager.default.removeItem(at: dir)
            throw error
        }
    }

    private enum Readiness { case ready, exited }

    /// Connects until the server answers; a connection refused or "starting up" is retried every
    /// 50 ms. Only `limit` says it is broken (then the server is killed).
    private static func awaitReady(port: Int, _ process: Process, _ exit: ProcessExit) async throws -> Readiness {
        let deadline = ContinuousClock.now + limit
        var lastError = ""
        while ContinuousClock.now < deadline {
            if exit.hasExited { return .exited }
            do {
                let connection = try await PostgresConnection.connect(
                    configuration: configuration(port: port, database: "postgres"), id: 1, logger: quiet)
                try await connection.close()
                return .ready
            } catch {
                lastError = String(reflecting: error)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        kill(process.processIdentifier, SIGKILL)
        _ = await exit.wait(within: limit)
        throw SinkError(message: "postgres did not accept a connection within \(limit): \(lastError)")
    }

    func configuration(database: String) -> PostgresConnection.Configuration {
        Self.configuration(port: port, database: database)
    }

    static func configuration(port: Int, database: String) -> PostgresConnection.Configuration {
        var c = PostgresConnection.Configuration(
            host: "127.0.0.1", port: port, username: Self.user, password: nil, database: database, tls: .disable)
        c.options.connectTimeout = .seconds(30)
        return c
    }

    /// Creates an empty database with a fresh name.
    public func createDatabase() async throws -> Database {
        let name = "klaxon_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        try await admin { try await $0.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: Self.quiet) }
        return Database(port: port, name: name)
    }

    /// Drops a database, closing any connection still open to it.
    public func dropDatabase(_ name: String) async throws {
        try await admin {
            try await $0.query(
                PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(name) WITH (FORCE)"), logger: Self.quiet)
        }
    }

    private func admin(_ body: (PostgresConnection) async throws -> Void) async throws {
        do {
            let connection = try await PostgresConnection.connect(
                configuration: configuration(database: "postgres"), id: 1, logger: Self.quiet)
            let outcome = await Result { try await body(connection) }
            try? await connection.close()
            try outcome.get()
        } catch {
            throw SinkError(message: "PostgreSQL test server on port \(port): \(String(reflecting: error))")
        }
    }

    /// Stops the server with a fast shutdown (SIGINT: clients are disconnected, no checkpoint wait
    /// for them), else SIGKILL, awaited without blocking a thread; removes its folder. True if it
    /// stopped within `limit`.
    @discardableResult
    public func stop() async -> Bool {
        if !exit.hasExited { kill(process.processIdentifier, SIGINT) }
        let stopped = await exit.wait(within: Self.limit)
        if !stopped {
            kill(process.processIdentifier, SIGKILL)
            // Killed: it did not stop in time, whatever happens now.
            _ = await exit.wait(within: Self.limit)
        }
        try? FileManager.default.removeItem(at: dir)
        return stopped
    }

    /// `pg_ctl stop -m immediate`: SIGQUIT, the server's crash stop (every session ends at once, no
    /// checkpoint; the next start runs crash recovery). The folder stays for `start()`. True if it
    /// ended within `limit`.
    @discardableResult
    public func crash() async -> Bool { await halt(SIGQUIT) }

    /// `pg_ctl stop -m fast`: SIGINT (sessions are ended, then a checkpoint). The folder stays for
    /// `start()`; `restart()` is this and `start()`, as `pg_ctl restart -m fast`.
    @discardableResult
    public func stopFast() async -> Bool { await halt(SIGINT) }

    private func halt(_ signal: Int32) async -> Bool {
        let (process, exit) = current.withLock { ($0.process, $0.exit) }
        if !exit.hasExited { kill(process.processIdentifier, signal) }
        return await exit.wait(within: Self.limit)
    }

    /// Starts the server again after `crash()` or `stopFast()`: the same data, the same port (a
    /// client reconnects to the address it knew). Returns once it accepts connections.
    public func start() async throws {
        guard exit.hasExited else { throw SinkError(message: "PostgreSQL on port \(port) is still running") }
        let log = dir.appendingPathComponent("server-again-\(UUID().uuidString.prefix(8)).log")
        let server = try Self.launch(
            try Self.binaries().appendingPathComponent("postgres"), arguments, in: dir, log: log, asRoot: asRoot)
        current.withLock { $0 = (server.process, server.exit) }
        guard case .ready = try await Self.awaitReady(port: port, server.process, server.exit) else {
            throw SinkError(message: "postgres exited when started again: \(Self.tail(log))")
        }
    }

    /// `pg_ctl restart -m fast`: `stopFast()`, then `start()`.
    public func restart() async throws {
        guard await stopFast() else { throw SinkError(message: "PostgreSQL did not stop within \(Self.limit)") }
        try await start()
    }

    /// A server its tests never stopped: killed without a wait.
    deinit {
        if !exit.hasExited { kill(process.processIdentifier, SIGKILL) }
    }

    static let quiet = Logger(label: "klaxon.test.postgres", factory: { _ in SwiftLogNoOpLogHandler() })
    private static let nobody: uid_t = 65534
    private static let nogroup: gid_t = 65534

    /// Runs a PostgreSQL program, as `nobody` when we are root (`setpriv` execs it, so the process we
    /// signal is the program itself), its output to `log`.
    private static func launch(_ program: URL, _ arguments: [String], in dir: URL, log: URL, asRoot: Bool) throws
        -> (process: Process, exit: ProcessExit)
    {
        let p = Process()
        if asRoot {
            p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            p.arguments =
                ["--reuid=\(nobody)", "--regid=\(nogroup)", "--clear-groups", "--", program.path] + arguments
        } else {
            p.executableURL = program
            p.arguments = arguments
        }
        p.currentDirectoryURL = dir
        var env = ProcessInfo.processInfo.environment
        env["LC_ALL"] = "C"
        env.removeValue(forKey: "PGDATA")
        p.environment = env
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        p.standardOutput = handle
        p.standardError = handle
        p.standardInput = FileHandle.nullDevice
        let exit = ProcessExit(p)
        try launchProcess(p)
        try? handle.close()
        return (p, exit)
    }

    /// The end of a log, for failure messages.
    private static func tail(_ log: URL) -> String {
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return String(text.suffix(2000))
    }
}

/// The server the tests of one process share: started by the first user, stopped by the last.
private actor SharedServer {
    private enum State {
        case idle
        case starting(Task<PostgresServer, any Error>)
        case running(PostgresServer)
        case stopping(Task<Bool, Never>)
    }

    private var state = State.idle
    private var users = 0

    var current: PostgresServer? {
        if case .running(let s) = state { return s }
        return nil
    }

    func acquire() async throws -> PostgresServer {
        users += 1
        do {
            return try await server()
        } catch {
            users -= 1
            throw error
        }
    }

    private func server() async throws -> PostgresServer {
        while true {
            switch state {
            case .running(let s):
                return s
            case .starting(let task):
                let result = await task.result
                if case .starting(let t) = state, t == task {
                    if case .success(let s) = result { state = .running(s) } else { state = .idle }
                }
                return try result.get()
            case .stopping(let task):
                _ = await task.value
                if case .stopping(let t) = state, t == task { state = .idle }
            case .idle:
                state = .starting(Task { try await PostgresServer.start() })
            }
        }
    }

    /// True unless this was the last user and the server did not stop.
    func release() async -> Bool {
        users -= 1
        guard users == 0, case .running(let s) = state else { return true }
        let task = Task { await s.stop() }
        state = .stopping(task)
        let stopped = await task.value
        if case .stopping(let t) = state, t == task { state = .idle }
        return stopped
    }
}

extension PostgresServer.Database {
    /// Runs one statement on this database, on a connection of the test's own; returns how many rows
    /// it gave (to terminate a daemon's sessions, say).
    @discardableResult
    public func run(_ sql: String) async throws -> Int {
        let connection = try await PostgresConnection.connect(
            configuration: PostgresServer.configuration(port: port, database: name), id: 2, logger: PostgresServer.quiet
        )
        let outcome = await Result { () async throws -> Int in
            var n = 0
            for try await _ in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: PostgresServer.quiet) {
                n += 1
            }
            return n
        }
        try? await connection.close()
        return try outcome.get()
    }
}
