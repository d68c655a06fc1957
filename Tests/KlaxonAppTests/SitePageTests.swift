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

/// The status site's read pages, from a real SQLite file through the daemon's HTTP server on 127.0.0.1.
final class SiteServer: Sendable {
    let store: any Store
    let port: Int
    let task: Task<Void, any Error>
    let now: Int64

    init(store: any Store, port: Int, task: Task<Void, any Error>, now: Int64) {
        self.store = store
        self.port = port
        self.task = task
        self.now = now
    }

    /// Starts a server over `store`; `places` are the watched places for `/quakes`. With `now`, the
    /// site's clock stands at that second: pages that count back from "now" (a gauge's 24 h rain)
    /// read the data the fixture wrote relative to its own `now`, however long the test takes and
    /// whatever quarter hour the wall clock crosses meanwhile.
    static func with(
        _ store: any Store, places: [StatusSite.Place] = [], now: Int64? = nil,
        _ body: (SiteServer) async throws -> Void
    ) async throws {
        let site = StatusSite.Settings(
            timeZone: TimeZone(identifier: "UTC")!, refreshSeconds: 60, places: places)
        let clock: @Sendable () -> Int64
        if let now { clock = { now } } else { clock = { Int64(Date().timeIntervalSince1970) } }
        let (port, task) = await startHTTP(
            store: store, settings: .init(port: 0, apiToken: "team-token", site: site), now: clock)
        let server = SiteServer(store: store, port: port, task: task, now: clock())
        let outcome = await Result { try await body(server) }
        task.cancel()
        #expect(await Bounded.wait(for: task, within: TestServers.stopLimit), "the server should stop")
        try outcome.get()
    }

    struct Page {
        var status: Int
        var headers: [(String, String)]
        var body: String
        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        func count(_ s: String) -> Int { body.components(separatedBy: s).count - 1 }
    }

    func get(_ path: String) async throws -> Page {
        let request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
        let body = String(buffer: try await response.body.collect(upTo: 4 << 20))
        return Page(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: body)
    }
}

@Suite("status site pages", .serialized, .timeLimit(.minutes(10)))
struct SitePageTests {
    let now = Int64(Date().timeIntervalSince1970) / 900 * 900

    /// A gauge with NWS categories (action 15, minor 18, moderate 23, major 28 ft), 8 days of
    /// 15-minute stage and discharge rising to 19 ft (minor), and hourly rain.
    func gaugeStore(name: String = "Willamette River at Portland") async throws -> any Store {
        let store = try tempStore()
        var readings: [Reading] = []
        for i in 0..<(8 * 96) {
            let t = now - Int64(8 * 96 - 1 - i) * 900
            let stage = 10 + 9 * Double(i) / Double(8 * 96 - 1)
            readings.append(Reading(station: "14211720", metric: "gage_height", time: t, value: stage, unit: "ft"))
            readings.append(
                Reading(station: "14211720", metric: "discharge", time: t, value: stage * 1000, unit: "ft3/s"))
            if i % 4 == 0 {
                readings.append(
                    Reading(station: "14211720", metric: "precipitation", time: t, value: 0.1, unit: "in"))
            }
        }
        let info = StationInfo(
            id: "14211720", source: "usgs-iv", name: name, latitude: 45.5175,
            longitude: -122.6692, timeZone: "America/Los_Angeles", usgsID: "14211720", nwsLID: "PRTO3")
        let gauge = GaugeInfo(
            lid: "PRTO3", usgsID: "14211720", name: name, state: "OR",
            categories: FloodCategories(stage: ["action": 15, "minor": 18, "moderate": 23, "major": 28]))
        try await store.write(SourceBatch(stations: [info], gauges: [gauge], readings: readings), at: now)
        return store
    }

    @Test("a gauge: flood bands drawn and labelled, current category, both ids, rain totals")
    func gauge() async throws {
        try await SiteServer.with(try await gaugeStore(), now: now + 60) { site in
            let page = try await site.get("/gauges/14211720")
            #expect(page.status == 200)
            #expect(page.header("Content-Type") == "text/html; charset=utf-8")
            #expect(page.header("Refresh") == "60")
            #expect(page.header("Content-Security-Policy")?.contains("default-src 'none'") == true)
            #expect(page.body.contains("<title>Willamette River at Portland — gauge</title>"))
            #expect(page.body.contains("USGS 14211720 · NWS PRTO3"))
            #expect(page.body.contains("times in America/Los_Angeles"))
            for (name, label) in [
                ("action", "Action stage 15 ft"), ("minor", "Minor flood stage 18 ft"),
                ("moderate", "Moderate flood stage 23 ft"), ("major", "Major flood stage 28 ft"),
            ] {
                #expect(page.body.contains("<rect class=\"band band-\(name)\""), "\(name)")
                #expect(page.body.contains("<title>\(label)</title>"), "\(label)")
            }
            #expect(page.body.contains("class=\"chart line-chart stage\""))
            #expect(page.body.contains("class=\"chart line-chart discharge\""))
            #expect(page.body.contains("class=\"chart bar-chart\""))
            #expect(page.body.contains("badge category-minor"))
            #expect(page.body.contains("Minor flood stage"))
            #expect(page.body.contains("rising"))
            #expect(page.body.contains("24 h: 2.4 in · 7 d: 16.8 in"))
            // Every chart has its accessible title.
            #expect(page.count("<svg ") == 3)
            for svg in page.body.components(separatedBy: "<svg ").dropFirst() {
                let open = try #require(svg.range(of: ">"))
                #expect(svg[open.upperBound...].hasPrefix("<title>"))
                #expect(svg[..<open.lowerBound].contains("role=\"img\""))
            }

            // The NWS id finds the same gauge; the ranges and a since date work.
            #expect(try await site.get("/gauges/PRTO3").body.contains("USGS 14211720"))
            #expect(try await site.get("/gauges/14211720?range=7d").status == 200)
            #expect(try await site.get("/gauges/14211720?range=30d").status == 200)
            #expect(
                try await site.get("/gauges/14211720?since=2020-01-01&until=2020-01-03").body.contains(
                    "no readings in this range"))

            // Refresh off: no header, and links keep it off.
            let off = try await site.get("/gauges/14211720?refresh=off")
            #expect(off.header("Refresh") == nil)
            #expect(off.body.contains("href=\"/gauges/14211720?range=7d&amp;refresh=off\""))
        }
    }

    @Test("a gauge's latest forecast: dashed after now, its crest marked, its issuance stated; a hostile name escaped")
    func gaugeForecast() async throws {
        let hostile = "<script>alert(1)</script> & \"Mill\" River"
        let store = try await gaugeStore(name: hostile)
        var batch = SourceBatch()
        batch.forecasts = [
            FloodForecast(
                station: "14211720", metric: "gage_height", issued: now - 3 * 3600, unit: "ft", source: "nwps",
                points: [
                    .init(time: now - 3600, value: 30), .init(time: now + 6 * 3600, value: 20),
                    .init(time: now + 24 * 3600, value: 24.5), .init(time: now + 48 * 3600, value: 22),
                ])
        ]
        _ = try await store.write(batch, source: nil, cursor: nil, at: now)
        try await SiteServer.with(store, now: now + 60) { site in
            let page = try await site.get("/gauges/14211720")
            #expect(page.status == 200)
            // One dashed line (stage; discharge has no forecast), its crest and the issuance.
            #expect(page.count("class=\"forecast-line\"") == 1)
            #expect(page.body.contains("stroke-dasharray=\"6 4\""))
            #expect(page.body.contains("<line class=\"now\""))
            #expect(page.body.contains("<g class=\"crest\"><title>crest 24.5 ft "), "\(page.body)")
            #expect(page.body.contains("<title>forecast issued "))
            #expect(page.body.contains("and the river forecast after now (dashed)"))
            // The crest is the highest value after now, not the higher one before it.
            #expect(!page.body.contains("crest 30 ft"))
            #expect(page.body.contains("Forecast (dashed), issued "))
            #expect(page.body.contains("(nwps): crest 24.5 ft "))
            #expect(page.body.contains("moderate flood stage."))
            // The station's name is text everywhere: in the page and inside the SVG.
            #expect(!page.body.contains("<script>alert(1)</script>"))
            #expect(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; "))
            // A range in the past draws no forecast.
            let past = try await site.get("/gauges/14211720?since=2020-01-01&until=2020-01-03")
            #expect(!past.body.contains("forecast-line"))
            #expect(!past.body.contains("Forecast (dashed)"))
        }
    }

    @Test("bad input is a 400 page, an unknown gauge a 404 page")
    func badInput() async throws {
        try await SiteServer.with(try await gaugeStore(), now: now + 60) { site in
            for path in [
                "/gauges/14211720?range=1y", "/gauges/14211720?since=2025-13-01", "/gauges/14211720?since=yesterday",
                "/gauges/14211720?since=2025-01-01&range=7d", "/gauges/14211720?until=2025-01-01",
                "/gauges/14211720?since=2000-01-01", "/quakes?span=year",
                "/quakes?minmagnitude=abc",
                "/quakes?minmagnitude=11", "/quakes?span=day&from=2025-01-01", "/quakes?from=2025-02-30",
                "/stations/%0A", "/gauges/%E2%80%AE",
            ] {
                let page = try await site.get(path)
                #expect(page.status == 400, "\(path)")
                #expect(page.body.contains("<h1>Bad request</h1>"), "\(path)")
                #expect(page.header("Refresh") == nil, "\(path)")
                #expect(!page.body.contains("<script>"), "\(path)")
            }
            let range = try await site.get("/gauges/14211720?range=1y")
            #expect(range.body.contains("range=1y is not one of 48h, 7d, 30d"))
            // Any id ingest takes is a well-formed id (issue 27): an unknown one is a 404, shown escaped.
            for path in [
                "/gauges/NOPE", "/stations/NOPE", "/air/Atlantis", "/gauges/bad%20id", "/stations/%3Cscript%3E",
            ] {
                let page = try await site.get(path)
                #expect(page.status == 404, "\(path)")
                #expect(page.body.contains("<h1>Not found</h1>"), "\(path)")
            }
        }
    }

    @Test("the gauge list: each gauge with its category badge and a small chart")
    func gaugeList() async throws {
        let store = try await gaugeStore()
        try await store.write(
            SourceBatch(readings: [Reading(station: "OTHER", metric: "gage_height", time: now, value: 3, unit: "ft")]),
            at: now)
        try await SiteServer.with(store, now: now + 60) { site in
            let page = try await site.get("/gauges")
            #expect(page.status == 200)
            #expect(page.count("<tr class=\"gauge\"") == 2)
            #expect(page.body.contains("badge category-minor"))
            #expect(page.body.contains("badge category-unknown"))  // OTHER has no NWS categories
            #expect(page.body.contains("href=\"/gauges/14211720\""))
            #expect(page.count("class=\"chart line-chart spark\"") == 2)
        }
    }

    @Test("air quality: the last 25 samples in their level colours, with level, emoji and advice")
    func air() async throws {
        let store = try tempStore()
        let values = (0..<30).map { Double(20 + $0 * 6) }  // the last is 194: Unhealthy
        try await store.write(
            SourceBatch(
                stations: [StationInfo(id: "IN-DEL", name: "Delhi", timeZone: "Asia/Kolkata")],
                readings: values.enumerated().map {
                    Reading(
                        station: "IN-DEL", metric: "aqi", time: now - Int64(29 - $0.offset) * 3600, value: $0.element)
                }), at: now)
        try await SiteServer.with(store, now: now + 60) { site in
            let page = try await site.get("/air/delhi")
            #expect(page.status == 200)
            #expect(page.count("<circle class=\"aqi-point\"") == 25)
            for v in values.suffix(25) {
                let colour = AQIScale.usEPA.level(for: v)!.colour
                #expect(page.body.contains("fill=\"\(colour)\""))
            }
            #expect(page.count("<circle class=\"aqi-point\" cx=") == 25)
            let unhealthy = AQIScale.usEPA.levels[3]
            #expect(page.body.contains("\(unhealthy.emoji) AQI 194 · Unhealthy"))
            #expect(page.body.contains(HTMLText.escape(unhealthy.advice)))
            #expect(page.body.contains("<title>Delhi — air quality</title>"))
            let list = try await site.get("/air")
            #expect(list.count("<circle class=\"aqi-point\"") == 25)
            #expect(list.body.contains("href=\"/air/IN-DEL\""))
        }
    }

    func quake(
        _ id: String, hoursAgo: Int64, magnitude: Double, alert: String? = nil, lat: Double = 35, lon: Double = -118
    )
        -> QuakeEvent
    {
        let t = (now - hoursAgo * 3600) * 1000
        return QuakeEvent(
            id: id, time: t, updated: t, magnitude: magnitude, magType: "mw", place: "near \(id)", latitude: lat,
            longitude: lon, depthKm: 10, alert: alert, url: "https://earthquake.usgs.gov/earthquakes/eventpage/\(id)")
    }

    @Test("quakes: newest first, filtered by span, range and magnitude, with distances and PAGER colours")
    func quakes() async throws {
        let store = try tempStore()
        try await store.write(
            quakes: [
                quake("q-old", hoursAgo: 72, magnitude: 6.5, alert: "orange", lat: 34.05, lon: -118.25),
                quake("q-small", hoursAgo: 2, magnitude: 2.0),
                quake("q-new", hoursAgo: 1, magnitude: 5.1),
                quake("q-month", hoursAgo: 24 * 20, magnitude: 4.0),
            ], at: now)
        try await SiteServer.with(
            store, places: [StatusSite.Place(name: "Los Angeles", latitude: 34.05, longitude: -118.25)], now: now + 60
        ) { site in
            func ids(_ page: SiteServer.Page) -> [String] {
                page.body.components(separatedBy: "<tr class=\"quake").dropFirst().compactMap { row in
                    ["q-old", "q-small", "q-new", "q-month"].first { row.contains("near \($0)") }
                }
            }
            let day = try await site.get("/quakes?span=day")
            #expect(day.status == 200)
            #expect(ids(day) == ["q-new", "q-small"])
            let week = try await site.get("/quakes")
            #expect(ids(week) == ["q-new", "q-small", "q-old"])
            #expect(week.body.contains("0 km from Los Angeles"))
            #expect(week.body.contains("badge pager pager-orange"))
            #expect(week.body.contains("href=\"https://earthquake.usgs.gov/earthquakes/eventpage/q-old\""))
            #expect(week.count("<circle class=\"epicentre\"") == 3)
            #expect(week.count("<path class=\"place\"") == 1)
            let big = try await site.get("/quakes?span=month&minmagnitude=3")
            #expect(ids(big) == ["q-new", "q-old", "q-month"])
            let from = String(Timestamp.format(now - 24 * 21 * 3600).prefix(10))
            let to = String(Timestamp.format(now - 24 * 10 * 3600).prefix(10))
            let range = try await site.get("/quakes?from=\(from)&to=\(to)")
            #expect(ids(range) == ["q-month"])
        }
    }

    @Test("a weather station: current conditions and a small multiple per metric; a hostile name is escaped")
    func station() async throws {
        let store = try tempStore()
        let hostile = "<script>alert(\"x\")</script> & 'Summit' &amp;"
        let metrics: [(String, String, (Int) -> Double)] = [
            ("temperature", "degC", { -10 + Double($0 % 20) / 4 }),
            ("relative_humidity", "%", { 80 + Double($0 % 10) }),
            ("wind_speed", "m/s", { 20 + Double($0 % 7) }), ("wind_direction", "deg", { _ in 270 }),
            ("pressure", "hPa", { 800 + Double($0 % 5) }), ("visibility", "km", { Double($0 % 3) }),
        ]
        var readings: [Reading] = []
        for i in 0..<(48 * 4) {
            for (metric, unit, value) in metrics {
                readings.append(
                    Reading(station: "MWO", metric: metric, time: now - Int64(i) * 900, value: value(i), unit: unit))
            }
        }
        try await store.write(
            SourceBatch(
                stations: [StationInfo(id: "MWO", name: hostile, timeZone: "America/New_York")], readings: readings),
            at: now)
        try await SiteServer.with(store, now: now + 60) { site in
            let page = try await site.get("/stations/MWO")
            #expect(page.status == 200)
            #expect(page.count("<figure class=\"metric\"") == 6)
            #expect(page.count("<tr class=\"condition\"") == 6)
            #expect(page.count("class=\"chart line-chart multiple\"") == 6)
            #expect(page.body.contains("270 deg W"))
            #expect(page.body.contains("Wind speed"))
            #expect(!page.body.contains("<script>"))
            #expect(!page.body.contains("alert(\"x\")"))
            let escaped = HTMLText.escape(hostile)
            #expect(page.body.contains("<h1>\(escaped)</h1>"))
            #expect(page.body.contains("<title>\(escaped) — station</title>"))
            #expect(page.body.contains("&amp;amp;"))
        }
    }

    @Test("the overview: firing alerts with severity and ack, source health, readings and transitions")
    func overview() async throws {
        let store = try tempStore()
        let rules = [
            Rule(
                name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10),
                severity: .critical)
        ]
        try await store.write(
            SourceBatch(readings: [Reading(station: "S1", metric: "gage_height", time: now - 600, value: 12)]),
            source: "usgs", at: now - 600)
        try await store.recordFailure(source: "airnow", error: "HTTP 503 <b>down</b>", at: now)
        try await store.recordFailure(source: "airnow", error: "HTTP 503 <b>down</b>", at: now)
        _ = try await Evaluate.run(store: store, rules: rules, now: now)
        let id = try #require(try await store.firingAlerts().first?.transitionID)
        try await store.ack(transitionID: id, by: "alice", at: now)
        try await SiteServer.with(store, now: now + 60) { site in
            let page = try await site.get("/")
            #expect(page.status == 200)
            #expect(page.header("Refresh") == "60")
            #expect(page.count("<tr class=\"alert severity-critical acked\"") == 1)
            #expect(page.body.contains("acked by <strong>alice</strong>"))
            #expect(page.body.contains("badge severity severity-critical"))
            #expect(page.body.contains("<tr class=\"source source-failing\""))
            #expect(page.body.contains("2 failed"))
            #expect(page.body.contains("HTTP 503 &lt;b&gt;down&lt;/b&gt;"))
            #expect(page.body.contains("<tr class=\"source source-ok\""))
            #expect(page.count("<tr class=\"reading\"") == 1)
            #expect(page.count("<tr class=\"transition state-firing\"") == 1)
            #expect(page.body.contains("href=\"/gauges/S1\""))
            #expect(try await site.get("/?refresh=off").header("Refresh") == nil)
        }
    }

    @Test("a year of 15-minute readings: the gauge page stays under 150 KB")
    func yearPage() async throws {
        let store = try tempStore()
        let writer = try store.readingWriter()
        let n = 365 * 96
        var batch: [Reading] = []
        for i in 0..<n {
            let t = now - Int64(n - 1 - i) * 900
            let v = 10 + 5 * sin(Double(i) / 300) + (i % 5000 == 0 ? 9 : 0)
            batch.append(Reading(station: "Y1", metric: "gage_height", time: t, value: v, unit: "ft"))
            batch.append(Reading(station: "Y1", metric: "discharge", time: t, value: v * 900, unit: "ft3/s"))
            batch.append(
                Reading(station: "Y1", metric: "precipitation", time: t, value: i % 7 == 0 ? 0.01 : 0, unit: "in"))
        }
        _ = try await writer.write(batch)
        try await store.write(
            SourceBatch(gauges: [
                GaugeInfo(
                    lid: "YYYY1", usgsID: "Y1",
                    categories: FloodCategories(stage: ["action": 15, "minor": 18, "moderate": 23, "major": 28]))
            ]), at: now)
        try await SiteServer.with(store, now: now + 60) { site in
            let since = String(Timestamp.format(now - 365 * 86_400).prefix(10))
            let page = try await site.get("/gauges/Y1?since=\(since)&refresh=off")
            #expect(page.status == 200)
            #expect(page.body.utf8.count <= 150_000, "\(page.body.utf8.count) bytes")
            #expect(page.count("<svg ") == 3)
        }
    }
}
