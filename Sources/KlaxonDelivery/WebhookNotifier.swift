import AsyncHTTPClient
import Crypto
import Foundation
import KlaxonCore
import Mustache
import NIOCore
import NIOHTTP1

extension HTTPClient {
    /// The client webhooks are sent with. Like `.shared` it lives as long as the process, but its
    /// pool is not capped at 8 connections per host: the dispatcher bounds each receiver by its own
    /// `connections:`. Responses are not decompressed (only their status is read).
    public static let webhooks: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1024
        configuration.decompression = .disabled
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}

/// Posts notifications to a webhook: a chat preset (Slack, Mattermost, Teams, Discord, Google Chat),
/// the Alertmanager-compatible `generic` JSON, or a custom mustache body. Every request carries the
/// `Idempotency-Key`; with an HMAC secret, `X-Klaxon-Timestamp` and `X-Klaxon-Signature`.
public struct WebhookNotifier: Notifier {
    public let config: Receiver.Webhook
    let groupBy: [String]
    let client: HTTPClient
    let template: MustacheTemplate?
    /// Seconds since the epoch, for signatures (injected for tests).
    let clock: @Sendable () -> Int64
    /// The URL, parsed once (nil if it does not parse: every send then fails as a connection error).
    let url: URL?
    /// A plain `http://` URL's keep-alive connections, request target and `Host` header.
    let plain: (connections: WebhookConnections, target: String, hostHeader: String)?
    /// The platform's API, for a receiver with a bot token (`ChatApp`); nil: an incoming webhook.
    /// A direct message's copy (`direct(to:)`) has the user as its channel.
    var app: ChatApp?

    public init(
        config: Receiver.Webhook, groupBy: [String] = ["rule", "station", "metric"], client: HTTPClient = .webhooks,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) throws {
        self.config = config
        self.groupBy = groupBy
        self.client = client
        self.clock = clock
        url = URL(string: config.url.value)
        plain = Self.plainHTTP(config.url.value, connections: config.connections)
        app = ChatApp(config: config, client: client)
        // Values land inside JSON strings: JSON-escaped (after the preset's chat escaping), not HTML-escaped.
        template = try config.template.map {
            try MessageRenderer.compile(
                $0, origin: "receiver \(config.name) template", escaping: .json(config.preset))
        }
    }

    public var rateLimit: Double? { config.rateLimit }
    public var connections: Int { config.connections }
    /// The preset's name (`slack`, `msteams`, …); `webhook` for the generic preset.
    public var integration: String { config.preset == .generic ? "webhook" : config.preset.rawValue }

    /// The request body.
    public func render(_ n: AlertNotification) throws -> String {
        if let app { return String(decoding: WebhookPayloads.encode(try app.postBody(object(n))), as: UTF8.self) }
        return String(decoding: try body(n), as: UTF8.self)
    }

    /// The request body. A custom template's body must parse as JSON (it is sent as
    /// `application/json`); one that does not is a rendering error, not retried.
    func body(_ n: AlertNotification) throws -> Data {
        if let template {
            return try TemplateBody.check(
                template.render(WebhookPayloads.templateContext(n)), preset: config.preset, receiver: config.name)
        }
        let object: [String: JSONValue]
        switch config.preset {
        case .generic: return Data(WebhookPayloads.genericText(n, groupBy: groupBy).utf8)
        case .slack: object = WebhookPayloads.slack(n)
        case .mattermost: object = WebhookPayloads.mattermost(n)
        case .discord: object = WebhookPayloads.discord(n)
        case .msteams: object = WebhookPayloads.msteams(n)
        case .googlechat: object = threaded(WebhookPayloads.googlechat(n), n)
        }
        return WebhookPayloads.encode(object)
    }

    /// `sha256=<hex HMAC-SHA256 of "timestamp.body">`.
    public static func signature(secret: String, timestamp: Int64, body: Data) -> String {
        var message = Data("\(timestamp).".utf8)
        message.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: Data(secret.utf8)))
        return "sha256=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    /// The headers of a request (without transport headers).
    public func headers(for n: AlertNotification, body: Data) -> [(String, String)] {
        var h: [(String, String)] = [
            ("Content-Type", "application/json"), ("User-Agent", "klaxon"), ("Idempotency-Key", n.key),
        ]
        for (k, v) in config.headers.sorted(by: { $0.key < $1.key }) { h.append((k, v)) }
        if let secret = config.hmacSecret {
            let ts = clock()
            h.append(("X-Klaxon-Timestamp", String(ts)))
            h.append(("X-Klaxon-Signature", Self.signature(secret: secret.value, timestamp: ts, body: body)))
        }
        return h
    }

    public func send(_ n: AlertNotification) async throws {
        if let app {
            _ = try await app.post(try object(n), key: n.key)
            return
        }
        _ = try await request(n, payload: try body(n), url: googleChatURL())
    }

    /// Sends one request of `n` (`POST` to the URL unless `method` and `url` say otherwise) and
    /// returns the first `keep` bytes of the response's body; a status other than 2xx throws.
    func request(
        _ n: AlertNotification, payload: Data, method: HTTPMethod = .POST, url other: URL? = nil, keep: Int = 0
    ) async throws -> [UInt8] {
        var headers = HTTPHeaders()
        for (k, v) in self.headers(for: n, body: payload) { headers.add(name: k, value: v) }
        let response: WebhookResponse
        let deadline = NIODeadline.now() + .milliseconds(Int64(config.timeout * 1000))
        do {
            if let plain {
                headers.replaceOrAdd(name: "Host", value: plain.hostHeader)
                headers.replaceOrAdd(name: "Content-Length", value: String(payload.count))
                let target = other.map { Self.target(of: $0) } ?? plain.target
                response = try await plain.connections.exchange(
                    HTTPRequestHead(version: .http1_1, method: method, uri: target, headers: headers),
                    body: ByteBuffer(bytes: payload), deadline: deadline, keep: keep)
            } else {
                response = try await sendThroughClient(
                    headers: headers, payload: payload, deadline: deadline, method: method, url: other ?? url,
                    keep: keep)
            }
        } catch {
            throw classify(error)
        }
        let status = Int(response.head.status.code)
        guard (200...299).contains(status) else {
            let retryAfter = response.head.headers.first(name: "retry-after").flatMap {
                Backoff().retryAfter($0, now: Int64(Date().timeIntervalSince1970))
            }
            throw DeliveryError.http(status, retryAfter: retryAfter, receiver: config.name)
        }
        return response.body
    }

    /// A URL's request target: its path (`/` when empty) and query as written.
    static func target(of url: URL) -> String {
        guard let c = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "/" }
        var target = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
        if let q = c.percentEncodedQuery { target += "?" + q }
        return target
    }

    /// `https://` goes through AsyncHTTPClient: the event-loop API, with a delegate that keeps the
    /// response head and drops the body as it comes (no body is buffered, however large, beyond the
    /// first `keep` bytes).
    func sendThroughClient(
        headers: HTTPHeaders, payload: Data, deadline: NIODeadline, method: HTTPMethod = .POST, url: URL?,
        keep: Int = 0
    ) async throws -> WebhookResponse {
        guard let url else { throw HTTPClientError.invalidURL }
        let request = try HTTPClient.Request(
            url: url, method: method, headers: headers, body: .byteBuffer(ByteBuffer(bytes: payload)))
        let task = client.execute(request: request, delegate: ResponseHead(keep: keep), deadline: deadline)
        // Cancelled (the dispatcher stopping): the request is cancelled and its connection closed.
        return try await withTaskCancellationHandler {
            try await task.futureResult.get()
        } onCancel: {
            task.cancel()
        }
    }

    /// For an `http://` URL with a host: its connections, the request target (path and query as
    /// written) and the `Host` header. Nil for anything else.
    static func plainHTTP(_ text: String, connections: Int) -> (
        connections: WebhookConnections, target: String, hostHeader: String
    )? {
        guard let c = URLComponents(string: text), c.scheme?.lowercased() == "http", let host = c.host, !host.isEmpty,
            c.user == nil, c.password == nil
        else { return nil }
        let port = c.port ?? 80
        guard (1...65535).contains(port) else { return nil }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let shown = bare.contains(":") ? "[\(bare)]" : bare
        var target = c.percentEncodedPath.isEmpty ? "/" : c.percentEncodedPath
        if let q = c.percentEncodedQuery { target += "?" + q }
        return (
            WebhookConnections(host: bare, port: port, maxIdle: connections), target,
            port == 80 ? shown : "\(shown):\(port)"
        )
    }

    /// Turns a transport error into a classified, secret-free `DeliveryError`.
    func classify(_ error: any Error) -> DeliveryError {
        .transport(
            error, receiver: config.name, url: config.url.value, timeout: config.timeout,
            secrets: [config.hmacSecret?.value ?? ""], hidePath: true)
    }
}

extension DeliveryError {
    /// A transport error (a timeout, a refused or broken connection) as a classified, retryable
    /// error naming the receiver and `url`'s host, never a secret: each of `secrets` shows as
    /// `<secret>` and `url` as `redactURL` shows it, and with `hidePath` its path as `/…` (a
    /// webhook's path may hold its token). Webhooks and the platform APIs (`PlatformHTTP`) share it.
    static func transport(
        _ error: any Error, receiver: String, url: String, timeout: Double, secrets: [String], hidePath: Bool
    ) -> DeliveryError {
        let where_ = "receiver \(receiver) (\(redactURL(url)))"
        let timedOut: Bool
        if let e = error as? WebhookConnections.Failure {
            timedOut = e == .timedOut
        } else if let e = error as? HTTPClientError {
            timedOut = [.connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout].contains(e)
        } else {
            timedOut = false
        }
        if timedOut {
            return DeliveryError(
                kind: .timeout, retryable: true, message: "\(where_): timed out after \(formatValue(timeout)) s")
        }
        var text = String(describing: error)
        text = text.replacingOccurrences(of: url, with: redactURL(url))
        for secret in secrets where !secret.isEmpty {
            text = text.replacingOccurrences(of: secret, with: "<secret>")
        }
        if hidePath, let path = URL(string: url)?.path, path.count > 1 {
            text = text.replacingOccurrences(of: path, with: "/…")
        }
        return DeliveryError(kind: .connection, retryable: true, message: "\(where_): connection failed: \(text)")
    }
}

/// Keeps a response's head; its body is read and dropped as it arrives (only the status matters,
/// and a receiver's body is not buffered, whatever its size). Used on one event loop at a time.
final class ResponseHead: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = WebhookResponse
    private var head: HTTPResponseHead?
    /// How many bytes of the body to keep (a living message's id), and those kept.
    private let keep: Int
    private var kept: [UInt8] = []

    init(keep: Int = 0) { self.keep = keep }

    func didReceiveHead(task: HTTPClient.Task<WebhookResponse>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        self.head = head
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<WebhookResponse>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        if kept.count < keep,
            let bytes = buffer.getBytes(at: buffer.readerIndex, length: min(buffer.readableBytes, keep - kept.count))
        {
            kept += bytes
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<WebhookResponse>) throws -> WebhookResponse {
        guard let head else { throw HTTPClientError.remoteConnectionClosed }
        return WebhookResponse(head: head, body: kept)
    }
}
