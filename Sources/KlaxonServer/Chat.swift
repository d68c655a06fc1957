import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore

/// Slash commands and message buttons from Slack (`X-Slack-Signature`: HMAC-SHA256 of
/// `v0:timestamp:body` with the signing secret, timestamps older than 5 minutes refused) and
/// Mattermost (a shared token for commands, a signed context for buttons). The answer to a command
/// comes from `answer(user, text)`, a button's action from `act(press, now)`; a request that fails
/// verification gets 401 and changes nothing.
public enum ChatEndpoints {
    public struct Settings: Sendable {
        public var slackSigningSecret: String?
        public var mattermostToken: String?
        /// Seconds a Slack timestamp may be off.
        public var maxSkew: Int64
        /// What a Slack button press's `response_url` must start with for Klaxon to post to it
        /// (`chat.slack.response_url_prefix`); a press with any other is refused, and nothing is sent.
        public var slackResponseURLPrefixes: [String]
        /// The secret token Telegram sends as `X-Telegram-Bot-Api-Secret-Token` with every update of
        /// the bot's webhook (`chat.telegram`); nil: `/chat/telegram` answers 404.
        public var telegramSecretToken: String?

        /// Slack's own hosts for `response_url`: the commercial and the GovSlack one.
        public static let slackResponseHosts = ["https://hooks.slack.com/", "https://hooks.slack-gov.com/"]

        public init(
            slackSigningSecret: String? = nil, mattermostToken: String? = nil, maxSkew: Int64 = 300,
            slackResponseURLPrefixes: [String] = slackResponseHosts, telegramSecretToken: String? = nil
        ) {
            self.telegramSecretToken = telegramSecretToken
            self.slackSigningSecret = slackSigningSecret
            self.mattermostToken = mattermostToken
            self.maxSkew = maxSkew
            self.slackResponseURLPrefixes = slackResponseURLPrefixes
        }

        /// Whether Klaxon may post to `url`: it starts with an allowed prefix, and is a plain URL
        /// (no space, control character or backslash, at most 2,048 bytes) whose path, once its
        /// percent-encoding is decoded (as often as it decodes), has no `.` or `..` segment, so
        /// neither `/actions/../x` nor `/actions/%2e%2e/x` can leave the prefix's path (issue 38).
        /// Slack's own `response_url`s have none: such a URL is refused, not rewritten.
        public func allowsResponseURL(_ url: String) -> Bool {
            guard url.utf8.count <= 2048,
                url.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7f && $0 != "\\" }),
                Self.hasPlainPath(url)
            else { return false }
            return slackResponseURLPrefixes.contains { !$0.isEmpty && url.hasPrefix($0) }
        }

        /// True when the path of `url` (after `scheme://authority`, before `?` or `#`) has no dot
        /// segment and no backslash, decoded once, twice, … until it no longer changes (at most a
        /// few times: more layers of encoding than that are refused), and decodes validly.
        static func hasPlainPath(_ url: String) -> Bool {
            guard let scheme = url.range(of: "://") else { return false }
            let rest = url[scheme.upperBound...]
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) else { return true }
            var path = String(rest[slash...].prefix { $0 != "?" && $0 != "#" })
            for _ in 0..<4 {
                if path.contains("\\")
                    || path.split(separator: "/", omittingEmptySubsequences: false).contains(where: {
                        $0 == "." || $0 == ".."
                    })
                {
                    return false
                }
                guard path.contains("%") else { return true }
                guard let decoded = path.removingPercentEncoding else { return false }
                if decoded == path { return true }
                path = decoded
            }
            return false
        }
    }

    /// Who sent a command. `id` is the platform's stable identity (`TEAM:USER` when the request names
    /// a team, else `USER`) and is the only thing an owner is looked up by; `name` is for display.
    public struct User: Sendable, Equatable {
        public var platform: String
        public var team: String?
        public var user: String
        public var name: String
        /// The channel the command was sent in (`channel_id`), when the platform said; a watch made
        /// there posts there (issue 43).
        public var channel: String?
        /// The command came in the person's private chat with the bot (a Telegram private chat):
        /// a watch made there is delivered as direct messages.
        public var direct: Bool

        public init(
            platform: String, team: String?, user: String, name: String, channel: String? = nil, direct: Bool = false
        ) {
            self.platform = platform
            self.team = team
            self.user = user
            self.name = name
            self.channel = channel
            self.direct = direct
        }

        /// The keys `chat.users` may use for this user, most specific first: `TEAM:USER`, then `USER`.
        public var ids: [String] { (team.map { ["\($0):\(user)"] } ?? []) + [user] }

        /// `slack:U024BE7LH`, as recorded for acks and silences.
        public var label: String { "\(platform):\(user)" }
    }

    public typealias Answer = @Sendable (_ user: User, _ text: String) async -> String

    /// A button pressed on a message: who, what, on which alert (its episode id).
    public struct Press: Sendable, Equatable {
        public var user: User
        public var action: ChatAction
        public var episode: Int64

        public init(user: User, action: ChatAction, episode: Int64) {
            self.user = user
            self.action = action
            self.episode = episode
        }
    }

    /// What came of a press. Texts hold data (rule and station names): escaped per platform where
    /// they are shown.
    public enum Outcome: Sendable, Equatable {
        /// Done; `summary` names the alert (`high at S1 (#12)`).
        case done(summary: String)
        /// This user may not act: nothing changed; the text says why.
        case refused(String)
        /// Nothing to act on (the alert resolved; it was acked already, the text saying by whom) or
        /// it failed: nothing changed.
        case failed(String)
    }

    /// Acts on a press at `now` (the same code as the `ack` and `silence` commands).
    public typealias Act = @Sendable (_ press: Press, _ now: Int64) async -> Outcome

    /// The oldest and newest Slack timestamps taken at all (2001…2286): anything outside is not a time.
    static let timestampRange: ClosedRange<Int64> = 1_000_000_000...9_999_999_999

    static func add(
        to router: Router<BasicRequestContext>, settings: Settings, seen: any ReplayGuard,
        now: @escaping @Sendable () -> Int64, answer: @escaping Answer, act: @escaping Act, responses: ChatResponses
    ) {
        router.post("/chat/slack") { request, _ -> Response in
            let body: ByteBuffer
            switch try await verifiedSlack(request, settings: settings, now: now(), limit: maxBody) {
            case .refused(let response): return response
            case .verified(let v): body = v.body
            }
            let form = parseForm(String(decoding: body.readableBytesView, as: UTF8.self))
            guard let user = chatUser(platform: "slack", form) else {
                return reply("the request names no user_id", status: .badRequest)
            }
            // The answer carries data (station names, comments) and the user's own words: escaped, so
            // `<!channel>` or `<https://evil|Ack here>` in them is text.
            return reply(ChatEscape.slack(await answer(user, form["text"] ?? "")), status: .ok)
        }
        router.post("/chat/mattermost") { request, _ -> Response in
            guard let token = settings.mattermostToken else { return reply(nil, status: .notFound) }
            // An empty token would make `token=` (or no token at all) a valid request.
            guard ServerSecrets.usable(token) else { return reply("missing or wrong token", status: .unauthorized) }
            let form = parseForm(
                String(decoding: try await request.collectBody(upTo: maxBody).readableBytesView, as: UTF8.self))
            guard let given = form["token"], equal(given, token) else {
                return reply("missing or wrong token", status: .unauthorized)
            }
            guard let user = chatUser(platform: "mattermost", form) else {
                return reply("the request names no user_id", status: .badRequest)
            }
            return reply(ChatEscape.mattermost(await answer(user, form["text"] ?? "")), status: .ok)
        }
        SlackActions.add(to: router, settings: settings, seen: seen, now: now, act: act, responses: responses)
        MattermostActionEndpoint.add(to: router, settings: settings, seen: seen, now: now, act: act)
        TelegramCallbackEndpoint.add(to: router, settings: settings, seen: seen, now: now, answer: answer, act: act)
    }

    /// A Slack request that passed `verifiedSlack`: its body as signed, its signature and time.
    struct SlackRequest {
        var body: ByteBuffer
        var signature: String
        var timestamp: Int64
    }

    enum SlackCheck {
        case verified(SlackRequest)
        case refused(Response)
    }

    /// The one check of every Slack request (commands and button presses): the signing secret is
    /// set (else 404) and usable; before a byte of the body is read, `X-Slack-Request-Timestamp`
    /// and `X-Slack-Signature` are present, the timestamp is digits in a plausible range within
    /// `maxSkew` of `now`, and the declared length within `limit` (413), so an unsigned or stale
    /// request costs no buffer (issue 38); then the body is read (within `limit` and the server's
    /// `BodyBudget`) and `X-Slack-Signature` checked over the timestamp as sent. Anything else is 401.
    static func verifiedSlack(_ request: Request, settings: Settings, now: Int64, limit: Int) async throws
        -> SlackCheck
    {
        guard let secret = settings.slackSigningSecret else { return .refused(reply(nil, status: .notFound)) }
        // Never verify with an empty key: anyone can compute that HMAC.
        guard ServerSecrets.usable(secret) else { return .refused(reply("bad signature", status: .unauthorized)) }
        guard let tsText = request.headers[HTTPField.Name("X-Slack-Request-Timestamp")!],
            let signature = request.headers[HTTPField.Name("X-Slack-Signature")!]
        else {
            return .refused(
                reply("missing X-Slack-Request-Timestamp or X-Slack-Signature", status: .unauthorized))
        }
        // Untrusted text: digits only, a plausible range, then a skew that cannot overflow.
        guard let ts = strictInteger(tsText, in: timestampRange), (now - ts).magnitude <= settings.maxSkew.magnitude
        else {
            return .refused(reply("stale timestamp", status: .unauthorized))
        }
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: limit)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return .refused(reply("the body is larger than \(limit) bytes", status: .contentTooLarge))
        }
        guard verifySlack(secret: secret, timestamp: tsText, body: body, signature: signature) else {
            return .refused(reply("bad signature", status: .unauthorized))
        }
        return .verified(SlackRequest(body: body, signature: signature, timestamp: ts))
    }

    /// Slash-command bodies are small; Slack's own limit on the text is 4,000 characters.
    static let maxBody = 64 << 10

    /// The sender, by the platform's stable ids (`team_id`, `user_id`); nil without a user id.
    static func chatUser(platform: String, _ form: [String: String]) -> User? {
        guard let id = form["user_id"], !id.isEmpty, id.utf8.count <= 64 else { return nil }
        let team = form["team_id"].flatMap { $0.isEmpty || $0.utf8.count > 64 ? nil : $0 }
        // A channel id is the platform's shape (`C0123`, Mattermost's 26 characters); anything else is none.
        let channel = form["channel_id"].flatMap { SlackPress.isID($0) ? $0 : nil }
        return User(
            platform: platform, team: team, user: id, name: String((form["user_name"] ?? id).prefix(80)),
            channel: channel)
    }

    /// A whole number written as ASCII digits only (no sign, space, exponent or other script's
    /// digits), inside `range`; nil otherwise. Never traps.
    public static func strictInteger(_ text: String, in range: ClosedRange<Int64>) -> Int64? {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= 18, bytes.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        let value = bytes.reduce(Int64(0)) { $0 * 10 + Int64($1 - 48) }  // ≤ 18 digits: cannot overflow
        return range.contains(value) ? value : nil
    }

    /// `v0=` + hex HMAC-SHA256 of `v0:timestamp:body`.
    public static func slackSignature(secret: String, timestamp: Int64, body: String) -> String {
        slackSignature(secret: secret, timestamp: String(timestamp), body: Data(body.utf8))
    }

    public static func slackSignature(secret: String, timestamp: String, body: some DataProtocol) -> String {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        mac.update(data: Data("v0:\(timestamp):".utf8))
        mac.update(data: Data(body))
        return "v0=" + mac.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Checks `X-Slack-Signature` over the timestamp exactly as sent, in constant time.
    static func verifySlack(secret: String, timestamp: String, body: ByteBuffer, signature: String) -> Bool {
        guard ServerSecrets.usable(secret), timestamp.utf8.count <= 32, signature.utf8.count <= 128 else {
            return false
        }
        return equal(signature, slackSignature(secret: secret, timestamp: timestamp, body: body.readableBytesView))
    }

    static func equal(_ a: String, _ b: String) -> Bool { KlaxonHTTP.constantTimeEqual(a, b) }

    /// `application/x-www-form-urlencoded`, through Hummingbird's `URLEncodedFormDecoder` (as the
    /// site's forms). A form it refuses (a repeated field, broken percent-encoding, `a[b]=` structure)
    /// is read as empty: it names no user (nor token), and is refused as such.
    public static func parseForm(_ body: String) -> [String: String] {
        (try? URLEncodedFormDecoder().decode([String: String].self, from: body)) ?? [:]
    }

    static func reply(_ text: String?, status: HTTPResponse.Status) -> Response {
        guard let text else { return Response(status: status) }
        guard status == .ok else { return APIError(status, text).response }
        return KlaxonHTTP.json(encoded: ["response_type": "ephemeral", "text": text], status: status)
    }
}
