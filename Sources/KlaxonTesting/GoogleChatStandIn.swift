import Foundation
import KlaxonCore
import Synchronization

/// A local stand-in for a Google Chat space's incoming webhook, for threading tests: `POST
/// /v1/spaces/SPACE/messages?key=KEY&token=TOKEN` with a JSON message (`text` within 4,096
/// characters, optional `thread: {"threadKey": …}` of at most 4,000 characters) creates a message
/// and answers it (`name`, `text`, `thread.name`). As Google Chat does, the message replies in the
/// thread its `threadKey` names only when the URL has
/// `messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD` (or `REPLY_MESSAGE_OR_FAIL`);
/// otherwise every message starts a thread of its own. A wrong `key` or `token` is 401; a body that
/// is not a JSON object, a missing or too long `text`, an unknown `messageReplyOption` or a
/// `threadKey` query parameter beside a body key is a 400 noted in `problems`.
public final class GoogleChatStandIn: TestServer {
    /// One message in the space.
    public struct Message: Sendable, Equatable {
        public var name: String
        public var text: String
        /// `spaces/SPACE/threads/ID`.
        public var thread: String
        /// The `threadKey` it was sent with, if any.
        public var threadKey: String?
    }

    struct State {
        var messages: [Message] = []
        var problems: [String] = []
        /// threadKey → thread name.
        var threads: [String: String] = [:]
        var next = 0
    }

    final class Core: Sendable {
        let state = Mutex(State())
        let space = "AAAAstandin"
        let key = "AIzaSy-standin-key"
        let token = "standin-token%3D"
    }

    let core: Core
    let server: StandInServer
    /// The webhook URL as Google Chat shows it to whoever registers the webhook.
    public var url: String {
        "http://127.0.0.1:\(server.port)/v1/spaces/\(core.space)/messages?key=\(core.key)&token=\(core.token)"
    }
    public var token: String { core.token }

    private init(core: Core, server: StandInServer) {
        self.core = core
        self.server = server
    }

    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (GoogleChatStandIn) async throws -> T
    ) async throws -> T {
        let core = Core()
        let server = try await StandInServer.start(label: "klaxon.test.googlechat") { core.answer($0) }
        return try await serving(GoogleChatStandIn(core: core, server: server), body)
    }

    @discardableResult
    public func stop() async -> Bool { await server.stop() }

    public var messages: [Message] { core.state.withLock { $0.messages } }
    public var problems: [String] { core.state.withLock { $0.problems } }
    /// The space's threads: each thread's messages, in the order the threads began.
    public var threads: [[Message]] {
        let all = messages
        var order: [String] = []
        for m in all where !order.contains(m.thread) { order.append(m.thread) }
        return order.map { t in all.filter { $0.thread == t } }
    }
}

extension GoogleChatStandIn.Core {
    struct Failure: Encodable {
        struct Inner: Encodable {
            var code: Int
            var message: String
            var status: String
        }
        var error: Inner
    }

    struct Created: Encodable {
        struct Thread: Encodable {
            var name: String
            var threadKey: String?
        }
        var name: String
        var text: String
        var thread: Thread
    }

    func answer(_ r: StandInRequest) -> StandInAnswer {
        state.withLock { s in
            func fail(_ status: Int, _ text: String, _ kind: String) -> StandInAnswer {
                s.problems.append("\(r.method) \(r.path)?…: \(text)")
                return .json(status, Failure(error: .init(code: status, message: text, status: kind)))
            }
            var query: [String: String] = [:]
            for item in URLComponents(string: "/?" + r.query)?.percentEncodedQueryItems ?? [] {
                query[item.name] = item.value ?? ""
            }
            guard r.method == "POST", r.path == "/v1/spaces/\(space)/messages" else {
                return fail(404, "not found", "NOT_FOUND")
            }
            guard query["key"] == key, query["token"] == token else {
                return fail(401, "request had invalid authentication credentials", "UNAUTHENTICATED")
            }
            guard let body = JSONValue.parse(r.body)?.object else {
                return fail(400, "invalid JSON", "INVALID_ARGUMENT")
            }
            guard let text = body["text"]?.string, !text.isEmpty, text.count <= 4096 else {
                return fail(400, "text missing or over 4,096 characters", "INVALID_ARGUMENT")
            }
            let option = query["messageReplyOption"] ?? "MESSAGE_REPLY_OPTION_UNSPECIFIED"
            guard
                ["MESSAGE_REPLY_OPTION_UNSPECIFIED", "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD", "REPLY_MESSAGE_OR_FAIL"]
                    .contains(option)
            else { return fail(400, "invalid messageReplyOption", "INVALID_ARGUMENT") }
            let threadKey = body["thread"]?.object?["threadKey"]?.string
            if let threadKey, query["threadKey"] != nil {
                return fail(
                    400, "threadKey both in the query and the body (\(threadKey.prefix(40)))", "INVALID_ARGUMENT")
            }
            if let threadKey, threadKey.isEmpty || threadKey.count > 4000 {
                return fail(400, "threadKey empty or over 4,000 characters", "INVALID_ARGUMENT")
            }
            s.next += 1
            let replies = option != "MESSAGE_REPLY_OPTION_UNSPECIFIED"
            let thread: String
            if replies, let threadKey, let known = s.threads[threadKey] {
                thread = known
            } else {
                thread = "spaces/\(space)/threads/t\(s.next)"
                if let threadKey { s.threads[threadKey] = thread }
            }
            let name = "spaces/\(space)/messages/m\(s.next)"
            s.messages.append(GoogleChatStandIn.Message(name: name, text: text, thread: thread, threadKey: threadKey))
            return .json(200, Created(name: name, text: text, thread: .init(name: thread, threadKey: threadKey)))
        }
    }
}
