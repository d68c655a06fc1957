import AsyncHTTPClient
import Foundation
import KlaxonCore

/// Sends to an ntfy topic (`type: ntfy`), one living notification per episode or group
/// (https://docs.ntfy.sh/publish/#updating-deleting-notifications, ntfy 2.16 and later): the first
/// notification is a JSON publish (`POST {url}/` with `topic`, `title`, `message`, `priority`,
/// `tags`, `click`), whose answer's `id` is the notification's sequence id; every later one is
/// published with `X-Sequence-ID: ID`, which phones show in place of the earlier one. Priority comes
/// from severity, so a critical flood breaks through on a phone: critical 5 (max), warning 4,
/// info 3, a resolve 2 (no sound). The message is plain text within ntfy's 4,096 bytes. A server
/// older than 2.16 ignores the header and shows a new notification each time.
public struct NtfyNotifier: Notifier {
    public let config: Receiver.Ntfy
    let http: PlatformHTTP

    public init(config: Receiver.Ntfy, client: HTTPClient = .webhooks) {
        self.config = config
        http = PlatformHTTP(
            name: config.name, base: config.url, timeout: config.timeout, connections: config.connections,
            secrets: config.token.map { [$0.value] } ?? [], client: client)
    }

    public var rateLimit: Double? { config.rateLimit }
    public var connections: Int { config.connections }
    public var integration: String { "ntfy" }
    public var editsMessages: Bool { config.edit }

    /// ntfy's limit on a message before it becomes an attachment, in bytes.
    static let messageLimit = 4000

    /// A sequence id: 1 to 64 of `[A-Za-z0-9_-]` (ntfy's message ids are 12 of them).
    public static func isSequenceID(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count)
            && s.utf8.allSatisfy {
                (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 45 || $0 == 95
            }
    }

    /// The priority of a notification: its most severe alert's (a resolve is low).
    static func priority(_ n: AlertNotification) -> Int {
        let firing = n.alerts.filter { $0.transition.state != .resolved }
        guard !firing.isEmpty else { return 2 }
        if firing.contains(where: { $0.transition.severity == .critical }) { return 5 }
        if firing.contains(where: { $0.transition.severity == .warning }) { return 4 }
        return 3
    }

    /// The JSON publish body.
    public func body(_ n: AlertNotification) -> [String: JSONValue] {
        var lines = n.alerts.map { a in
            "\(WebhookPayloads.title(a))\n\(a.message)\nWhy: \(a.transition.explanation)\n\(WebhookPayloads.footer(a))"
        }
        if n.isDigest { lines.insert("Held during quiet hours (\(n.alerts.count)):", at: 0) }
        var tail = ""
        if let living = n.living, !living.timeline.isEmpty { tail = "\n\n" + living.text(limit: 900) + " (UTC)" }
        var message = lines.joined(separator: "\n\n")
        let room = Self.messageLimit - tail.utf8.count
        if message.utf8.count > room {
            var cut = ""
            for c in message {
                guard cut.utf8.count + String(c).utf8.count <= room - 3 else { break }
                cut.append(c)
            }
            message = cut + "…"
        }
        let first = n.alerts.first
        let title =
            n.alerts.count == 1 ? first.map { WebhookPayloads.title($0) } ?? "Klaxon" : "\(n.alerts.count) alerts"
        var body: [String: JSONValue] = [
            "topic": .string(config.topic), "title": .string(String(title.prefix(250))),
            "message": .string(message + tail), "priority": .number(Double(Self.priority(n))),
            "tags": .array([.string(n.status == "resolved" ? "white_check_mark" : "rotating_light")]),
        ]
        if let a = first, let link = n.link(a) { body["click"] = .string(link) }
        return body
    }

    public func render(_ n: AlertNotification) throws -> String { JSONText.encode(.object(body(n))) }

    public func send(_ n: AlertNotification) async throws { _ = try await publish(n, sequence: nil) }

    public func post(_ n: AlertNotification) async throws -> String { try await publish(n, sequence: nil) }

    public func edit(_ n: AlertNotification, messageID: String) async throws {
        guard editsMessages else { return try await send(n) }
        guard Self.isSequenceID(messageID) else {
            throw DeliveryError(
                kind: .httpStatus(404), retryable: false,
                message: "receiver \(config.name): the stored message reference is not an ntfy sequence id")
        }
        _ = try await publish(n, sequence: messageID)
    }

    /// `POST /` with `X-Sequence-ID` and the JSON publish body.
    public func renderEdit(_ n: AlertNotification, messageID: String) throws -> RenderedEdit? {
        guard editsMessages else { return nil }
        return RenderedEdit(
            request: "POST / (X-Sequence-ID: \(messageID))", body: JSONText.encode(.object(body(n))))
    }

    /// Publishes; returns the message's `id` ("" when the answer has none).
    func publish(_ n: AlertNotification, sequence: String?) async throws -> String {
        var headers: [(String, String)] = []
        if let token = config.token { headers.append(("Authorization", "Bearer " + token.value)) }
        if let sequence { headers.append(("X-Sequence-ID", sequence)) }
        let answer = try await http.call(.POST, "/", headers: headers, body: WebhookPayloads.encode(body(n)))
        struct Message: Decodable { var id: String }
        guard let m = try? JSONDecoder().decode(Message.self, from: Data(answer.body)), Self.isSequenceID(m.id) else {
            return ""
        }
        return m.id
    }
}
