import HTTPTypes
import Hummingbird
import NIOCore

/// The `Host` names the status site answers to: a defence against DNS rebinding.
///
/// A page on `evil.example` can make its own name resolve to 127.0.0.1 and then read
/// `http://evil.example:9464/` as "same origin": the browser sends `Host: evil.example:9464`. So the
/// site answers only names that cannot be rebound or that the operator named:
/// - always: IP literals (`127.0.0.1`, `192.0.2.7`, `[::1]`: an address is its own origin, never a
///   name someone else's DNS controls), `localhost` and `*.localhost` (browsers resolve those to
///   loopback themselves), and a request without `Host` (browsers always send one);
/// - the names in `site.hosts`, and the listener's own name when it listens on a name;
/// - any name when the daemon listens on every interface (`0.0.0.0`, `::`) and `site.hosts` is not
///   set: it is then reached by names the daemon cannot know, and is not the loopback-only target
///   rebinding is after. `site.hosts: ["*"]` allows any name whatever the listener.
///
/// Anything else gets 403 (as Jupyter and Vite answer a rebinding attempt), before any handler runs.
public struct SiteHosts: Sendable, Equatable {
    /// Lowercased host names (no port) allowed besides the ones always allowed.
    public var names: Set<String>
    /// Any name is allowed.
    public var any: Bool

    public init(names: Set<String> = [], any: Bool = false) {
        self.names = Set(names.map { Self.normalised($0) })
        self.any = any
    }

    /// Loopback names and IP literals only: the default of a site whose listener is not known.
    public static let loopback = SiteHosts()

    /// The policy for a listener on `host` with `site.hosts` (nil: not configured).
    public static func forListener(host: String, configured: [String]?) -> SiteHosts {
        if let configured {
            let names = configured.map(normalised)
            var allowed = SiteHosts(names: Set(names.filter { $0 != "*" }), any: names.contains("*"))
            if let own = nameOf(listener: host) { allowed.names.insert(own) }
            return allowed
        }
        let h = normalised(host)
        if ["0.0.0.0", "::", "[::]", "*", ""].contains(h) { return SiteHosts(any: true) }
        return SiteHosts(names: nameOf(listener: host).map { [$0] } ?? [])
    }

    /// A listener's host when it is a name (not an address).
    static func nameOf(listener host: String) -> String? {
        let h = normalised(host)
        guard !h.isEmpty, !isAddress(h), !["0.0.0.0", "::", "*"].contains(h) else { return nil }
        return h
    }

    /// Whether a request with this `Host` (its authority: `name[:port]`) may be answered.
    public func allows(authority: String?) -> Bool {
        guard let authority, !authority.isEmpty else { return true }
        guard let host = Self.host(ofAuthority: authority) else { return false }
        if any || Self.isAddress(host) || host == "localhost" || host.hasSuffix(".localhost") { return true }
        return names.contains(host)
    }

    /// The host of an authority, lowercased and without its port or a trailing dot; nil when it is
    /// not a well-formed host (bad characters, a bad port, too long).
    static func host(ofAuthority authority: String) -> String? {
        guard authority.utf8.count <= 300 else { return nil }
        let a = authority.lowercased()
        var host: Substring
        var port: Substring = ""
        if a.hasPrefix("[") {
            guard let close = a.firstIndex(of: "]") else { return nil }
            host = a[...close]
            let rest = a[a.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                port = rest.dropFirst()
            }
            let inside = host.dropFirst().dropLast()
            guard !inside.isEmpty, inside.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else { return nil }
            return String(host)
        }
        if let colon = a.lastIndex(of: ":") {
            host = a[..<colon]
            port = a[a.index(after: colon)...]
        } else {
            host = a[...]
        }
        guard port.utf8.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        if host.hasSuffix(".") { host = host.dropLast() }
        guard !host.isEmpty, host.utf8.allSatisfy({ hostBytes.contains($0) }) else { return nil }
        return String(host)
    }

    private static let hostBytes = Set("abcdefghijklmnopqrstuvwxyz0123456789-._".utf8)

    /// An IPv4 dotted quad or a bracketed IPv6 address.
    static func isAddress(_ host: String) -> Bool {
        if host.hasPrefix("[") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { p in
                !p.isEmpty && p.utf8.count <= 3 && p.allSatisfy { $0.isASCII && $0.isNumber } && Int(p)! <= 255
            }
    }

    /// A configured or listener name, as compared: lowercased, no trailing dot, IPv6 bracketed.
    static func normalised(_ name: String) -> String {
        var n = name.trimmingCharacters(in: .whitespaces).lowercased()
        if n.hasSuffix(".") { n.removeLast() }
        if n.contains(":"), !n.hasPrefix("[") { n = "[" + n + "]" }
        return n
    }

    /// Whether a name is acceptable in `site.hosts`: `*`, or a host name of letters, digits, `-`,
    /// `.` and `_` (no port, no scheme).
    public static func isValidName(_ name: String) -> Bool {
        if name == "*" { return true }
        let n = name.lowercased()
        return !n.isEmpty && n.utf8.count <= 253 && n.utf8.allSatisfy { hostBytes.contains($0) }
            && !n.hasPrefix(".") && !n.hasPrefix("-")
    }
}

/// Refuses a site request whose `Host` the policy does not allow, before its handler runs.
struct SiteHostCheck: RouterMiddleware {
    typealias Context = BasicRequestContext
    let hosts: SiteHosts

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard hosts.allows(authority: request.head.authority) else {
            var h = HTTPFields()
            h[.contentType] = "text/plain; charset=utf-8"
            h[.cacheControl] = "no-store"
            // The refused name is not echoed: it is the attacker's text.
            return Response(
                status: .forbidden, headers: h,
                body: .init(
                    byteBuffer: ByteBuffer(
                        string: "This host name is not allowed: add it to site.hosts in klaxon.yaml.\n")))
        }
        return try await next(request, context)
    }
}
