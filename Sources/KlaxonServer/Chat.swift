import Crypto
import Foundation
import HTTPTypes
import Hummingbird
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

    public typealias Answer = @Sendable (_ platform: String, _ user: String, _ text: String) async -> String

    static func add(
        to router: Router<BasicRequestContext>, settings: Settings, now: @escaping @Sendable () -> Int64,
        answer: @escaping Answer
    ) {
        router.post("/chat/slack") { request, _ -> Response in
            guard let secret = settings.slackSigningSecret else { return reply(nil, status: .notFound) }
            let body = String(buffer: try await request.body.collect(upTo: 1 << 20))
            guard let ts = request.headers[HTTPField.Name("X-Slack-Request-Timestamp")!].flatMap({ Int64($0) }),
                let signature = request.headers[HTTPField.Name("X-Slack-Signature")!]
            else { return reply("missing X-Slack-Request-Timestamp or X-Slack-Signature", status: .unauthorized) }
            guard abs(now() - ts) <= settings.maxSkew else {
                return reply("stale timestamp", status: .unauthorized)
            }
            guard equal(signature, slackSignature(secret: secret, timestamp: ts, body: body)) else {
                return reply("bad signature", status: .unauthorized)
            }
            let form = parseForm(body)
            let user = form["user_name"] ?? form["user_id"] ?? "unknown"
            return reply(await answer("slack", user, form["text"] ?? ""), status: .ok)
        }
        router.post("/chat/mattermost") { request, _ -> Response in
            guard let token = settings.mattermostToken else { return reply(nil, status: .notFound) }
            let form = parseForm(String(buffer: try await request.body.collect(upTo: 1 << 20)))
            guard let given = form["token"], equal(given, token) else {
                return reply("missing or wrong token", status: .unauthorized)
            }
            return reply(await answer("mattermost", form["user_name"] ?? "unknown", form["text"] ?? ""), status: .ok)
        }
    }

    /// `v0=` + hex HMAC-SHA256 of `v0:timestamp:body`.
    public static func slackSignature(secret: String, timestamp: Int64, body: String) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data("v0:\(timestamp):\(body)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "v0=" + mac.map { String(format: "%02x", $0) }.joined()
    }

    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var diff = x.count ^ y.count
        for i in 0..<min(x.count, y.count) { diff |= Int(x[i] ^ y[i]) }
        return diff == 0
    }

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
