import AsyncHTTPClient
import Crypto
import Foundation
import KlaxonCore
import KlaxonServer
import Logging
import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// The HTTP fuzz test's parts: a seeded generator of hostile requests, two ways to send them (AsyncHTTPClient for
// what it can express, a raw TCP connection for the bytes it refuses), a /healthz prober, and an RSS reader.

/// SplitMix64: small, fast and the same on every platform, so a seed always means the same requests.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The secrets the fuzzed daemon is configured with.
struct FuzzSecrets: Sendable {
    var teamToken = "team-token"
    var ownerTokens = ["alice": "a-token", "bob": "b-token"]
    var slackSecret = "shh"
    var mattermostToken = "mm-token"
}

/// One generated request, as bytes: what goes on the wire is exactly this.
struct FuzzRequest: Sendable {
    var index: Int
    /// What the generator aimed at (for the tallies).
    var route: String
    var method: String
    /// The request target (origin-form, or something hostile), as sent.
    var target: [UInt8]
    var headers: [(name: String, value: [UInt8])]
    var body: [UInt8]
    /// Sent over a raw connection: the request has bytes AsyncHTTPClient would refuse or repair (invalid UTF-8,
    /// control characters, odd methods, a hostile request line or framing).
    var raw: Bool
    /// The raw request is malformed HTTP on purpose: the server may close the connection without an answer.
    var malformed = false
    /// Known hazards in this request (`slack-ts:extreme-negative`, `duration:near-max`): KLAXON_FUZZ_SKIP_TAGS
    /// skips requests carrying them while a fix is pending.
    var tags: Set<String> = []

    /// The request's bytes for a raw connection (`Connection: close`, framed by Content-Length unless the
    /// generator set its own framing).
    func wire(port: Int) -> [UInt8] {
        var out = Array(method.utf8) + [0x20] + target + Array(" HTTP/1.1\r\n".utf8)
        if !headers.contains(where: { $0.name.lowercased() == "host" }) {
            out += Array("Host: 127.0.0.1:\(port)\r\n".utf8)
        }
        for h in headers { out += Array(h.name.utf8) + Array(": ".utf8) + h.value + [0x0D, 0x0A] }
        let framed = headers.contains {
            let n = $0.name.lowercased()
            return n == "content-length" || n == "transfer-encoding"
        }
        if !framed { out += Array("Content-Length: \(body.count)\r\n".utf8) }
        out += Array("Connection: close\r\n\r\n".utf8)
        return out + body
    }

    /// A readable account of the request for a finding: method, target, headers and body, escaped and shortened.
    var summary: String {
        let marks = ([route] + (raw ? ["raw"] : []) + (malformed ? ["malformed"] : []) + tags.sorted()).joined(
            separator: ", ")
        var lines = ["#\(index) [\(marks)] \(method) \(FuzzText.show(target, limit: 300))"]
        for h in headers { lines.append("  \(h.name): \(FuzzText.show(h.value, limit: 200))") }
        lines.append("  body (\(body.count) bytes): \(FuzzText.show(body, limit: 600))")
        return lines.joined(separator: "\n")
    }
}

enum FuzzText {
    /// Printable ASCII as is, everything else as `\xNN`; long values cut, with their length.
    static func show(_ bytes: [UInt8], limit: Int) -> String {
        var out = ""
        for b in bytes.prefix(limit) {
            switch b {
            case 0x20...0x7E where b != 0x5C: out.append(Character(UnicodeScalar(b)))
            case 0x0A: out += "\\n"
            case 0x0D: out += "\\r"
            default: out += String(format: "\\x%02x", b)
            }
        }
        if bytes.count > limit { out += "… (\(bytes.count) bytes)" }
        return out
    }

    static func utf8(_ s: String) -> [UInt8] { Array(s.utf8) }
}

/// Draws from a per-request generator, so request N is the same for a seed whatever ran before it.
struct Draw {
    var rng: SplitMix64

    init(seed: UInt64, index: Int) {
        rng = SplitMix64(state: seed ^ (UInt64(index) &* 0xD1B5_4A32_D192_ED03))
        _ = rng.next()
    }

    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }
    mutating func int(_ r: ClosedRange<Int>) -> Int { Int.random(in: r, using: &rng) }
    mutating func pick<T>(_ xs: [T]) -> T { xs[Int.random(in: 0..<xs.count, using: &rng)] }
    /// Random bytes, eight per draw.
    mutating func bytes(_ n: Int) -> [UInt8] {
        let padded = (n + 7) / 8 * 8
        var out = [UInt8](repeating: 0, count: padded)
        out.withUnsafeMutableBytes { p in
            for i in stride(from: 0, to: padded, by: 8) {
                p.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self)
            }
        }
        out.removeLast(padded - n)
        return out
    }

    /// A size that is mostly small, sometimes large: `max` is reached about once in a few hundred draws.
    mutating func size(_ small: Int, _ max: Int) -> Int {
        if chance(0.01) { return int(max / 2...max) }
        if chance(0.05) { return int(small...Swift.max(small, max / 16)) }
        return int(0...small)
    }

    /// Picks by weight.
    mutating func weighted<T>(_ xs: [(Int, T)]) -> T {
        var r = int(0...(xs.reduce(0) { $0 + $1.0 } - 1))
        for (w, x) in xs {
            if r < w { return x }
            r -= w
        }
        return xs[xs.count - 1].1
    }

    mutating func ascii(_ n: Int, from alphabet: String = "abcdefghijklmnopqrstuvwxyz0123456789-_") -> String {
        let a = Array(alphabet.utf8)  // ASCII alphabets only
        return String(decoding: (0..<n).map { _ in a[int(0...(a.count - 1))] }, as: UTF8.self)
    }
}

/// `String(repeating:count:)` without its cost per copy, which dominated the generator's time in a debug build.
func repeated(_ unit: String, _ count: Int) -> String {
    let u = Array(unit.utf8)
    if u.count == 1 { return String(decoding: [UInt8](repeating: u[0], count: count), as: UTF8.self) }
    let total = u.count * count
    guard total > 0 else { return "" }
    var out = u
    out.reserveCapacity(total)
    while out.count < total { out += Array(out.prefix(total - out.count)) }  // doubling: a few copies, not `count`
    return String(decoding: out, as: UTF8.self)
}

/// A duration text that sums to exactly Int64.max seconds (every term within the parser's digit limit): `now + d`
/// on it traps unless the durations are capped.
let maxDurationText: String = {
    let week: Int64 = 999_999_999 * 604_800
    let (q, r) = Int64.max.quotientAndRemainder(dividingBy: week)
    return repeated("999999999w", Int(q)) + "\(r / 604_800)w\(r % 604_800)s"
}()

/// Makes the requests. Deterministic for a seed and an index, except the Slack timestamps and signatures that
/// must be current to be accepted.
struct FuzzGenerator: Sendable {
    let seed: UInt64
    let secrets: FuzzSecrets
    let port: Int

    static let oddMethods = [
        "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "MKCOL", "FOO", "get",
        "post", "M-SEARCH", "BREW", "X", repeated("A", 1_000),
    ]
    /// Methods only a raw connection sends: not tokens, or ones the client library treats specially.
    static let rawMethods = ["CONNECT", "G ET", "GET\u{7F}", "ГЕТ", "", "GET\t", "POST:"]

    static let slackTimestamps: [(String, String?)] = [
        ("-9223372036854775808", "slack-ts:extreme-negative"), ("-9223372036854775807", "slack-ts:extreme-negative"),
        ("-9223372036000000000", "slack-ts:extreme-negative"), ("9223372036854775807", nil),
        ("9223372036854775808", nil), ("-1", nil), ("0", nil), ("1e9", nil), (" 123", nil), ("123 ", nil),
        ("+5", nil), ("0x10", nil), ("", nil), ("١٢٣٤٥٦٧٨٩٠", nil), ("１２３", nil), ("99999999999999999999999", nil),
        ("1.5", nil), ("-0", nil), ("NaN", nil), ("--1", nil), ("\u{0660}", nil),
    ]

    static let chatCommands = [
        "help", "", "alerts", "ack -1", "ack 0", "ack 99999999999999999999", "ack 9223372036854775807",
        "ack -9223372036854775808", "ack 1", "ack 2", "ack x", "silence x y 999999999w", "silence high 999999999w",
        "silence high S1 0s", "silence high S1 2h", "silence a b c d", "silence", "silence high -5m",
        "quakes since 999999999w", "quakes", "quakes since 0s", "quakes since 24h", "quakes near Tokyo",
        "quakes near 91,181", "quakes near nan,nan", "quakes near inf,-inf", "quakes near 1e308,1e308",
        "quakes near -0,-0", "quakes near ,", "quakes near", "quakes since", "quakes near Tokyo since 999999999w",
        "gauge S1", "gauge NOPE", "gauge", "gauge ../../etc/passwd", "gauge %00", "gauge S1 S2", "aqi Delhi", "aqi",
        "aqi ../../x", "trip ../../x", "trip denver", "trip paris", "trip", "trip %2e%2e", "GAUGE S1", "Help",
        "🚨 alerts", "ack\u{0}1", "silence high S1 1h30m", "silence high\tS1\t2h", "silence high S1 3650d",
        "silence high S1 3651d", "silence high S1 87600h1s", "quakes since 3650d", "quakes since 3651d",
    ]

    static let maxSilenceCommand = "silence high S1 " + maxDurationText
    static let maxQuakesCommand = "quakes since " + maxDurationText
    static let maxSilenceEncoded = maxSilenceCommand.replacingOccurrences(of: " ", with: "%20")
    static let maxQuakesEncoded = maxQuakesCommand.replacingOccurrences(of: " ", with: "%20")

    func request(_ index: Int, now: Int64) -> FuzzRequest {
        var d = Draw(seed: seed, index: index)
        let route = d.weighted([
            (2, "healthz"), (2, "readyz"), (3, "metrics"), (18, "readings"), (4, "alerts"), (4, "silences"),
            (10, "silence-create"), (5, "silence-delete"), (4, "trips"), (5, "trip"), (3, "trip-delete"),
            (20, "slack"), (10, "mattermost"), (6, "slack-actions"), (4, "mattermost-actions"), (10, "unknown"),
        ])
        var r = FuzzRequest(index: index, route: route, method: "GET", target: [], headers: [], body: [], raw: false)
        let (method, path) = base(route, &d)
        r.method = d.chance(0.08) ? d.pick(Self.oddMethods) : method
        if d.chance(0.02) {
            r.method = d.pick(Self.rawMethods)
            r.raw = true
        }
        r.target = mutate(path, &d, raw: &r.raw)
        auth(route, &d, &r)
        contentType(route, &d, &r)
        r.body = body(route, &d, &r, now: now)
        if route == "slack" || route == "slack-actions" || d.chance(0.03) { slackHeaders(&d, &r, now: now) }
        extraHeaders(&d, &r)
        if !r.raw && d.chance(0.1) { r.raw = true }  // the same request over a raw connection
        if r.raw && d.chance(0.15) { malform(&d, &r) }
        if r.method == "TRACE" && !r.body.isEmpty { r.raw = true }  // AsyncHTTPClient refuses this itself
        return r
    }

    // MARK: Routes and paths

    func base(_ route: String, _ d: inout Draw) -> (String, String) {
        switch route {
        case "healthz": return ("GET", "/healthz")
        case "readyz": return ("GET", "/readyz")
        case "metrics": return ("GET", "/metrics")
        case "readings": return ("POST", "/api/v1/readings")
        case "alerts": return ("GET", "/api/v1/alerts")
        case "silences": return ("GET", "/api/v1/silences")
        case "silence-create": return ("POST", "/api/v1/silences")
        case "silence-delete": return ("DELETE", "/api/v1/silences/" + parameter(&d))
        case "trips": return ("GET", "/api/v1/trips")
        case "trip": return ("GET", "/api/v1/trips/" + parameter(&d))
        case "trip-delete": return ("DELETE", "/api/v1/trips/" + parameter(&d))
        case "slack": return ("POST", "/chat/slack")
        case "mattermost": return ("POST", "/chat/mattermost")
        case "slack-actions": return ("POST", "/chat/slack/actions")
        case "mattermost-actions": return ("POST", "/chat/mattermost/actions")
        default:
            let method = d.pick(["GET", "POST", "DELETE", "PUT"])
            return (
                method,
                d.pick([
                    "/", "/api", "/api/v1", "/api/v1/", "/api/v2/alerts", "/chat", "/chat/teams", "/healthz/x",
                    "/metrics.json", "/favicon.ico", "/.env", "/api/v1/readings/1", "/api/v1/silences/a/b",
                    "/api/v1/trips/a/b/c", "/%2e%2e/%2e%2e/etc/passwd", "/robots.txt", "/chat/slack/extra",
                    "/" + d.ascii(d.int(1...40)),
                ])
            )
        }
    }

    /// A silence id or trip name: real-looking, empty, traversal, long, unicode, percent-escaped.
    func parameter(_ d: inout Draw) -> String {
        d.pick([
            "denver", "paris", "00000000-0000-0000-0000-000000000000",
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301", "", "..", "%2e%2e", "..%2F..%2Fx", "%2F", "%00", "%FF%FE",
            "%C0%AF", "%", "%zz", "%E2%82", "' OR 1=1 --", "*", "%F0%9F%9A%A8", "%E5%90%8D%E5%89%8D",
            repeated("a", d.int(256...16_384)), "a%20b", "denver%00", "DENVER", "denver/",
        ])
    }

    /// Path mutations: escapes, traversal, case, long and unicode segments, queries; raw bytes on a raw connection.
    func mutate(_ path: String, _ d: inout Draw, raw: inout Bool) -> [UInt8] {
        var p = Array(path.utf8)
        guard d.chance(0.2) else { return p }
        for _ in 0..<d.int(1...3) {
            switch d.int(0...11) {
            case 0:  // percent-encode one letter
                if let i = p.indices.filter({ (0x61...0x7A).contains(p[$0]) }).randomElement(using: &d.rng) {
                    p.replaceSubrange(i...i, with: Array(String(format: "%%%02X", p[i]).utf8))
                }
            case 1: p = Array(String(decoding: p, as: UTF8.self).uppercased().utf8)
            case 2: p += [0x2F]
            case 3: p = Array("/".utf8) + p
            case 4: p = Array(d.pick(["/..", "/.", "/%2e%2e", "/%2E%2E%2F..", "/a/.."]).utf8) + p
            case 5: p += Array("/\(d.pick(["..", ".", "%2e", "..%2f..%2fetc%2fpasswd"]))".utf8)
            case 6:
                p +=
                    Array("/".utf8)
                    + Array(repeated(d.pick(["a", "%41", "-", "~"]), d.int(1...4_000)).utf8)
            case 7:
                let unicode = d.pick(["名前", "🚨", "é", "\u{202E}evil", "İ", "ß", "\u{FEFF}", "Ω≈ç√"])
                if d.chance(0.5) {
                    p += Array("/".utf8) + Array(unicode.utf8)
                    raw = true
                } else {
                    p +=
                        Array("/".utf8)
                        + Array((unicode.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "").utf8)
                }
            case 8: p += Array(query(&d).utf8)
            case 9:
                p += Array(d.pick(["%", "%z", "%FF%FE", "%00", "%C0%AF", "%E2%82", "%%", "%2", "%u0041"]).utf8)
            case 10:
                // Bytes no client library would put in a target.
                p += d.pick([
                    [0xFF], [0xC3], [0x00], [0x7F], [0x22], [0x3C, 0x3E], [0x7B, 0x7D], [0x5C], [0x20, 0x41],
                ])
                raw = true
            default:
                p =
                    d.chance(0.5)
                    ? Array("http://127.0.0.1:\(port)".utf8) + p : d.chance(0.5) ? Array("*".utf8) : []
                raw = true
            }
        }
        return p
    }

    func query(_ d: inout Draw) -> String {
        "?"
            + (0..<d.int(0...5)).map { _ in
                d.pick([
                    "a=1", "a=%zz", "a=%FF", "=", "&", "a", "a[]=1",
                    "a=\(repeated("x", d.int(1...8_000)))",
                    "since=999999999w", "token=team-token", "%00=%00", "a=%E2%82",
                ])
            }.joined(separator: "&")
    }

    // MARK: Headers

    func auth(_ route: String, _ d: inout Draw, _ r: inout FuzzRequest) {
        let right: String
        switch route {
        case "trips", "trip", "trip-delete": right = d.pick(secrets.ownerTokens.sorted { $0.key < $1.key }.map(\.value))
        default: right = secrets.teamToken
        }
        let value = d.weighted([
            (45, "Bearer \(right)"), (15, ""), (4, "Bearer wrong"), (3, "Bearer "), (3, "Bearer \(right) "),
            (3, "bearer \(right)"), (2, "Basic dGVhbTp0b2tlbg=="), (2, "Bearer \(right)x"),
            (2, "Bearer " + repeated("A", d.int(1_000...16_000))), (2, "Bearer tëam-tökén"),
            (2, "Bearer \(secrets.teamToken)"), (2, "Bearer a-token"), (2, "Bearer b-token"), (2, "Bearer mm-token"),
        ])
        guard !value.isEmpty else { return }
        r.headers.append(("Authorization", FuzzText.utf8(value)))
        if d.chance(0.03) { r.headers.append(("Authorization", FuzzText.utf8("Bearer wrong"))) }
    }

    func contentType(_ route: String, _ d: inout Draw, _ r: inout FuzzRequest) {
        let fitting: String
        switch route {
        case "readings":
            fitting = d.pick(["text/csv", "application/x-ndjson", "application/json", "application/jsonl"])
        case "slack", "mattermost", "slack-actions": fitting = "application/x-www-form-urlencoded"
        default: fitting = "application/json"
        }
        let value = d.weighted([
            (60, fitting), (10, ""), (3, "multipart/form-data; boundary=----x"), (3, "text/plain; charset=utf-16"),
            (2, "application/json; charset=ebcdic"), (2, "*/*"), (2, ";;;"), (2, "application/x-www-form-urlencoded"),
            (2, repeated("json", d.int(100...4_000))), (2, "täxt/çsv"), (2, "json"),
        ])
        if !value.isEmpty { r.headers.append(("Content-Type", FuzzText.utf8(value))) }
    }

    func slackHeaders(_ d: inout Draw, _ r: inout FuzzRequest, now: Int64) {
        var ts: String
        if d.chance(0.55) {
            ts = String(now + Int64(d.pick([0, 0, 0, -5, 5, -299, 299, -301, 301, -86_400])))
        } else {
            let (text, tag) = d.pick(Self.slackTimestamps)
            ts = text
            if let tag { r.tags.insert(tag) }
            if d.chance(0.1) { ts = repeated("9", d.int(20...16_000)) }
        }
        let good = Self.slackSignature(secret: secrets.slackSecret, timestamp: ts, body: r.body)
        let signature = d.weighted([
            (55, good), (8, "v0=" + d.ascii(64, from: "0123456789abcdef")), (8, ""), (4, good.uppercased()),
            (4, String(good.dropLast())), (3, Self.slackSignature(secret: "wrong", timestamp: ts, body: r.body)),
            (3, "v1=" + good.dropFirst(3)), (2, repeated("v0=", d.int(100...5_000))),
        ])
        if !(d.chance(0.05)) { r.headers.append(("X-Slack-Request-Timestamp", FuzzText.utf8(ts))) }
        if !(d.chance(0.05)) { r.headers.append(("X-Slack-Signature", FuzzText.utf8(signature))) }
        if d.chance(0.03) { r.headers.append(("X-Slack-Request-Timestamp", FuzzText.utf8(String(now)))) }
    }

    /// Slack's signature as Slack computes it: `v0=` + hex HMAC-SHA256 of `v0:TIMESTAMP:BODY`, over the timestamp
    /// text and the body bytes exactly as sent (so a hostile timestamp can carry a valid signature too).
    static func slackSignature(secret: String, timestamp: String, body: [UInt8]) -> String {
        var mac = HMAC<SHA256>(key: SymmetricKey(data: Data(secret.utf8)))
        mac.update(data: Data("v0:\(timestamp):".utf8))
        mac.update(data: body)
        return "v0=" + mac.finalize().map { String(format: "%02x", $0) }.joined()
    }

    func extraHeaders(_ d: inout Draw, _ r: inout FuzzRequest) {
        for _ in 0..<d.weighted([(60, 0), (25, 1), (10, 2), (5, 4)]) {
            let name = d.pick([
                "X-Filler", "Cookie", "User-Agent", "Accept", "Accept-Encoding", "X-Forwarded-For", "If-None-Match",
                "Range", "Content-Encoding", "Accept-Language", "X-Request-Id", "Origin", "Referer", "X-" + d.ascii(8),
            ])
            var value: [UInt8]
            switch d.int(0...7) {
            case 0:
                value = FuzzText.utf8(
                    repeated(d.pick(["a", "9", " ", "=", ","]), d.int(1_000...16_000)))
            case 1: value = FuzzText.utf8(d.pick(["gzip", "deflate", "br", "bytes=0-", "bytes=-1", "*", "close"]))
            case 2: value = FuzzText.utf8(d.pick(["名前", "🚨🚨🚨", "é", "\u{202E}", "١٢٣"]))
            case 3:
                // Invalid UTF-8 and control bytes: only a raw connection sends these.
                value = Array("x".utf8) + d.pick([[0xFF], [0xC3, 0x28], [0x80], [0x01], [0x7F], [0xED, 0xA0, 0x80]])
                r.raw = true
            case 4: value = FuzzText.utf8(String(d.int(Int.min...Int.max)))
            case 5: value = []
            default: value = FuzzText.utf8(d.ascii(d.int(1...64), from: "abcdefABCDEF0123456789 ;=,\"'()<>@/?{}"))
            }
            r.headers.append((name, value))
        }
    }

    /// Breaks the HTTP framing of a raw request: the server should answer 4xx or close, never hang or 5xx.
    func malform(_ d: inout Draw, _ r: inout FuzzRequest) {
        r.malformed = true
        switch d.int(0...7) {
        case 0: r.headers.append(("Content-Length", FuzzText.utf8("\(r.body.count), \(r.body.count + 1)")))
        case 1:
            r.headers.append(("Content-Length", FuzzText.utf8("\(r.body.count)")))
            r.headers.append(("Content-Length", FuzzText.utf8("\(r.body.count + 5)")))
        case 2: r.headers.append(("Content-Length", FuzzText.utf8(d.pick(["-1", "abc", "0x10", "+5", " ", "1e3"]))))
        case 3: r.headers.append(("X Space", FuzzText.utf8("x")))
        case 4: r.headers.append(("X-Nul", [0x61, 0x00, 0x62]))
        case 5: r.headers.append(("X-Folded", FuzzText.utf8("a\r\n continued")))
        case 6:
            // A valid chunked body with a chunk extension and a trailer.
            let chunk =
                Array("\(String(r.body.count, radix: 16));ext=1\r\n".utf8) + r.body
                + Array("\r\n0\r\nX-T: 1\r\n\r\n".utf8)
            r.headers.append(("Transfer-Encoding", FuzzText.utf8("chunked")))
            r.body = chunk
        default: r.headers.append(("", FuzzText.utf8("empty name")))
        }
    }

    // MARK: Bodies

    func body(_ route: String, _ d: inout Draw, _ r: inout FuzzRequest, now: Int64) -> [UInt8] {
        if d.chance(0.07) { return d.bytes(d.size(512, 200_000)) }
        // Just over the 1 MiB body limits.
        if d.chance(0.004) { return [UInt8](repeating: 0x61, count: (1 << 20) + d.int(1...64)) }
        switch route {
        case "readings":
            let json = r.headers.contains {
                $0.name == "Content-Type" && String(decoding: $0.value, as: UTF8.self).contains("json")
            }
            return (json != d.chance(0.15)) ? jsonLines(&d) : csv(&d)
        case "silence-create": return silenceJSON(&d, &r)
        case "slack", "mattermost": return form(route, &d, &r)
        case "slack-actions": return slackPress(&d)
        case "mattermost-actions": return mattermostPress(&d, now: now)
        default: return d.chance(0.6) ? [] : FuzzText.utf8(d.pick(["{}", "[]", "null", "x=1", "{\"a\":"]))
        }
    }

    /// A Slack button press (`payload=` and block_actions JSON), well formed or not: ids, values and
    /// response URLs of every kind (allowed ones go to a closed local port, see the daemon's config),
    /// junk JSON, deep nesting and a message of many blocks.
    func slackPress(_ d: inout Draw) -> [UInt8] {
        let json: String
        if d.chance(0.25) {
            json = d.pick([
                "", "{", "[]", "null", "\"x\"", #"{"type":"block_actions"}"#, #"{"type":"view_submission"}"#,
                repeated("[", d.int(1...5_000)), repeated(#"{"a":"#, d.int(1...2_000)),
                #"{"type":"block_actions","user":{"id":1},"actions":{}}"#,
            ])
        } else {
            let user = d.pick(["U-ALICE", "U-BOB", "", "<@U1>", "名前", repeated("U", d.int(60...5_000))])
            let action = d.pick(["ack.0", "silence_1h.0", "open.0", "ack", "", "ack.", "drop.0", repeated("a", 300)])
            let value = d.pick(["1", "2", "0", "-1", "abc", "99999999999999999999", "", repeated("9", 3_000)])
            let url = d.pick([
                "http://127.0.0.1:9/actions/r", "https://evil.example/r", "", "http://127.0.0.1:9@evil.example/",
                "http://127.0.0.1:9/a b", "http://127.0.0.1:9/" + repeated("x", 3_000),
            ])
            let block =
                #"{"type":"actions","block_id":"alert-0-actions","elements":[{"type":"button","action_id":"ack.0","text":{"type":"plain_text","text":"Ack","emoji":true},"value":"1"}]}"#
            let blocks = Array(repeating: block, count: d.pick([0, 1, 5, 60])).joined(separator: ",")
            json =
                #"{"type":"block_actions","user":{"id":"\#(user)","username":"x","team_id":"T1"},"team":{"id":"T1"},"#
                + #""response_url":"\#(url)","message":{"text":"t","blocks":[\#(blocks)]},"#
                + #""actions":[{"action_id":"\#(action)","block_id":"alert-0-actions","value":"\#(value)","type":"button"}]}"#
        }
        let field = d.chance(0.9) ? "payload" : d.pick(["", "payloads", "text"])
        return FuzzText.utf8(field + "=" + (d.chance(0.9) ? formEncode(json) : json))
    }

    /// A Mattermost button press (JSON): contexts signed with the configured token's key, unsigned,
    /// tampered, expired or malformed, from users of every kind.
    func mattermostPress(_ d: inout Draw, now: Int64) -> [UInt8] {
        if d.chance(0.2) {
            return FuzzText.utf8(
                d.pick([
                    "", "{", "[]", "null", #"{"context":"x"}"#, #"{"context":{"action":"ack"}}"#,
                    repeated(#"{"context":"#, d.int(1...2_000)), repeated("[", d.int(1...5_000)),
                ]))
        }
        let key = MattermostActions.key(token: d.chance(0.8) ? secrets.mattermostToken : "wrong")
        var context: [String: Any] = MattermostActions.context(
            d.pick(ChatAction.allCases), episode: Int64(d.int(1...3)), key: key,
            now: now - d.pick([0, 0, 60, 90_000, -3_600]))
        if d.chance(0.2) {
            context[d.pick(["action", "episode", "issued", "nonce", "sig"])] = d.pick(["", "1", 1, "ack"])
        }
        let body: [String: Any] = [
            "user_id": d.pick(["u-alice", "u-bob", "", "<@x>", repeated("u", d.int(60...3_000))]),
            "user_name": d.pick(["alice", "", "名前"]), "team_id": d.pick(["t1", "", "../x"]), "post_id": "p",
            "type": "button", "context": context,
        ]
        return Array((try? JSONSerialization.data(withJSONObject: body)) ?? Data())
    }

    static let stations = [
        "S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "08055000", "", "☃", "../../x", "a,b",
        "Robert'); DROP TABLE readings;--",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", "\u{202E}S1", "S1 ", " S1", "s1", "名前",
    ]
    static let values = [
        "500", "151", "150", "12", "0", "-0", "1e308", "1e309", "-1e309", "1.7976931348623157e308", "4.9e-324", "NaN",
        "nan", "-nan", "inf", "-inf", "Infinity", "+Inf", "0x1p3", "99999999999999999999999999999",
        "-9223372036854775808", "1_000", "1,5", "١٢٣", "", " 5 ", "5e", ".", "-", "+", "1e-400", "1e", "0.1e+", "--1",
        "9" + repeated("9", 400), "0." + repeated("0", 5_000) + "1",
    ]

    func isoTime(_ d: inout Draw) -> String {
        let now = Int64(Date().timeIntervalSince1970) / 3600 * 3600  // hourly, so a seed mostly repeats itself
        return d.weighted([
            (50, Timestamp.format(now - Int64(d.int(0...72)) * 3600)), (5, "2026-01-01T00:00:00Z"),
            (2, "9999-12-31T23:59:59Z"), (2, "0000-01-01T00:00:00Z"), (2, "0001-01-01T00:00:00+14:00"),
            (2, "2026-02-30T25:61:61Z"), (2, "2026-01-01T00:00:00+99:99"), (2, "2026-01-01T00:00:00-23:59"),
            (2, "2026-01-01T00:00:00.123456789123456789Z"), (2, "2026-01-01 00:00:00"), (2, "1767225600"),
            (1, "-1"), (1, ""), (1, "soon"), (1, "２０２６-01-01T00:00:00Z"), (1, "99999999999-01-01T00:00:00Z"),
            (1, "-2026-01-01T00:00:00Z"), (1, "+275760-09-13T00:00:00Z"), (1, "2026-01-01T00:00:60Z"),
            (1, "2026-13-01T00:00:00Z"), (1, "2026-00-00T00:00:00Z"), (1, "2026-01-01T00:00:00.Z"),
        ])
    }

    func csvField(_ s: String, _ d: inout Draw) -> String {
        if d.chance(0.08) { return "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        if d.chance(0.01) { return "\"" + s }  // unterminated
        return s
    }

    func csv(_ d: inout Draw) -> [UInt8] {
        let header = d.weighted([
            (60, "station,metric,time,value"), (15, "station,metric,time,value,unit,source,quality"),
            (3, "value,time,metric,station"), (3, "\u{FEFF}station,metric,time,value"), (2, "station,metric,time"),
            (2, "station,station,metric,time,value"), (2, ""), (2, "a,b,c,d"), (2, "STATION,METRIC,TIME,VALUE"),
            (2, "station, metric, time, value"), (1, repeated("station,", 5_000) + "value"),
        ])
        let columns = header.split(separator: ",", omittingEmptySubsequences: false).count
        let eol = d.weighted([(85, "\n"), (10, "\r\n"), (5, "\r")])
        var out = header + eol
        let rows = d.chance(0.01) ? d.int(500...3_000) : d.int(0...20)
        for _ in 0..<rows {
            var fields = [
                csvField(station(&d), &d),
                d.weighted([
                    (60, "gage_height"), (10, "discharge"), (5, "aqi"), (5, ""), (2, "gage_height "),
                    (2, repeated("m", 5_000)),
                ]),
                csvField(isoTime(&d), &d), csvField(d.pick(Self.values), &d),
            ]
            if columns > 4 {
                fields += [d.pick(["ft", "", "°F", "名前"]), d.pick(["api", "", "x"]), d.pick(["P", "A", ""])]
            }
            if d.chance(0.05) { fields.removeLast(d.int(1...fields.count)) }
            if d.chance(0.05) { fields.append(d.pick(["extra", "", "\"\""])) }
            out += fields.joined(separator: ",") + eol
        }
        var bytes = Array(out.utf8)
        if d.chance(0.05) { bytes.insert(d.pick([0x00, 0xFF, 0xC3, 0x80]), at: d.int(0...bytes.count)) }
        if d.chance(0.05) { bytes.removeLast(min(bytes.count, d.int(0...10))) }  // a cut-off last line
        return bytes
    }

    func station(_ d: inout Draw) -> String {
        d.weighted([
            (70, "S\(d.int(0...29))"), (25, d.pick(Self.stations)),
            (5, repeated("s", d.pick([1_000, 4_000, 10_000]))),  // few lengths: few alerts
        ])
    }

    /// Bytes that JSON must escape (NUL aside: it ends the C string, so its presence shows as a short span).
    static let jsonEscaped: [CChar] = ([0x22, 0x5C] + Array(1...0x1F)).map { CChar($0) } + [0]
    /// Bytes a form value may carry unescaped.
    static let formSafe: [CChar] =
        Array(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8
        ).map { CChar(bitPattern: $0) } + [0]

    /// Whether every byte of `s` is outside (`outside: true`) or inside `set`, by the C library: the generator
    /// handles long strings, and a byte loop is slow in a debug build.
    static func spans(_ s: String, _ set: [CChar], outside: Bool) -> Bool {
        let n = s.utf8.count
        return s.withCString { p in
            set.withUnsafeBufferPointer { outside ? strcspn(p, $0.baseAddress!) : strspn(p, $0.baseAddress!) }
        } == n
    }

    func jsonString(_ s: String) -> String {
        if Self.spans(s, Self.jsonEscaped, outside: true) { return "\"" + s + "\"" }
        let data = try? JSONSerialization.data(withJSONObject: [s], options: [.fragmentsAllowed])
        return data.map { String(decoding: $0.dropFirst().dropLast(), as: UTF8.self) } ?? "\"\""
    }

    func nested(_ d: inout Draw) -> String {
        let depth = d.weighted([(60, d.int(1...50)), (30, d.int(100...2_000)), (10, d.int(10_000...100_000))])
        let open = d.chance(0.5) ? "[" : "{\"a\":"
        let close = open == "[" ? "]" : "}"
        return repeated(open, depth) + "1" + repeated(close, depth)
    }

    func jsonLines(_ d: inout Draw) -> [UInt8] {
        var lines: [String] = []
        let count = d.chance(0.01) ? d.int(500...3_000) : d.int(0...20)
        for _ in 0..<count {
            if d.chance(0.05) {
                lines.append(
                    d.pick([
                        "", "{", "}", "[]", "null", "{\"station\":", "\u{FEFF}{}", "{\"station\":\"S1\",}", "garbage",
                        nested(&d),
                    ]))
                continue
            }
            var fields: [(String, String)] = [
                ("station", jsonString(station(&d))),
                ("metric", jsonString(d.weighted([(70, "gage_height"), (10, "discharge"), (5, "")]))),
                ("time", jsonString(isoTime(&d))),
                (
                    "value",
                    d.weighted([
                        (40, "\(d.int(0...600))"), (10, jsonString(d.pick(Self.values))), (3, "1e400"), (3, "-1e400"),
                        (3, "NaN"), (3, "Infinity"), (3, "null"), (3, "true"), (3, "[1]"), (3, "{\"a\":1}"),
                        (3, "123456789012345678901234567890"), (3, "-0"), (3, "1E+2"), (3, "[[[[[[1]]]]]]"),
                        (2, "0x10"),
                        (2, "\"\\ud800\""), (2, "\"\\u0000\""), (2, "01"), (2, ".5"),
                    ])
                ),
            ]
            if d.chance(0.03) { fields[3].1 = nested(&d) }
            if d.chance(0.1) { fields.remove(at: d.int(0...(fields.count - 1))) }
            if d.chance(0.05) {
                fields.append(
                    (
                        d.pick(["unit", "source", "quality", "extra", "station", ""]),
                        d.pick(["\"x\"", "1", "null", "[]"])
                    ))
            }
            if d.chance(0.1) { fields.shuffle(using: &d.rng) }
            lines.append("{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: d.pick([",", ", ", " ,"])) + "}")
        }
        var bytes = Array(lines.joined(separator: d.chance(0.9) ? "\n" : "\r\n").utf8)
        if d.chance(0.05) { bytes.insert(d.pick([0x00, 0xFF, 0xC3, 0x80]), at: d.int(0...bytes.count)) }
        return bytes
    }

    static let matchers = [
        "rule=high", "rule=flood-stage", "station=S1", "rule!=x", "rule=~hi.*", "rule!~.*", "=", "", "rule", "rule=",
        "=x", "a=~[", "a=~(", "station=~(a+)+$", "station=~(a|aa)*c", "station=~(a*)*b", "station=~.{0,65535}",
        "x=~\\", "rule==high", "rule=!~x", "名前=値", "rule=\"quoted\"", "\"rule\"=x", "rule=\u{0}", "a b=c",
        "station=~\\p{L}+", "metric=~(?i)GAGE.*", "rule=~(?<n>x)\\k<n>", "rule=~a{99999999}",
    ]

    func silenceJSON(_ d: inout Draw, _ r: inout FuzzRequest) -> [UInt8] {
        if d.chance(0.08) {
            return FuzzText.utf8(
                d.pick([
                    "", "{}", "[]", "null", "\"x\"", "{\"matchers\":", nested(&d),
                    "{\"matchers\":[\"rule=high\"],\"for\":\"2h\",}",
                ]))
        }
        var parts: [String] = []
        if !d.chance(0.05) {
            let count = d.weighted([(80, d.int(0...4)), (15, d.int(5...50)), (5, d.int(500...2_000))])
            var list: [String] = []
            for _ in 0..<count {
                let m = d.weighted([
                    (60, d.pick(Self.matchers)),
                    (
                        10,
                        d.pick(["rule", "station", "名前", repeated("n", d.int(1...10_000))])
                            + d.pick(["=", "!=", "=~", "!~"]) + d.ascii(d.int(0...40))
                    ),
                    (5, "station=" + repeated("v", d.int(1...10_000))),
                ])
                list.append(jsonString(m))
            }
            if d.chance(0.05) { list.append(d.pick(["1", "null", "[]", "{}", "true"])) }
            parts.append(
                "\"matchers\":"
                    + d.weighted([(90, "[" + list.joined(separator: ",") + "]"), (5, "\"rule=high\""), (5, "null")]))
        }
        if !d.chance(0.05) {
            var f = d.weighted([
                (40, d.pick(["2h", "1m", "30s", "1h30m", "1w", "3650d", "3651d", "521w"])), (8, "999999999w"),
                (6, maxDurationText),
                (4, repeated("999999999w", d.int(2...200))), (4, "0s"), (4, "-5m"), (4, ""),
                (4, "soon"), (3, "9223372036854775807s"), (3, "1e9s"), (3, "2H"), (3, "١h"), (3, "2h "),
                (2, repeated("1s", d.int(1_000...50_000))),
            ])
            if f == maxDurationText { r.tags.insert("duration:near-max") }
            if d.chance(0.05) { f = "\u{0}" + f }
            parts.append("\"for\":" + d.weighted([(90, jsonString(f)), (4, "7200"), (3, "null"), (3, "[\"2h\"]")]))
        }
        if d.chance(0.6) {
            parts.append(
                "\"comment\":"
                    + d.weighted([
                        (70, jsonString("fuzz")), (10, jsonString(repeated("c", d.int(1...8_000)))),
                        (10, "1"), (10, jsonString("\u{0}\u{202E}🚨")),
                    ]))
        }
        if d.chance(0.3) {
            parts.append(
                "\"created_by\":"
                    + d.pick([
                        jsonString("alice"), jsonString(""), "null", "{}",
                        jsonString(repeated("u", 5_000)),
                    ]))
        }
        if d.chance(0.05) { parts.append("\"matchers\":[\"rule=x\"]") }  // a duplicate key
        parts.shuffle(using: &d.rng)
        return FuzzText.utf8("{" + parts.joined(separator: ",") + "}")
    }

    func formEncode(_ s: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        if Self.spans(s, Self.formSafe, outside: false) { return s }
        return s.addingPercentEncoding(withAllowedCharacters: allowed) ?? s
    }

    func form(_ route: String, _ d: inout Draw, _ r: inout FuzzRequest) -> [UInt8] {
        // The longest texts come with their form encoding made once.
        var (text, encoded): (String, String?) = d.weighted([
            (75, (d.pick(Self.chatCommands), nil)), (10, (d.ascii(d.int(0...30), from: "abc 123-!?"), nil)),
            (5, ("gauge " + repeated("9", d.int(1_000...20_000)), nil)),
            (5, (Self.maxSilenceCommand, Self.maxSilenceEncoded)), (5, (Self.maxQuakesCommand, Self.maxQuakesEncoded)),
        ])
        if encoded != nil { r.tags.insert("duration:near-max") }
        if d.chance(0.05) {
            text = text.uppercased()
            encoded = nil
        }
        var pairs: [(String, String)] = [
            (
                "token",
                route == "mattermost"
                    ? d.weighted([
                        (70, secrets.mattermostToken), (10, "nope"), (5, ""), (5, "mm-token "), (5, "MM-TOKEN"),
                        (5, secrets.teamToken),
                    ]) : "x"
            ),
            ("team_id", "T1"),
            (
                "user_id",
                d.weighted([
                    (70, "U-ALICE"), (15, "U-BOB"), (5, ""), (5, "名前"),
                    (5, repeated("U", d.int(1...5_000))),
                ])
            ),
            ("user_name", d.pick(["alice", "bob", "U-ALICE", "", "../../x", "名前", "a%b"])),
            ("command", "/klaxon"),
            ("text", text),
        ]
        if d.chance(0.1) { pairs.remove(at: d.int(0...(pairs.count - 1))) }
        if d.chance(0.1) { pairs.shuffle(using: &d.rng) }
        var body = pairs.map {
            "\($0.0)=\(d.chance(0.9) ? ($0.0 == "text" ? encoded : nil) ?? formEncode($0.1) : $0.1)"
        }.joined(separator: "&")
        if d.chance(0.15) {
            body +=
                "&"
                + d.pick([
                    "%", "%z", "%FF%FE", "%00", "%C0%AF", "%E2%82", "text=%", "text=%%", "=&=&&", "text",
                    "user_name=%FF", "text=ack%20%2D1", "+=+", "token=%6Dm-token",
                ])
        }
        if d.chance(0.05) { body = repeated("a=b&", d.int(1_000...60_000)) + body }
        return FuzzText.utf8(body)
    }
}

/// What one request got back.
struct FuzzOutcome: Sendable {
    var index: Int
    var route: String
    var raw: Bool
    var malformed: Bool
    /// The status code; nil when no response came.
    var status: Int?
    /// Why no response came (a client error, a closed connection, the safety net).
    var problem: String?
    var bytes = 0
    var head = ""
    var seconds = 0.0
    /// Sent a second time after the server closed the pooled connection it was given (see `viaClient`).
    var retried = false
}

/// Sends a request over a fresh TCP connection and reads until the server closes it.
enum RawHTTP {
    static func exchange(port: Int, bytes: [UInt8]) async throws -> (status: Int?, total: Int, head: String) {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return try await channel.executeThenClose { inbound, outbound in
            // The server may answer and close before it read everything (a 400 for a header it refuses): a
            // failed write is not the end, the answer may be waiting.
            try? await outbound.write(ByteBuffer(bytes: bytes))
            var head: [UInt8] = []
            var total = 0
            do {
                for try await chunk in inbound {
                    total += chunk.readableBytes
                    if head.count < 512 { head += chunk.readableBytesView.prefix(512 - head.count) }
                }
            } catch {
                // A reset after the answer: what arrived still counts.
            }
            let text = String(decoding: head, as: UTF8.self)
            var status: Int? = nil
            if text.hasPrefix("HTTP/1."), text.count >= 12 {
                status = Int(text.dropFirst(9).prefix(3))
            }
            return (status, total, String(text.prefix(300)))
        }
    }
}

/// Races an operation against a safety net; nil when the net expired first (the operation is cancelled).
func withSafetyNet<T: Sendable>(
    seconds: Int, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T? {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = try await group.next()!
        group.cancelAll()
        return first
    }
}

/// Sends fuzz requests: over AsyncHTTPClient when it can carry them unchanged, else over a raw connection.
struct FuzzSender: Sendable {
    let client: HTTPClient
    let port: Int
    /// Seconds after which a request without an answer counts as a failure. No request is designed to hang, so
    /// the net is generous; its expiry is itself a finding.
    let safetyNet = 30

    func send(_ r: FuzzRequest) async -> FuzzOutcome {
        let started = ContinuousClock.now
        var o = await exchange(r)
        let elapsed = ContinuousClock.now - started
        o.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return o
    }

    func exchange(_ r: FuzzRequest) async -> FuzzOutcome {
        var o = FuzzOutcome(index: r.index, route: r.route, raw: r.raw, malformed: r.malformed)
        if !r.raw, let outcome = await viaClient(r) { return outcome }
        o.raw = true
        do {
            let port = self.port
            let bytes = r.wire(port: port)
            guard
                let answer = try await withSafetyNet(
                    seconds: safetyNet, { try await RawHTTP.exchange(port: port, bytes: bytes) })
            else {
                o.problem = "no answer within \(safetyNet) s"
                return o
            }
            o.status = answer.status
            o.bytes = answer.total
            o.head = answer.head
            if answer.status == nil {
                o.problem = answer.total == 0 ? "closed without an answer" : "not an HTTP answer"
            }
        } catch {
            o.problem = "raw connection failed: \(error)"
        }
        return o
    }

    /// The client library's own refusals: the request never left, so it goes over a raw connection instead.
    static func refusedByClient(_ e: HTTPClientError) -> Bool {
        let text = "\(e)"
        return [
            "invalidURL", "invalidHeaderField", "traceRequestWithBody", "emptyHost", "emptyScheme", "unsupportedScheme",
        ].contains { text.contains($0) }
    }

    /// nil when the client library refused the request itself (it is then sent raw).
    func viaClient(_ r: FuzzRequest) async -> FuzzOutcome? {
        var o = FuzzOutcome(index: r.index, route: r.route, raw: false, malformed: false)
        let path = String(decoding: r.target, as: UTF8.self)
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .init(rawValue: r.method)
        for h in r.headers {
            guard let value = String(validating: h.value, as: UTF8.self) else { return nil }
            request.headers.add(name: h.name, value: value)
        }
        if !r.body.isEmpty { request.body = .bytes(ByteBuffer(bytes: r.body)) }
        do {
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, timeout: .seconds(Int64(safetyNet)))
            } catch let e as HTTPClientError where e == .remoteConnectionClosed {
                // The keep-alive race every HTTP/1.1 client must expect (RFC 9112 §9.3.1): the pool handed this
                // request to a connection the server was closing (idle, or opened and never used, past its head
                // timeout) before the FIN arrived. The request was never read, so it is sent once more (the pool has dropped that
                // connection); a server that closes on the request itself fails the second time too.
                o.retried = true
                response = try await client.execute(request, timeout: .seconds(Int64(safetyNet)))
            }
            o.status = Int(response.status.code)
            var head: [UInt8] = []
            for try await chunk in response.body {
                o.bytes += chunk.readableBytes
                if head.count < 300 { head += chunk.readableBytesView.prefix(300 - head.count) }
            }
            o.head = String(decoding: head, as: UTF8.self)
        } catch let e as HTTPClientError where Self.refusedByClient(e) {
            return nil
        } catch let e as HTTPClientError where e == .deadlineExceeded {
            o.problem = "no answer within \(safetyNet) s"
        } catch {
            // The status may have arrived before the body broke off.
            o.problem = "client error: \(error)"
        }
        return o
    }
}

/// Polls `/healthz` every 100 ms over its own client (so it never queues behind the fuzz requests) and records
/// each latency and failure.
final class HealthProbe: Sendable {
    struct Record: Sendable {
        var latencies: [Double] = []
        var failures: [String] = []
    }

    let record = Mutex(Record())
    let stopped = Mutex(false)

    func run(port: Int) async {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        while !stopped.withLock({ $0 }) {
            let started = ContinuousClock.now
            do {
                // The net is far above the 5 s this test tolerates: an expiry is a failure anyway.
                let response = try await client.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(30))
                let body = String(buffer: try await response.body.collect(upTo: 1 << 16))
                let elapsed = ContinuousClock.now - started
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                record.withLock {
                    $0.latencies.append(seconds)
                    if response.status.code != 200 || body != "ok\n" {
                        $0.failures.append("HTTP \(response.status.code): \(body.prefix(200))")
                    }
                }
            } catch {
                record.withLock { $0.failures.append("\(error)") }
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        try? await client.shutdown()
    }

    func stop() { stopped.withLock { $0 = true } }
}

/// The process's resident set, in bytes (Linux: `VmRSS` of /proc/self/status).
func residentBytes(pid: Int32? = nil) -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid.map(String.init) ?? "self")/status", encoding: .utf8),
        let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
    else { return nil }
    return Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "").map { $0 * 1024 }
}

/// RSS after handing the heap's free pages back to the kernel (glibc keeps them otherwise), so what is measured is
/// memory in use rather than the allocator's high-water mark after a burst of large requests.
func settledResidentBytes() -> Int? {
    #if canImport(Glibc)
        // glibc's malloc_trim, which the Glibc module does not export.
        if let symbol = dlsym(nil, "malloc_trim") {
            _ = unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)(0)
        }
    #endif
    return residentBytes()
}

/// Collects the daemon's warnings and errors (lines of its log) so the test can report them.
final class FuzzLogCapture: Sendable {
    let lines = Mutex<[String]>([])
    let count = Mutex(0)

    /// Error and critical lines (the first 50): a request that makes the daemon log one is a finding.
    let errors = Mutex<[String]>([])

    func add(_ line: String, level: Logger.Level) {
        count.withLock { $0 += 1 }
        lines.withLock { if $0.count < 200 { $0.append(String(line.prefix(600))) } }
        if level >= .error { errors.withLock { if $0.count < 50 { $0.append(String(line.prefix(600))) } } }
    }
}

/// Which requests were started and which finished, written as they happen: if the process dies, the journal
/// names the requests in flight (replay them with KLAXON_FUZZ_SEED and KLAXON_FUZZ_ONLY).
final class FuzzJournal: Sendable {
    let path: String
    let handle: Mutex<FileHandle?>
    /// A path given by KLAXON_FUZZ_JOURNAL is kept; the default one is removed after a clean run.
    let keep: Bool

    init(seed: UInt64, path: String?) {
        keep = path != nil
        self.path =
            path ?? FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-fuzz-\(seed).journal").path
        _ = FileManager.default.createFile(atPath: self.path, contents: nil)
        handle = Mutex(FileHandle(forWritingAtPath: self.path))
    }

    func write(_ line: String) {
        handle.withLock { try? $0?.write(contentsOf: Data((line + "\n").utf8)) }
    }

    func close(remove: Bool) {
        handle.withLock {
            try? $0?.close()
            $0 = nil
        }
        if remove && !keep { try? FileManager.default.removeItem(atPath: path) }
    }
}
