import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import NIOCore

/// Slash commands from Slack (`X-Slack-Signature`: HMAC-SHA256 of `v0:timestamp:body` with the
/// signing secret, timestamps older than 5 minutes refused) and Mattermost (a shared token). The
/// answer comes from `answer(user, text)`; a request that fails verification gets 401 and changes
/// nothing.
public enum ChatEndpoints {
    public struct Settings: Sendable {
        public var slackSigningSecret: String?
        public var mattermostToken: String?
        /// Seconds a Slack timestamp may be off.
        public var maxSkew: Int64

        public init(slackSigningSecret: String? = nil, mattermostToken: String? = nil, maxSkew: Int64 = 300) {
            self.slackSigningSecret = slackSigningSecret
            self.mattermostToken = mattermostToken
            self.maxSkew = maxSkew
        }
    }

    /// Who sent a command. `id` is the platform's stable identity (`TEAM:USER` when the request names
    /// a team, else `USER`) and is the only thing an owner is looked up by; `name` is for display.
    public struct User: Sendable, Equatable {
        public var platform: String
        public var team: String?
        public var user: String
        public var name: String

        public init(platform: String, team: String?, user: String, name: String) {
            self.platform = platform
            self.team = team
            self.user = user
            self.name = name
        }

        /// The keys `chat.users` may use for this user, most specific first: `TEAM:USER`, then `USER`.
        public var ids: [String] { (team.map { ["\($0):\(user)"] } ?? []) + [user] }

        /// `slack:U024BE7LH`, as recorded for acks and silences.
        public var label: String { "\(platform):\(user)" }
    }

    public typealias Answer = @Sendable (_ user: User, _ text: String) async -> String

    /// The oldest and newest Slack timestamps taken at all (2001…2286): anything outside is not a time.
    static let timestampRange: ClosedRange<Int64> = 1_000_000_000...9_999_999_999

    static func add(
        to router: Router<BasicRequestContext>, settings: Settings, now: @escaping @Sendable () -> Int64,
        answer: @escaping Answer
    ) {
        router.post("/chat/slack") { request, _ -> Response in
            guard let secret = settings.slackSigningSecret else { return reply(nil, status: .notFound) }
            // Never verify with an empty key: anyone can compute that HMAC.
            guard ServerSecrets.usable(secret) else { return reply("bad signature", status: .unauthorized) }
            let body = try await request.body.collect(upTo: maxBody)
            // The signature first: nothing in an unsigned request is looked at beyond the two headers.
            guard let tsText = request.headers[HTTPField.Name("X-Slack-Request-Timestamp")!],
                let signature = request.headers[HTTPField.Name("X-Slack-Signature")!]
            else { return reply("missing X-Slack-Request-Timestamp or X-Slack-Signature", status: .unauthorized) }
            guard verifySlack(secret: secret, timestamp: tsText, body: body, signature: signature) else {
                return reply("bad signature", status: .unauthorized)
            }
            // Signed, but still untrusted text: digits only, a plausible range, then a skew that cannot overflow.
            guard let ts = strictInteger(tsText, in: timestampRange),
                (now() - ts).magnitude <= settings.maxSkew.magnitude
            else {
                return reply("stale timestamp", status: .unauthorized)
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
                String(decoding: try await request.body.collect(upTo: maxBody).readableBytesView, as: UTF8.self))
            guard let given = form["token"], equal(given, token) else {
                return reply("missing or wrong token", status: .unauthorized)
            }
            guard let user = chatUser(platform: "mattermost", form) else {
                return reply("the request names no user_id", status: .badRequest)
            }
            return reply(ChatEscape.mattermost(await answer(user, form["text"] ?? "")), status: .ok)
        }
    }

    /// Slash-command bodies are small; Slack's own limit on the text is 4,000 characters.
    static let maxBody = 64 << 10

    /// The sender, by the platform's stable ids (`team_id`, `user_id`); nil without a user id.
    static func chatUser(platform: String, _ form: [String: String]) -> User? {
        guard let id = form["user_id"], !id.isEmpty, id.utf8.count <= 64 else { return nil }
        let team = form["team_id"].flatMap { $0.isEmpty || $0.utf8.count > 64 ? nil : $0 }
        return User(platform: platform, team: team, user: id, name: String((form["user_name"] ?? id).prefix(80)))
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

    /// `application/x-www-form-urlencoded`.
    public static func parseForm(_ body: String) -> [String: String] {
        var out: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if let k = kv.first { out[k] = kv.count > 1 ? kv[1] : "" }
        }
        return out
    }

    static func reply(_ text: String?, status: HTTPResponse.Status) -> Response {
        guard let text else { return Response(status: status) }
        let object: [String: Any] = status == .ok ? ["response_type": "ephemeral", "text": text] : ["error": text]
        return KlaxonHTTP.json(object, status: status)
    }
}
