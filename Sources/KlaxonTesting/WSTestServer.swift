import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import KlaxonServer
import Logging
import NIOCore
import ServiceLifecycle

/// A scriptable WebSocket server on 127.0.0.1 for source tests (Hummingbird's WebSocket upgrade).
/// Each connection plays the next script: frames, pauses (during which it reads nothing, so pings go
/// unanswered, as from a dead peer) and a close. After its script a connection stays open, answering
/// pings, until the server stops. Stop it before the test returns: `WSTestServer.with` or `TestServers`.
public final class WSTestServer: TestServer {
    public enum Step: Sendable {
        /// Send a text frame.
        case send(String)
        /// Wait this long without reading: pings get no pong, so a pause longer than the client's
        /// ping period looks like a dead peer.
        case pause(Double)
        /// Close the connection (normal closure).
        case close
    }

    actor State {
        var scripts: [[Step]]
        var connections = 0

        init(scripts: [[Step]]) { self.scripts = scripts }

        func next() -> [Step] {
            connections += 1
            return scripts.isEmpty ? [] : scripts.removeFirst()
        }
    }

    let state: State
    public let port: Int
    private let task: Task<Void, any Error>
    private let connections: OpenConnections

    public var url: String { "ws://127.0.0.1:\(port)/feed" }

    private init(port: Int, task: Task<Void, any Error>, state: State, connections: OpenConnections) {
        self.port = port
        self.task = task
        self.state = state
        self.connections = connections
    }

    /// Starts a server, runs `body` with it and stops it before returning, also when `body` throws.
    public static func with<T>(
        scripts: [[Step]], isolation: isolated (any Actor)? = #isolation, _ body: (WSTestServer) async throws -> T
    ) async throws -> T {
        try await serving(try await start(scripts: scripts), body)
    }

    /// Connections accepted so far.
    public func connections() async -> Int { await state.connections }

    /// Starts a server; connection N plays `scripts[N]`. On `port` when given (a port a test held
    /// closed until now), else on any free one.
    public static func start(scripts: [[Step]], port: Int = 0) async throws -> WSTestServer {
        let state = State(scripts: scripts)
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "klaxon.test.ws")
        logger.logLevel = .critical
        let connections = OpenConnections()
        let app = Application(
            router: Router(),
            server: HTTPServerBuilder { responder in
                let upgrading = HTTP1WebSocketUpgradeChannel(responder: responder, configuration: .init()) { _, _, _ in
                    .upgrade([:]) { inbound, outbound, _ in
                        let steps = await state.next()
                        var iterator = inbound.makeAsyncIterator()
                        for step in steps {
                            switch step {
                            case .send(let text):
                                try await outbound.write(.text(text))
                            case .pause(let seconds):
                                try await connections.pause(seconds)
                            case .close:
                                return
                            }
                        }
                        while try await iterator.next() != nil {}
                    }
                }
                return TrackedChildChannel(base: SettledChildChannel(upgrading), connections: connections)
            },
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        let task = Task {
            defer { continuation.finish() }  // a server that fails to start must not leave us waiting
            try await connections.serve(app, logger: logger)
        }
        var port = 0
        for await p in stream { port = p }
        guard port > 0 else {
            await connections.shutDown()
            throw SinkError(message: "the WebSocket test server did not start")
        }
        return WSTestServer(port: port, task: task, state: state, connections: connections)
    }

    /// Stops the server: every connection is closed (an open WebSocket, a connection that never sent
    /// its upgrade request), then the server. True if it stopped within `TestServers.stopLimit`.
    @discardableResult
    public func stop() async -> Bool { await connections.stop(task) }
}
