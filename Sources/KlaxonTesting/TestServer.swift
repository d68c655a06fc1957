import Foundation
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A server a test starts. The test stops it before it returns: run the test's body in `with` (one
/// server) or `TestServers.with` (several), which await the stop also when the body throws.
public protocol TestServer: Sendable {
    /// Stops the server: every connection is closed, whatever a client does with it. True if it
    /// stopped within `TestServers.stopLimit`.
    @discardableResult func stop() async -> Bool
}

extension TestServer {
    /// Runs `body` with `server`, then stops the server, awaited, also when `body` throws. A server
    /// that does not stop is an error of its own: it would outlive its test.
    public static func serving<T>(
        _ server: Self, isolation: isolated (any Actor)? = #isolation, _ body: (Self) async throws -> T
    ) async throws -> T {
        let outcome = await Result { try await body(server) }
        let stopped = await server.stop()
        let value = try outcome.get()
        guard stopped else { throw SinkError(message: "\(Self.self) did not stop within \(TestServers.stopLimit)") }
        return value
    }
}

/// The servers one test starts, all stopped (and awaited) when its body ends.
///
///     try await TestServers.with { servers in
///         let upstream = try await servers.sink()
///         let feed = try await servers.webSocket(scripts: [])
///         …
///     }
public final class TestServers: Sendable {
    /// How long a stop may take before it counts as failed. A stop closes every connection and
    /// cancels every handler, so it takes milliseconds; this bound only says "broken".
    public static let stopLimit = Duration.seconds(30)

    private let started = Mutex<[any TestServer]>([])

    private init() {}

    /// Runs `body` with a fresh set of servers; every server it started is stopped before this returns.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (TestServers) async throws -> T
    ) async throws -> T {
        let servers = TestServers()
        let outcome = await Result { try await body(servers) }
        let stuck = await servers.stopAll()
        let value = try outcome.get()
        guard stuck.isEmpty else { throw SinkError(message: "\(stuck) did not stop within \(stopLimit)") }
        return value
    }

    /// An HTTP sink, stopped at the end of the scope.
    public func sink() async throws -> HTTPSink { try add(await HTTPSink.start()) }

    /// A WebSocket server playing `scripts`, stopped at the end of the scope.
    public func webSocket(scripts: [[WSTestServer.Step]]) async throws -> WSTestServer {
        try add(await WSTestServer.start(scripts: scripts))
    }

    /// An SMTP server, stopped at the end of the scope.
    public func smtp(_ options: SMTPServer.Options = SMTPServer.Options()) async throws -> SMTPServer {
        try add(await SMTPServer.start(options))
    }

    private func add<S: TestServer>(_ server: S) -> S {
        started.withLock { $0.append(server) }
        return server
    }

    /// Stops every server at once; returns the types of those that did not stop in time.
    private func stopAll() async -> [String] {
        let servers = started.withLock { $0 }
        return await withTaskGroup(of: String?.self) { group in
            for server in servers {
                group.addTask { await server.stop() ? nil : "\(type(of: server))" }
            }
            var stuck: [String] = []
            for await name in group { if let name { stuck.append(name) } }
            return stuck
        }
    }
}

/// Whether `task` ended within `limit`. Awaiting a task's `result` ignores cancellation, so the wait
/// runs in a task of its own and is abandoned at the limit (the task itself is left as it is). The
/// same idea as KlaxonCore's `Bounded`, which this target does not depend on.
func ended<T: Sendable, E: Error>(_ task: Task<T, E>, within limit: Duration) async -> Bool {
    let (stream, first) = AsyncStream<Bool>.makeStream(bufferingPolicy: .bufferingOldest(1))
    Task.detached {
        _ = await task.result
        first.yield(true)
    }
    let timer = Task.detached {
        try? await Task.sleep(for: limit)
        first.yield(false)
    }
    var iterator = stream.makeAsyncIterator()
    let value = await iterator.next() ?? false
    timer.cancel()
    first.finish()
    return value
}

/// A test server's open connections, so that its stop can close them all. Hummingbird waits for a
/// connection's first request with no timeout (the WebSocket-upgrade channel ignores both the
/// graceful shutdown and cancellation there), and `HTTPClient.shared` keeps idle connections open
/// for minutes: without this a client could hold a stop for as long as it likes. A copy of the
/// demo's own (`DemoUpstreams`), which is internal to KlaxonApp.
final class OpenConnections: Sendable {
    private struct State {
        var open: [ObjectIdentifier: any Channel] = [:]
        var closing = false
        var group: ServiceGroup?
    }

    private let state = Mutex(State())

    /// Records a new connection; one that arrives after `closeAll` is closed at once.
    func add(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let admitted = state.withLock { state in
            if state.closing { return false }
            state.open[id] = channel
            return true
        }
        guard admitted else {
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { _ in self.state.withLock { _ = $0.open.removeValue(forKey: id) } }
    }

    /// Closes every open connection, and any that arrives later.
    func closeAll() {
        let open = state.withLock { state in
            state.closing = true
            defer { state.open = [:] }
            return Array(state.open.values)
        }
        for channel in open { channel.close(promise: nil) }
    }

    /// Runs the server as a service, so that it stops by a graceful shutdown: cancelling a NIO
    /// server's task while an accepted connection is still queued traps the whole test process
    /// ("Deinited NIOAsyncWriter without calling finish()", apple/swift-nio#3481).
    func serve(_ app: some Service, logger: Logger) async throws {
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let stopped = state.withLock { state in
            state.group = group
            return state.closing
        }
        if stopped { return }
        try await group.run()
    }

    /// Whether the server is stopping.
    var isClosing: Bool { state.withLock { $0.closing } }

    /// Sleeps for `seconds`, or until the server stops: a graceful shutdown waits for handlers, so a
    /// request meant to hang must end when its server does.
    func pause(_ seconds: Double) async throws {
        let end = ContinuousClock.now + .milliseconds(Int64(max(0, min(seconds, 1e9)) * 1000))
        while ContinuousClock.now < end, !isClosing { try await Task.sleep(for: .milliseconds(10)) }
    }

    /// Stops accepting and shuts the server down.
    func shutDown() async {
        let group = state.withLock { state in
            state.closing = true
            return state.group
        }
        await group?.triggerGracefulShutdown()
    }

    /// Shuts the server down, closes every connection and waits for the server to end, within
    /// `TestServers.stopLimit`.
    func stop(_ server: Task<Void, any Error>) async -> Bool {
        await shutDown()
        closeAll()
        return await ended(server, within: TestServers.stopLimit)
    }
}

/// A server child channel that registers each connection with `connections` before `base` sets it up.
struct TrackedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    let base: Base
    let connections: OpenConnections

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Base.Value> {
        connections.add(channel)
        return base.setup(channel: channel, logger: logger)
    }

    func handle(value: Base.Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
