import AsyncHTTPClient
import Foundation
import KlaxonCore

/// Sends to a Telegram chat through the Bot API (`type: telegram`), one living message per
/// episode or group: `sendMessage`, then `editMessageText` on every later notification
/// (`TelegramBotAPI`). The message is HTML (`parse_mode: HTML`) with every value from data escaped
/// (`&amp; &lt; &gt;`, and `&quot;` in a link), within Telegram's 4,096 characters; with
/// `buttons: true`, a firing alert has Ack and Silence 1h inline buttons whose presses Telegram
/// posts to `EXTERNAL_URL/chat/telegram` as a `callback_query` (`chat.telegram`).
public struct TelegramNotifier: Notifier {
    /// The receiver (a direct message's copy, `direct(to:)`, has the user's chat as `chatID`).
    public internal(set) var config: Receiver.Telegram
    let api: TelegramBotAPI

    public init(config: Receiver.Telegram, client: HTTPClient = .webhooks) {
        self.config = config
        api = TelegramBotAPI(
            http: PlatformHTTP(
                name: config.name, base: config.url, timeout: config.timeout, connections: config.connections,
                secrets: [config.token.value], client: client),
            token: config.token)
    }

    public var rateLimit: Double? { config.rateLimit }
    public var connections: Int { config.connections }
    public var integration: String { "telegram" }
    public var editsMessages: Bool { config.edit }

    /// The `sendMessage` body.
    public func render(_ n: AlertNotification) throws -> String {
        JSONText.encode(.object(TelegramBotAPI.sendBody(chat: config.chatID, message(n))))
    }

    public func send(_ n: AlertNotification) async throws {
        _ = try await api.sendMessage(chat: config.chatID, message(n))
    }

    public func post(_ n: AlertNotification) async throws -> String {
        let ref = try await api.sendMessage(chat: config.chatID, message(n))
        return ref.messageID > 0 ? ref.text : ""
    }

    public func edit(_ n: AlertNotification, messageID: String) async throws {
        guard editsMessages else { return try await send(n) }
        guard let ref = TelegramBotAPI.MessageRef(messageID) else {
            throw DeliveryError(
                kind: .httpStatus(400), retryable: false,
                message: "receiver \(config.name): the stored message reference is not a Telegram message",
                messageGone: true)
        }
        try await api.editMessageText(ref, message(n))
    }

    /// `POST …/bot<secret>/editMessageText` and its body (the token is never shown).
    public func renderEdit(_ n: AlertNotification, messageID: String) throws -> RenderedEdit? {
        guard editsMessages else { return nil }
        var body = message(n).fields
        if let ref = TelegramBotAPI.MessageRef(messageID) {
            body["chat_id"] = TelegramBotAPI.chatValue(ref.chat)
            body["message_id"] = .number(Double(ref.messageID))
        } else {
            // A preview's stand-in for the id Telegram will answer.
            body["chat_id"] = TelegramBotAPI.chatValue(config.chatID)
            body["message_id"] = .string(messageID)
        }
        return RenderedEdit(request: "POST …/bot<secret>/editMessageText", body: JSONText.encode(.object(body)))
    }

    /// The most alerts given buttons in one message (two buttons each).
    static let buttonRows = 8

    /// The message of a notification: per alert its headline in bold, the message, why, the times
    /// and its links; then the living message's timeline. Over Telegram's limit, alerts are shown by
    /// their headline alone, and past that summed up (`…and N more`).
    public func message(_ n: AlertNotification) -> TelegramBotAPI.Message {
        let e: (String) -> String = { TelegramBotAPI.escape($0) }
        var head: [String] = []
        if n.isDigest { head.append("<b>Held during quiet hours (\(n.alerts.count)):</b>") }
        var tail: [String] = []
        if let living = n.living, !living.timeline.isEmpty { tail.append(e(living.text()) + " (UTC)") }
        let full = n.alerts.map { a -> String in
            var lines = [
                "<b>\(e(WebhookPayloads.title(a)))</b>", e(a.message), "<i>Why:</i> \(e(a.transition.explanation))",
                e(WebhookPayloads.footer(a)),
            ]
            var links: [(label: String, url: String)] = n.link(a).map { [("Open", $0)] } ?? []
            links += WebhookPayloads.links(n, a)
            if !links.isEmpty {
                lines.append(
                    links.map { "<a href=\"\(TelegramBotAPI.escape($0.url, quote: true))\">\(e($0.label))</a>" }
                        .joined(separator: " · "))
            }
            return lines.joined(separator: "\n")
        }
        let limit = TelegramBotAPI.textLimit - 200
        var text = (head + full + tail).joined(separator: "\n\n")
        if text.count > limit {
            // Headlines only, as many as fit, then how many more.
            var kept: [String] = []
            var size = (head + tail).reduce(0) { $0 + $1.count + 2 }
            for a in n.alerts {
                let line = "<b>\(e(String(WebhookPayloads.title(a).prefix(300))))</b>"
                guard size + line.count + 1 <= limit - 40 else { break }
                kept.append(line)
                size += line.count + 1
            }
            if kept.count < n.alerts.count { kept.append("…and \(n.alerts.count - kept.count) more") }
            text = (head + [kept.joined(separator: "\n")] + tail).joined(separator: "\n\n")
        }
        var rows: [[(text: String, data: String)]] = []
        if config.buttons {
            let firing = n.alerts.filter { WebhookPayloads.ackHint($0) != nil }.prefix(Self.buttonRows)
            for a in firing {
                let suffix = n.alerts.count > 1 ? " #\(a.id)" : ""
                rows.append(
                    ChatAction.buttons(for: a.transition).map {
                        ($0.label + suffix, TelegramCallbackData.make($0, episode: a.id))
                    })
            }
        }
        return TelegramBotAPI.Message(text: text, buttons: rows)
    }
}

extension TelegramBotAPI {
    /// Text for Telegram's HTML: `&`, `<` and `>` as entities (and `"` inside an attribute), the only
    /// characters its parser reads as markup.
    public static func escape(_ s: String, quote: Bool = false) -> String {
        quote ? Escape.telegramAttribute(s) : Escape.telegram(s)
    }
}
