import Foundation
import KlaxonCore
import NIOHTTP1

/// Mattermost's REST API (v4) for a bot's access token (https://api.mattermost.com): `POST
/// /api/v4/posts` creates a post in a channel (answering 201 and the post, whose `id` is 26
/// lower-case letters and digits), `PUT /api/v4/posts/{id}/patch` changes its message and props,
/// and a post that is gone answers 404. The base URL is the server's (`https://chat.example.com`),
/// as every Mattermost is self-hosted. A direct message to a user goes to the direct channel of the
/// bot and the user (`directChannel(with:)`), what issue 43's watches send.
public struct MattermostAPI: Sendable {
    let http: PlatformHTTP
    let token: Secret

    public init(http: PlatformHTTP, token: Secret) {
        self.http = http
        self.token = token
    }

    /// Mattermost's ids (posts, channels, users): 26 characters of `[a-z0-9]`.
    public static func isID(_ s: String) -> Bool {
        s.utf8.count == 26 && s.utf8.allSatisfy { (97...122).contains($0) || (48...57).contains($0) }
    }

    /// Creates a post of `payload` (the preset's `text` and `attachments`) in `channelID`, and
    /// returns its id ("" when the answer names none).
    public func createPost(channelID: String, payload: [String: JSONValue], key: String) async throws -> String {
        var body = Self.post(payload)
        body["channel_id"] = .string(channelID)
        let answer = try await call(.POST, "/api/v4/posts", body: WebhookPayloads.encode(body), key: key)
        return Self.id(in: answer) ?? ""
    }

    /// Replaces post `id`'s message and attachments with `payload`'s.
    public func patchPost(id: String, payload: [String: JSONValue], key: String) async throws {
        guard Self.isID(id) else {
            throw DeliveryError(
                kind: .httpStatus(404), retryable: false,
                message: "receiver \(http.name): the stored message reference is not a Mattermost post id")
        }
        _ = try await call(
            .PUT, "/api/v4/posts/\(id)/patch", body: WebhookPayloads.encode(Self.post(payload)), key: key)
    }

    /// The id of the direct channel between the bot and `userID` (created if it does not exist yet).
    public func directChannel(with userID: String) async throws -> String {
        let me = try await call(.GET, "/api/v4/users/me", body: Data(), key: "")
        guard let bot = Self.id(in: me), Self.isID(userID) else {
            throw DeliveryError(
                kind: .platform("no user id"), retryable: false,
                message: "receiver \(http.name): Mattermost: no user id for a direct channel")
        }
        let channel = try await call(
            .POST, "/api/v4/channels/direct", body: try JSONEncoder().encode([bot, userID]), key: "")
        guard let id = Self.id(in: channel) else {
            throw DeliveryError(
                kind: .platform("no channel id"), retryable: true,
                message: "receiver \(http.name): Mattermost: the direct channel's answer has no id")
        }
        return id
    }

    /// A post's fields from the preset's body: `text` is the message, `attachments` go in `props`.
    static func post(_ payload: [String: JSONValue]) -> [String: JSONValue] {
        var props: [String: JSONValue] = [:]
        if let a = payload["attachments"] { props["attachments"] = a }
        return ["message": payload["text"] ?? .string(""), "props": .object(props)]
    }

    func call(_ method: HTTPMethod, _ path: String, body: Data, key: String) async throws -> [UInt8] {
        var headers = [("Authorization", "Bearer " + token.value)]
        if !key.isEmpty { headers.append(("Idempotency-Key", key)) }
        return try await http.call(method, path, headers: headers, body: body).body
    }

    /// The `id` of an answered object, when it is a Mattermost id.
    static func id(in answer: [UInt8]) -> String? {
        struct Object: Decodable { var id: String }
        guard let o = try? JSONDecoder().decode(Object.self, from: Data(answer)), isID(o.id) else { return nil }
        return o.id
    }
}
