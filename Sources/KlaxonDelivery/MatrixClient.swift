import Foundation
import KlaxonCore
import NIOHTTP1

/// Matrix's client-server API (https://spec.matrix.org/v1.11/client-server-api/) for an access
/// token: `PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}` sends a message and
/// answers its `event_id`; an edit is another message event whose `m.relates_to` is `{"rel_type":
/// "m.replace", "event_id": …}` and whose `m.new_content` is the new content (the spec's "event
/// replacements"). The transaction id is the notification's idempotency key, so a resend after a
/// crash is the same transaction and the homeserver answers the same event instead of sending twice.
/// Errors are `{"errcode", "error"}`; a rate limit is 429 `M_LIMIT_EXCEEDED` with `retry_after_ms`.
/// The room is per call: a direct message is a message to the room of a direct chat.
public struct MatrixClient: Sendable {
    let http: PlatformHTTP
    let token: Secret

    public init(http: PlatformHTTP, token: Secret) {
        self.http = http
        self.token = token
    }

    /// A room id (`!opaque:server`) as the spec writes it: `!`, at most 255 bytes, no whitespace.
    public static func isRoomID(_ s: String) -> Bool {
        s.hasPrefix("!") && s.contains(":") && (3...255).contains(s.utf8.count)
            && s.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7f }
    }

    /// An event id (`$opaque`, room versions 4+; `$opaque:server` before): at most 255 printable bytes.
    public static func isEventID(_ s: String) -> Bool {
        s.hasPrefix("$") && (2...255).contains(s.utf8.count)
            && s.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7f && $0 != "/" }
    }

    /// A message's content: plain `body` and the HTML `formatted_body`.
    public struct Content: Sendable, Equatable {
        public var body: String
        public var html: String

        public init(body: String, html: String) {
            self.body = body
            self.html = html
        }

        var object: [String: JSONValue] {
            [
                "msgtype": "m.text", "body": .string(body), "format": "org.matrix.custom.html",
                "formatted_body": .string(html),
            ]
        }
    }

    /// The event of a new message.
    public static func messageEvent(_ c: Content) -> [String: JSONValue] { c.object }

    /// The event that replaces `eventID`'s content with `c` (clients without edits show `* body`).
    public static func replacementEvent(of eventID: String, _ c: Content) -> [String: JSONValue] {
        var event = c.object
        event["body"] = .string("* " + c.body)
        event["formatted_body"] = .string("* " + c.html)
        event["m.new_content"] = .object(c.object)
        event["m.relates_to"] = ["rel_type": "m.replace", "event_id": .string(eventID)]
        return event
    }

    /// Sends `content` to `room` under transaction `txnID`; returns its event id ("" when none).
    public func send(room: String, _ content: Content, txnID: String) async throws -> String {
        try await put(room: room, Self.messageEvent(content), txnID: txnID)
    }

    /// Replaces event `eventID`'s content.
    public func edit(room: String, eventID: String, _ content: Content, txnID: String) async throws {
        _ = try await put(room: room, Self.replacementEvent(of: eventID, content), txnID: txnID)
    }

    struct Reply: Decodable {
        var event_id: String?
        var errcode: String?
        var error: String?
        var retry_after_ms: Double?
    }

    /// Path segments are percent-encoded: a room id holds `!` and `:`, a transaction id anything.
    static func segment(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    func put(room: String, _ event: [String: JSONValue], txnID: String) async throws -> String {
        let path = "/_matrix/client/v3/rooms/\(Self.segment(room))/send/m.room.message/\(Self.segment(txnID))"
        let answer = try await http.call(
            .PUT, path, headers: [("Authorization", "Bearer " + token.value)], body: WebhookPayloads.encode(event),
            accept: [400, 401, 403, 404, 429])
        let reply = try? JSONDecoder().decode(Reply.self, from: Data(answer.body))
        guard (200...299).contains(answer.status) else {
            throw Self.refusal(
                status: answer.status, code: reply?.errcode ?? "", receiver: http.name,
                retryAfter: reply?.retry_after_ms.map { $0 / 1000 } ?? answer.retryAfter)
        }
        guard let id = reply?.event_id, Self.isEventID(id) else { return "" }
        return id
    }

    /// A refusal's `DeliveryError`: 429 (`M_LIMIT_EXCEEDED`) retried after `retry_after_ms`; an
    /// unknown or revoked token (401), a room the user may not post to (403) or does not know (404)
    /// are not retried. `errcode` is the far end's text: kept to 40 of `[A-Z_]`.
    static func refusal(status: Int, code: String, receiver: String, retryAfter: Double?) -> DeliveryError {
        let safe = String(
            code.unicodeScalars.filter { ("A"..."Z").contains($0) || $0 == "_" }.prefix(40).map(Character.init))
        let retry = status == 429
        return DeliveryError(
            kind: .httpStatus(status), retryable: retry, retryAfter: retry ? retryAfter.map { min($0, 3600) } : nil,
            message: "receiver \(receiver): Matrix: HTTP \(status) \(safe)\(retry ? "" : " (not retried)")")
    }
}
