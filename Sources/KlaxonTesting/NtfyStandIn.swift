import Foundation
import KlaxonCore
import Synchronization

/// A local stand-in for an ntfy server (2.16 and later), for living-message tests: `POST /` with a
/// JSON message (`topic`, `message`, `title`, `priority` 1 to 5, `tags`, `click`) publishes it and
/// answers the message (`id` of 12 letters and digits, `time`, `event: "message"`, `topic`); with
/// `X-Sequence-ID: S` the notification of sequence `S` is replaced (as the apps show it), else
/// the message's own id starts a sequence. `Authorization: Bearer TOKEN` is required (401
/// `{"code": 40101, "http": 401, "error": "unauthorized"}`); `rateLimit(_:retryAfter:)` answers 429
/// (`{"code": 42901, …}`, `Retry-After`). A message over 4,096 bytes, a priority outside 1 to 5, a
/// topic other than its own or a body that is not a JSON object is a 400 noted in `problems`.
public final class NtfyStandIn: TestServer {
    /// A notification as a phone shows it: the latest message of its sequence.
    public struct Notification: Sendable, Equatable {
        public var sequence: String
        public var title: String
        public var message: String
        public var priority: Int
        public var updates: Int
    }

    struct State {
        var notifications: [Notification] = []
        var problems: [String] = []
        var publishes = 0
        var limited: [Int] = []
        var next = 0
    }

    final class Core: Sendable {
        let state = Mutex(State())
        let token = "tk_standin0123456789abcdefghijk"
        let topic = "floods"
    }

    let core: Core
    let server: StandInServer
    public var token: String { core.token }
    public var topic: String { core.topic }
    public var url: String { "http://127.0.0.1:\(server.port)" }

    private init(core: Core, server: StandInServer) {
        self.core = core
        self.server = server
    }

    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (NtfyStandIn) async throws -> T
    ) async throws -> T {
        let core = Core()
        let server = try await StandInServer.start(label: "klaxon.test.ntfy") { core.answer($0) }
        return try await serving(NtfyStandIn(core: core, server: server), body)
    }

    @discardableResult
    public func stop() async -> Bool { await server.stop() }

    public var notifications: [Notification] { core.state.withLock { $0.notifications } }
    public var problems: [String] { core.state.withLock { $0.problems } }
    public var publishes: Int { core.state.withLock { $0.publishes } }

    public func rateLimit(_ count: Int, retryAfter: Int) {
        core.state.withLock { $0.limited += Array(repeating: retryAfter, count: count) }
    }
}

extension NtfyStandIn.Core {
    struct Failure: Encodable {
        var code: Int
        var http: Int
        var error: String
    }

    struct Published: Encodable {
        var id: String
        var time: Int64 = 1_772_373_600
        var event = "message"
        var topic: String
        var message: String
        var sequence_id: String
    }

    func answer(_ r: StandInRequest) -> StandInAnswer {
        state.withLock { s in
            func fail(_ status: Int, _ code: Int, _ text: String, problem: Bool = true) -> StandInAnswer {
                if problem { s.problems.append("\(r.method) \(r.path): \(text)") }
                return .json(status, Failure(code: code, http: status, error: text))
            }
            if !s.limited.isEmpty {
                let wait = s.limited.removeFirst()
                return .json(
                    429, Failure(code: 42901, http: 429, error: "limit reached: too many requests"),
                    headers: ["Retry-After": String(wait)])
            }
            guard r.headers["authorization"] == "Bearer " + token else { return fail(401, 40101, "unauthorized") }
            guard r.method == "POST" || r.method == "PUT", r.path == "/" else {
                return fail(404, 40401, "page not found")
            }
            guard let body = JSONValue.parse(r.body)?.object else { return fail(400, 40001, "invalid request: JSON") }
            guard body["topic"]?.string == topic else { return fail(400, 40009, "invalid topic") }
            let message = body["message"]?.string ?? ""
            guard message.utf8.count <= 4096 else { return fail(400, 40012, "message too large") }
            let priority = body["priority"]?.number.map { Int($0) } ?? 3
            guard (1...5).contains(priority) else { return fail(400, 40007, "invalid priority") }
            s.publishes += 1
            s.next += 1
            let id = "msg" + String(repeating: "0", count: 9 - String(s.next).count) + String(s.next)
            let sequence = r.headers["x-sequence-id"] ?? id
            let title = body["title"]?.string ?? ""
            if let i = s.notifications.firstIndex(where: { $0.sequence == sequence }) {
                s.notifications[i].title = title
                s.notifications[i].message = message
                s.notifications[i].priority = priority
                s.notifications[i].updates += 1
            } else {
                s.notifications.append(
                    NtfyStandIn.Notification(
                        sequence: sequence, title: title, message: message, priority: priority, updates: 0))
            }
            return .json(200, Published(id: id, topic: topic, message: message, sequence_id: sequence))
        }
    }
}
