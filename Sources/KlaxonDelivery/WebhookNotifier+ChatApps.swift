import AsyncHTTPClient
import Foundation
import KlaxonCore

/// A chat receiver with a bot token posts through its platform's API rather than an incoming
/// webhook, which is what lets it edit: Slack's app mode (`chat.postMessage`, then `chat.update`
/// by channel and `ts`) and a Mattermost bot (`POST /api/v4/posts`, then `PUT
/// /api/v4/posts/{id}/patch`). The body is the preset's (or the receiver's `template`), so a
/// message looks the same whichever way it goes; the message reference the dispatcher stores is
/// Slack's `CHANNEL/TS` or Mattermost's post id.
enum ChatApp: Sendable {
    case slack(SlackWebAPI, channel: String, threadReplies: Bool)
    case mattermost(MattermostAPI, channel: String)
    /// A direct message to a Mattermost user (issue 43): each post goes to the direct channel of the
    /// bot and the user (`MattermostAPI.directChannel(with:)`, which Mattermost creates once and
    /// then returns); an edit names the post alone.
    case mattermostDirect(MattermostAPI, user: String)

    /// The receiver's API client; nil without a bot token (an incoming webhook).
    init?(config: Receiver.Webhook, client: HTTPClient) {
        guard let token = config.botToken, let channel = config.channel else { return nil }
        let http = PlatformHTTP(
            name: config.name, base: config.url.value, timeout: config.timeout, connections: config.connections,
            secrets: [token.value], client: client)
        switch config.preset {
        case .slack:
            self = .slack(SlackWebAPI(http: http, token: token), channel: channel, threadReplies: config.threadReplies)
        case .mattermost:
            self = .mattermost(MattermostAPI(http: http, token: token), channel: channel)
        case .msteams, .discord, .googlechat, .generic:
            return nil
        }
    }

    /// The body of the first post (what `dry-run --render` shows).
    func postBody(_ payload: [String: JSONValue]) -> [String: JSONValue] {
        switch self {
        case .slack(_, let channel, _):
            var body = payload
            body["channel"] = .string(channel)
            return body
        case .mattermost(_, let channel):
            var body = MattermostAPI.post(payload)
            body["channel_id"] = .string(channel)
            return body
        case .mattermostDirect(_, let user):
            var body = MattermostAPI.post(payload)
            body["channel_id"] = .string("(the direct channel with \(user))")
            return body
        }
    }

    /// The edit of message `messageID` as `notify-test` and `dry-run --render` show it.
    func renderEdit(_ payload: [String: JSONValue], messageID: String) -> RenderedEdit {
        switch self {
        case .slack(_, let channel, _):
            let ref = SlackWebAPI.MessageRef(messageID) ?? SlackWebAPI.MessageRef(channel: channel, ts: messageID)
            return RenderedEdit(
                request: "POST chat.update",
                body: JSONText.encode(.object(SlackWebAPI.updateBody(ref, payload: payload))))
        case .mattermost, .mattermostDirect:
            return RenderedEdit(
                request: "PUT /api/v4/posts/\(messageID)/patch",
                body: JSONText.encode(.object(MattermostAPI.post(payload))))
        }
    }

    /// Posts a new message; returns its reference ("" when the answer named none).
    func post(_ payload: [String: JSONValue], key: String) async throws -> String {
        switch self {
        case .slack(let api, let channel, _):
            let ref = try await api.postMessage(channel: channel, payload: payload, key: key)
            return ref.channel.isEmpty ? "" : ref.text
        case .mattermost(let api, let channel):
            return try await api.createPost(channelID: channel, payload: payload, key: key)
        case .mattermostDirect(let api, let user):
            let channel = try await api.directChannel(with: user)
            return try await api.createPost(channelID: channel, payload: payload, key: key)
        }
    }

    /// Edits the message `messageID`; with Slack's `thread_replies`, the change is also replied in
    /// its thread (its `text`: what changed, seen by whoever follows the thread).
    func edit(_ payload: [String: JSONValue], messageID: String, key: String) async throws {
        switch self {
        case .slack(let api, _, let threadReplies):
            guard let ref = SlackWebAPI.MessageRef(messageID) else {
                // A reference that is not Slack's (a damaged or restored row) names no message.
                throw DeliveryError(
                    kind: .platform("message_not_found"), retryable: false,
                    message: "receiver \(api.http.name): the stored message reference is not a Slack message",
                    messageGone: true)
            }
            try await api.update(ref, payload: payload, key: key)
            if threadReplies {
                // The change's lines, without the timeline line the edited message ends with.
                var lines = (payload["text"]?.string ?? "").split(separator: "\n", omittingEmptySubsequences: false)
                if lines.count > 1 { lines.removeLast() }
                let reply: [String: JSONValue] = ["text": .string(lines.joined(separator: "\n"))]
                _ = try await api.postMessage(
                    channel: ref.channel, threadTS: ref.ts, payload: reply, key: key + "-reply")
            }
        case .mattermost(let api, _), .mattermostDirect(let api, _):
            try await api.patchPost(id: messageID, payload: payload, key: key)
        }
    }
}

extension WebhookNotifier {
    /// The preset's (or template's) body as a JSON object, for a platform API that adds its own
    /// fields (`channel`, `ts`) to it. A template whose body is not an object is a rendering error.
    func object(_ n: AlertNotification) throws -> [String: JSONValue] {
        guard case .object(let o)? = try? JSONDecoder().decode(JSONValue.self, from: try body(n)) else {
            throw DeliveryError(
                kind: .rendering, retryable: false,
                message: "receiver \(config.name): the body is not a JSON object (a bot token posts an object)")
        }
        return o
    }
}
