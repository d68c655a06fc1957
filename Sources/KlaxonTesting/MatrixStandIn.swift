import Foundation
import KlaxonCore
import Synchronization

/// A local stand-in for a Matrix homeserver's client-server API, for living-message tests. It holds
/// one room's messages and answers as the spec says (https://spec.matrix.org/v1.11/client-server-api/):
///
/// - `PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}` with `Authorization:
///   Bearer TOKEN` and an `m.room.message` event (`msgtype`, `body`; `format` and `formatted_body`):
///   200 `{"event_id": "$…"}`; the same transaction id again answers the same event and sends nothing;
/// - an event with `m.relates_to: {rel_type: m.replace, event_id}` and `m.new_content` replaces the
///   original's content (an edit); an edit of an event the room does not have (redacted, or never
///   sent) answers 404 `M_NOT_FOUND`;
/// - no token: 401 `M_MISSING_TOKEN`; another: 401 `M_UNKNOWN_TOKEN`; another room: 403
///   `M_FORBIDDEN`; an event over 65,536 bytes: 413 `M_TOO_LARGE`; a body that is not an
///   `m.text` event: 400 `M_BAD_JSON`;
/// - `rateLimit(_:retryAfterMs:)`: 429 `M_LIMIT_EXCEEDED` with `retry_after_ms`.
///
/// Refusals a test does not provoke are noted in `problems`.
public final class MatrixStandIn: TestServer {
    public struct Message: Sendable, Equatable {
        public var eventID: String
        public var body: String
        public var html: String
        public var edits: Int
    }

    struct State {
        var messages: [Message] = []
        var transactions: [String: String] = [:]
        var problems: [String] = []
        var requests = 0
        var limited: [Int] = []
        var next = 0
    }

    final class Core: Sendable {
        let state = Mutex(State())
        let token = "syt_a2xheG9u_standInAccessToken_0a1b2c"
        let room = "!floodroom:example.org"
    }

    let core: Core
    let server: StandInServer
    public var token: String { core.token }
    public var room: String { core.room }
    /// The homeserver's base URL.
    public var url: String { "http://127.0.0.1:\(server.port)" }

    private init(core: Core, server: StandInServer) {
        self.core = core
        self.server = server
    }

    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (MatrixStandIn) async throws -> T
    ) async throws -> T {
        let core = Core()
        let server = try await StandInServer.start(label: "klaxon.test.matrix") { core.answer($0) }
        return try await serving(MatrixStandIn(core: core, server: server), body)
    }

    @discardableResult
    public func stop() async -> Bool { await server.stop() }

    /// The room's messages (edits applied), oldest first.
    public var messages: [Message] { core.state.withLock { $0.messages } }
    public var problems: [String] { core.state.withLock { $0.problems } }
    /// Requests answered, all told.
    public var requests: Int { core.state.withLock { $0.requests } }

    public func rateLimit(_ count: Int, retryAfterMs: Int) {
        core.state.withLock { $0.limited += Array(repeating: retryAfterMs, count: count) }
    }

    /// Redacts a message, as a room moderator can: an edit of it then answers 404.
    public func redact(_ eventID: String) {
        core.state.withLock { s in s.messages.removeAll { $0.eventID == eventID } }
    }
}

extension MatrixStandIn.Core {
    struct Failure: Encodable {
        var errcode: String
        var error: String
        var retry_after_ms: Int?
    }

    struct Sent: Encodable { var event_id: String }

    func answer(_ r: StandInRequest) -> StandInAnswer {
        state.withLock { s in
            s.requests += 1
            func fail(_ status: Int, _ code: String, _ text: String, problem: Bool = true) -> StandInAnswer {
                if problem { s.problems.append("\(r.method) \(code): \(text)") }
                return .json(status, Failure(errcode: code, error: text))
            }
            if !s.limited.isEmpty {
                let wait = s.limited.removeFirst()
                return .json(
                    429, Failure(errcode: "M_LIMIT_EXCEEDED", error: "Too Many Requests", retry_after_ms: wait))
            }
            guard let auth = r.headers["authorization"] else {
                return fail(401, "M_MISSING_TOKEN", "Missing access token.")
            }
            guard auth == "Bearer " + token else {
                return fail(401, "M_UNKNOWN_TOKEN", "Invalid access token passed.")
            }
            let parts = r.path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
            guard r.method == "PUT", parts.count == 8, parts[0...3] == ["_matrix", "client", "v3", "rooms"],
                parts[5] == "send", parts[6] == "m.room.message"
            else { return fail(404, "M_UNRECOGNIZED", "Unrecognized request") }
            guard parts[4] == room else { return fail(403, "M_FORBIDDEN", "User not in room \(parts[4])") }
            if let event = s.transactions[parts[7]] { return .json(200, Sent(event_id: event)) }
            guard r.body.count <= 65_536 else { return fail(413, "M_TOO_LARGE", "event too large") }
            guard let event = JSONValue.parse(r.body)?.object, event["msgtype"]?.string == "m.text",
                let body = event["body"]?.string, !body.isEmpty
            else { return fail(400, "M_BAD_JSON", "not an m.text event") }
            if event["format"] != nil && event["format"]?.string != "org.matrix.custom.html" {
                return fail(400, "M_BAD_JSON", "unknown format")
            }
            s.next += 1
            let id = "$standin\(s.next)_abcdefghijklmnop"
            if let relation = event["m.relates_to"]?.object, relation["rel_type"]?.string == "m.replace" {
                guard let original = relation["event_id"]?.string,
                    let i = s.messages.firstIndex(where: { $0.eventID == original })
                else { return fail(404, "M_NOT_FOUND", "Event not found.", problem: false) }
                guard let new = event["m.new_content"]?.object, let newBody = new["body"]?.string else {
                    return fail(400, "M_BAD_JSON", "an edit without m.new_content")
                }
                s.messages[i].body = newBody
                s.messages[i].html = new["formatted_body"]?.string ?? ""
                s.messages[i].edits += 1
            } else {
                s.messages.append(
                    MatrixStandIn.Message(
                        eventID: id, body: body, html: event["formatted_body"]?.string ?? "", edits: 0))
            }
            s.transactions[parts[7]] = id
            return .json(200, Sent(event_id: id))
        }
    }
}
