import AsyncHTTPClient
import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import NIOCore

/// Chat, from the config to the server and the notifiers: the endpoints' settings, the signer of
/// Mattermost's buttons, and the HTTP client that answers Slack's button presses.
public enum ChatWiring {
    /// The chat endpoints' settings (`chat:`).
    public static func settings(_ config: Config) -> ChatEndpoints.Settings {
        .init(
            slackSigningSecret: config.slackSigningSecret?.value, mattermostToken: config.mattermostToken?.value,
            slackResponseURLPrefixes: config.slackResponseURLPrefixes ?? ChatEndpoints.Settings.slackResponseHosts,
            telegramSecretToken: config.telegramSecretToken?.value)
    }

    /// Signs Mattermost's Ack and Silence buttons, when Mattermost is set up (`chat.mattermost`) and
    /// Mattermost can reach Klaxon back (`external_url`); nil otherwise (no buttons).
    public static func signer(
        _ config: Config, now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    )
        -> ChatActionSigner?
    {
        guard config.externalURL != nil, let token = config.mattermostToken?.value, ServerSecrets.usable(token) else {
            return nil
        }
        let key = MattermostActions.key(token: token)
        return ChatActionSigner { action, episode in
            MattermostActions.context(action, episode: episode, key: key, now: now())
        }
    }

    /// The client for `response_url`s: it follows no redirect (the URL was checked, where it
    /// redirects to was not) and reads no more than 64 KiB of an answer.
    static let client = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: .init(redirectConfiguration: .disallow))

    /// POSTs JSON to a Slack `response_url` within 10 seconds; the HTTP status.
    @Sendable public static func post(url: String, body: Data) async throws -> Int {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "klaxon")
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, deadline: .now() + .seconds(10))
        _ = try await response.body.collect(upTo: 64 << 10)
        return Int(response.status.code)
    }
}
