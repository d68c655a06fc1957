import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore

/// `POST /chat/mattermost/actions`: the presses of the Ack and Silence 1h buttons of Klaxon's
/// Mattermost messages. Mattermost posts JSON (`user_id`, `user_name`, `team_id`, `post_id`,
/// `context`, …) and signs nothing, so the button's `context` is what Klaxon signed
/// (`MattermostActions`): a forged, tampered or expired one is refused with 401, and so is a
/// second use of one that acted (its nonce is remembered for as long as the button works). The
/// action is taken at once and answered with Mattermost's integration response: `update.message`
/// says who did what when, `ephemeral_text` tells the presser; a user who may not act gets only the
/// ephemeral answer, and nothing changes. A refusal is `{"error": {"message": …}}`, which
/// Mattermost shows under the message.
enum MattermostActionEndpoint {
    /// A press is a small JSON object.
    static let maxBody = 64 << 10

    static func add(
        to router: Router<BasicRequestContext>, settings: ChatEndpoints.Settings, seen: any ReplayGuard,
        now: @escaping @Sendable () -> Int64, act: @escaping ChatEndpoints.Act
    ) {
        // The key is derived once; without a usable token there is none, and every press is refused.
        let key = settings.mattermostToken.flatMap { ServerSecrets.usable($0) ? MattermostActions.key(token: $0) : nil }
        router.post(RouterPath(MattermostActions.path)) { request, _ -> Response in
            guard settings.mattermostToken != nil else { return ChatEndpoints.reply(nil, status: .notFound) }
            guard let key else { return refuse("bad signature", status: .unauthorized) }
            let body = try await request.collectBody(upTo: maxBody)
            guard let p = JSONValue.parse(body.readableBytesView)?.object else {
                return refuse("the request is not a JSON object", status: .badRequest)
            }
            let at = now()
            let verified: MattermostActions.Verified
            switch MattermostActions.verify(p["context"], key: key, now: at) {
            case .failure(.forged): return refuse("bad signature", status: .unauthorized)
            case .failure(.expired):
                return refuse("This button has expired; use the command `ack ID` instead.", status: .unauthorized)
            case .success(let v): verified = v
            }
            guard let userID = p["user_id"]?.string, SlackPress.isID(userID) else {
                return refuse("the request names no user_id", status: .badRequest)
            }
            let team = p["team_id"]?.string.flatMap { SlackPress.isID($0) ? $0 : nil }
            let name = String((p["user_name"]?.string ?? userID).prefix(80))
            let user = ChatEndpoints.User(platform: "mattermost", team: team, user: userID, name: name)
            // Kept in the store for as long as the button works: a used button stays used after a
            // restart and on every daemon of the same store.
            let seenKey = "mattermost:" + verified.nonce
            guard try await seen.claimOnce(key: seenKey, expires: verified.issued + MattermostActions.maxAge, now: at)
            else { return refuse("This button was already used.", status: .unauthorized) }
            let outcome = await act(
                ChatEndpoints.Press(user: user, action: verified.action, episode: verified.episode), at)
            let e = ChatEscape.mattermost
            switch outcome {
            case .done(let summary):
                let verb = verified.action.doneVerb
                let line = "\(verb) by @\(e(name)), \(ChatText.clock(at)) UTC: \(e(summary))"
                return KlaxonHTTP.json(encoded: Answer(update: .init(message: line), ephemeralText: line), status: .ok)
            case .refused(let why), .failed(let why):
                // Nothing was done: the button may still be used (by someone who may act).
                try await seen.releaseOnce(key: seenKey)
                return KlaxonHTTP.json(encoded: Answer(ephemeralText: e(why)), status: .ok)
            }
        }
    }

    /// Mattermost's error response (shown under the message since Mattermost 10.5).
    static func refuse(_ message: String, status: HTTPResponse.Status) -> Response {
        KlaxonHTTP.json(encoded: Refusal(error: .init(message: message)), status: status)
    }

    /// Mattermost's integration response: `update.message` replaces the post's text (left out when
    /// nothing changed), `ephemeral_text` is shown to the presser alone.
    struct Answer: Encodable {
        struct Update: Encodable { var message: String }
        var update: Update? = nil
        var ephemeralText: String

        enum CodingKeys: String, CodingKey {
            case update
            case ephemeralText = "ephemeral_text"
        }
    }

    /// `{"error": {"message": …}}`.
    struct Refusal: Encodable {
        struct Message: Encodable { var message: String }
        var error: Message
    }
}
