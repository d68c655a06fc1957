import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import KlaxonCore
import KlaxonServer
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A local stand-in for Discord's webhook API, for living-message tests: it holds the messages a
/// webhook posted and answers as Discord documents
/// (https://discord.com/developers/docs/resources/webhook):
///
/// - `POST /api/webhooks/{id}/{token}` executes the webhook: with `?wait=true` it answers 200 and the
///   message object (its snowflake `id`), without it 204 and no body;
/// - `PATCH /api/webhooks/{id}/{token}/messages/{message_id}` edits a message the webhook posted and
///   answers the message object; an unknown message answers 404 `{"message": "Unknown Message",
///   "code": 10008}`;
/// - a wrong token answers 401 (code 50027); a malformed body 400 (code 50035, "Invalid Form Body");
/// - `rateLimit(_:retryAfter:)` makes the next requests answer 429 with `Retry-After` and the JSON
///   `retry_after` (seconds), as Discord's rate limits do.
///
/// It checks the documented request shapes and notes each violation in `problems` (and answers
/// 400): `Content-Type: application/json`, a JSON object with `content` or `embeds`, `content` at
/// most 2,000 characters, at most 10 embeds, an embed's title 256, description 4,096, footer 2,048,
/// at most 25 fields of name 256 and value 1,024, all embeds' text together at most 6,000.
public final class DiscordStandIn: TestServer {
    /// A message as the stand-in holds it.
    public struct Message: Sendable, Equatable {
        public var id: String
        public var content: String
        public var embeds: Int
        public var edits: Int
    }

    struct State {
        var messages: [String: Message] = [:]
        var order: [String] = []
        var problems: [String] = []
        var requests: [(method: String, path: String, query: String)] = []
        var limited: [Double] = []
        var postsWithoutWait = 0
        var next: Int64 = 0
    }

    /// The state the handler and the test share.
    final class Shared: Sendable {
        let lock = Mutex(State())
    }

    let shared: Shared
    public var port: Int { server.port }
    public let webhookID = "1182045590871465984"
    public let token = "standin-token_Abc123"
    private let server: StandInServer

    /// The webhook's URL (what a receiver's `url:` holds).
    public var url: String { "http://127.0.0.1:\(port)/api/webhooks/\(webhookID)/\(token)" }

    private init(server: StandInServer, shared: Shared) {
        self.server = server
        self.shared = shared
    }

    /// Starts a stand-in, runs `body` with it and stops it before returning, also when `body` throws.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (DiscordStandIn) async throws -> T
    ) async throws -> T {
        try await serving(try await start(), body)
    }

    /// The messages the webhook holds, oldest first.
    public var messages: [Message] { shared.lock.withLock { s in s.order.compactMap { s.messages[$0] } } }
    /// Request shapes that Discord would refuse.
    public var problems: [String] { shared.lock.withLock { $0.problems } }
    /// Every request: method, path (the token shown as `{token}`) and query.
    public var requests: [(method: String, path: String, query: String)] { shared.lock.withLock { $0.requests } }
    /// Executions without `?wait=true` (Discord answers no message object, so no id to edit by).
    public var postsWithoutWait: Int { shared.lock.withLock { $0.postsWithoutWait } }

    /// The next `count` requests answer 429, asking to wait `retryAfter` seconds.
    public func rateLimit(_ count: Int, retryAfter: Double) {
        shared.lock.withLock { $0.limited += Array(repeating: retryAfter, count: count) }
    }

    /// Deletes a message, as someone in the channel can: an edit of it then answers 404 (10008).
    public func delete(_ id: String) {
        shared.lock.withLock { s in
            s.messages[id] = nil
            s.order.removeAll { $0 == id }
        }
    }

    /// Starts a stand-in on a free port of 127.0.0.1.
    public static func start() async throws -> DiscordStandIn {
        let shared = Shared()
        let webhookID = "1182045590871465984"
        let token = "standin-token_Abc123"
        let server = try await StandInServer.start(label: "klaxon.test.discord") { request in
            let answer = Self.answer(
                shared: shared, method: request.method, path: request.path, query: request.query,
                contentType: request.headers["content-type"] ?? "", body: request.body, webhookID: webhookID,
                token: token)
            return StandInAnswer(status: answer.status, headers: answer.headers, body: answer.body)
        }
        return DiscordStandIn(server: server, shared: shared)
    }

    @discardableResult
    public func stop() async -> Bool { await server.stop() }

    // MARK: Answers

    struct Answer {
        var status: Int
        var headers: [String: String] = [:]
        var body: String = ""
    }

    struct Footer: Decodable { var text: String? }
    struct Named: Decodable { var name: String? }
    struct Field: Decodable {
        var name: String?
        var value: String?
    }
    struct Embed: Decodable {
        var title: String?
        var description: String?
        var footer: Footer?
        var author: Named?
        var fields: [Field]?
    }
    struct Body: Decodable {
        var content: String?
        var embeds: [Embed]?
    }
    struct MessageObject: Encodable {
        var id: String
        var type = 0
        var content: String
        var channel_id = "1182045590871465000"
        var webhook_id: String
        var timestamp: String
        var edited_timestamp: String?
        var embeds: [String] = []
    }
    struct ErrorObject: Encodable {
        var message: String
        var code: Int
    }
    struct RateLimited: Encodable {
        var message = "You are being rate limited."
        var retry_after: Double
        var global = false
    }

    static func json<T: Encodable>(_ value: T) -> String {
        String(decoding: (try? JSONEncoder().encode(value)) ?? Data("{}".utf8), as: UTF8.self)
    }

    static func error(_ status: Int, _ message: String, code: Int) -> Answer {
        Answer(status: status, body: json(ErrorObject(message: message, code: code)))
    }

    /// A snowflake: milliseconds since Discord's epoch (2015), then a counter.
    static func snowflake(_ s: inout State) -> String {
        s.next += 1
        let ms = Int64(Date().timeIntervalSince1970 * 1000) - 1_420_070_400_000
        return String((ms << 22) | (s.next & 0xfff))
    }

    /// The shape problems of a message body (empty: Discord would take it).
    static func problems(_ body: Body) -> [String] {
        var out: [String] = []
        let content = body.content ?? ""
        if content.count > 2000 { out.append("content has \(content.count) characters (at most 2000)") }
        let embeds = body.embeds ?? []
        if content.isEmpty && embeds.isEmpty { out.append("neither content nor embeds") }
        if embeds.count > 10 { out.append("\(embeds.count) embeds (at most 10)") }
        var total = 0
        for (i, e) in embeds.enumerated() {
            let title = e.title?.count ?? 0
            let description = e.description?.count ?? 0
            let footer = e.footer?.text?.count ?? 0
            let author = e.author?.name?.count ?? 0
            if title > 256 { out.append("embed \(i): title of \(title) (at most 256)") }
            if description > 4096 { out.append("embed \(i): description of \(description) (at most 4096)") }
            if footer > 2048 { out.append("embed \(i): footer of \(footer) (at most 2048)") }
            if author > 256 { out.append("embed \(i): author of \(author) (at most 256)") }
            let fields = e.fields ?? []
            if fields.count > 25 { out.append("embed \(i): \(fields.count) fields (at most 25)") }
            total += title + description + footer + author
            for f in fields {
                let name = f.name?.count ?? 0
                let value = f.value?.count ?? 0
                if name > 256 || name == 0 { out.append("embed \(i): a field's name of \(name) (1 to 256)") }
                if value > 1024 || value == 0 { out.append("embed \(i): a field's value of \(value) (1 to 1024)") }
                total += name + value
            }
        }
        if total > 6000 { out.append("embeds hold \(total) characters (at most 6000)") }
        return out
    }

    static func answer(
        shared: Shared, method: String, path: String, query: String, contentType: String, body: Data,
        webhookID: String, token: String
    ) -> Answer {
        shared.lock.withLock { s in
            let shown = path.replacingOccurrences(of: token, with: "{token}")
            s.requests.append((method, shown, query))
            if !s.limited.isEmpty {
                let wait = s.limited.removeFirst()
                var a = Answer(status: 429, body: json(RateLimited(retry_after: wait)))
                a.headers["Retry-After"] = String(Int(wait.rounded(.up)))
                a.headers["X-RateLimit-Scope"] = "user"
                return a
            }
            let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
            guard parts.count >= 4, parts[0] == "api", parts[1] == "webhooks", parts[2] == webhookID else {
                return error(404, "404: Not Found", code: 0)
            }
            guard parts[3] == token else { return error(401, "Invalid Webhook Token", code: 50027) }
            func refuse(_ problems: [String]) -> Answer {
                s.problems += problems.map { "\(method) \(shown): \($0)" }
                return error(400, "Invalid Form Body", code: 50035)
            }
            guard contentType.lowercased().hasPrefix("application/json") else {
                return refuse(["Content-Type is \(contentType), not application/json"])
            }
            guard let decoded = try? JSONDecoder().decode(Body.self, from: body) else {
                return refuse(["the body is not a JSON object of a message"])
            }
            let found = problems(decoded)
            guard found.isEmpty else { return refuse(found) }
            let now = Timestamp.format(Int64(Date().timeIntervalSince1970))
            let items = query.split(separator: "&").map(String.init)
            switch (method, parts.count) {
            case ("POST", 4):
                let id = snowflake(&s)
                let m = Message(id: id, content: decoded.content ?? "", embeds: decoded.embeds?.count ?? 0, edits: 0)
                s.messages[id] = m
                s.order.append(id)
                guard items.contains("wait=true") else {
                    s.postsWithoutWait += 1
                    return Answer(status: 204)
                }
                return Answer(
                    status: 200,
                    body: json(MessageObject(id: id, content: m.content, webhook_id: webhookID, timestamp: now)))
            case ("PATCH", 6) where parts[4] == "messages":
                guard var m = s.messages[parts[5]] else { return error(404, "Unknown Message", code: 10008) }
                if let content = decoded.content { m.content = content }
                if let embeds = decoded.embeds { m.embeds = embeds.count }
                m.edits += 1
                s.messages[m.id] = m
                return Answer(
                    status: 200,
                    body: json(
                        MessageObject(
                            id: m.id, content: m.content, webhook_id: webhookID, timestamp: now, edited_timestamp: now))
                )
            default:
                return error(405, "405: Method Not Allowed", code: 0)
            }
        }
    }
}
