import Crypto
import Foundation
import HTTPTypes
import Hummingbird

/// Who is signed in to the status site, carried in a signed cookie.
///
/// The cookie (`klaxon_session`) is `PAYLOAD.MAC`, both base64url: the payload is
/// `v1 \n expires \n role \n nonce \n name`, and the MAC is HMAC-SHA256 with the site's secret over
/// the payload and a SHA-256 of the token that signed in. So a forged or altered cookie fails, a
/// cookie outlives neither its `expires` (12 hours) nor the process (the secret is random per process
/// unless configured), and changing an owner's token (or the team token) signs out its sessions. The
/// cookie is `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's page sends it) and
/// `Path=/`. It is not `Secure`: the daemon speaks plain HTTP and cannot tell whether a proxy in front
/// of it spoke HTTPS, so a deployment that serves the site over HTTPS should have the proxy add
/// `Secure` (nginx: `proxy_cookie_flags klaxon_session secure;`).
///
/// Forms carry a CSRF token: HMAC-SHA256 with the same secret over `csrf \n` and the whole cookie
/// value — the stateless synchronizer token ("HMAC-based token") pattern. The server keeps nothing:
/// it recomputes the token from the request's own cookie and compares in constant time; another
/// site can neither read the token (it is in the page, not a cookie) nor make it (it needs the
/// secret). Each POST is also checked for a same-origin `Origin` (else `Referer`) header.
///
/// Signing out revokes the session on the server too (`SessionRevocations`, in memory): a copy of
/// the cookie kept after sign-out is refused until it would have expired.
struct SiteSession: Sendable, Equatable {
    enum Role: String, Sendable {
        /// Signed in with the team token (`api.token`): sees every trip, acks, silences.
        case team
        /// Signed in with an owner's token (`api.owners`): sees that owner's trips only.
        case owner
    }

    var role: Role
    /// The owner, or the name a team member gave at sign-in (`team` when none).
    var name: String
    /// When the session ends (seconds since 1970).
    var expires: Int64
    /// Random per sign-in, so two sessions of one name have different CSRF tokens.
    var nonce: String

    var isTeam: Bool { role == .team }

    /// Whether the session may see this owner's trips.
    func maySee(owner: String) -> Bool { isTeam || owner == name }

    /// Who an ack or a silence is recorded as: `web:NAME` (the chat records `PLATFORM:USER`).
    var actor: String { "web:\(name)" }

    static let cookieName = "klaxon_session"
    /// Twelve hours.
    static let lifetime: Int64 = 12 * 3600
    /// Longer cookies are not ours and are not looked at.
    static let maxCookieBytes = 1024

    // MARK: Sign-in

    /// The session a token signs in, or nil when it is nobody's. The token is compared with every
    /// owner's and the team's, each as a SHA-256 digest in constant time, so neither where a token
    /// differs nor its length shows in the time taken. The team token wins over an equal owner token.
    static func signIn(token: String, name: String?, settings: StatusSite.Settings, now: Int64) -> SiteSession? {
        guard !token.isEmpty, token.utf8.count <= 1024 else { return nil }
        let given = digest(token)
        var owner: String? = nil
        for (o, t) in settings.ownerTokens.sorted(by: { $0.key < $1.key }) where !t.isEmpty {
            if KlaxonHTTP.constantTimeEqual(given, digest(t)) && owner == nil { owner = o }
        }
        var team = false
        if let t = settings.teamToken, !t.isEmpty, KlaxonHTTP.constantTimeEqual(given, digest(t)) { team = true }
        let nonce = randomNonce()
        if team {
            return SiteSession(role: .team, name: name ?? "team", expires: now + lifetime, nonce: nonce)
        }
        if let owner { return SiteSession(role: .owner, name: owner, expires: now + lifetime, nonce: nonce) }
        return nil
    }

    /// A team member's name as given at sign-in: 1–40 letters, digits, spaces or `.-_@`; nil for an
    /// empty one, `.invalid` otherwise.
    enum NameCheck: Equatable {
        case none
        case valid(String)
        case invalid
    }

    static func checkName(_ text: String?) -> NameCheck {
        let t = (text ?? "").trimmingCharacters(in: .whitespaces)
        if t.isEmpty { return .none }
        guard t.count <= 40,
            t.unicodeScalars.allSatisfy({
                CharacterSet.alphanumerics.contains($0) || " .-_@".unicodeScalars.contains($0)
            })
        else { return .invalid }
        return .valid(t)
    }

    // MARK: The cookie

    /// The token a session of this role and name was signed in with (nil: no longer valid).
    static func token(role: Role, name: String, settings: StatusSite.Settings) -> String? {
        switch role {
        case .team: return settings.teamToken.flatMap { $0.isEmpty ? nil : $0 }
        case .owner: return settings.ownerTokens[name].flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// The signed cookie value.
    func cookieValue(settings: StatusSite.Settings) -> String {
        let payload = Data(["v1", String(expires), role.rawValue, nonce, name].joined(separator: "\n").utf8)
        let token = Self.token(role: role, name: name, settings: settings) ?? ""
        return Self.base64url(payload) + "." + Self.base64url(Self.mac(payload, token: token, secret: settings.secret))
    }

    /// The session a cookie value carries: well formed, correctly signed, not expired, and its
    /// token still the one configured. Nil otherwise.
    static func from(cookie value: String, settings: StatusSite.Settings, now: Int64) -> SiteSession? {
        guard value.utf8.count <= maxCookieBytes else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let payload = unbase64url(parts[0]), let mac = unbase64url(parts[1]) else {
            return nil
        }
        let fields = String(decoding: payload, as: UTF8.self).split(
            separator: "\n", maxSplits: 4, omittingEmptySubsequences: false
        ).map(String.init)
        guard fields.count == 5, fields[0] == "v1", let role = Role(rawValue: fields[2]),
            let signedWith = Self.token(role: role, name: fields[4], settings: settings),
            HMAC<SHA256>.isValidAuthenticationCode(
                mac, authenticating: payload + digestData(signedWith), using: SymmetricKey(data: settings.secret)),
            let expires = ChatEndpoints.strictInteger(fields[1], in: 0...Int64(9_999_999_999)), expires > now,
            // Signed out: a copy of the cookie is no session either.
            !settings.revocations.isRevoked(nonce: fields[3], expires: expires)
        else { return nil }
        return SiteSession(role: role, name: fields[4], expires: expires, nonce: fields[3])
    }

    /// The session of a request (its `klaxon_session` cookie), or nil.
    static func from(_ request: Request, settings: StatusSite.Settings, now: Int64) -> SiteSession? {
        guard let value = cookie(named: cookieName, in: request) else { return nil }
        return from(cookie: value, settings: settings, now: now)
    }

    /// A cookie's value from the request's `Cookie` headers (the first of that name), bounded.
    static func cookie(named name: String, in request: Request) -> String? {
        for header in request.headers[values: .cookie] where header.utf8.count <= 8192 {
            for pair in header.split(separator: ";") {
                let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces) == name {
                    return kv[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// `Set-Cookie` for this session.
    func setCookie(settings: StatusSite.Settings, now: Int64) -> String {
        "\(Self.cookieName)=\(cookieValue(settings: settings)); Path=/; Max-Age=\(max(0, expires - now)); HttpOnly; SameSite=Strict"
    }

    /// `Set-Cookie` that removes the session.
    static let clearCookie = "\(cookieName)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"

    // MARK: CSRF

    /// The CSRF token of this session (for its forms).
    func csrfToken(settings: StatusSite.Settings) -> String {
        let mac = HMAC<SHA256>.authenticationCode(
            for: Data(("csrf\n" + cookieValue(settings: settings)).utf8), using: SymmetricKey(data: settings.secret))
        return Self.base64url(Data(mac))
    }

    /// Whether a form's token is this session's, compared in constant time.
    func acceptsCSRF(_ given: String?, settings: StatusSite.Settings) -> Bool {
        guard let given, given.utf8.count <= 128 else { return false }
        return KlaxonHTTP.constantTimeEqual(given, csrfToken(settings: settings))
    }

    /// Whether a POST comes from a page of this site: its `Origin` (or, without one, its `Referer`)
    /// names the scheme-less host and port the request was sent to (`Host`). A request with neither
    /// header, or with `Origin: null`, is refused. A proxy in front must pass `Host` through.
    static func sameOrigin(_ request: Request) -> Bool {
        guard let host = request.head.authority, !host.isEmpty else { return false }
        let source: String
        if let origin = request.headers[.origin] {
            source = origin
        } else if let referer = request.headers[.referer] {
            source = referer
        } else {
            return false
        }
        guard source.utf8.count <= 2048 else { return false }
        let lower = source.lowercased()
        let rest: Substring
        if lower.hasPrefix("http://") {
            rest = lower.dropFirst(7)
        } else if lower.hasPrefix("https://") {
            rest = lower.dropFirst(8)
        } else {
            return false
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return authority == host.lowercased()
    }

    // MARK: Helpers

    static func mac(_ payload: Data, token: String, secret: [UInt8]) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: payload + digestData(token), using: SymmetricKey(data: secret)))
    }

    static func digestData(_ s: String) -> Data { Data(SHA256.hash(data: Data(s.utf8))) }
    static func digest(_ s: String) -> String { base64url(digestData(s)) }

    static func randomNonce() -> String {
        var g = SystemRandomNumberGenerator()
        return base64url(Data((0..<12).map { _ in UInt8.random(in: 0...255, using: &g) }))
    }

    static func base64url(_ d: Data) -> String {
        d.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func unbase64url(_ s: Substring) -> Data? {
        guard !s.isEmpty, s.utf8.allSatisfy({ Self.base64urlBytes.contains($0) }) else { return nil }
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.utf8.count % 4 != 0 { t += "=" }
        return Data(base64Encoded: t)
    }

    static let base64urlBytes = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
}
