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

    public init(
        config: Receiver.Webhook, groupBy: [String] = ["rule", "station", "metric"], client: HTTPClient = .webhooks,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) throws {
        self.config = config
        self.groupBy = groupBy
        self.client = client
        self.clock = clock
        template = try config.template.map {
            try MessageRenderer.compile($0, origin: "receiver \(config.name) template")
        }
    }

    public var rateLimit: Double? { config.rateLimit }
    public var connections: Int { config.connections }

    /// The request body.
    public func render(_ n: AlertNotification) throws -> String {
        String(decoding: body(n), as: UTF8.self)
    }

    func body(_ n: AlertNotification) -> Data {
        if let template { return Data(template.render(WebhookPayloads.templateContext(n)).utf8) }
        let object: [String: Any]
        switch config.preset {
        case .generic: return Data(WebhookPayloads.genericText(n, groupBy: groupBy).utf8)
        case .slack: object = WebhookPayloads.slack(n)
        case .mattermost: object = WebhookPayloads.mattermost(n)
        case .discord: object = WebhookPayloads.discord(n)
        case .msteams: object = WebhookPayloads.msteams(n)
        case .googlechat: object = WebhookPayloads.googlechat(n)
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
        let payload = body(n)
        var request = HTTPClientRequest(url: config.url.value)
        request.method = .POST
        for (k, v) in headers(for: n, body: payload) { request.headers.add(name: k, value: v) }
        request.body = .bytes(ByteBuffer(bytes: payload))
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: .milliseconds(Int64(config.timeout * 1000)))
            // Drain (bounded) so the connection can be reused.
            _ = try? await response.body.collect(upTo: 64 * 1024)
        } catch {
            throw classify(error)
        }
        let status = Int(response.status.code)
        guard (200...299).contains(status) else {
            let retryAfter = response.headers.first(name: "retry-after").flatMap {
                Backoff().retryAfter($0, now: Int64(Date().timeIntervalSince1970))
            }
            throw DeliveryError.http(status, retryAfter: retryAfter, receiver: config.name)
        }
    }

    /// Turns a transport error into a classified, secret-free `DeliveryError`.
    func classify(_ error: any Error) -> DeliveryError {
        let where_ = "receiver \(config.name) (\(redactURL(config.url.value)))"
        if let e = error as? HTTPClientError {
            switch e {
            case .connectTimeout, .readTimeout, .deadlineExceeded, .writeTimeout:
                return DeliveryError(
                    kind: .timeout, retryable: true,
                    message: "\(where_): timed out after \(formatValue(config.timeout)) s")
            default:
                break
            }
        }
        var text = String(describing: error)
        text = text.replacingOccurrences(of: config.url.value, with: redactURL(config.url.value))
        if let secret = config.hmacSecret?.value, !secret.isEmpty {
            text = text.replacingOccurrences(of: secret, with: "<secret>")
        }
        if let path = URL(string: config.url.value)?.path, path.count > 1 {
            text = text.replacingOccurrences(of: path, with: "/…")
        }
        return DeliveryError(kind: .connection, retryable: true, message: "\(where_): connection failed: \(text)")
    }
}
