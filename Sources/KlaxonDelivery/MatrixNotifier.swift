import AsyncHTTPClient
import Foundation
import KlaxonCore

/// Sends to a Matrix room (`type: matrix`) through the client-server API, one living message per
/// episode or group: the first notification is a message event, every later one an `m.replace`
/// edit of it (`MatrixClient`). The content is plain `body` and HTML `formatted_body` with every
/// value from data escaped; an event stays far within Matrix's 65,536 bytes (past 24,000
/// characters the alerts are listed by headline and summed up).
public struct MatrixNotifier: Notifier {
    public let config: Receiver.Matrix
    let client: MatrixClient

    public init(config: Receiver.Matrix, client: HTTPClient = .webhooks) {
        self.config = config
        self.client = MatrixClient(
            http: PlatformHTTP(
                name: config.name, base: config.url, timeout: config.timeout, connections: config.connections,
                secrets: [config.token.value], client: client),
            token: config.token)
    }

    public var rateLimit: Double? { config.rateLimit }
    public var connections: Int { config.connections }
    public var integration: String { "matrix" }
    public var editsMessages: Bool { config.edit }

    /// The event of a new message.
    public func render(_ n: AlertNotification) throws -> String {
        JSONText.encode(.object(MatrixClient.messageEvent(content(n))))
    }

    public func send(_ n: AlertNotification) async throws {
        _ = try await client.send(room: config.roomID, content(n), txnID: n.key)
    }

    public func post(_ n: AlertNotification) async throws -> String {
        try await client.send(room: config.roomID, content(n), txnID: n.key)
    }

    /// The edit's transaction id is the notification's key and the event's: one edit per
    /// notification, the same on a resend.
    public func edit(_ n: AlertNotification, messageID: String) async throws {
        guard editsMessages else { return try await send(n) }
        guard MatrixClient.isEventID(messageID) else {
            throw DeliveryError(
                kind: .httpStatus(404), retryable: false,
                message: "receiver \(config.name): the stored message reference is not a Matrix event id")
        }
        try await client.edit(room: config.roomID, eventID: messageID, content(n), txnID: n.key + ".edit")
    }

    /// `PUT …/send/m.room.message/{txnId}` and the `m.replace` event.
    public func renderEdit(_ n: AlertNotification, messageID: String) throws -> RenderedEdit? {
        guard editsMessages else { return nil }
        return RenderedEdit(
            request:
                "PUT /_matrix/client/v3/rooms/\(MatrixClient.segment(config.roomID))/send/m.room.message/\(MatrixClient.segment(n.key + ".edit"))",
            body: JSONText.encode(.object(MatrixClient.replacementEvent(of: messageID, content(n)))))
    }

    static let limit = 24_000

    /// Plain text and HTML of a notification, the timeline last.
    public func content(_ n: AlertNotification) -> MatrixClient.Content {
        let e: (String) -> String = { Self.escape($0) }
        var plain: [String] = []
        var html: [String] = []
        if n.isDigest {
            plain.append("Held during quiet hours (\(n.alerts.count)):")
            html.append("<b>Held during quiet hours (\(n.alerts.count)):</b>")
        }
        for a in n.alerts {
            let title = WebhookPayloads.title(a)
            let footer = WebhookPayloads.footer(a)
            var links: [(label: String, url: String)] = n.link(a).map { [("Open", $0)] } ?? []
            links += WebhookPayloads.links(n, a)
            plain.append(
                ([title, a.message, "Why: \(a.transition.explanation)", footer] + links.map { "\($0.label): \($0.url)" })
                    .joined(separator: "\n"))
            var lines = ["<b>\(e(title))</b>", e(a.message), "<i>Why:</i> \(e(a.transition.explanation))", e(footer)]
            if !links.isEmpty {
                lines.append(
                    links.map { "<a href=\"\(Self.escape($0.url, quote: true))\">\(e($0.label))</a>" }
                        .joined(separator: " · "))
            }
            html.append(lines.joined(separator: "<br>"))
        }
        var tailPlain: [String] = []
        var tailHTML: [String] = []
        if let living = n.living, !living.timeline.isEmpty {
            tailPlain.append(living.text() + " (UTC)")
            tailHTML.append(e(living.text()) + " (UTC)")
        }
        var body = (plain + tailPlain).joined(separator: "\n\n")
        var formatted = (html + tailHTML).joined(separator: "<br><br>")
        if formatted.count > Self.limit || body.count > Self.limit {
            let titles = n.alerts.prefix(100).map { String(WebhookPayloads.title($0).prefix(200)) }
            let more = n.alerts.count > titles.count ? ["…and \(n.alerts.count - titles.count) more"] : []
            body = ([titles.joined(separator: "\n")] + more + tailPlain).joined(separator: "\n\n")
            formatted = ([titles.map { "<b>\(e($0))</b>" }.joined(separator: "<br>")] + more.map(e) + tailHTML)
                .joined(separator: "<br><br>")
        }
        return MatrixClient.Content(body: body, html: formatted)
    }

    /// HTML text: `&`, `<`, `>` as entities, and `"` in an attribute.
    static func escape(_ s: String, quote: Bool = false) -> String {
        TelegramBotAPI.escape(s, quote: quote)
    }
}
