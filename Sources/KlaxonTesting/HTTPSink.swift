import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

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

    public static let ok = SinkBehavior.respond(status: 200, body: "ok")
}

/// A scriptable HTTP server on 127.0.0.1 for adapter tests: it records every request and answers each
/// with the next scripted behaviour (500 n times, 429 with `Retry-After`, a hang past the timeout),
/// then 200.
public final class HTTPSink: Sendable {
    actor State {
        var requests: [RecordedRequest] = []
        var script: [SinkBehavior] = []

        func record(_ r: RecordedRequest) -> SinkBehavior {
            requests.append(r)
            return script.isEmpty ? .ok : script.removeFirst()
        }

        func setScript(_ s: [SinkBehavior]) { script = s }
        func all() -> [RecordedRequest] { requests }
        func clear() { requests = [] }
    }

    let state: State
    public let port: Int
    private let task: Task<Void, any Error>

    public var url: String { "http://127.0.0.1:\(port)" }

    private init(port: Int, task: Task<Void, any Error>, state: State) {
        self.port = port
        self.task = task
        self.state = state
    }

    /// Starts a sink on a free port of 127.0.0.1.
    public static func start() async throws -> HTTPSink {
        let state = State()
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
                try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "late")))
            }
        }
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "klaxon.test.sink")
        logger.logLevel = .critical  // a stopped sink logs its cancelled connections as errors: noise in tests
        // A catch-all responder: every method and path is recorded.
        let app = Application(
            responder: CallbackResponder(callback: handler),
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            }, logger: logger)
        let task = Task { try await app.run() }
        var port = 0
        for await p in stream { port = p }
        guard port > 0 else { throw SinkError(message: "the HTTP sink did not start") }
        let sink = HTTPSink(port: port, task: task, state: state)
        return sink
    }

    /// The next requests get these answers, in order; after them, 200.
    public func script(_ behaviors: [SinkBehavior]) async { await state.setScript(behaviors) }

    public func requests() async -> [RecordedRequest] { await state.all() }

    public func clear() async { await state.clear() }

    /// Waits until at least `count` requests arrived (or `timeout` seconds passed).
    public func waitForRequests(_ count: Int, timeout: Double = 10) async -> [RecordedRequest] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let all = await state.all()
            if all.count >= count { return all }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return await state.all()
    }

    public func stop() async {
        task.cancel()
        _ = await task.result
    }
}

public struct SinkError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}

/// A TCP listener on 127.0.0.1 that accepts connections and closes them at once: a peer that drops the
/// connection mid-request.
public final class ClosingServer: @unchecked Sendable {
    public let port: Int
    private let fd: Int32
    private let thread: Thread

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SinkError(message: "socket() failed") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else { throw SinkError(message: "bind/listen failed") }
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        port = Int(UInt16(bigEndian: addr.sin_port))
        self.fd = fd
        thread = Thread {
            while true {
                let c = accept(fd, nil, nil)
                if c < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 1024)
                _ = read(c, &buffer, buffer.count)
                close(c)
            }
        }
        thread.start()
    }

    public var url: String { "http://127.0.0.1:\(port)" }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }
}
