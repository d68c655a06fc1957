import Foundation
import KlaxonCore
import NIOHTTP1

/// Slack's Web API for a bot token (`xoxb-…`): `chat.postMessage` and `chat.update`
/// (https://api.slack.com/methods/chat.postMessage, https://api.slack.com/methods/chat.update).
/// Every call is `POST {base}/{method}` with `Authorization: Bearer TOKEN` and a JSON body. Slack
/// answers HTTP 200 with `{"ok": false, "error": "…"}` when it refuses a call; those codes are
/// mapped to `DeliveryError`s here (a message gone, a retry that may help, a refusal that will not
/// change), and a rate limit is HTTP 429 with `Retry-After`. The `channel` of `postMessage` may be
/// a channel id or a user id (a direct message from the app, what issue 43's watches send); the
/// answer names the channel the message is in, which `chat.update` needs.
public struct SlackWebAPI: Sendable {
    let http: PlatformHTTP
    let token: Secret

    /// Slack's API unless a receiver's `url` says otherwise.
    public static let defaultBase = "https://slack.com/api"

    public init(http: PlatformHTTP, token: Secret) {
        self.http = http
        self.token = token
    }

    /// A posted message: its channel's id and its `ts`, stored as `CHANNEL/TS`.
    public struct MessageRef: Sendable, Equatable {
        public var channel: String
        public var ts: String

        public init(channel: String, ts: String) {
            self.channel = channel
            self.ts = ts
        }

        /// A stored reference (`C0123ABCD/1712345678.000100`); nil for anything else (a damaged or
        /// restored row, another platform's id).
        public init?(_ text: String) {
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, Self.isChannel(parts[0]), Self.isTS(parts[1]) else { return nil }
            self.init(channel: parts[0], ts: parts[1])
        }

        public var text: String { "\(channel)/\(ts)" }

        /// A conversation id: 1 to 40 capital letters and digits (`C…`, `G…`, `D…`).
        public static func isChannel(_ s: String) -> Bool {
            (1...40).contains(s.utf8.count)
                && s.utf8.allSatisfy { (65...90).contains($0) || (48...57).contains($0) }
        }

        /// A message's `ts`: seconds, a dot, and a sequence (`1712345678.000100`).
        static func isTS(_ s: String) -> Bool {
            let parts = s.split(separator: ".", omittingEmptySubsequences: false)
            return parts.count == 2 && (1...12).contains(parts[0].utf8.count) && (1...8).contains(parts[1].utf8.count)
                && parts.allSatisfy { $0.utf8.allSatisfy { (48...57).contains($0) } }
        }
    }

    /// Posts `payload` (a message: `text`, `blocks`, `attachments`) to `channel`, in the thread of
    /// `threadTS` when given, and returns where it went.
    public func postMessage(channel: String, threadTS: String? = nil, payload: [String: JSONValue], key: String)
        async throws -> MessageRef
    {
        var body = payload
        body["channel"] = .string(channel)
        if let threadTS { body["thread_ts"] = .string(threadTS) }
        let answer = try await call("chat.postMessage", body, key: key)
        guard let c = answer.channel, let ts = answer.ts, MessageRef.isChannel(c), MessageRef.isTS(ts) else {
            return MessageRef(channel: "", ts: "")
        }
        return MessageRef(channel: c, ts: ts)
    }

    /// Replaces message `ref`'s text, blocks and attachments with `payload`'s.
    public func update(_ ref: MessageRef, payload: [String: JSONValue], key: String) async throws {
        _ = try await call("chat.update", Self.updateBody(ref, payload: payload), key: key)
    }

    /// `chat.update`'s body: the payload's text, blocks and attachments, and where the message is.
    static func updateBody(_ ref: MessageRef, payload: [String: JSONValue]) -> [String: JSONValue] {
        var body = payload.filter { ["text", "blocks", "attachments"].contains($0.key) }
        body["channel"] = .string(ref.channel)
        body["ts"] = .string(ref.ts)
        return body
    }

    struct Reply: Decodable {
        var ok: Bool
        var error: String?
        var channel: String?
        var ts: String?
    }

    /// One method call; a refusal (`ok: false`) thrown as its `DeliveryError`.
    func call(_ method: String, _ body: [String: JSONValue], key: String) async throws -> Reply {
        let answer = try await http.call(
            .POST, "/" + method,
            headers: [("Authorization", "Bearer " + token.value), ("Idempotency-Key", key)],
            body: WebhookPayloads.encode(body))
        guard let reply = try? JSONDecoder().decode(Reply.self, from: Data(answer.body)) else {
            throw DeliveryError(
                kind: .platform("unreadable answer"), retryable: true,
                message: "receiver \(http.name): Slack \(method): the answer is not Slack's JSON")
        }
        guard reply.ok else {
            throw Self.refusal(reply.error ?? "", method: method, receiver: http.name, retryAfter: answer.retryAfter)
        }
        return reply
    }

    /// Codes of refusals that may pass (Slack's own trouble, a rate limit): retried.
    static let transient: Set<String> = [
        "ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout",
    ]
    /// Codes that say the message to edit is no longer there for this token: a new one is posted.
    static let gone: Set<String> = ["message_not_found", "edit_window_closed", "cant_update_message"]

    /// The `DeliveryError` of Slack's `error` code (bounded to 60 characters of `[a-z0-9_]`: it is
    /// the far end's text).
    static func refusal(_ code: String, method: String, receiver: String, retryAfter: Double?) -> DeliveryError {
        let safe = String(
            code.unicodeScalars.filter {
                CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789_").contains($0)
            }
            .prefix(60).map(Character.init))
        let word = safe.isEmpty ? "unknown_error" : safe
        let retry = transient.contains(word)
        return DeliveryError(
            kind: .platform(word), retryable: retry, retryAfter: retry ? retryAfter : nil,
            message: "receiver \(receiver): Slack \(method): \(word)\(retry ? "" : " (not retried)")",
            messageGone: gone.contains(word))
    }
}
