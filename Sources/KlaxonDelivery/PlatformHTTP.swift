import AsyncHTTPClient
import Foundation
import KlaxonCore
import NIOCore
import NIOHTTP1

/// Calls to a chat platform's Web API (Slack's `chat.postMessage`, Mattermost's `/api/v4/posts`):
/// one base URL (configurable, so a self-hosted server, a local Bot API server or a test stand-in
/// is reached by it), JSON in and a bounded part of the JSON answer out. The same transport as the
/// webhooks: keep-alive connections on NIO's HTTP/1 codec for `http://`, AsyncHTTPClient for
/// `https://`; every call has the receiver's timeout, and at most `answerLimit` bytes of an answer
/// are kept (the rest is read and dropped). The platform clients (`SlackWebAPI`, `MattermostAPI`)
/// are built on it, for a receiver's channel or a direct message to a user alike.
public struct PlatformHTTP: Sendable {
    /// The receiver (or whatever calls), named in errors.
    public let name: String
    /// The base URL without a trailing `/` (`https://slack.com/api`, `https://mm.example.com`).
    public let base: String
    /// Seconds per call.
    public let timeout: Double
    /// Texts never shown in an error (a bot token, which Telegram puts in the path).
    let secrets: [String]
    let client: HTTPClient
    /// A plain `http://` base's connections, its path prefix and `Host` header.
    let plain: (connections: WebhookConnections, prefix: String, hostHeader: String)?

    /// The most of an answer kept: a posted message's object with its blocks is a few kilobytes.
    public static let answerLimit = 64 << 10

    /// An answer: its status, the `Retry-After` it asked for (capped), and its body's first bytes.
    public struct Answer: Sendable {
        public var status: Int
        public var retryAfter: Double?
        public var body: [UInt8]
    }

    public init(
        name: String, base: String, timeout: Double, connections: Int = 4, secrets: [String] = [],
        client: HTTPClient = .webhooks
    ) {
        self.name = name
        var b = base
        while b.hasSuffix("/") { b.removeLast() }
        self.base = b
        self.timeout = timeout
        self.secrets = secrets.filter { !$0.isEmpty }
        self.client = client
        if let p = WebhookNotifier.plainHTTP(b, connections: connections) {
            plain = (p.connections, p.target == "/" ? "" : p.target, p.hostHeader)
        } else {
            plain = nil
        }
    }

    /// `method` on `base + path` with `body` (JSON unless `contentType` says otherwise). A status
    /// outside 2xx throws a classified `DeliveryError` (408, 429 and 5xx retryable; 429's
    /// `Retry-After` kept); `accept` lists other statuses returned as answers (a platform's own error
    /// object to read).
    public func call(
        _ method: HTTPMethod, _ path: String, headers extra: [(String, String)], body: Data,
        contentType: String = "application/json; charset=utf-8", accept: Set<Int> = []
    ) async throws -> Answer {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "User-Agent", value: "klaxon")
        for (k, v) in extra { headers.add(name: k, value: v) }
        let deadline = NIODeadline.now() + .milliseconds(Int64(timeout * 1000))
        let response: WebhookResponse
        do {
            if let plain {
                headers.replaceOrAdd(name: "Host", value: plain.hostHeader)
                headers.replaceOrAdd(name: "Content-Length", value: String(body.count))
                response = try await plain.connections.exchange(
                    HTTPRequestHead(version: .http1_1, method: method, uri: plain.prefix + path, headers: headers),
                    body: ByteBuffer(bytes: body), deadline: deadline, keep: Self.answerLimit)
            } else {
                guard let url = URL(string: base + path) else { throw HTTPClientError.invalidURL }
                let request = try HTTPClient.Request(
                    url: url, method: method, headers: headers, body: .byteBuffer(ByteBuffer(bytes: body)))
                let task = client.execute(
                    request: request, delegate: ResponseHead(keep: Self.answerLimit), deadline: deadline)
                response = try await withTaskCancellationHandler {
                    try await task.futureResult.get()
                } onCancel: {
                    task.cancel()
                }
            }
        } catch let error as CancellationError {
            throw error
        } catch {
            throw classify(error)
        }
        let status = Int(response.head.status.code)
        let retryAfter = response.head.headers.first(name: "retry-after").flatMap {
            Backoff().retryAfter($0, now: Int64(Date().timeIntervalSince1970))
        }
        guard (200...299).contains(status) || accept.contains(status) else {
            throw DeliveryError.http(status, retryAfter: retryAfter, receiver: name)
        }
        return Answer(status: status, retryAfter: retryAfter, body: response.body)
    }

    /// A transport error as a classified `DeliveryError` naming the receiver and the API's host,
    /// never its path (a token may be in it) or a secret.
    func classify(_ error: any Error) -> DeliveryError {
        .transport(error, receiver: name, url: base, timeout: timeout, secrets: secrets, hidePath: false)
    }
}
