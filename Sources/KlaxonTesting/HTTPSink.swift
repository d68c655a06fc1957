import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import KlaxonServer
import Logging
import NIOCore
import ServiceLifecycle

/// A request the sink received.
public struct RecordedRequest: Sendable {
    public var method: String
    public var path: String
    /// The query string, without `?` (empty when none).
    public var query: String = ""
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: Data
    public var receivedAt: Date

    public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// How the sink answers one request.
public enum SinkBehavior: Sendable {
    /// Answer with a status, headers and body.
    case respond(status: Int, headers: [String: String] = [:], body: String = "")
    /// Wait this long before answering 200 (to push a client past its timeout).
    case hang(seconds: Double)
    /// Answer 200 once the test calls `releaseHeld()`: a request in flight for exactly as long as the
    /// test needs, whatever the machine's speed.
    case held

    public static let ok = SinkBehavior.respond(status: 200, body: "ok")
    /// No answer, for as long as the sink runs: a request meant to hang (stopping the sink ends it).
    public static let never = SinkBehavior.hang(seconds: 24 * 3600)
}

/// A scriptable HTTP server on 127.0.0.1 for adapter tests: it records every request and answers each
/// with the next scripted behaviour (500 n times, 429 with `Retry-After`, a hang past the timeout),
/// then 200. Stop it before the test returns: `HTTPSink.with { sink in … }` or `TestServers`.
public final class HTTPSink: TestServer {
    actor State {
        var requests: [RecordedRequest] = []
        var script: [SinkBehavior] = []
        var released = false

        func record(_ r: RecordedRequest) -> SinkBehavior {
            requests.append(r)
            return script.isEmpty ? .ok : script.removeFirst()
        }

        func setScript(_ s: [SinkBehavior]) { script = s }
        func all() -> [RecordedRequest] { requests }
        func clear() { requests = [] }
        func release() { released = true }
    }

    let state: State
    public let port: Int
    private let task: Task<Void, any Error>
    private let connections: OpenConnections

    public var url: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, task: Task<Void, any Error>, state: State, connections: OpenConnections) {
        self.port = port
        self.task = task
        self.state = state
        self.connections = connections
    }

    /// Starts a sink, runs `body` with it and stops it before returning, also when `body` throws.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (HTTPSink) async throws -> T
    ) async throws -> T {
        try await serving(try await start(), body)
    }

    /// Starts a sink on a free port of 127.0.0.1.
    public static func start() async throws -> HTTPSink {
        let state = State()
        let connections = OpenConnections()
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            let body = try await request.body.collect(upTo: 16 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let recorded = RecordedRequest(
                method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
                headers: headers, body: Data(buffer: body), receivedAt: Date())
            switch await state.record(recorded) {
            case .respond(let status, let extra, let text):
                var fields = HTTPFields()
                for (k, v) in extra { if let name = HTTPField.Name(k) { fields[name] = v } }
                return Response(
                    status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: text)))
            case .hang(let seconds):
                try await connections.pause(seconds)
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "late")))
            case .held:
                while await !state.released, !connections.isClosing { try await Task.sleep(for: .milliseconds(10)) }
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "released")))
            }
        }
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "klaxon.test.sink")
        logger.logLevel = .critical  // a stopped sink logs its cancelled connections as errors: noise in tests
        // A catch-all responder: every method and path is recorded.
        let app = Application(
            responder: CallbackResponder(callback: handler),
            server: HTTPServerBuilder { responder in
                TrackedChildChannel(
                    base: SettledChildChannel(HTTP1Channel(responder: responder)), connections: connections)
            },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: logger)
        let task = Task {
            defer { continuation.finish() }  // a server that fails to start must not leave us waiting
            try await connections.serve(app, logger: logger)
        }
        var port = 0
        for await p in stream { port = p }
        guard port > 0 else {
            await connections.shutDown()
            throw SinkError(message: "the HTTP sink did not start")
        }
        return HTTPSink(port: port, task: task, state: state, connections: connections)
    }

    /// The next requests get these answers, in order; after them, 200.
    public func script(_ behaviors: [SinkBehavior]) async { await state.setScript(behaviors) }

    public func requests() async -> [RecordedRequest] { await state.all() }

    public func clear() async { await state.clear() }

    /// Answers the requests held by `.held`, and any later ones at once.
    public func releaseHeld() async { await state.release() }

    /// Waits until at least `count` requests arrived, or `timeout` seconds passed: a bound that only
    /// matters when what should send them is broken (the caller's assertions then fail), never a
    /// guess at how fast a loaded machine is.
    public func waitForRequests(_ count: Int, timeout: Double = 60) async -> [RecordedRequest] {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        while ContinuousClock.now < deadline {
            let all = await state.all()
            if all.count >= count { return all }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { break }  // cancelled: stop waiting
        }
        return await state.all()
    }

    /// Stops the sink: open connections are closed (a client's idle pooled connection, a request in
    /// the middle of a `.hang`), then the server. True if it stopped within `TestServers.stopLimit`.
    @discardableResult
    public func stop() async -> Bool { await connections.stop(task) }
}

public struct SinkError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}
