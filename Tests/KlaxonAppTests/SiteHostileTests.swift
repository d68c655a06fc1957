import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import NIOCore
import Testing

@testable import KlaxonServer

/// The status site with hostile text in every place it shows data or the request, in-process on
/// 127.0.0.1 over a real SQLite store; a client that does not follow redirects, so cookies and
/// `Location` are seen as sent.
final class HostileSite: Sendable {
    static let team = "team-token"
    static let owners = ["alice": "alice-token"]

    let store: any Store
    let port: Int
    let task: Task<Void, any Error>
    let client: HTTPClient

    init(store: any Store, port: Int, task: Task<Void, any Error>, client: HTTPClient) {
        self.store = store
        self.port = port
        self.task = task
        self.client = client
    }

    static func with(
        _ store: any Store, hosts: SiteHosts = .loopback, _ body: (HostileSite) async throws -> Void
    ) async throws {
        var site = StatusSite.Settings(
            teamToken: team, ownerTokens: owners, timeZone: TimeZone(identifier: "UTC")!, refreshSeconds: 60)
        site.hosts = hosts
        // Rule names known, so a silence for a hostile rule name is warned about, with near names.
        site.ruleNames = ["high", "flood-stage"]
        let (port, task) = await startHTTP(
            store: store, settings: .init(port: 0, apiToken: team, ownerTokens: owners, site: site))
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton,
            configuration: HTTPClient.Configuration(redirectConfiguration: .disallow))
        let server = HostileSite(store: store, port: port, task: task, client: client)
        let outcome = await Result { try await body(server) }
        try? await client.shutdown()
        task.cancel()
        #expect(await Bounded.wait(for: task, within: TestServers.stopLimit), "the server should stop")
        try outcome.get()
    }

    var origin: String { "http://127.0.0.1:\(port)" }

    func get(_ path: String, cookie: String? = nil, host: String? = nil) async throws -> SiteServer.Page {
        var request = HTTPClientRequest(url: origin + path)
        if let cookie { request.headers.add(name: "Cookie", value: cookie) }
        if let host { request.headers.replaceOrAdd(name: "Host", value: host) }
        return try await send(request)
    }

    func post(_ path: String, form: [(String, String)], cookie: String? = nil) async throws -> SiteServer.Page {
        var request = HTTPClientRequest(url: origin + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Origin", value: origin)
        if let cookie { request.headers.add(name: "Cookie", value: cookie) }
        request.body = .bytes(ByteBuffer(string: form.map { "\($0.0)=\(enc($0.1))" }.joined(separator: "&")))
        return try await send(request)
    }

    func send(_ request: HTTPClientRequest) async throws -> SiteServer.Page {
        let response = try await client.execute(request, deadline: .now() + .seconds(60))
        let body = String(buffer: try await response.body.collect(upTo: 16 << 20))
        return SiteServer.Page(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: body)
    }

    /// Signs in with a token; the session cookie (`klaxon_session=…`).
    func signIn(_ token: String) async throws -> String {
        let page = try await post("/signin", form: [("token", token)])
        #expect(page.status == 303)
        let setCookie = try #require(page.header("Set-Cookie"))
        return String(setCookie.prefix { $0 != ";" })
    }

    /// The CSRF token in a page's forms.
    static func csrf(_ page: SiteServer.Page) throws -> String {
        let marker = "name=\"csrf\" value=\""
        let start = try #require(page.body.range(of: marker))
        return String(page.body[start.upperBound...].prefix { $0 != "\"" })
    }
}

/// A path segment or query value, percent-encoded beyond the unreserved characters.
func enc(_ s: String) -> String {
    s.addingPercentEncoding(
        withAllowedCharacters: CharacterSet(
            charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? ""
}

/// What a page must not have if hostile text stayed text: checks the markup as a browser would tokenise
/// it (tags and attributes), and that each hostile string appears only escaped.
enum MarkupCheck {
    static let forbiddenTags: Set<String> = [
        "script", "iframe", "object", "embed", "base", "link", "textarea", "frame", "img", "audio", "video",
    ]

    /// Problems with a page: a forbidden tag, a third `<meta>` (the head has two), an event-handler
    /// attribute, an unquoted attribute value, an attribute value with `<` or a quote, a
    /// `javascript:` or other non-site URL, a hostile string written unescaped.
    static func problems(_ body: String, hostile: [String]) -> [String] {
        var found: [String] = []
        let b = Array(body.unicodeScalars)
        var i = 0
        var metas = 0
        func at(_ k: Int) -> Unicode.Scalar? { k < b.count ? b[k] : nil }
        while i < b.count {
            guard b[i] == "<" else {
                i += 1
                continue
            }
            var k = i + 1
            if at(k) == "!" || at(k) == "/" {
                while let c = at(k), c != ">" { k += 1 }
                i = k + 1
                continue
            }
            var name = ""
            while let c = at(k), c.properties.isAlphabetic || ("0"..."9").contains(c) || c == "-" {
                name.unicodeScalars.append(c)
                k += 1
            }
            guard !name.isEmpty else {
                found.append("a bare '<' in text at \(i)")
                i += 1
                continue
            }
            let tag = name.lowercased()
            if forbiddenTags.contains(tag) { found.append("a <\(tag)> tag") }
            if tag == "meta" { metas += 1 }
            // Attributes until '>'.
            while let c = at(k), c != ">" {
                if c == " " || c == "\n" || c == "\t" || c == "/" {
                    k += 1
                    continue
                }
                var attr = ""
                while let c = at(k), c != "=", c != " ", c != ">", c != "/", c != "\n" {
                    attr.unicodeScalars.append(c)
                    k += 1
                }
                let lower = attr.lowercased()
                if lower.hasPrefix("on") || lower.contains("\"") || lower.contains("'") || lower.contains("<") {
                    found.append("attribute \(attr.prefix(40)) on <\(tag)>")
                }
                guard at(k) == "=" else { continue }
                k += 1
                guard at(k) == "\"" else {
                    found.append("unquoted value of \(attr.prefix(40)) on <\(tag)>")
                    continue
                }
                k += 1
                var value = ""
                while let c = at(k), c != "\"" {
                    value.unicodeScalars.append(c)
                    k += 1
                }
                k += 1
                if value.contains("<") || value.contains("'") || value.contains(">") {
                    found.append("unescaped markup in \(attr)=\"\(value.prefix(60))\" on <\(tag)>")
                }
                if lower == "href" || lower == "action" || lower == "src" {
                    let v = value.lowercased()
                    if !(v.hasPrefix("/") && !v.hasPrefix("//")) && !v.hasPrefix("https://") && !v.hasPrefix("http://")
                    {
                        found.append("a non-site URL in \(attr)=\"\(value.prefix(60))\"")
                    }
                }
                if lower == "http-equiv" { found.append("http-equiv on <\(tag)>") }
            }
            // Raw-text elements: skip to their end tag (a `<` inside a title is markup that got in).
            if tag == "style" || tag == "title" {
                let close = Array("</\(tag)>".unicodeScalars)
                var e = k
                while e + close.count <= b.count, !b[e..<(e + close.count)].elementsEqual(close) {
                    if tag == "title" && b[e] == "<" { found.append("markup in <title>") }
                    e += 1
                }
                k = e - 1
            }
            i = k + 1
        }
        if metas > 2 { found.append("\(metas) <meta> tags (the head has 2)") }
        for h in hostile where h.contains(where: { "<>\"'&".contains($0) }) && body.contains(h) {
            found.append("the hostile string \(h.prefix(40).debugDescription) unescaped")
        }
        return found
    }
}

@Suite("status site: hostile input", .serialized, .timeLimit(.minutes(10)))
struct SiteHostileTests {
    let now = Int64(Date().timeIntervalSince1970) / 60 * 60

    /// Markup breakouts, quotes of both kinds, an entity, a script URL, line breaks, an encoded path,
    /// an RTL override and 10 KB.
    static let hostile: [String] = [
        "\"><meta http-equiv=\"refresh\" content=\"0;url=https://evil.example/\">",
        "'onmouseover='alert(1)' x='",
        "</textarea><script>alert(1)</script>",
        "javascript:alert(document.cookie)",
        "&#x27;&quot;&lt;b&gt;",
        "two\nlines\rand CR",
        "%2F..%2F..%2Fetc%2Fpasswd",
        "\u{202E}txt.exe",
        "Zürich Hbf / Gare du Nord ? # %",
        String(repeating: "<a href=\"x\" onclick='y'>&amp;", count: 360),
    ]

    /// Those ingest takes as station ids (bounded, no control or bidirectional formatting character).
    static var stationIDs: [String] {
        hostile.filter { ReadingsParser.textProblem("station", $0, limit: ReadingsParser.Limits.stationBytes) == nil }
    }

    func expectClean(
        _ page: SiteServer.Page, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let problems = MarkupCheck.problems(page.body, hostile: Self.hostile)
        #expect(problems.isEmpty, "\(what): \(problems.prefix(5))", sourceLocation: sourceLocation)
        #expect(page.status < 500, "\(what): \(page.status)", sourceLocation: sourceLocation)
    }

    /// Trips, stations (ids and names), gauges, AQI, quakes, alerts with acks, silences and a
    /// failing source, all carrying the hostile strings.
    func hostileStore() async throws -> any Store {
        let store = try tempStore()
        var readings: [Reading] = []
        var infos: [StationInfo] = []
        var gauges: [GaugeInfo] = []
        for (i, h) in Self.hostile.enumerated() {
            try await store.save(
                trip: Trip(
                    name: h, owner: "alice",
                    stops: [.init(place: h, arrive: "2026-12-01", nights: 2)], activities: [h]),
                at: now)
            // A station named by the hostile text, with a gauge of that name too.
            let named = "N\(i)"
            infos.append(StationInfo(id: named, name: h, timeZone: "UTC"))
            gauges.append(GaugeInfo(lid: "GAUGE\(i)", usgsID: named, name: h, description: h, state: "OR"))
            for metric in ["gage_height", "aqi", "temperature"] {
                readings.append(Reading(station: named, metric: metric, time: now - 600, value: 12, unit: "ft"))
            }
        }
        for id in Self.stationIDs {
            for metric in ["gage_height", "aqi", "temperature"] {
                readings.append(Reading(station: id, metric: metric, time: now - 600, value: 12, unit: "ft"))
            }
        }
        try await store.write(SourceBatch(stations: infos, gauges: gauges, readings: readings), at: now)
        try await store.write(
            quakes: Self.hostile.enumerated().map { i, h in
                QuakeEvent(
                    id: "q\(i)", time: (now - 3600) * 1000, updated: (now - 3600) * 1000, magnitude: 5, magType: h,
                    place: h, latitude: 35, longitude: -118, depthKm: 10, alert: "orange",
                    url: i % 2 == 0 ? "javascript:alert(1)" : "https://example.org/\(h.filter { $0 != " " })")
            }, at: now)
        try await store.recordFailure(source: "feed", error: Self.hostile[0] + Self.hostile[2], at: now)
        let rules = [
            Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10))
        ]
        _ = try await Evaluate.run(store: store, rules: rules, now: now)
        let firing = try await store.firingAlerts()
        for (n, alert) in firing.prefix(Self.hostile.count).enumerated() {
            _ = try await store.ack(transitionID: alert.transitionID, by: "cli:" + Self.hostile[n], at: now)
        }
        for h in Self.hostile {
            if let s = try? Silence.forAlert(
                rule: "high", station: h, duration: 86_400, now: now, comment: h, createdBy: "cli:" + h)
            {
                try await store.addSilence(s, now: now)
            }
        }
        return store
    }

    @Test("hostile data on every read page stays text: no tag, attribute or URL breaks out")
    func readPages() async throws {
        try await HostileSite.with(try await hostileStore()) { site in
            var paths = ["/", "/?refresh=off", "/gauges", "/air", "/quakes", "/quakes?span=month"]
            for (i, h) in Self.hostile.enumerated() {
                paths += ["/stations/N\(i)", "/gauges/N\(i)", "/air/N\(i)"]
                // Hostile request text: in path ids (400 or 404 pages that quote it) and in queries.
                paths += [
                    "/stations/\(enc(h))", "/gauges/\(enc(h))", "/air/\(enc(h))",
                    "/gauges/N\(i)?range=\(enc(h))", "/gauges/N\(i)?since=\(enc(h))", "/quakes?span=\(enc(h))",
                    "/quakes?minmagnitude=\(enc(h))", "/quakes?from=\(enc(h))", "/?refresh=\(enc(h))",
                ]
            }
            for path in paths {
                expectClean(try await site.get(path), path)
            }
            // The names are shown, escaped, in full.
            let gauges = try await site.get("/gauges")
            for h in Self.hostile where !h.contains("\n") && !h.contains("\r") {
                #expect(gauges.body.contains(HTMLText.escape(h)), "\(h.prefix(30))")
            }
            // A script URL from a feed is not a link; an http one is, escaped.
            let quakes = try await site.get("/quakes?span=month")
            #expect(!quakes.body.lowercased().contains("href=\"javascript:"))
            let escapedURL = HTMLText.escape("https://example.org/" + Self.hostile[1].filter { $0 != " " })
            #expect(quakes.body.contains("href=\"\(escapedURL)\""))
            // A URL with a line break is not linked.
            #expect(!quakes.body.contains("href=\"https://example.org/two"))
        }
    }

    @Test("hostile data on the signed-in pages (trips, alerts, silences) stays text, for the team and an owner")
    func signedInPages() async throws {
        try await HostileSite.with(try await hostileStore()) { site in
            let team = try await site.signIn(HostileSite.team)
            let alice = try await site.signIn("alice-token")
            let trips = try await site.get("/trips", cookie: team)
            #expect(trips.status == 200)
            expectClean(trips, "/trips (team)")
            for h in Self.hostile {
                #expect(trips.body.contains("data-trip=\"\(HTMLText.escape(h))\""), "\(h.prefix(30))")
            }
            expectClean(try await site.get("/trips", cookie: alice), "/trips (alice)")
            for h in Self.hostile where h.utf8.count <= 256 {
                let page = try await site.get("/trips/\(enc(h))?owner=alice", cookie: team)
                #expect(page.status == 200, "\(h.prefix(30))")
                expectClean(page, "/trips/\(h.prefix(30))")
                expectClean(try await site.get("/trips/\(enc(h))", cookie: alice), "/trips/… (alice)")
            }
            let alerts = try await site.get("/alerts", cookie: team)
            #expect(alerts.status == 200)
            expectClean(alerts, "/alerts")
            // Hostile text in the page's own address comes back in hidden `back` fields: escaped.
            for h in Self.hostile {
                expectClean(try await site.get("/alerts?x=\(enc(h))", cookie: team), "/alerts?x=…")
                expectClean(try await site.get("/silences?x=\(enc(h))", cookie: team), "/silences?x=…")
            }
            let silences = try await site.get("/silences", cookie: team)
            expectClean(silences, "/silences")
            // Silences added through the form with hostile fields: refused or shown escaped.
            let csrf = try HostileSite.csrf(silences)
            for h in Self.hostile {
                let added = try await site.post(
                    "/silences",
                    form: [("csrf", csrf), ("rule", h), ("station", h), ("for", "2h"), ("comment", h), ("back", h)],
                    cookie: team)
                expectClean(added, "POST /silences")
                if added.status == 303 {
                    // Back to the list, which says what the new silence names: escaped there too.
                    let location = added.header("Location") ?? ""
                    #expect(location.hasPrefix("/silences?added="), "back=\(h.prefix(30))")
                    #expect(StatusSite.isSilenceID(String(location.dropFirst("/silences?added=".count))))
                    let notice = try await site.get(location, cookie: team)
                    #expect(notice.body.contains("id=\"silence-added\""))
                    expectClean(notice, "/silences?added=…")
                }
                let refused = try await site.post(
                    "/silences", form: [("csrf", csrf), ("rule", "r"), ("for", h)], cookie: team)
                #expect(refused.status == 400 || refused.status == 413)
                expectClean(refused, "POST /silences for=…")
            }
            expectClean(try await site.get("/silences", cookie: team), "/silences after the form")
        }
    }

    @Test("signin?next= takes a local path only, escaped; a sign-in never redirects off the site")
    func signInNext() async throws {
        try await HostileSite.with(try tempStore()) { site in
            let nexts =
                Self.hostile + [
                    "//evil.example/", "/\\evil.example", "\\\\evil.example", "https://evil.example/",
                    "/\"><meta/http-equiv=\"refresh\"/content=\"0;url=//evil.example\">", "/\t/evil.example",
                    "/ok\r\nSet-Cookie: x=y", " /x", "/%2F%2Fevil.example", "/trips?refresh=off",
                ]
            for next in nexts {
                let form = try await site.get("/signin?next=\(enc(next))")
                #expect(form.status == 200)
                expectClean(form, "/signin?next=\(next.prefix(30))")
                #expect(!form.body.contains("http-equiv"))
                let posted = try await site.post("/signin", form: [("token", HostileSite.team), ("next", next)])
                #expect([303, 400, 413].contains(posted.status), "\(next.prefix(30))")
                if let location = posted.header("Location") {
                    #expect(location.hasPrefix("/") && !location.hasPrefix("//"), "\(location.prefix(60))")
                    #expect(!location.contains("\\") && !location.contains("\""), "\(location.prefix(60))")
                }
            }
            // A local path is kept, escaped, and used.
            let page = try await site.get("/signin?next=\(enc("/trips?refresh=off&x=1"))")
            #expect(page.body.contains("name=\"next\" value=\"/trips?refresh=off&amp;x=1\""))
            let posted = try await site.post(
                "/signin", form: [("token", HostileSite.team), ("next", "/trips?refresh=off")])
            #expect(posted.header("Location") == "/trips?refresh=off")
        }
    }

    @Test("signing out revokes the session: the old cookie, replayed, is signed out")
    func signOutRevokes() async throws {
        try await HostileSite.with(try tempStore()) { site in
            for token in [HostileSite.team, "alice-token"] {
                let cookie = try await site.signIn(token)
                let other = try await site.signIn(token)
                let trips = try await site.get("/trips", cookie: cookie)
                #expect(trips.status == 200)
                let out = try await site.post(
                    "/signout", form: [("csrf", try HostileSite.csrf(trips))], cookie: cookie)
                #expect(out.status == 303)
                #expect(out.header("Set-Cookie")?.contains("Max-Age=0") == true)
                // The same cookie, replayed: no session (a read page sends to sign-in, a form is refused).
                let replay = try await site.get("/trips", cookie: cookie)
                #expect(replay.status == 303)
                #expect(replay.header("Location")?.hasPrefix("/signin") == true)
                let form = try await site.post(
                    "/signout", form: [("csrf", try HostileSite.csrf(trips))], cookie: cookie)
                #expect(form.status == 403)
                #expect(!(try await site.get("/signin", cookie: cookie)).body.contains("You are signed in"))
                // Another session of the same token is not affected.
                #expect(try await site.get("/trips", cookie: other).status == 200)
            }
        }
    }

    @Test("the revocation list is bounded: when full, every older session is signed out rather than one forgotten")
    func revocationBound() {
        let list = SessionRevocations(capacity: 3)
        let now: Int64 = 1_000_000
        for n in 0..<3 { list.revoke(nonce: "n\(n)", expires: now + 100, now: now) }
        #expect(list.isRevoked(nonce: "n0", expires: now + 100))
        #expect(!list.isRevoked(nonce: "live", expires: now + 100))
        // Expired entries make room first.
        list.revoke(nonce: "n3", expires: now + 200, now: now + 150)
        #expect(list.count == 1)
        list.revoke(nonce: "n4", expires: now + 300, now: now + 150)
        list.revoke(nonce: "n5", expires: now + 300, now: now + 150)
        // Full of live entries: everything issued until now is revoked, nothing forgotten.
        list.revoke(nonce: "n6", expires: now + 300, now: now + 150)
        for n in 3...6 { #expect(list.isRevoked(nonce: "n\(n)", expires: now + 300)) }
        #expect(list.isRevoked(nonce: "live", expires: now + 150 + SiteSession.lifetime))
        #expect(!list.isRevoked(nonce: "later", expires: now + 151 + SiteSession.lifetime))
    }

    @Test("station ids with spaces, slashes, percent signs and non-ASCII letters: linked, found and shown")
    func stationIDs() async throws {
        let store = try tempStore()
        let ids = [
            "Zürich Hbf", "São Paulo/2", "50% ü", "a?b#c", "a+b", "ÉTANG 1", "東京", "x..y", "'quoted'", "<b>",
        ]
        var readings: [Reading] = []
        for id in ids {
            #expect(ReadingsParser.textProblem("station", id, limit: ReadingsParser.Limits.stationBytes) == nil)
            for metric in ["temperature", "gage_height", "aqi"] {
                readings.append(Reading(station: id, metric: metric, time: now - 600, value: 12, unit: "ft"))
            }
        }
        try await store.write(SourceBatch(readings: readings), at: now)
        try await HostileSite.with(store) { site in
            let gauges = try await site.get("/gauges")
            let air = try await site.get("/air")
            for id in ids {
                let segment = enc(id)
                #expect(gauges.body.contains("href=\"/gauges/\(segment)\""), "\(id)")
                #expect(air.body.contains("href=\"/air/\(segment)\""), "\(id)")
                for prefix in ["/stations/", "/gauges/", "/air/"] {
                    let page = try await site.get(prefix + segment)
                    #expect(page.status == 200, "\(prefix)\(id)")
                    #expect(page.body.contains(HTMLText.escape(id)), "\(prefix)\(id)")
                    expectClean(page, prefix + id)
                }
            }
            // Control or bidirectional formatting characters: a 400, with no trap.
            for bad in ["/stations/a%0Ab", "/stations/%E2%80%AEx", "/gauges/%C2%85", "/air/%00"] {
                #expect(try await site.get(bad).status == 400, "\(bad)")
            }
            // Wrong percent-encoding (the client may re-encode the `%` itself): a 400 or an unknown id.
            for bad in ["/stations/%zz", "/gauges/%zz%20"] {
                let status = try await site.get(bad).status
                #expect([400, 404].contains(status), "\(bad): \(status)")
            }
        }
    }

    @Test("Host allow-list: a rebinding name is refused on every site page; IPs and localhost are answered")
    func hostAllowList() async throws {
        try await HostileSite.with(try tempStore()) { site in
            for path in ["/", "/gauges", "/signin", "/trips", "/alerts", "/stations/x", "/gauges/x/chart.png"] {
                for host in ["evil.example", "evil.example:\(site.port)", "127.0.0.1.evil.example", "localhost.evil"] {
                    let page = try await site.get(path, host: host)
                    #expect(page.status == 403, "\(path) Host: \(host)")
                    #expect(!page.body.contains("evil"), "the refused name is not echoed")
                }
                for host in ["127.0.0.1:\(site.port)", "localhost:\(site.port)", "LOCALHOST.", "[::1]:\(site.port)"] {
                    let page = try await site.get(path, host: host)
                    #expect(page.status != 403, "\(path) Host: \(host)")
                }
            }
            // A POST from a rebinding page is refused before its form is read.
            var post = HTTPClientRequest(url: site.origin + "/signin")
            post.method = .POST
            post.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            post.headers.replaceOrAdd(name: "Host", value: "evil.example:\(site.port)")
            post.headers.add(name: "Origin", value: "http://evil.example:\(site.port)")
            post.body = .bytes(ByteBuffer(string: "token=team-token"))
            #expect(try await site.send(post).status == 403)
            // The health and metrics endpoints are not the site's: untouched.
            #expect(try await site.get("/healthz", host: "evil.example").status == 200)
        }
        // Named hosts are answered; `*` allows any.
        let named = SiteHosts(names: ["klaxon.example.org"])
        try await HostileSite.with(try tempStore(), hosts: named) { (site: HostileSite) async throws -> Void in
            let statuses = [
                try await site.get("/", host: "klaxon.example.org:\(site.port)").status,
                try await site.get("/", host: "KLAXON.example.org").status,
                try await site.get("/", host: "evil.example").status,
            ]
            #expect(statuses == [200, 200, 403])
        }
        try await HostileSite.with(try tempStore(), hosts: SiteHosts(any: true)) {
            (site: HostileSite) async throws -> Void in
            let status = try await site.get("/", host: "anything.example").status
            #expect(status == 200)
        }
    }

    @Test("the Host policy follows the listener and site.hosts")
    func hostPolicy() {
        let loop = SiteHosts.forListener(host: "127.0.0.1", configured: nil)
        #expect(!loop.allows(authority: "evil.example:9464"))
        #expect(loop.allows(authority: "127.0.0.1:9464"))
        #expect(loop.allows(authority: "localhost:9464"))
        #expect(loop.allows(authority: "app.localhost"))
        #expect(loop.allows(authority: "[::1]:9464"))
        #expect(loop.allows(authority: "192.0.2.7:9464"))
        #expect(loop.allows(authority: nil))
        for bad in ["evil.example:x", "evil example", "[::1", "a:b:c", "ev\u{0130}l.example", "300.1.1.1", "1.2.3"] {
            #expect(!loop.allows(authority: bad), "\(bad)")
        }
        let all = SiteHosts.forListener(host: "0.0.0.0", configured: nil)
        #expect(all.allows(authority: "klaxon.lan:9464"))
        #expect(SiteHosts.forListener(host: "::", configured: nil).any)
        let listed = SiteHosts.forListener(host: "0.0.0.0", configured: ["klaxon.lan"])
        #expect(listed.allows(authority: "klaxon.lan:9464"))
        #expect(listed.allows(authority: "10.0.0.5:9464"))
        #expect(!listed.allows(authority: "evil.example"))
        #expect(SiteHosts.forListener(host: "127.0.0.1", configured: ["*"]).allows(authority: "evil.example"))
        let named = SiteHosts.forListener(host: "klaxon.lan", configured: nil)
        #expect(named.allows(authority: "klaxon.lan:9464"))
        #expect(!named.allows(authority: "evil.example"))
    }

    @Test("site.hosts in klaxon.yaml: names read, bad ones an error at their place; the daemon's policy")
    func hostsConfig() throws {
        let scratch = try Scratch()
        let good = try scratch.write(
            "good.yaml", "database: k.sqlite\nlisten: 0.0.0.0:9464\nsite:\n  hosts: [Klaxon.LAN, \"*\"]\n")
        let config = try Config.load(path: good)
        #expect(config.site.hosts == ["klaxon.lan", "*"])
        #expect(SiteSettings.make(config: config, rules: []).hosts.any)
        let plain = try Config.load(path: try scratch.write("plain.yaml", "database: k.sqlite\n"))
        #expect(plain.site.hosts == nil)
        #expect(SiteSettings.make(config: plain, rules: []).hosts == .loopback)
        let bad = try scratch.write(
            "bad.yaml", "database: k.sqlite\nsite:\n  hosts:\n    - ok.example\n    - http://evil.example:80\n")
        #expect {
            try Config.load(path: bad)
        } throws: { error in
            "\(error)".contains(":5:7: error: site.hosts: \"http://evil.example:80\" is not a host name")
        }
    }

    @Test("the site's sources write every attribute and raw text through SafeHTML")
    func oneEscapingPlace() throws {
        let found = try SiteSourceScan.violations()
        #expect(found.isEmpty, "use SafeHTML's safe… helpers or SafeHTML.text: \(found)")
    }
}

/// The architecture rule behind "escaped in one place": in `Sources/KlaxonServer/Site`, outside
/// `SafeHTML.swift`, Plot's attribute helpers (`.attribute(named:value:)`, `.href`, `.value`,
/// `.class`, `.id`, `.action`, `.name`, …) and `.text` take only plain string literals, and `.raw`
/// is not used at all: anything from data goes through `SafeHTML`.
enum SiteSourceScan {
    static let calls = [
        "attribute", "href", "value", "action", "class", "id", "name", "placeholder", "for", "title", "data",
        "content", "src", "alt", "raw", "text",
    ]

    static func violations() throws -> [String] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/KlaxonServer/Site")
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil) else {
            return ["no sources at \(root.path)"]
        }
        var found: [String] = []
        var files = 0
        for case let url as URL in walker
        where url.pathExtension == "swift" && url.lastPathComponent != "SafeHTML.swift" {
            files += 1
            let text = try String(contentsOf: url, encoding: .utf8)
            found += scan(text).map { "\(url.lastPathComponent):\($0)" }
        }
        if files < 10 { found.append("only \(files) files under \(root.path)") }
        return found
    }

    /// `LINE: .call(args)` for each call whose arguments are not plain literals.
    static func scan(_ source: String) -> [String] {
        // Comment lines are not code.
        let text = Array(
            source.split(separator: "\n", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces).hasPrefix("//") ? "" : String($0)
            }.joined(separator: "\n").unicodeScalars)
        var found: [String] = []
        var i = 0
        while i < text.count {
            guard text[i] == ".", i == 0 || !isIdentifier(text[i - 1]) else {
                i += 1
                continue
            }
            var k = i + 1
            var name = ""
            while k < text.count, isIdentifier(text[k]) {
                name.unicodeScalars.append(text[k])
                k += 1
            }
            guard k < text.count, text[k] == "(", calls.contains(name) else {
                i = k
                continue
            }
            let (rest, interpolated, end) = arguments(text, from: k + 1)
            let literalOnly =
                name != "raw" && !interpolated && rest.contains("L")
                && rest.replacingOccurrences(of: "named:", with: "").replacingOccurrences(of: "value:", with: "")
                    .replacingOccurrences(of: "nil", with: "").allSatisfy { $0 == "L" || $0 == "," || $0.isWhitespace }
            if !literalOnly {
                let line = text[..<i].filter { $0 == "\n" }.count + 1
                let shown = String(String.UnicodeScalarView(text[(k + 1)..<min(end, k + 61)]))
                found.append("\(line): .\(name)(\(shown))")
            }
            i = end
        }
        return found
    }

    static func isIdentifier(_ c: Unicode.Scalar) -> Bool {
        c == "_" || c.properties.isAlphabetic || ("0"..."9").contains(c)
    }

    /// The arguments up to the matching `)`: their text with each string literal as `L`, whether a
    /// literal interpolates, and the index after the `)`.
    static func arguments(_ t: [Unicode.Scalar], from start: Int) -> (String, Bool, Int) {
        var depth = 1
        var k = start
        var rest = ""
        var interpolated = false
        while k < t.count {
            let c = t[k]
            if c == "\"" {
                let (end, interp) = literal(t, from: k)
                interpolated = interpolated || interp
                rest += "L"
                k = end
                continue
            }
            if c == "(" { depth += 1 }
            if c == ")" {
                depth -= 1
                if depth == 0 { return (rest, interpolated, k + 1) }
            }
            rest.unicodeScalars.append(c)
            k += 1
        }
        return (rest, interpolated, k)
    }

    /// A string literal from its opening quote: the index after it and whether it interpolates.
    static func literal(_ t: [Unicode.Scalar], from start: Int) -> (Int, Bool) {
        var k = start + 1
        var interpolated = false
        while k < t.count {
            if t[k] == "\\" {
                if k + 1 < t.count, t[k + 1] == "(" {
                    interpolated = true
                    var depth = 0
                    var j = k + 1
                    while j < t.count {
                        if t[j] == "\"" {
                            j = literal(t, from: j).0
                            continue
                        }
                        if t[j] == "(" { depth += 1 }
                        if t[j] == ")" {
                            depth -= 1
                            if depth == 0 { break }
                        }
                        j += 1
                    }
                    k = j + 1
                    continue
                }
                k += 2
                continue
            }
            if t[k] == "\"" { return (k + 1, interpolated) }
            k += 1
        }
        return (k, interpolated)
    }
}
