import Foundation
import KlaxonCore
import Synchronization

/// A local stand-in for Slack's Web API as a bot token uses it, for living-message tests. It holds
/// the messages posted and answers as Slack documents (https://api.slack.com/methods/chat.postMessage,
/// https://api.slack.com/methods/chat.update, https://api.slack.com/apis/rate-limits):
///
/// - `POST /api/chat.postMessage` with `channel` (a channel id, or a user id: the app's direct
///   message with that user, answered as channel `D…`) and `text`, `blocks` or `attachments`;
///   `thread_ts` makes it a reply in that message's thread. Answers `{"ok": true, "channel", "ts",
///   "message"}`.
/// - `POST /api/chat.update` with `channel` and `ts`: replaces the message's text, blocks and
///   attachments; an unknown `ts` answers `{"ok": false, "error": "message_not_found"}`.
/// - Every refusal is HTTP 200 with `ok: false`: no `Authorization` is `not_authed`, another token
///   `invalid_auth`, a revoked one `token_revoked`, an unknown channel `channel_not_found`, no text
///   at all `no_text`, text over 40,000 characters `msg_too_long`, more than 50 blocks
///   `invalid_blocks`, more than 100 attachments `too_many_attachments`.
/// - `rateLimit(_:retryAfter:)`: the next calls answer HTTP 429 with `Retry-After` and
///   `{"ok": false, "error": "ratelimited"}`.
///
/// Request shapes Slack would refuse or warn about are noted in `problems`: a method other than
/// POST, a `Content-Type` other than `application/json; charset=utf-8`, a body that is not a JSON
/// object, and every refusal above.
public final class SlackStandIn: TestServer {
    /// A message as the stand-in holds it.
    public struct Message: Sendable, Equatable {
        public var channel: String
        public var ts: String
        public var text: String
        /// The text of its `timeline` context block (a living message's), "" when it has none.
        public var timeline: String
        public var blocks: Int
        public var edits: Int
        /// The parent's `ts` for a reply in a thread.
        public var threadTS: String?
    }

    struct State {
        var messages: [Message] = []
        var problems: [String] = []
        var calls: [String] = []
        var limited: [Double] = []
        var revoked = false
        var next = 0
    }

    /// The state and the answers, shared by the server's handler and the test.
    final class Core: Sendable {
        let state = Mutex(State())
        let token = "xoxb-1234-5678-standInToken0123456789"
        let channel = "C0123ABCD"
    }

    let core: Core
    let server: StandInServer
    /// The bot token it takes.
    public var token: String { core.token }
    /// The channel it knows.
    public var channel: String { core.channel }

    /// The Web API's base URL (what a receiver's `url` holds).
    public var url: String { "http://127.0.0.1:\(server.port)/api" }

    private init(core: Core, server: StandInServer) {
        self.core = core
        self.server = server
    }

    /// Starts a stand-in, runs `body` with it and stops it before returning, also when `body` throws.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (SlackStandIn) async throws -> T
    ) async throws -> T {
        let core = Core()
        let server = try await StandInServer.start(label: "klaxon.test.slack") { core.answer($0) }
        return try await serving(SlackStandIn(core: core, server: server), body)
    }

    @discardableResult
    public func stop() async -> Bool { await server.stop() }

    /// The messages of the channels (replies in threads included), oldest first.
    public var messages: [Message] { core.state.withLock { $0.messages } }
    /// The messages that are not replies in a thread.
    public var topLevel: [Message] { messages.filter { $0.threadTS == nil } }
    /// What Slack would refuse or warn about.
    public var problems: [String] { core.state.withLock { $0.problems } }
    /// The methods called, in order (`chat.postMessage`, `chat.update`).
    public var calls: [String] { core.state.withLock { $0.calls } }

    /// The next `count` calls answer 429, asking to wait `retryAfter` seconds.
    public func rateLimit(_ count: Int, retryAfter: Double) {
        core.state.withLock { $0.limited += Array(repeating: retryAfter, count: count) }
    }

    /// Deletes a message, as someone in the channel can: an update of it is then `message_not_found`.
    public func delete(ts: String) { core.state.withLock { s in s.messages.removeAll { $0.ts == ts } } }

    /// Revokes the token: every later call is `token_revoked`.
    public func revoke() { core.state.withLock { $0.revoked = true } }

}

extension SlackStandIn.Core {
    struct Reply: Encodable {
        var ok: Bool
        var error: String?
        var channel: String?
        var ts: String?
        var message: Posted?
    }

    struct Posted: Encodable {
        var type = "message"
        var text: String
        var ts: String
        var bot_id = "B0123STAND"
        var thread_ts: String?
    }

    func answer(_ r: StandInRequest) -> StandInAnswer {
        state.withLock { s in
            let method = String(r.path.split(separator: "/").last ?? "")
            s.calls.append(method)
            func refuse(_ code: String, problem: Bool = true) -> StandInAnswer {
                if problem { s.problems.append("\(method): \(code)") }
                return .json(200, Reply(ok: false, error: code))
            }
            if !s.limited.isEmpty {
                let wait = s.limited.removeFirst()
                return .json(
                    429, Reply(ok: false, error: "ratelimited"),
                    headers: ["Retry-After": String(Int(wait.rounded(.up)))])
            }
            guard r.method == "POST" else { return refuse("invalid_request_method") }
            guard r.path.hasPrefix("/api/") else { return StandInAnswer(status: 404, body: "Not Found") }
            guard let auth = r.headers["authorization"] else { return refuse("not_authed") }
            guard auth == "Bearer " + token else { return refuse("invalid_auth") }
            if s.revoked { return refuse("token_revoked", problem: false) }
            let contentType = r.headers["content-type"] ?? ""
            if contentType.lowercased().replacingOccurrences(of: " ", with: "") != "application/json;charset=utf-8" {
                s.problems.append("\(method): Content-Type \(contentType) (missing_charset)")
            }
            guard let body = JSONValue.parse(r.body)?.object else { return refuse("invalid_json") }
            var channel = body["channel"]?.string ?? ""
            // A user id: the app's direct message with that user.
            if channel.hasPrefix("U") || channel.hasPrefix("W") { channel = "D" + channel.dropFirst() }
            guard channel == self.channel || channel.hasPrefix("D") else { return refuse("channel_not_found") }
            let text = body["text"]?.string ?? ""
            let blocks = body["blocks"]?.array?.compactMap(\.object) ?? []
            let attachments = body["attachments"]?.array ?? []
            if text.isEmpty && blocks.isEmpty && attachments.isEmpty { return refuse("no_text") }
            if text.count > 40_000 { return refuse("msg_too_long") }
            if blocks.count > 50 { return refuse("invalid_blocks") }
            if attachments.count > 100 { return refuse("too_many_attachments") }
            let timeline =
                blocks.first { $0["block_id"]?.string == "timeline" }
                .flatMap { $0["elements"]?.array?.first?.object?["text"]?.string } ?? ""
            switch method {
            case "chat.postMessage":
                let thread = body["thread_ts"]?.string
                if let thread, !s.messages.contains(where: { $0.ts == thread && $0.channel == channel }) {
                    return refuse("thread_not_found")
                }
                s.next += 1
                let ts = "1772373600.\(String(format: "%06d", s.next))"
                s.messages.append(
                    SlackStandIn.Message(
                        channel: channel, ts: ts, text: text, timeline: timeline, blocks: blocks.count, edits: 0,
                        threadTS: thread))
                return .json(
                    200,
                    Reply(
                        ok: true, channel: channel, ts: ts, message: Posted(text: text, ts: ts, thread_ts: thread)))
            case "chat.update":
                guard let ts = body["ts"]?.string else { return refuse("message_not_found") }
                guard let i = s.messages.firstIndex(where: { $0.ts == ts && $0.channel == channel }) else {
                    return refuse("message_not_found", problem: false)
                }
                s.messages[i].text = text
                s.messages[i].timeline = timeline
                s.messages[i].blocks = blocks.count
                s.messages[i].edits += 1
                return .json(200, Reply(ok: true, channel: channel, ts: ts, message: Posted(text: text, ts: ts)))
            default:
                return refuse("unknown_method")
            }
        }
    }
}
