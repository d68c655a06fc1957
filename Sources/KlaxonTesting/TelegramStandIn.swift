import Foundation
import KlaxonCore
import Synchronization

/// A local stand-in for Telegram's Bot API (https://core.telegram.org/bots/api), for
/// living-message tests. It holds the messages a bot sent and answers as the Bot API does:
///
/// - `POST /bot{token}/sendMessage` with `chat_id`, `text`, `parse_mode: HTML` and an optional
///   `reply_markup.inline_keyboard`: `{"ok": true, "result": {message_id, chat, date, text}}`;
/// - `POST /bot{token}/editMessageText` with `chat_id`, `message_id` and the same fields: an
///   unknown message is 400 "Bad Request: message to edit not found", the same content again 400
///   "Bad Request: message is not modified: …";
/// - another token: 401 "Unauthorized"; an unknown chat: 400 "Bad Request: chat not found"; an
///   empty text 400 "Bad Request: message text is empty"; text over 4,096 characters once its
///   entities are parsed: 400 "Bad Request: message is too long"; HTML Telegram cannot parse (a
///   tag it does not know, a bare `<` or `&`): 400 "Bad Request: can't parse entities: …"; a
///   button's `callback_data` outside 1 to 64 bytes: 400 "Bad Request: BUTTON_DATA_INVALID";
/// - `rateLimit(_:retryAfter:)`: the next calls answer 429 "Too Many Requests: retry after N" with
///   `parameters.retry_after`.
///
/// Every refusal but the ones a test provokes on purpose (a deleted message) is noted in `problems`.
public final class TelegramStandIn: TestServer {
    /// A message as the stand-in holds it.
    public struct Message: Sendable, Equatable {
        public var id: Int64
        public var chat: String
        /// The text as Telegram shows it (tags gone, entities read).
        public var text: String
        /// The HTML it was sent as.
        public var html: String
        /// The inline keyboard: each button's `callback_data`, by row.
        public var buttons: [[String]]
        public var edits: Int
    }

    struct State {
        var messages: [Message] = []
        var problems: [String] = []
        var calls: [String] = []
        var limited: [Int] = []
        var next: Int64 = 100
        /// Users who opened the bot: their private chats (the chat id is the user's id).
        var privateChats: Set<String> = []
    }

    final class Core: Sendable {
        let state = Mutex(State())
        let token = "123456789:AAHstandInToken_abcdefghijklmnopqrstu"
        let chat = "-1001234567890"
    }

    let core: Core
    let server: StandInServer
    /// The bot's token.
    public var token: String { core.token }
    /// The chat the bot is in.
    public var chat: String { core.chat }
    /// The Bot API's base URL (what a receiver's `url` holds).
    public var url: String { "http://127.0.0.1:\(server.port)" }

    private init(core: Core, server: StandInServer) {
        self.core = core
        self.server = server
    }

    /// Starts a stand-in, runs `body` with it and stops it before returning, also when `body` throws.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (TelegramStandIn) async throws -> T
    ) async throws -> T {
        let core = Core()
        let server = try await StandInServer.start(label: "klaxon.test.telegram") { core.answer($0) }
        return try await serving(TelegramStandIn(core: core, server: server), body)
    }

    @discardableResult
    public func stop() async -> Bool { await server.stop() }

    public var messages: [Message] { core.state.withLock { $0.messages } }
    public var problems: [String] { core.state.withLock { $0.problems } }
    /// The methods called, in order.
    public var calls: [String] { core.state.withLock { $0.calls } }

    /// The next `count` calls answer 429, asking to wait `retryAfter` whole seconds.
    public func rateLimit(_ count: Int, retryAfter: Int) {
        core.state.withLock { $0.limited += Array(repeating: retryAfter, count: count) }
    }

    /// A user opens the bot (presses Start): the bot may then message their private chat, whose id
    /// is the user's. A user who never did is 403 "Forbidden: bot can't initiate conversation with
    /// a user", as Telegram answers.
    public func start(user: Int64) { core.state.withLock { _ = $0.privateChats.insert(String(user)) } }

    /// Deletes a message, as a chat's admin can: an edit of it is then "message to edit not found".
    public func delete(_ id: Int64) { core.state.withLock { s in s.messages.removeAll { $0.id == id } } }

    /// The text Telegram shows for `html` (tags dropped, entities read), or why it cannot parse it.
    public static func parseHTML(_ html: String) -> Result<String, StandInParseError> {
        let allowed: Set<String> = [
            "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "span", "tg-spoiler", "a", "code", "pre",
            "blockquote", "tg-emoji",
        ]
        let entities = ["lt": "<", "gt": ">", "amp": "&", "quot": "\""]
        var out = ""
        var open: [String] = []
        var i = html.startIndex
        while i < html.endIndex {
            let c = html[i]
            if c == "<" {
                guard let close = html[i...].firstIndex(of: ">") else { return .failure(.init("unclosed start tag")) }
                var tag = html[html.index(after: i)..<close]
                let closing = tag.hasPrefix("/")
                if closing { tag = tag.dropFirst() }
                let name = String(tag.prefix { $0 != " " })
                guard allowed.contains(name) else { return .failure(.init("unsupported start tag \"\(name)\"")) }
                if closing {
                    guard open.last == name else { return .failure(.init("unmatched end tag \"\(name)\"")) }
                    open.removeLast()
                } else {
                    open.append(name)
                }
                i = html.index(after: close)
            } else if c == "&" {
                guard let semi = html[i...].firstIndex(of: ";"), html.distance(from: i, to: semi) <= 10 else {
                    return .failure(.init("a bare & in the text"))
                }
                let name = String(html[html.index(after: i)..<semi])
                if let e = entities[name] {
                    out += e
                } else if name.hasPrefix("#"), let v = UInt32(name.dropFirst()), let u = Unicode.Scalar(v) {
                    out.unicodeScalars.append(u)
                } else {
                    return .failure(.init("unknown entity &\(name);"))
                }
                i = html.index(after: semi)
            } else {
                if c == ">" { return .failure(.init("a bare > in the text")) }
                out.append(c)
                i = html.index(after: i)
            }
        }
        guard open.isEmpty else { return .failure(.init("unclosed tag \"\(open.last!)\"")) }
        return .success(out)
    }
}

/// Why the stand-in cannot parse a message's HTML.
public struct StandInParseError: Error, Sendable, Equatable {
    public var message: String
    init(_ message: String) { self.message = message }
}

extension TelegramStandIn.Core {
    struct Failure: Encodable {
        struct Parameters: Encodable { var retry_after: Int }
        var ok = false
        var error_code: Int
        var description: String
        var parameters: Parameters?
    }

    struct Chat: Encodable {
        var id: Int64
        var type = "supergroup"
    }

    struct Sent: Encodable {
        var message_id: Int64
        var date: Int64 = 1_772_373_600
        var edit_date: Int64?
        var chat: Chat
        var text: String
    }

    struct Success: Encodable {
        var ok = true
        var result: Sent
    }

    func answer(_ r: StandInRequest) -> StandInAnswer {
        state.withLock { s in
            let parts = r.path.split(separator: "/").map(String.init)
            let method = parts.count == 2 ? parts[1] : ""
            s.calls.append(method)
            func fail(_ code: Int, _ description: String, problem: Bool = true) -> StandInAnswer {
                if problem { s.problems.append("\(method): \(description)") }
                return .json(code, Failure(error_code: code, description: description))
            }
            if !s.limited.isEmpty {
                let wait = s.limited.removeFirst()
                return .json(
                    429,
                    Failure(
                        error_code: 429, description: "Too Many Requests: retry after \(wait)",
                        parameters: .init(retry_after: wait)))
            }
            guard parts.count == 2, parts[0].hasPrefix("bot") else { return fail(404, "Not Found") }
            guard parts[0] == "bot" + token else { return fail(401, "Unauthorized") }
            guard r.method == "POST" || r.method == "GET" else { return fail(404, "Not Found") }
            guard (r.headers["content-type"] ?? "").lowercased().hasPrefix("application/json"),
                let body = JSONValue.parse(r.body)?.object
            else { return fail(400, "Bad Request: the body is not a JSON object") }
            let chatID = body["chat_id"]?.number.map { String(Int64($0)) } ?? body["chat_id"]?.string
            guard let target = chatID, target == chat || s.privateChats.contains(target) else {
                if let id = chatID, let n = Int64(id), n > 0 {
                    return fail(403, "Forbidden: bot can't initiate conversation with a user")
                }
                return fail(400, "Bad Request: chat not found")
            }
            let html = body["text"]?.string ?? ""
            guard !html.isEmpty else { return fail(400, "Bad Request: message text is empty") }
            guard body["parse_mode"]?.string == "HTML" else { return fail(400, "Bad Request: expected HTML") }
            let text: String
            switch TelegramStandIn.parseHTML(html) {
            case .success(let t): text = t
            case .failure(let e): return fail(400, "Bad Request: can't parse entities: \(e.message)")
            }
            guard text.count <= 4096 else { return fail(400, "Bad Request: message is too long") }
            var buttons: [[String]] = []
            if let markup = body["reply_markup"]?.object {
                for row in markup["inline_keyboard"]?.array ?? [] {
                    var datas: [String] = []
                    for b in row.array ?? [] {
                        let data = b.object?["callback_data"]?.string ?? ""
                        guard (1...64).contains(data.utf8.count), !(b.object?["text"]?.string ?? "").isEmpty else {
                            return fail(400, "Bad Request: BUTTON_DATA_INVALID")
                        }
                        datas.append(data)
                    }
                    buttons.append(datas)
                }
            }
            let chatNumber = Int64(target) ?? 0
            let chatType = target == chat ? "supergroup" : "private"
            switch method {
            case "sendMessage":
                s.next += 1
                s.messages.append(
                    TelegramStandIn.Message(
                        id: s.next, chat: target, text: text, html: html, buttons: buttons, edits: 0))
                return .json(
                    200,
                    Success(result: Sent(message_id: s.next, chat: Chat(id: chatNumber, type: chatType), text: text)))
            case "editMessageText":
                let id = body["message_id"]?.number.map { Int64($0) } ?? 0
                guard let i = s.messages.firstIndex(where: { $0.id == id && $0.chat == target }) else {
                    return fail(400, "Bad Request: message to edit not found", problem: false)
                }
                if s.messages[i].html == html && s.messages[i].buttons == buttons {
                    return fail(
                        400,
                        "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
                        problem: false)
                }
                s.messages[i].text = text
                s.messages[i].html = html
                s.messages[i].buttons = buttons
                s.messages[i].edits += 1
                return .json(
                    200,
                    Success(
                        result: Sent(
                            message_id: id, edit_date: 1_772_373_700, chat: Chat(id: chatNumber, type: chatType),
                            text: text)))
            default:
                return fail(404, "Not Found")
            }
        }
    }
}
