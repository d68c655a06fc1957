import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import NIOCore
import Testing

/// The daemon's HTTP server in-process over a real SQLite file holding 5,000 firing alerts (4,000
/// `high` warnings and 1,000 `very-high` criticals, from pushed-style readings and a real
/// evaluation), and 250 silences.
final class BoundedSite: Sendable {
    static let firing = 5_000
    static let silences = 250
    static let team = "team-token"

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

    static let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
        Rule(
            name: "very-high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 40),
            severity: .critical),
    ]

    static func with(_ body: (BoundedSite) async throws -> Void) async throws {
        let store = try tempStore()
        let now = Int64(Date().timeIntervalSince1970) / 60 * 60
        // 4,000 stations over the `high` threshold, the first 1,000 of them over `very-high` too;
        // readings spread over an hour, several in the same second (ties are broken by id).
        let readings = (0..<4_000).map { i in
            Reading(
                station: String(format: "S%04d", i), metric: "gage_height", time: now - 3_600 + Int64(i % 900) * 4,
                value: i < 1_000 ? 50 : 20, unit: "ft")
        }
        _ = try await store.readingWriter().write(readings)
        _ = try await Evaluate.run(store: store, rules: rules, now: now)
        let matcher = try Matcher.parse("station=S0001")
        for i in 0..<silences {
            try await store.addSilence(
                Silence(
                    id: String(format: "%08x-0000-4000-8000-000000000000", i), matchers: [matcher],
                    starts: now - Int64(i % 7), ends: now + 86_400, comment: "maintenance \(i)", createdBy: "ops"),
                now: now)
        }
        let (port, task) = await startHTTP(
            store: store, settings: .init(port: 0, apiToken: team), now: { now + 60 })
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let site = BoundedSite(store: store, port: port, task: task, client: client)
        let outcome = await Result { try await body(site) }
        task.cancel()
        #expect(await Bounded.wait(for: task, within: TestServers.stopLimit), "the server should stop")
        try await client.shutdown()
        try outcome.get()
    }

    struct Reply {
        var status: Int
        var headers: [(String, String)]
        var body: String
        var bytes: Int
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        func count(_ s: String) -> Int { body.components(separatedBy: s).count - 1 }
        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
    }

    func get(_ path: String, headers: [(String, String)] = []) async throws -> Reply {
        try await send("GET", path, headers: headers)
    }

    func send(_ method: String, _ path: String, body: String? = nil, headers: [(String, String)] = []) async throws
        -> Reply
    {
        var r = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        r.method = .init(rawValue: method)
        for (k, v) in headers { r.headers.add(name: k, value: v) }
        if let body {
            r.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            r.body = .bytes(ByteBuffer(string: body))
        }
        // No deadline of our own: a server that never answers is a hang, bounded by the suite's limit.
        let response = try await client.execute(r, deadline: .distantFuture)
        // Read up to 64 MB: a page that is too big must fail the size check, not the read.
        let buffer = try await response.body.collect(upTo: 64 << 20)
        return Reply(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: String(buffer: buffer), bytes: buffer.readableBytes)
    }

    /// A team member's session cookie (the ack forms make a page of alerts its largest).
    func teamCookie() async throws -> (String, String) {
        let signIn = try await send(
            "POST", "/signin", body: "token=\(Self.team)&name=Ops", headers: [("Origin", "http://127.0.0.1:\(port)")])
        #expect(signIn.status == 303)
        let setCookie = try #require(signIn.header("Set-Cookie"))
        return ("Cookie", String(setCookie.prefix { $0 != ";" }))
    }

    var bearer: (String, String) { ("Authorization", "Bearer \(Self.team)") }

    /// The page's `next page` link, unescaped; nil on the last page.
    static func nextLink(_ html: String) -> String? {
        guard let r = html.range(of: #"<a class="next" rel="next" href="[^"]+">"#, options: .regularExpression)
        else { return nil }
        let tag = html[r]
        let start = tag.range(of: "href=\"")!.upperBound
        let end = tag[start...].firstIndex(of: "\"")!
        return String(tag[start..<end]).replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The values of `data-NAME="…"` attributes, in page order.
    static func dataValues(_ html: String, _ name: String) -> [String] {
        html.components(separatedBy: "data-\(name)=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
    }
}

@Suite("bounded pages: every list is paged or summarised", .serialized, .timeLimit(.minutes(10)))
struct BoundedPagesTests {
    /// A page of a list stays well under this, however long the list.
    static let pageBytes = 300_000

    @Test("/ and /alerts show 100 of 5,000 with the count; following next visits every alert once")
    func sitePages() async throws {
        try await BoundedSite.with { site in
            let all = try await site.store.firingAlerts()
            #expect(all.count == BoundedSite.firing)
            let cookie = try await site.teamCookie()

            let overview = try await site.get("/?refresh=off", headers: [cookie])
            #expect(overview.status == 200)
            #expect(overview.bytes < Self.pageBytes, "/ is \(overview.bytes) bytes")
            #expect(overview.body.contains("(5,000)"))
            #expect(overview.body.contains("1,000 critical · 4,000 warning"))
            #expect(overview.body.contains("showing 1–100 of 5,000 firing"))
            #expect(overview.count("<tr class=\"alert severity-") == 100)
            #expect(overview.count("<tr class=\"alert severity-critical") == 100, "the most severe first")
            let overviewNext = try #require(BoundedSite.nextLink(overview.body))
            #expect(overviewNext.hasPrefix("/?after=") && overviewNext.hasSuffix("refresh=off"))
            let second = try await site.get(overviewNext, headers: [cookie])
            #expect(second.status == 200)
            #expect(second.body.contains("showing 101–200 of 5,000 firing"))
            #expect(second.count("<tr class=\"alert severity-") == 100)

            // /alerts as the team (an ack form per row), page after page.
            var seen: [String] = []
            var path: String? = "/alerts?refresh=off"
            var pages = 0
            var largest = 0
            while let p = path, pages < 100 {
                let page = try await site.get(p, headers: [cookie])
                #expect(page.status == 200)
                largest = max(largest, page.bytes)
                let ids = BoundedSite.dataValues(page.body, "alert")
                #expect(ids.count == 100, "page \(pages + 1)")
                #expect(page.body.contains("of 5,000 firing"))
                #expect(page.count("form class=\"inline ack\"") == 100)
                seen += ids
                path = BoundedSite.nextLink(page.body)
                pages += 1
            }
            #expect(pages == 50)
            #expect(largest < Self.pageBytes, "the largest /alerts page is \(largest) bytes")
            #expect(seen.count == BoundedSite.firing)
            #expect(Set(seen).count == BoundedSite.firing, "no alert twice")
            #expect(Set(seen) == Set(all.map { String($0.transitionID) }), "no alert missed")
        }
    }

    @Test("the API pages with limit and next, keeping each alert's fields; chat lists 20 and counts the rest")
    func apiAndChat() async throws {
        try await BoundedSite.with { site in
            let first = try await site.get("/api/v1/alerts", headers: [site.bearer])
            #expect(first.status == 200)
            let o = first.json
            let alerts = try #require(o["alerts"] as? [[String: Any]])
            #expect(alerts.count == 1_000, "the default page")
            #expect(o["total"] as? Int == BoundedSite.firing)
            #expect(o["next"] is String)
            let a = try #require(alerts.first)
            for field in ["id", "rule", "station", "metric", "severity", "since", "summary", "value"] {
                #expect(a[field] != nil, "an alert keeps its field \(field)")
            }
            #expect(a["severity"] as? String == "critical")

            var seen: [Int] = []
            var order: [(Int, String, Int)] = []
            var after: String? = nil
            var pages = 0
            repeat {
                let q =
                    "/api/v1/alerts?limit=700"
                    + (after.map { "&after=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0) }
                        ?? "")
                let page = try await site.get(q, headers: [site.bearer]).json
                let items = try #require(page["alerts"] as? [[String: Any]])
                #expect(items.count <= 700)
                #expect(page["total"] as? Int == BoundedSite.firing)
                for item in items {
                    let id = try #require(item["id"] as? Int)
                    seen.append(id)
                    let rank = item["severity"] as? String == "critical" ? 2 : 1
                    order.append((rank, item["since"] as? String ?? "", id))
                }
                after = page["next"] as? String
                #expect(after != nil || page["next"] is NSNull, "next is a cursor or null")
                pages += 1
            } while after != nil && pages < 100
            #expect(pages == 8)
            #expect(seen.count == BoundedSite.firing && Set(seen).count == BoundedSite.firing)
            #expect(zip(order, order.dropFirst()).allSatisfy { $0 > $1 }, "a stable order: severity, time, id")

            let clamped = try await site.get("/api/v1/alerts?limit=10000000", headers: [site.bearer]).json
            #expect((clamped["alerts"] as? [Any])?.count == BoundedSite.firing)
            #expect(clamped["next"] is NSNull)
            let huge = try await site.get(
                "/api/v1/alerts?limit=" + String(repeating: "9", count: 60), headers: [site.bearer])
            #expect(huge.status == 200 && (huge.json["alerts"] as? [Any])?.count == BoundedSite.firing)

            // Silences: the same paging.
            var silences: [String] = []
            var cursor: String? = nil
            repeat {
                let q =
                    "/api/v1/silences?limit=100"
                    + (cursor.map {
                        "&after=" + ($0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0)
                    } ?? "")
                let page = try await site.get(q, headers: [site.bearer]).json
                #expect(page["total"] as? Int == BoundedSite.silences)
                silences += ((page["silences"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String }
                cursor = page["next"] as? String
            } while cursor != nil && silences.count <= BoundedSite.silences
            #expect(silences.count == BoundedSite.silences && Set(silences).count == BoundedSite.silences)

            // Chat: 20 alerts and how many more.
            let chat = ChatCommands(store: site.store, config: Config(), rules: BoundedSite.rules)
            let answer = await chat.answer(
                .init(platform: "slack", team: "T1", user: "U1", name: "ann"), text: "alerts")
            let lines = answer.split(separator: "\n")
            #expect(lines.count == 21)
            #expect(lines.filter { $0.hasPrefix("• #") }.count == 20)
            #expect(answer.contains("4980 more firing (5000 in all)"))
            #expect(answer.utf8.count < 8_000)
        }
    }

    @Test("hostile page parameters: a clear 400 or clamped, never a 500 or unbounded work")
    func hostileParameters() async throws {
        try await BoundedSite.with { site in
            let cookie = try await site.teamCookie()
            let longCursor = String(repeating: "9", count: 5_000)
            let badCursors = [
                "garbage", "-1", "2_1", "2_1_1_1", "3_1_1", "2_1_-5", "2_%2B1_1", "2_1e9_1", "%00", "2_1_1%00",
                "99999999999999999999999_1_1", "2_99999999999999999999_1", longCursor, "%E2%80%AE", "2_1_1%20",
            ]
            for c in badCursors {
                let api = try await site.get("/api/v1/alerts?after=\(c)", headers: [site.bearer])
                #expect(api.status == 400, "after=\(c.prefix(30)) → \(api.status)")
                #expect((api.json["error"] as? String)?.contains("after") == true)
                for path in ["/", "/alerts"] {
                    let page = try await site.get("\(path)?after=\(c)", headers: [cookie])
                    #expect(page.status == 400, "\(path)?after=\(c.prefix(30)) → \(page.status)")
                    #expect(page.bytes < 20_000)
                }
            }
            for l in [
                "-1", "0", "000", "abc", "1e3", "1.5", "%2B5", "0x10", "%20%205", "5%00", "-99999999999999999999",
            ] {
                let api = try await site.get("/api/v1/alerts?limit=\(l)", headers: [site.bearer])
                #expect(api.status == 400, "limit=\(l) → \(api.status)")
                #expect((api.json["error"] as? String)?.contains("limit") == true)
                let s = try await site.get("/api/v1/silences?limit=\(l)", headers: [site.bearer])
                #expect(s.status == 400, "silences limit=\(l) → \(s.status)")
            }
            for bad in ["garbage", "_", "x_y", "1_", longCursor] {
                #expect(try await site.get("/api/v1/silences?after=\(bad)", headers: [site.bearer]).status == 400)
                #expect(try await site.get("/silences?after=\(bad)", headers: [cookie]).status == 400)
            }
            // Parameters the pages do not take, or only use to number rows, change nothing bounded.
            for q in [
                "page=-1", "page=99999999999999999999", "start=-5", "start=99999999999999999999", "limit=10000000",
                "after=&start=7",
            ] {
                for path in ["/", "/alerts", "/silences"] {
                    let page = try await site.get("\(path)?\(q)", headers: [cookie])
                    #expect(page.status == 200, "\(path)?\(q) → \(page.status)")
                    #expect(page.bytes < Self.pageBytes)
                }
            }
            // A valid cursor with a lying start only numbers the rows differently.
            let first = try await site.get("/alerts?refresh=off", headers: [cookie])
            let next = try #require(BoundedSite.nextLink(first.body))
            let lying = next.replacingOccurrences(of: "start=101", with: "start=999999999")
            let page = try await site.get(lying, headers: [cookie])
            #expect(page.status == 200 && BoundedSite.dataValues(page.body, "alert").count == 100)
        }
    }

    @Test("/silences pages its list; /healthz answers while the largest pages render")
    func silencesAndHealth() async throws {
        try await BoundedSite.with { site in
            let cookie = try await site.teamCookie()
            var seen: [String] = []
            var path: String? = "/silences?refresh=off"
            var pages = 0
            while let p = path, pages < 10 {
                let page = try await site.get(p, headers: [cookie])
                #expect(page.status == 200)
                #expect(page.bytes < Self.pageBytes)
                #expect(page.body.contains("of 250 silences"))
                seen += BoundedSite.dataValues(page.body, "silence")
                path = BoundedSite.nextLink(page.body)
                pages += 1
            }
            #expect(pages == 3)
            #expect(seen.count == BoundedSite.silences && Set(seen).count == BoundedSite.silences)

            // Earthquakes: a range back to 2000 lists the newest 500 and counts the rest in the store.
            let base = (Int64(Date().timeIntervalSince1970) - 86_400) * 1000
            _ = try await site.store.write(
                quakes: (0..<1_200).map { i in
                    QuakeEvent(
                        id: "us\(i)", time: base + Int64(i) * 1_000, updated: base, magnitude: 2.5, place: "here",
                        latitude: 1, longitude: 2)
                }, at: base)
            let quakes = try await site.get("/quakes?from=2000-01-01&refresh=off")
            #expect(quakes.status == 200)
            #expect(quakes.body.contains("1200 earthquakes"))
            #expect(quakes.body.contains("the newest 500 are listed"))
            #expect(quakes.bytes < 1_000_000, "/quakes is \(quakes.bytes) bytes")

            // The biggest answers the lists give, several at once, and /healthz among them: every
            // request is answered (bounded work each; no timing is asserted).
            try await withThrowingTaskGroup(of: (String, Int, Int).self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        let r = try await site.get("/api/v1/alerts?limit=10000", headers: [site.bearer])
                        return ("api", r.status, r.bytes)
                    }
                    group.addTask {
                        let r = try await site.get("/alerts", headers: [cookie])
                        return ("alerts", r.status, r.bytes)
                    }
                    group.addTask {
                        let r = try await site.get("/healthz")
                        return ("healthz", r.status, r.bytes)
                    }
                }
                for try await (what, status, bytes) in group {
                    #expect(status == 200, "\(what)")
                    if what == "alerts" { #expect(bytes < Self.pageBytes) }
                }
            }
        }
    }
}
