import Foundation
import KlaxonCore
import NIOHTTP1

/// Living messages through a webhook. Discord's webhooks can edit what they posted: `POST
/// {url}?wait=true` answers the message object (its snowflake `id`), and `PATCH
/// {url}/messages/{id}` edits it; an edit of a message that is gone answers 404 ("Unknown Message",
/// code 10008). The other presets' incoming webhooks cannot edit: they send as before.
extension WebhookNotifier {
    /// Discord, and a Slack or Mattermost receiver with a bot token, unless `edit: false`.
    public var editsMessages: Bool { config.edit && (config.preset == .discord || app != nil) }

    /// The most of a posted message's answer read for its id: Discord's message object with its
    /// embeds is a few kilobytes; the rest is read and dropped.
    static let messageAnswerLimit = 64 << 10

    /// Posts with `?wait=true` and returns the message's id ("" when the answer carries none: the
    /// message went out, and the next notification posts a new one).
    public func post(_ n: AlertNotification) async throws -> String {
        if let app { return try await app.post(try object(n), key: n.key) }
        guard editsMessages, let target = Self.waiting(config.url.value) else { return try await plainPost(n) }
        let answer = try await request(n, payload: try body(n), url: target, keep: Self.messageAnswerLimit)
        return Self.messageID(in: answer) ?? ""
    }

    /// `PATCH {url}/messages/{id}` (the URL's query, such as `thread_id`, kept).
    public func edit(_ n: AlertNotification, messageID: String) async throws {
        guard editsMessages else { return try await send(n) }
        if let app { return try await app.edit(try object(n), messageID: messageID, key: n.key) }
        guard Self.isSnowflake(messageID), let target = Self.message(config.url.value, id: messageID) else {
            // A reference that is not a Discord id (a damaged or restored row) names no message.
            throw DeliveryError(
                kind: .httpStatus(404), retryable: false,
                message: "receiver \(config.name): the stored message reference is not a message id")
        }
        _ = try await request(n, payload: try body(n), method: .PATCH, url: target)
    }

    /// Discord's `PATCH …/messages/{id}` (the webhook's path, which holds its token, not shown),
    /// Slack's `chat.update` or Mattermost's patch, and the body.
    public func renderEdit(_ n: AlertNotification, messageID: String) throws -> RenderedEdit? {
        guard editsMessages else { return nil }
        if let app { return app.renderEdit(try object(n), messageID: messageID) }
        return RenderedEdit(
            request: "PATCH …/messages/\(messageID)", body: String(decoding: try body(n), as: UTF8.self))
    }

    func plainPost(_ n: AlertNotification) async throws -> String {
        try await send(n)
        return ""
    }

    /// The webhook URL with `wait=true` added to its query.
    static func waiting(_ url: String) -> URL? {
        guard var c = URLComponents(string: url) else { return nil }
        var items = (c.queryItems ?? []).filter { $0.name != "wait" }
        items.append(URLQueryItem(name: "wait", value: "true"))
        c.queryItems = items
        return c.url
    }

    /// The URL of message `id` of the webhook: `/messages/{id}` after its path, its query kept
    /// (without `wait`).
    static func message(_ url: String, id: String) -> URL? {
        guard var c = URLComponents(string: url) else { return nil }
        var path = c.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        c.percentEncodedPath = path + "/messages/" + id
        let items = (c.queryItems ?? []).filter { $0.name != "wait" }
        c.queryItems = items.isEmpty ? nil : items
        return c.url
    }

    /// A Discord snowflake: 1 to 20 decimal digits.
    static func isSnowflake(_ s: String) -> Bool {
        (1...20).contains(s.utf8.count) && s.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The `id` of a message object (a snowflake), nil when the answer has none.
    static func messageID(in answer: [UInt8]) -> String? {
        struct Message: Decodable { var id: String }
        guard let m = try? JSONDecoder().decode(Message.self, from: Data(answer)), isSnowflake(m.id) else {
            return nil
        }
        return m.id
    }
}
