import Foundation
import KlaxonCore
import NIOHTTP1

/// Telegram's Bot API (https://core.telegram.org/bots/api): `sendMessage` and `editMessageText`,
/// each `POST {base}/bot{TOKEN}/{method}` with a JSON body. The token is in the path, so the path
/// is never shown: errors name the method and Telegram's `description`, and `PlatformHTTP` scrubs
/// the token from transport errors. Telegram answers `{"ok": true, "result": …}`, or `{"ok":
/// false, "error_code", "description", "parameters": {"retry_after"}}` with the HTTP status of
/// `error_code` (400 for a message to edit that is not found, 401 for a revoked token, 403 for a
/// bot removed from the chat, 429 with `retry_after`). The base URL is configurable for a local Bot
/// API server. `chat_id` is a chat's id or `@channel`: a direct message to a user is a message to
/// the user's id (once the user has started the bot), what issue 43's watches send.
public struct TelegramBotAPI: Sendable {
    let http: PlatformHTTP
    let token: Secret

    /// Telegram's API unless a receiver's `url` says otherwise.
    public static let defaultBase = "https://api.telegram.org"
    /// `text` of a message: at most 4,096 characters (after its entities are parsed).
    public static let textLimit = 4096
    /// `callback_data` of a button: 1 to 64 bytes.
    public static let callbackDataLimit = 64

    public init(http: PlatformHTTP, token: Secret) {
        self.http = http
        self.token = token
    }

    /// A bot token as BotFather gives it: digits, `:`, and 30 to 50 of `[A-Za-z0-9_-]`.
    public static func isToken(_ s: String) -> Bool {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, (1...20).contains(parts[0].utf8.count), (30...50).contains(parts[1].utf8.count) else {
            return false
        }
        return parts[0].utf8.allSatisfy { (48...57).contains($0) }
            && parts[1].utf8.allSatisfy {
                (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 45 || $0 == 95
            }
    }

    /// A `chat_id`: a chat's integer id or `@channelusername` (5 to 32 of `[A-Za-z0-9_]`).
    public static func isChatID(_ s: String) -> Bool {
        if s.hasPrefix("@") {
            let name = s.utf8.dropFirst()
            return (5...32).contains(name.count)
                && name.allSatisfy {
                    (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95
                }
        }
        return Int64(s) != nil && s.utf8.count <= 20
    }

    /// A posted message: its chat and its `message_id`, stored as `CHAT/ID`.
    public struct MessageRef: Sendable, Equatable {
        public var chat: String
        public var messageID: Int64

        public init(chat: String, messageID: Int64) {
            self.chat = chat
            self.messageID = messageID
        }

        /// A stored reference; nil for anything else (a damaged or restored row).
        public init?(_ text: String) {
            guard let slash = text.lastIndex(of: "/"), let id = Int64(text[text.index(after: slash)...]), id > 0
            else { return nil }
            let chat = String(text[..<slash])
            guard TelegramBotAPI.isChatID(chat) else { return nil }
            self.init(chat: chat, messageID: id)
        }

        public var text: String { "\(chat)/\(messageID)" }
    }

    /// A message's body: `text` (HTML) and its inline keyboard.
    public struct Message: Sendable, Equatable {
        public var text: String
        /// Rows of buttons: label and `callback_data`.
        public var buttons: [[(text: String, data: String)]]

        public init(text: String, buttons: [[(text: String, data: String)]] = []) {
            self.text = text
            self.buttons = buttons
        }

        public static func == (a: Message, b: Message) -> Bool {
            a.text == b.text && a.buttons.map { $0.map(\.text) } == b.buttons.map { $0.map(\.text) }
                && a.buttons.map { $0.map(\.data) } == b.buttons.map { $0.map(\.data) }
        }

        /// The fields of `sendMessage` and `editMessageText` beside the chat and message.
        var fields: [String: JSONValue] {
            var f: [String: JSONValue] = [
                "text": .string(text), "parse_mode": "HTML", "link_preview_options": ["is_disabled": true],
            ]
            // An edit without `reply_markup` removes the keyboard: a resolved alert's buttons go.
            if !buttons.isEmpty {
                f["reply_markup"] = [
                    "inline_keyboard": .array(
                        buttons.map { row in
                            .array(row.map { ["text": .string($0.text), "callback_data": .string($0.data)] })
                        })
                ]
            }
            return f
        }
    }

    /// The body `sendMessage` gets (what `dry-run --render` shows).
    public static func sendBody(chat: String, _ message: Message) -> [String: JSONValue] {
        var body = message.fields
        body["chat_id"] = chatValue(chat)
        return body
    }

    /// Sends `message` to `chat` and returns where it went.
    public func sendMessage(chat: String, _ message: Message) async throws -> MessageRef {
        let result = try await call("sendMessage", Self.sendBody(chat: chat, message))
        struct Sent: Decodable { var message_id: Int64 }
        guard let sent = try? JSONDecoder().decode(Sent.self, from: result), sent.message_id > 0 else {
            return MessageRef(chat: chat, messageID: 0)
        }
        return MessageRef(chat: chat, messageID: sent.message_id)
    }

    /// Replaces message `ref`'s text and keyboard. "message is not modified" (the same content
    /// again: a resend) is success.
    public func editMessageText(_ ref: MessageRef, _ message: Message) async throws {
        var body = message.fields
        body["chat_id"] = Self.chatValue(ref.chat)
        body["message_id"] = .number(Double(ref.messageID))
        _ = try await call("editMessageText", body)
    }

    /// A numeric chat id as a JSON number, `@channel` as a string.
    static func chatValue(_ chat: String) -> JSONValue {
        if let n = Int64(chat) { return .number(Double(n)) }
        return .string(chat)
    }

    struct Reply: Decodable {
        struct Parameters: Decodable { var retry_after: Double? }
        var ok: Bool
        var error_code: Int?
        var description: String?
        var parameters: Parameters?
    }

    /// One method call: the `result`'s JSON, or the refusal as its `DeliveryError`.
    func call(_ method: String, _ body: [String: JSONValue]) async throws -> Data {
        let answer = try await http.call(
            .POST, "/bot\(token.value)/\(method)", headers: [], body: WebhookPayloads.encode(body),
            accept: [400, 403, 404, 409, 429])
        let data = Data(answer.body)
        guard let reply = try? JSONDecoder().decode(Reply.self, from: data) else {
            throw DeliveryError(
                kind: .httpStatus(answer.status), retryable: answer.status == 429,
                message: "receiver \(http.name): Telegram \(method): HTTP \(answer.status), not Telegram's JSON")
        }
        guard reply.ok else {
            let description = reply.description ?? ""
            if method == "editMessageText", description.contains("message is not modified") { return Data() }
            throw Self.refusal(
                status: reply.error_code ?? answer.status, description: description, method: method,
                receiver: http.name, retryAfter: reply.parameters?.retry_after ?? answer.retryAfter)
        }
        struct Result: Decodable { var result: JSONValue? }
        let result = (try? JSONDecoder().decode(Result.self, from: data))?.result ?? .null
        return (try? JSONEncoder().encode(result)) ?? Data()
    }

    /// The `DeliveryError` of a refusal: 429 is retried after `retry_after` (capped at an hour), 5xx
    /// retried; a message to edit that is gone (or can no longer be edited) posts a new one; the
    /// rest (a revoked token, a chat the bot left) is not retried. Telegram's `description` is the
    /// far end's text: at most 120 printable characters of it are kept.
    static func refusal(status: Int, description: String, method: String, receiver: String, retryAfter: Double?)
        -> DeliveryError
    {
        let said = String(
            description.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7f }.prefix(120).map(Character.init))
        let retry = status == 429 || (500...599).contains(status)
        let lowered = said.lowercased()
        let gone =
            lowered.contains("message to edit not found") || lowered.contains("message can't be edited")
            || lowered.contains("message_id_invalid")
        return DeliveryError(
            kind: .httpStatus(status), retryable: retry, retryAfter: retry ? retryAfter.map { min($0, 3600) } : nil,
            message: "receiver \(receiver): Telegram \(method): HTTP \(status) \(said)\(retry ? "" : " (not retried)")",
            messageGone: gone)
    }
}
