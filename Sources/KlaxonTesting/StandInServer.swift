import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import KlaxonServer
import Logging
import NIOCore
import ServiceLifecycle

/// One request as a platform stand-in sees it (the Slack and Mattermost stand-ins).
public struct StandInRequest: Sendable {
    public var method: String
    public var path: String
    public var query: String
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: Data
}

/// A stand-in's answer.
public struct StandInAnswer: Sendable {
    public var status: Int
    public var headers: [String: String] = [:]
    public var body: String = ""

    public init(status: Int, headers: [String: String] = [:], body: String = "") {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `value` as JSON.
    public static func json<T: Encodable>(_ status: Int, _ value: T, headers: [String: String] = [:]) -> StandInAnswer {
        StandInAnswer(
            status: status, headers: headers,
            body: String(decoding: (try? JSONEncoder().encode(value)) ?? Data("{}".utf8), as: UTF8.self))
    }
}

/// The HTTP server under a platform stand-in: 127.0.0.1 on a free port, every request handed to
/// `answer` (bodies up to 1 MiB), stopped with every connection closed (as `DiscordStandIn`).
final class StandInServer: Sendable {
    let port: Int
    private let task: Task<Void, any Error>
    private let connections: OpenConnections

    private init(port: Int, task: Task<Void, any Error>, connections: OpenConnections) {
        self.port = port
        self.task = task
        self.connections = connections
    }

    static func start(label: String, answer: @escaping @Sendable (StandInRequest) -> StandInAnswer) async throws
        -> StandInServer
    {
        let connections = OpenConnections()
        let handler: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, _ in
            let body = try await request.body.collect(upTo: 1 << 20)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let a = answer(
                StandInRequest(
                    method: request.method.rawValue, path: request.uri.path, query: request.uri.query ?? "",
                    headers: headers, body: Data(buffer: body)))
            var fields = HTTPFields()
            fields[.contentType] = "application/json"
            for (k, v) in a.headers { if let name = HTTPField.Name(k) { fields[name] = v } }
            return Response(
                status: .init(code: a.status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: a.body)))
        }
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: label)
        logger.logLevel = .critical
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
            defer { continuation.finish() }
            try await connections.serve(app, logger: logger)
        }
        var port = 0
        for await p in stream { port = p }
        guard port > 0 else {
            await connections.shutDown()
            throw SinkError(message: "the stand-in \(label) did not start")
        }
        return StandInServer(port: port, task: task, connections: connections)
    }

    func stop() async -> Bool { await connections.stop(task) }
}
