import Foundation
import KlaxonCore
import Synchronization

/// A local stand-in for Mattermost's REST API (v4) as a bot's access token uses it, for
/// living-message tests. It holds the posts and answers as Mattermost documents
/// (https://api.mattermost.com):
///
/// - `POST /api/v4/posts` with `channel_id`, `message` and `props` (`attachments`): 201 and the
///   post, whose `id` is 26 characters of `[a-z0-9]`;
/// - `PUT /api/v4/posts/{id}/patch` with `message` and `props`: 200 and the post; an unknown post
///   404 (`app.post.get.app_error`);
/// - `GET /api/v4/users/me`: the bot; `POST /api/v4/channels/direct` with two user ids: 201 and the
///   direct channel (`type: "D"`), which posts may then go to;
/// - no or another `Authorization: Bearer` token: 401 (`api.context.session_expired.app_error`); a
///   channel the bot is not in: 403; a `message` over 16,383 characters or props over 800,000: 400
///   (`model.post.is_valid.…`);
/// - `rateLimit(_:retryAfter:)`: the next requests answer 429 with `Retry-After` and the
///   `X-Ratelimit-*` headers, as Mattermost's rate limiter does.
///
/// Refused shapes are noted in `problems`.
public final class MattermostStandIn: TestServer {
    /// A post as the stand-in holds it.
    public struct Post: Sendable, Equatable {
        public var id: String
        public var channelID: String
        public var message: String
        public var attachments: Int
        public var edits: Int
    }

    struct State {
        var posts: [Post] = []
        var problems: [String] = []
        var requests: [(method: String, path: String)] = []
        var limited: [Double] = []
        var directs: [String] = []
        /// The direct channel with each user (the bot's own side implied).
        var directWith: [String: String] = [:]
        var next = 0
    }

    final class Core: Sendable {
        let state = Mutex(State())
        let token = "standinbottoken0123456789a"
        let channel = "4xp9fdt77pncbef59f4k1qe83o"
        let bot = "botuser000000000000000000a"
    }

    let core: Core
    let server: StandInServer
    /// The bot's access token.
    public var token: String { core.token }
    /// The channel the bot is in.
    public var channel: String { core.channel }
    /// The server's base URL (what a receiver's `url` holds).
    public var url: String { "http://127.0.0.1:\(server.port)" }

    private init(core: Core, server: StandInServer) {
        self.core = core
        self.server = server
    }

    /// Starts a stand-in, runs `body` with it and stops it before returning, also when `body` throws.
    public static func with<T>(
        isolation: isolated (any Actor)? = #isolation, _ body: (MattermostStandIn) async throws -> T
    ) async throws -> T {
        let core = Core()
        let server = try await StandInServer.start(label: "klaxon.test.mattermost") { core.answer($0) }
        return try await serving(MattermostStandIn(core: core, server: server), body)
    }

    @discardableResult
    public func stop() async -> Bool { await server.stop() }

    /// The posts, oldest first.
    public var posts: [Post] { core.state.withLock { $0.posts } }
    /// What Mattermost would refuse.
    public var problems: [String] { core.state.withLock { $0.problems } }
    /// Every request: method and path.
    public var requests: [(method: String, path: String)] { core.state.withLock { $0.requests } }

    /// The next `count` requests answer 429, asking to wait `retryAfter` seconds.
    public func rateLimit(_ count: Int, retryAfter: Double) {
        core.state.withLock { $0.limited += Array(repeating: retryAfter, count: count) }
    }

    /// The user a direct channel of the bot is with (nil: not a direct channel).
    public func directUser(of channel: String) -> String? {
        core.state.withLock { s in s.directWith.first { $0.value == channel }?.key }
    }

    /// Deletes a post, as its channel's people can: a patch of it then answers 404.
    public func delete(_ id: String) { core.state.withLock { s in s.posts.removeAll { $0.id == id } } }
}

extension MattermostStandIn.Core {
    struct AppError: Encodable {
        var id: String
        var message: String
        var detailed_error = ""
        var request_id = "standin"
        var status_code: Int
    }

    struct PostObject: Encodable {
        var id: String
        var create_at: Int64 = 1_772_373_600_000
        var update_at: Int64 = 1_772_373_600_000
        var edit_at: Int64 = 0
        var delete_at: Int64 = 0
        var user_id: String
        var channel_id: String
        var message: String
        var type = ""
    }

    struct Object: Encodable {
        var id: String
        var type: String?
    }

    static func error(_ status: Int, _ id: String, _ message: String) -> StandInAnswer {
        .json(status, AppError(id: id, message: message, status_code: status))
    }

    func newID(_ s: inout MattermostStandIn.State) -> String {
        s.next += 1
        let n = String(s.next)
        return "post" + String(repeating: "0", count: 22 - n.count) + n
    }

    func answer(_ r: StandInRequest) -> StandInAnswer {
        state.withLock { s in
            s.requests.append((r.method, r.path))
            if !s.limited.isEmpty {
                let wait = s.limited.removeFirst()
                return StandInAnswer(
                    status: 429,
                    headers: [
                        "Retry-After": String(Int(wait.rounded(.up))), "X-Ratelimit-Limit": "10",
                        "X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": String(Int(wait.rounded(.up))),
                    ], body: "limit exceeded\n")
            }
            guard r.headers["authorization"] == "Bearer " + token else {
                return Self.error(
                    401, "api.context.session_expired.app_error", "Invalid or expired session, please login again.")
            }
            func refuse(_ status: Int, _ id: String, _ message: String) -> StandInAnswer {
                s.problems.append("\(r.method) \(r.path): \(message)")
                return Self.error(status, id, message)
            }
            let parts = r.path.split(separator: "/").map(String.init)
            let patch = parts.count == 5 && parts[0...2] == ["api", "v4", "posts"] && parts[4] == "patch"
            switch (r.method, r.path) {
            case ("GET", "/api/v4/users/me"):
                return .json(200, Object(id: bot))
            case ("POST", "/api/v4/channels/direct"):
                guard let ids = try? JSONDecoder().decode([String].self, from: r.body), ids.count == 2,
                    ids.contains(bot), let other = ids.first(where: { $0 != bot }) ?? ids.first,
                    other.utf8.count == 26,
                    other.utf8.allSatisfy({ (97...122).contains($0) || (48...57).contains($0) })
                else { return refuse(400, "api.context.invalid_body_param.app_error", "invalid user ids") }
                // Mattermost keeps one direct channel per pair: asked again, it answers the same one.
                if let known = s.directWith[other] { return .json(201, Object(id: known, type: "D")) }
                let n = String(s.directs.count + 1)
                let id = "direct" + String(repeating: "0", count: 20 - n.count) + n
                s.directs.append(id)
                s.directWith[other] = id
                return .json(201, Object(id: id, type: "D"))
            case ("POST", "/api/v4/posts"),
                ("PUT", _) where r.method == "PUT" && patch:
                guard (r.headers["content-type"] ?? "").lowercased().hasPrefix("application/json"),
                    let body = JSONValue.parse(r.body)?.object
                else { return refuse(400, "api.context.invalid_body_param.app_error", "the body is not a JSON object") }
                let message = body["message"]?.string ?? ""
                let props = body["props"]?.object ?? [:]
                let attachments = props["attachments"]?.array?.count ?? 0
                if message.count > 16_383 {
                    return refuse(400, "model.post.is_valid.msg.app_error", "message of \(message.count) characters")
                }
                let propsSize = JSONText.encode(.object(props)).utf8.count
                if propsSize > 800_000 {
                    return refuse(400, "model.post.is_valid.props.app_error", "props of \(propsSize) bytes")
                }
                if r.method == "POST" {
                    let channelID = body["channel_id"]?.string ?? ""
                    guard channelID == channel || s.directs.contains(channelID) else {
                        return refuse(403, "api.context.permissions.app_error", "not a member of \(channelID)")
                    }
                    if message.isEmpty && attachments == 0 {
                        return refuse(400, "api.post.create_post.message_empty", "an empty post")
                    }
                    let id = newID(&s)
                    s.posts.append(
                        MattermostStandIn.Post(
                            id: id, channelID: channelID, message: message, attachments: attachments, edits: 0))
                    return .json(201, PostObject(id: id, user_id: bot, channel_id: channelID, message: message))
                }
                guard let i = s.posts.firstIndex(where: { $0.id == parts[3] }) else {
                    return Self.error(404, "app.post.get.app_error", "Unable to get the post.")
                }
                if body["message"] != nil { s.posts[i].message = message }
                if props["attachments"] != nil { s.posts[i].attachments = attachments }
                s.posts[i].edits += 1
                let p = s.posts[i]
                return .json(200, PostObject(id: p.id, user_id: bot, channel_id: p.channelID, message: p.message))
            default:
                return Self.error(404, "api.context.404.app_error", "Sorry, we could not find the page.")
            }
        }
    }
}
