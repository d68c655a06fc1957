import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import NIOCore
import Testing

/// The daemon's HTTP app (with the status site) in-process on 127.0.0.1, over a real SQLite store:
/// trips for two owners (alice: `denver-work` with forecasts, a climatology day, a day without
/// weather and a list history; `lisbon`; bob: `oslo`), one firing alert and one silence.
final class OwnerSiteServer: Sendable {
    static let team = "team-token"
    static let owners = ["alice": "alice-token", "bob": "bob-token"]

    let store: any Store
    let port: Int
    let task: Task<Void, any Error>
    /// The firing alert's transition id.
    let alertID: Int64
    /// The silence made at the start.
    let silenceID: String

    init(store: any Store, port: Int, task: Task<Void, any Error>, alertID: Int64, silenceID: String) {
        self.store = store
        self.port = port
        self.task = task
        self.alertID = alertID
        self.silenceID = silenceID
    }

    var base: String { "http://127.0.0.1:\(port)" }

    func url(_ path: String) -> String { base + path }

    static func start() async throws -> OwnerSiteServer {
        let store = try tempStore()
        let evaluated = Timestamp.parse("2026-11-25T00:00:00Z")!
        let denver = PlacePoint(latitude: 39.74, longitude: -104.99).key
        try await store.save(
            trip: Trip(
                name: "denver-work", owner: "alice",
                stops: [.init(place: "Denver", latitude: 39.74, longitude: -104.99, arrive: "2026-12-01", nights: 3)],
                purpose: .business, activities: ["hiking"]),
            at: evaluated)
        try await store.save(
            trip: Trip(
                name: "lisbon", owner: "alice", stops: [.init(place: "Lisbon", arrive: "2027-04-02", nights: 5)]),
            at: evaluated)
        try await store.save(
            trip: Trip(name: "oslo", owner: "bob", stops: [.init(place: "Oslo", arrive: "2026-12-10", nights: 2)]),
            at: evaluated)
        func forecast(_ date: String, high: Double, low: Double, rain: Double, issued: Int64, climatology: Bool = false)
            -> DayWeather
        {
            DayWeather(
                place: denver, date: date, tempMaxC: high, tempMinC: low, precipitationMm: rain > 50 ? 4 : 0,
                precipitationProbability: rain, windMaxKmh: 20, source: climatology ? "archive" : "open-meteo",
                issued: issued, climatology: climatology)
        }
        try await store.write(weather: [
            forecast("2026-12-01", high: 12, low: 2, rain: 10, issued: evaluated),
            forecast("2026-12-02", high: 9, low: 1, rain: 20, issued: evaluated),
            forecast("2026-12-03", high: 6, low: -3, rain: 15, issued: evaluated, climatology: true),
        ])
        let rules = [
            Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
            Rule(name: "trip-packing", kind: TripPackingRule()),
        ]
        try await store.write(
            SourceBatch(readings: [Reading(station: "S1", metric: "gage_height", time: evaluated, value: 12)]),
            at: evaluated)
        _ = try await Evaluate.run(store: store, rules: rules, now: evaluated)
        // A newer forecast brings rain on the 2nd: the list changes (an umbrella), a second history entry.
        try await store.write(weather: [forecast("2026-12-02", high: 8, low: 1, rain: 80, issued: evaluated + 3600)])
        _ = try await Evaluate.run(store: store, rules: rules, now: evaluated + 3600)
        guard let alert = try await store.firingAlerts().first(where: { $0.key.rule == "high" }) else {
            throw SinkError(message: "the test alert is not firing")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let silence = try Silence.forAlert(
            rule: "flood-stage", station: "14211720", duration: 86_400, now: now, comment: "gauge maintenance",
            createdBy: "cli:ops")
        try await store.addSilence(silence, now: now)

        // The site knows the rules, as the daemon's does: a silence for another rule is warned about.
        let (port, task) = await startHTTP(
            store: store,
            settings: .init(
                port: 0, apiToken: team, ownerTokens: owners,
                site: SiteSettings.make(apiToken: team, ownerTokens: owners, rules: rules)))
        return OwnerSiteServer(store: store, port: port, task: task, alertID: alert.transitionID, silenceID: silence.id)
    }

    /// Starts a server, runs `body` with it, and stops it (awaited) before returning, also on failure.
    static func with(_ body: (OwnerSiteServer) async throws -> Void) async throws {
        let server = try await start()
        let outcome = await Result { try await body(server) }
        server.task.cancel()
        #expect(
            await Bounded.wait(for: server.task, within: TestServers.stopLimit),
            "the server should stop, not outlive its test")
        try outcome.get()
    }

    /// The packing table the page should show: (category, item, quantity, reason) rows.
    func expectedPacking(owner: String, name: String) async throws -> [[String]] {
        let trip = try #require(try await store.trip(owner: owner, name: name))
        let list = Packer.pack(trip, weather: try await store.weather(for: trip))
        return list.items.map { [$0.category, $0.item, String($0.quantity), $0.reasons.joined(separator: "; ")] }
    }
}

/// Where the screenshots go: `.build/screenshots/` in the package.
let screenshotFolder = packageRoot.appendingPathComponent(".build/screenshots")

/// Saves the page at desktop (1280×900) and phone (390×844) widths, and leaves it at desktop width.
func shoot(_ page: BrowserPage, _ name: String) async throws {
    try await page.resize(width: 1280, height: 900)
    try await page.screenshot(to: screenshotFolder.appendingPathComponent("\(name)-desktop.png"))
    try await page.resize(width: 390, height: 844, mobile: true)
    try await page.screenshot(to: screenshotFolder.appendingPathComponent("\(name)-phone.png"))
    // The phone page must not scroll sideways: nothing wider than the viewport.
    let width = try await page.evaluate("document.documentElement.scrollWidth").int
    #expect(width == 390, "\(name) is \(width ?? 0) pixels wide at phone width: it scrolls sideways")
    try await page.resize(width: 1280, height: 900)
}

extension BrowserPage {
    /// The texts of the elements a selector matches.
    func texts(_ selector: String) async throws -> [String] {
        try await evaluate(
            "Array.from(document.querySelectorAll(\(BrowserPage.jsString(selector)))).map(e => e.textContent.trim())"
        ).strings ?? []
    }

    /// The values of an attribute over the elements a selector matches.
    func attributes(_ selector: String, _ name: String) async throws -> [String] {
        try await evaluate(
            "Array.from(document.querySelectorAll(\(BrowserPage.jsString(selector)))).map(e => e.getAttribute(\(BrowserPage.jsString(name))))"
        ).strings ?? []
    }

    func count(_ selector: String) async throws -> Int {
        try await evaluate("document.querySelectorAll(\(BrowserPage.jsString(selector))).length").int ?? -1
    }

    /// Signs in on `/signin` with a token (and a name) and returns the page it lands on.
    func signIn(_ server: OwnerSiteServer, token: String, name: String? = nil, next: String) async throws
        -> BrowserPage.Loaded
    {
        let form = try await open(
            server.url(
                "/signin?refresh=off&next=" + (next.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
        )
        #expect(form.status == 200)
        try await fill("#token", token)
        if let name { try await fill("#name", name) }
        return try await click("#signin button[type=submit]")
    }
}

@Suite(
    "status site in a real browser", .serialized, .timeLimit(.minutes(10)),
    .enabled(
        if: HeadlessBrowser.executable() != nil,
        "no Chromium found: install Debian's chromium (Deploy/setup.sh does) or set KLAXON_CHROMIUM"))
struct SiteBrowserTests {
    @Test(
        "an owner signs in and sees their trips: the packing table by category, the weather, the history; another owner's trip is 404"
    )
    func ownerTrips() async throws {
        try await OwnerSiteServer.with { server in
            try await HeadlessBrowser.with { browser in
                let page = try await browser.newPage()
                // Not signed in: the trips page sends the browser to sign in, and back afterwards.
                let bounced = try await page.open(server.url("/trips?refresh=off"))
                #expect(bounced.status == 200)
                #expect(bounced.url?.contains("/signin?next=") == true)
                try await shoot(page, "signin")

                try await page.fill("#token", "alice-token")
                let trips = try await page.click("#signin button[type=submit]")
                #expect(trips.status == 200)
                #expect(trips.url == server.url("/trips?refresh=off"))
                #expect(try await page.attributes("#trips tbody tr", "data-trip") == ["denver-work", "lisbon"])
                #expect(try await page.texts(".session strong") == ["alice"])
                // The session cookie is HttpOnly: no script sees it.
                #expect(try await page.evaluate("document.cookie").string == "")
                try await shoot(page, "trips-owner")

                let trip = try await page.click("#trips a[href^='/trips/denver-work']")
                #expect(trip.status == 200)
                // The packing table: every item under its category, with quantity and reason, as the CLI's list.
                let rows =
                    try await page.evaluate(
                        """
                        Array.from(document.querySelectorAll('#packing tbody tr[data-item]')).map(tr =>
                          [tr.closest('tbody').dataset.category].concat(Array.from(tr.cells).map(c => c.textContent.trim())))
                        """
                    ).value?.array?.map { $0.array?.compactMap(\.string) ?? [] }
                let expected = try await server.expectedPacking(owner: "alice", name: "denver-work")
                #expect(rows == expected)
                #expect(expected.contains { $0[0] == "formal" && $0[1] == "business attire" })
                #expect(expected.contains { $0[0] == "rain" && $0[1] == "umbrella" })
                #expect(try await page.texts("#packing tr.category th").first == "essentials")
                // The weather per day: two forecast days, one climatology day (marked), one without weather.
                #expect(
                    try await page.attributes("#weather tbody tr", "class") == [
                        "forecast", "forecast", "climatology", "none",
                    ])
                #expect(try await page.texts("#weather tr.climatology mark") == ["climatology"])
                #expect(try await page.texts("#weather tr.none td:nth-child(3)") == ["no forecast yet"])
                // The history: the list was announced, then changed for the rain.
                let history = try await page.texts("#history tbody tr td:nth-child(2)")
                #expect(history.count == 2)
                #expect(history.first?.contains("packing list changed") == true)
                #expect(history.first?.contains("umbrella") == true)
                #expect(history.last?.contains("packing list ready") == true)
                try await shoot(page, "trip")

                // Bob's trip does not exist for alice, by name or by owner.
                let other = try await page.open(server.url("/trips/oslo?refresh=off"))
                #expect(other.status == 404)
                #expect(try await page.dom().contains("oslo") == false)
                #expect(try await page.open(server.url("/trips/oslo?owner=bob&refresh=off")).status == 404)
                try await shoot(page, "trip-not-found")

                // An owner cannot act: no ack forms, and silences are the team's.
                let alerts = try await page.open(server.url("/alerts?refresh=off"))
                #expect(alerts.status == 200)
                #expect(try await page.count("tr[data-alert]") == 1)
                #expect(try await page.count("form.ack") == 0)
                #expect(try await page.open(server.url("/silences?refresh=off")).status == 403)
                await page.close()
            }
        }
    }

    @Test("the team acks an alert, adds and expires silences from the pages; the store records who")
    func teamActions() async throws {
        try await OwnerSiteServer.with { server in
            try await HeadlessBrowser.with { browser in
                let page = try await browser.newPage()
                let alerts = try await page.signIn(
                    server, token: OwnerSiteServer.team, name: "Dana", next: "/alerts?refresh=off")
                #expect(alerts.status == 200)
                #expect(alerts.url == server.url("/alerts?refresh=off"))
                let row = "tr[data-alert='\(server.alertID)']"
                #expect(try await page.count("\(row) form.ack[method=post] input[type=hidden][name=csrf]") == 1)
                #expect(
                    try await page.attributes("\(row) form.ack", "action") == ["/alerts/\(server.alertID)/ack"])
                try await shoot(page, "alerts")
                // On a phone every column of an alert is in view, Since and Summary included (issue 39).
                try await page.resize(width: 390, height: 844, mobile: true)
                // The columns: Alert, Ack, Severity, Rule, Station, Since, Summary (the page's header order).
                for (column, index) in [("Ack", 2), ("Since", 6), ("Summary", 7)] {
                    let inView = try await page.evaluate(
                        """
                        (() => { const c = document.querySelector("\(row) td:nth-child(\(index))");
                          if (!c) return false; const r = c.getBoundingClientRect();
                          return r.width > 0 && r.height > 0 && r.left >= 0 && r.right <= 390; })()
                        """
                    ).bool
                    #expect(inView == true, "\(column) is out of view at 390 px")
                }
                try await page.resize(width: 1280, height: 900)

                let acked = try await page.click("\(row) form.ack button")
                #expect(acked.status == 200)
                #expect(acked.url == server.url("/alerts?refresh=off"))
                #expect(try await page.texts("\(row) .acked").first?.hasPrefix("acked by web:Dana") == true)
                let acks = try await server.store.acks()
                #expect(acks.values.map(\.by) == ["web:Dana"])
                #expect(acks.values.first?.transitionID == server.alertID)
                try await shoot(page, "alerts-acked")

                // Silences: the one made at the start is listed; add one, then expire the first.
                #expect(try await page.open(server.url("/silences?refresh=off")).status == 200)
                #expect(try await page.attributes("tr[data-silence]", "data-silence") == [server.silenceID])
                try await shoot(page, "silences")
                try await page.fill("#rule", "high")
                try await page.fill("#station", "S1")
                try await page.fill("#for", "2h")
                try await page.fill("#comment", "dam release")
                let added = try await page.click("#add-silence button[type=submit]")
                #expect(added.status == 200)
                #expect(added.url?.hasPrefix(server.url("/silences?refresh=off&added=")) == true)
                let now = Int64(Date().timeIntervalSince1970)
                let made = try await server.store.silences(now: now).first { $0.id != server.silenceID }
                #expect(made?.matchers.map(\.description) == ["rule=high", "station=S1"])
                #expect(made.map { $0.ends - $0.starts } == 7200)
                #expect(made?.createdBy == "web:Dana")
                #expect(made?.comment == "dam release")
                #expect(try await page.count("tr[data-silence]") == 2)
                // What it mutes now: the one alert firing, said on top and in its row.
                let notice = try await page.texts("#silence-added p")
                #expect(notice == ["Silence \(made?.id.prefix(8) ?? "") added: it mutes 1 firing alert now."])
                #expect(try await page.texts("tr[data-silence='\(made?.id ?? "")'] td.mutes") == ["1"])
                #expect(try await page.texts("tr[data-silence='\(server.silenceID)'] td.mutes") == ["0"])
                try await shoot(page, "silence-added")

                let expired = try await page.click("tr[data-silence='\(server.silenceID)'] form.expire button")
                #expect(expired.status == 200)
                // Asked after the expiry (it ends the silence at the server's now, however long the steps
                // above took on a loaded machine).
                let after = Int64(Date().timeIntervalSince1970) + 1
                #expect(try await server.store.silences(now: after).map(\.id) == [made?.id].compactMap { $0 })
                #expect(try await page.count("tr[data-silence]") == 1)
                try await shoot(page, "silences-changed")

                // A duration that is not one: a clear 400, nothing added.
                try await page.fill("#rule", "high")
                try await page.fill("#for", "soon")
                let refused = try await page.click("#add-silence button[type=submit]")
                #expect(refused.status == 400)
                #expect(try await page.texts(".problem").first?.contains("duration like 30m") == true)
                #expect(try await server.store.silences(now: after).count == 1)
                try await shoot(page, "silence-refused")

                // The team sees every owner's trips.
                #expect(try await page.open(server.url("/trips?refresh=off")).status == 200)
                #expect(
                    try await page.attributes("#trips tbody tr", "data-trip") == ["denver-work", "lisbon", "oslo"])
                try await shoot(page, "trips-team")
                #expect(try await page.click("#trips a[href^='/trips/oslo']").status == 200)
                #expect(try await page.texts("h1") == ["oslo"])

                // Signing out ends the session.
                let out = try await page.click(".session form button")
                #expect(out.url?.hasPrefix(server.url("/signin")) == true)
                let again = try await page.open(server.url("/silences?refresh=off"))
                #expect(again.url?.contains("/signin?next=") == true)
                await page.close()
            }
        }
    }
}

@Suite("status site actions over plain HTTP", .serialized, .timeLimit(.minutes(10)))
struct SiteActionHTTPTests {
    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var body: String
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
    }

    static func request(
        _ client: HTTPClient, _ url: String, method: String = "GET", body: String? = nil,
        headers: [(String, String)] = [], contentType: String? = "application/x-www-form-urlencoded"
    ) async throws -> Reply {
        var r = HTTPClientRequest(url: url)
        r.method = .init(rawValue: method)
        for (k, v) in headers { r.headers.add(name: k, value: v) }
        if let body {
            if let contentType { r.headers.add(name: "Content-Type", value: contentType) }
            r.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await client.execute(r, deadline: .now() + .seconds(30))
        return Reply(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test(
        "adding a silence says how many firing alerts it mutes now and warns of a rule or station nothing knows, escaped"
    )
    func silenceNames() async throws {
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let outcome = await Result {
            try await OwnerSiteServer.with { server in try await Self.silenceNames(server, client) }
        }
        try await client.shutdown()
        try outcome.get()
    }

    static func silenceNames(_ server: OwnerSiteServer, _ client: HTTPClient) async throws {
        let origin = ("Origin", server.base)
        let signIn = try await request(
            client, server.url("/signin"), method: "POST", body: "token=team-token&name=Ops", headers: [origin])
        let cookie = ("Cookie", String((signIn.header("Set-Cookie") ?? "").prefix { $0 != ";" }))
        let list = try await request(client, server.url("/silences?refresh=off"), headers: [cookie])
        #expect(list.status == 200)
        let token = try #require(
            list.body.range(of: #"name="csrf" value="([A-Za-z0-9_-]+)""#, options: .regularExpression).map {
                String(list.body[$0].dropFirst(#"name="csrf" value=""#.count).dropLast())
            })
        func field(_ s: String) -> String { s.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        // Adds a silence and follows the redirect back to the list.
        func add(rule: String, station: String = "") async throws -> Reply {
            let post = try await request(
                client, server.url("/silences"), method: "POST",
                body:
                    "csrf=\(token)&back=%2Fsilences%3Frefresh%3Doff&for=2h&rule=\(field(rule))&station=\(field(station))",
                headers: [cookie, origin])
            #expect(post.status == 303)
            let location = try #require(post.header("Location"))
            #expect(location.hasPrefix("/silences?refresh=off&added="), "\(location)")
            return try await request(client, server.url(location), headers: [cookie])
        }

        // A mistyped rule at a known station: added, muting nothing, with a warning naming the rule near it.
        let typo = try await add(rule: "hihg", station: "S1")
        #expect(typo.status == 200)
        #expect(typo.body.contains("added: it mutes no firing alert now."))
        #expect(typo.body.contains("Warning: no rule named &quot;hihg&quot;; near: high."))
        #expect(!typo.body.contains("no station named"))
        // A known station mistyped.
        let station = try await add(rule: "high", station: "S2")
        #expect(station.body.contains("Warning: no station named &quot;S2&quot;; near: S1."))
        #expect(!station.body.contains("no rule named"))
        // The rule that fires: one alert muted, no warning; the list counts what each silence mutes.
        let right = try await add(rule: "high")
        #expect(right.body.contains("added: it mutes 1 firing alert now."))
        #expect(!right.body.contains("Warning:"))
        #expect(right.body.components(separatedBy: #"<td class="num mutes">1</td>"#).count - 1 == 1)
        #expect(right.body.components(separatedBy: #"<td class="num mutes">0</td>"#).count - 1 == 3)
        // A name from the request is text, never markup; the notice says only what the store holds.
        let hostile = try await add(
            rule: "<script>alert(1)</script>", station: #""><img src=x onerror=alert(1)>"#)
        #expect(hostile.status == 200)
        #expect(!hostile.body.contains("<script>alert") && !hostile.body.contains("<img"))
        #expect(hostile.body.contains("Warning: no rule named &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;."))
        #expect(
            hostile.body.contains("Warning: no station named &quot;&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&quot;.")
        )
        let now = Int64(Date().timeIntervalSince1970)
        #expect(try await server.store.silences(now: now).count == 5)
        for query in ["added=%3Cscript%3E", "added=ffff", "added=", "added=" + String(repeating: "a", count: 65)] {
            let page = try await request(client, server.url("/silences?refresh=off&" + query), headers: [cookie])
            #expect(page.status == 200, "\(query)")
            #expect(!page.body.contains("silence-added"), "\(query)")
        }
    }

    @Test("a POST without the session's CSRF token, or from another origin, is refused (403); forms are read strictly")
    func csrf() async throws {
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let outcome = await Result {
            try await OwnerSiteServer.with { server in try await Self.csrf(server, client) }
        }
        try await client.shutdown()
        try outcome.get()
    }

    static func csrf(_ server: OwnerSiteServer, _ client: HTTPClient) async throws {
        let origin = ("Origin", server.base)
        // Sign in with the team token: a 303 with the signed cookie's attributes.
        let signIn = try await request(
            client, server.url("/signin"), method: "POST", body: "token=team-token&name=Ops", headers: [origin])
        #expect(signIn.status == 303)
        #expect(signIn.header("Location") == "/alerts")
        let setCookie = try #require(signIn.header("Set-Cookie"))
        #expect(setCookie.hasPrefix("klaxon_session="))
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
            #expect(setCookie.contains(attribute), "Set-Cookie lacks \(attribute)")
        }
        let cookie = ("Cookie", String(setCookie.prefix { $0 != ";" }))
        // The ack form, as rendered beside the alert, carries the token.
        let page = try await request(client, server.url("/alerts?refresh=off"), headers: [cookie])
        #expect(page.status == 200)
        #expect(
            page.body.contains("<form class=\"inline ack\" action=\"/alerts/\(server.alertID)/ack\" method=\"post\">"))
        let token = try #require(
            page.body.range(of: #"name="csrf" value="([A-Za-z0-9_-]+)""#, options: .regularExpression).map {
                String(page.body[$0].dropFirst(#"name="csrf" value=""#.count).dropLast())
            })
        let ack = server.url("/alerts/\(server.alertID)/ack")
        // No token, a wrong token, another origin, no origin at all: 403, nothing acked.
        for (body, headers) in [
            ("back=%2Falerts", [cookie, origin]),
            ("csrf=AAAA&back=%2Falerts", [cookie, origin]),
            ("csrf=\(token)", [cookie, ("Origin", "http://evil.example")]),
            ("csrf=\(token)", [cookie, ("Referer", "http://evil.example/page")]),
            ("csrf=\(token)", [cookie]),
            ("csrf=\(token)", [("Cookie", "klaxon_session=forged.AAAA"), origin]),
            ("csrf=\(token)", [origin]),
        ] {
            let r = try await request(client, ack, method: "POST", body: body, headers: headers)
            #expect(r.status == 403, "\(body) \(headers) → \(r.status)")
        }
        // An owner's session has a valid token but may not act.
        let owner = try await request(
            client, server.url("/signin"), method: "POST", body: "token=alice-token", headers: [origin])
        let ownerCookie = ("Cookie", String((owner.header("Set-Cookie") ?? "").prefix { $0 != ";" }))
        let ownerPage = try await request(client, server.url("/trips?refresh=off"), headers: [ownerCookie])
        let ownerToken = ownerPage.body.range(of: #"name="csrf" value="([A-Za-z0-9_-]+)""#, options: .regularExpression)
            .map { String(ownerPage.body[$0].dropFirst(#"name="csrf" value=""#.count).dropLast()) }
        #expect(ownerToken != nil && ownerToken != token)
        let ownerAck = try await request(
            client, ack, method: "POST", body: "csrf=\(ownerToken ?? "")", headers: [ownerCookie, origin])
        #expect(ownerAck.status == 403)
        #expect(try await server.store.acks().isEmpty)

        // Hostile forms: the wrong type, too large, an unknown or repeated field, bad encoding.
        let cases: [(String, String?, Int)] = [
            ("csrf=\(token)", "text/plain", 415),
            ("csrf=\(token)&back=" + String(repeating: "a", count: 9000), "application/x-www-form-urlencoded", 413),
            ("csrf=\(token)&admin=1", "application/x-www-form-urlencoded", 400),
            ("csrf=\(token)&csrf=\(token)", "application/x-www-form-urlencoded", 400),
            ("csrf=\(token)&back=%ZZ", "application/x-www-form-urlencoded", 400),
            ("csrf=\(token)&back=%0A", "application/x-www-form-urlencoded", 400),
            ("csrf", "application/x-www-form-urlencoded", 400),
        ]
        for (body, type, status) in cases {
            let r = try await request(
                client, ack, method: "POST", body: body, headers: [cookie, origin], contentType: type)
            #expect(r.status == status, "\(body.prefix(60)) → \(r.status)")
        }
        #expect(try await server.store.acks().isEmpty)
        // Not an alert id: 404, never a trap.
        for id in ["0", "-1", "99999999999999999999", "abc", "%00"] {
            let r = try await request(
                client, server.url("/alerts/\(id)/ack"), method: "POST", body: "csrf=\(token)",
                headers: [cookie, origin])
            #expect(r.status == 404, "\(id) → \(r.status)")
        }

        // The real thing: 303 back to a local page only.
        let done = try await request(
            client, ack, method: "POST", body: "csrf=\(token)&back=%2F%2Fevil.example", headers: [cookie, origin])
        #expect(done.status == 303)
        #expect(done.header("Location") == "/alerts")
        #expect(try await server.store.acks().values.map(\.by) == ["web:Ops"])

        // A sign-in from another site's page is refused; a wrong token is 401.
        let crossSignIn = try await request(
            client, server.url("/signin"), method: "POST", body: "token=team-token",
            headers: [("Origin", "http://evil.example")])
        #expect(crossSignIn.status == 403)
        #expect(crossSignIn.header("Set-Cookie") == nil)
        let wrong = try await request(
            client, server.url("/signin"), method: "POST", body: "token=nope", headers: [origin])
        #expect(wrong.status == 401)
        #expect(wrong.header("Set-Cookie") == nil)
        // A tampered cookie (another name under the same MAC) is no session.
        let value = String(cookie.1.dropFirst("klaxon_session=".count))
        let parts = value.split(separator: ".")
        let forgedPayload = Data("v1\n9999999999\nteam\nx\nMallory".utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "")
        let forged = try await request(
            client, server.url("/trips?refresh=off"),
            headers: [("Cookie", "klaxon_session=\(forgedPayload).\(parts.last ?? "")")])
        #expect(forged.status == 303)
        #expect(forged.header("Location")?.hasPrefix("/signin") == true)
    }
}
