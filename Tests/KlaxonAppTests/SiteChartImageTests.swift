import AsyncHTTPClient
import Dispatch
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import NIOCore
import Testing

@testable import KlaxonServer

/// The site's charts as PNG (`chart.png` routes, `ChartImages`, the cache and the rasterizer), from
/// a real SQLite file through the daemon's HTTP server on 127.0.0.1.
@Suite("status site: charts as PNG", .serialized, .timeLimit(.minutes(10)))
struct SiteChartImageTests {
    let now = Int64(Date().timeIntervalSince1970) / 900 * 900
    static let gauge = "14211720"

    /// A response's status, headers and bytes.
    struct Fetched {
        var status: Int
        var headers: [(String, String)]
        var bytes: [UInt8]
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        var text: String { String(decoding: bytes, as: UTF8.self) }
    }

    /// A server over `store` whose charts go to `cache` (its counts start at zero), its clock at `now + 60`.
    func withSite(
        _ store: any Store, cache: ChartCache = ChartCache(), _ body: (_ get: Getter) async throws -> Void
    ) async throws {
        var site = StatusSite.Settings(timeZone: TimeZone(identifier: "UTC")!, refreshSeconds: 60)
        site.charts = cache
        let clock = now + 60
        let (port, task) = await startHTTP(
            store: store, settings: .init(port: 0, apiToken: "team-token", site: site), now: { clock })
        let outcome = await Result { try await body(Getter(port: port)) }
        task.cancel()
        #expect(await Bounded.wait(for: task, within: TestServers.stopLimit), "the server should stop")
        try outcome.get()
    }

    struct Getter {
        var port: Int
        func callAsFunction(_ path: String, headers: [(String, String)] = []) async throws -> Fetched {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
            let body = try await response.body.collect(upTo: 4 << 20)
            return Fetched(
                status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
                bytes: Array(body.readableBytesView))
        }
    }

    /// A gauge with NWS categories (action 15 … major 28 ft) and `days` of 15-minute stage, rising
    /// from 10 to 19 ft, and discharge; a weather station; a city's AQI.
    func store(days: Int = 8) async throws -> any Store {
        let store = try tempStore()
        var readings: [Reading] = []
        let n = days * 96
        for i in 0..<n {
            let t = now - Int64(n - 1 - i) * 900
            let stage = 10 + 9 * Double(i) / Double(n - 1) + 0.8 * sin(Double(i) / 40)
            readings.append(Reading(station: Self.gauge, metric: "gage_height", time: t, value: stage, unit: "ft"))
            readings.append(
                Reading(station: Self.gauge, metric: "discharge", time: t, value: stage * 1000, unit: "ft3/s"))
        }
        for i in 0..<192 {
            let t = now - Int64(191 - i) * 900
            readings.append(
                Reading(station: "MWN", metric: "temperature", time: t, value: -5 + sin(Double(i) / 12), unit: "degC"))
            readings.append(
                Reading(station: "MWN", metric: "wind_speed", time: t, value: 20 + Double(i % 7), unit: "m/s"))
        }
        for i in 0..<30 {
            readings.append(
                Reading(station: "IN-DEL", metric: "aqi", time: now - Int64(29 - i) * 3600, value: Double(20 + i * 6)))
        }
        try await store.write(
            SourceBatch(
                stations: [
                    StationInfo(
                        id: Self.gauge, source: "usgs-iv", name: "Willamette River at Portland", timeZone: "UTC",
                        usgsID: Self.gauge, nwsLID: "PRTO3"),
                    StationInfo(id: "MWN", name: "Mount Washington", timeZone: "America/New_York"),
                    StationInfo(id: "IN-DEL", name: "Delhi", timeZone: "Asia/Kolkata"),
                ],
                gauges: [
                    GaugeInfo(
                        lid: "PRTO3", usgsID: Self.gauge, name: "Willamette River at Portland", state: "OR",
                        categories: FloodCategories(stage: ["action": 15, "minor": 18, "moderate": 23, "major": 28]))
                ], readings: readings), at: now)
        return store
    }

    @Test("a gauge's chart.png: the page's stage chart as a PNG twice its size, with a short max-age and an ETag")
    func gaugePNG() async throws {
        try await withSite(try await store()) { get in
            let png = try await get("/gauges/\(Self.gauge)/chart.png")
            #expect(png.status == 200)
            #expect(png.header("Content-Type") == "image/png")
            #expect(png.header("Cache-Control") == "public, max-age=60")
            #expect(png.header("X-Content-Type-Options") == "nosniff")
            let size = try #require(pngSize(png.bytes), "not a PNG: \(png.text.prefix(200))")
            #expect(size.width == 1440 && size.height == 520, "\(size)")
            keepPicture(png.bytes, "chart-gauge-48h.png")
            let etag = try #require(png.header("ETag"))
            #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count == 34)

            // The same picture again: 304 for its tag; the NWS id is the same gauge and picture.
            let again = try await get("/gauges/\(Self.gauge)/chart.png", headers: [("If-None-Match", etag)])
            #expect(again.status == 304)
            #expect(again.bytes.isEmpty)
            #expect(try await get("/gauges/PRTO3/chart.png?range=48h").header("ETag") == etag)

            // Every range of the page, and a since date.
            for query in ["range=7d", "range=30d", "range=365d", "since=2020-01-01&until=2020-01-03"] {
                let other = try await get("/gauges/\(Self.gauge)/chart.png?\(query)")
                #expect(other.status == 200, "\(query)")
                #expect(pngSize(other.bytes)?.width == 1440, "\(query)")
                #expect(other.header("ETag") != etag, "\(query)")
            }
        }
    }

    @Test("a gauge's chart.png draws its latest forecast issuance after now; a new issuance draws it anew (issue 42)")
    func gaugeForecastPNG() async throws {
        let store = try await store()
        try await withSite(store) { get in
            let before = try await get("/gauges/\(Self.gauge)/chart.png")
            #expect(before.status == 200)
            let etag = try #require(before.header("ETag"))
            var batch = SourceBatch()
            batch.forecasts = [
                FloodForecast(
                    station: Self.gauge, metric: "gage_height", issued: now - 3_600, unit: "ft", source: "nwps",
                    points: [.init(time: now + 6 * 3_600, value: 21), .init(time: now + 24 * 3_600, value: 24.5)])
            ]
            _ = try await store.write(batch, source: nil, cursor: nil, at: now)
            let after = try await get("/gauges/\(Self.gauge)/chart.png")
            #expect(after.status == 200)
            #expect(pngSize(after.bytes)?.width == 1440)
            #expect(after.header("ETag") != etag, "the picture with the forecast is a new one")
            keepPicture(after.bytes, "chart-gauge-forecast.png")
        }
        // The overlay's labels (the issuance, the crest) are text: hostile ones keep the SVG well-formed.
        let start: Int64 = 1_767_225_600
        let end = start + 99 * 900
        let chart = LineChart(
            title: "forecast", unit: "ft", points: (0..<100).map { (start + Int64($0) * 900, Double($0 % 13)) },
            from: start, to: end + 86_400, zone: TimeZone(identifier: "UTC")!,
            forecast: .init(
                now: end, points: [(end + 3_600, 5), (end + 7_200, 14), (end + 80_000, 3)], issued: Self.hostile,
                crestLabel: Self.hostile))
        let svg = chart.svg()
        #expect(!svg.contains("<script>") && !svg.contains("]]>"))
        #expect(SVGRasterTests.wellFormed(svg.replacingOccurrences(of: "<", with: "")))  // no control characters
        #expect(svg.contains("<title>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39; ]]&gt;"))
        #expect(svg.contains("stroke-dasharray=\"6 4\""))
        // librsvg reads it (it refuses a document that is not well-formed XML).
        let picture = try await SVGRaster(limits: .init(threads: 1)).png(svg)
        #expect(pngSize(picture.png).map { [$0.width, $0.height] } == [720, 260])
    }

    @Test("a city's and a weather station's chart.png: their pages' charts; a station's names its metric")
    func airAndStationPNG() async throws {
        try await withSite(try await store()) { get in
            let air = try await get("/air/IN-DEL/chart.png?range=48h")
            #expect(air.status == 200)
            keepPicture(air.bytes, "chart-air.png")
            #expect(pngSize(air.bytes).map { [$0.width, $0.height] } == [1440, 480])
            // The city by its name, as its page finds it.
            #expect(try await get("/air/delhi/chart.png").header("ETag") == air.header("ETag"))

            let wind = try await get("/stations/MWN/chart.png?range=48h&metric=wind_speed")
            #expect(wind.status == 200)
            keepPicture(wind.bytes, "chart-station.png")
            #expect(pngSize(wind.bytes).map { [$0.width, $0.height] } == [680, 300])
            let temperature = try await get("/stations/MWN/chart.png?metric=temperature")
            #expect(temperature.status == 200)
            #expect(temperature.header("ETag") != wind.header("ETag"))
            // Without a metric: the first the page shows.
            #expect(try await get("/stations/MWN/chart.png").status == 200)

            #expect(
                SubjectPage.chartPath(station: "MWN", metric: "wind_speed")
                    == "/stations/MWN/chart.png?range=48h&metric=wind_speed")
            #expect(SubjectPage.chartPath(station: "IN-DEL", metric: "aqi") == "/air/IN-DEL/chart.png?range=48h")
        }
    }

    @Test("a year of 15-minute readings: one PNG of at most 200 KB")
    func yearSize() async throws {
        try await withSite(try await store(days: 365)) { get in
            let png = try await get("/gauges/\(Self.gauge)/chart.png?range=365d")
            #expect(png.status == 200)
            keepPicture(png.bytes, "chart-gauge-365d.png")
            #expect(pngSize(png.bytes)?.width == 1440)
            #expect(png.bytes.count <= 200_000, "\(png.bytes.count) bytes")
        }
    }

    @Test("a bad id, range or metric is a 400 page saying why; an unknown gauge, city, station or metric a 404")
    func badInput() async throws {
        try await withSite(try await store()) { get in
            let range = try await get("/gauges/\(Self.gauge)/chart.png?range=1y")
            #expect(range.status == 400)
            #expect(range.header("Content-Type") == "text/html; charset=utf-8")
            #expect(range.text.contains("range=1y is not one of 48h, 7d, 30d, 365d"))
            for path in [
                "/gauges/\(Self.gauge)/chart.png?since=yesterday", "/gauges/\(Self.gauge)/chart.png?since=2000-01-01",
                "/gauges/\(Self.gauge)/chart.png?range=7d&since=2025-01-01", "/gauges/%0A/chart.png",
                "/gauges/%E2%80%AE/chart.png", "/air/%00/chart.png", "/stations/MWN/chart.png?metric=%1B%5B31m",
                "/stations/MWN/chart.png?range=%3Cscript%3E", "/air/IN-DEL/chart.png?range=2d",
            ] {
                let page = try await get(path)
                #expect(page.status == 400, "\(path)")
                #expect(page.text.contains("<h1>Bad request</h1>"), "\(path)")
                #expect(!page.text.contains("<script>"), "\(path)")
            }
            for path in [
                "/gauges/NOPE/chart.png", "/air/Atlantis/chart.png", "/stations/NOPE/chart.png",
                "/stations/MWN/chart.png?metric=snow_depth", "/stations/%3Cscript%3E/chart.png",
            ] {
                let page = try await get(path)
                #expect(page.status == 404, "\(path)")
                #expect(page.text.contains("<h1>Not found</h1>"), "\(path)")
                #expect(!page.text.contains("<script>"), "\(path)")
            }
        }
    }

    /// Markup, quotes, an entity, a CDATA end, control characters XML cannot hold, U+FFFE.
    static let hostile =
        "<script>alert(\"x\")</script> & 'q' ]]> &amp; \u{1}\u{7}\u{8}\u{B}\u{C}\u{1B}[31m \u{FFFE}\u{FFFF} end"

    @Test("hostile station names and ids draw: the SVG stays well-formed XML that librsvg reads")
    func hostileNames() async throws {
        #expect(SVGRasterTests.wellFormed(SVGWriter.escape(Self.hostile)))

        // Straight through the rasterizer: a chart titled, labelled and unit-ed with it.
        let start: Int64 = 1_767_225_600
        let chart = LineChart(
            title: Self.hostile, unit: Self.hostile,
            points: (0..<100).map { (start + Int64($0) * 900, Double($0 % 13)) }, from: start, to: start + 99 * 900,
            zone: TimeZone(identifier: "UTC")!,
            bands: [.init(name: Self.hostile, label: Self.hostile, low: 5, high: nil, colour: "#FFFF00")])
        let raster = SVGRaster(limits: .init(threads: 1))
        let picture = try await raster.png(chart.svg())
        keepPicture(picture.png, "chart-hostile.png")
        #expect(pngSize(picture.png).map { [$0.width, $0.height] } == [720, 260])

        // Through the routes: a gauge, a station and a city named with it, and an id with markup.
        let store = try tempStore()
        let id = "<b>\"&']]>"
        var readings: [Reading] = []
        for station in ["H1", id] {
            for i in 0..<20 {
                let t = now - Int64(i) * 900
                readings.append(Reading(station: station, metric: "gage_height", time: t, value: Double(i), unit: "ft"))
                readings.append(Reading(station: station, metric: "aqi", time: t, value: Double(i * 10)))
                readings.append(
                    Reading(station: station, metric: "temperature", time: t, value: Double(i), unit: "degC"))
            }
        }
        try await store.write(
            SourceBatch(
                stations: [
                    StationInfo(id: "H1", name: Self.hostile, timeZone: "UTC"), StationInfo(id: id, name: Self.hostile),
                ],
                gauges: [
                    GaugeInfo(
                        lid: "HOST1", usgsID: "H1", name: Self.hostile,
                        categories: FloodCategories(stage: ["action": 15]))
                ], readings: readings), at: now)
        try await withSite(store) { get in
            let encoded = SubjectPage.segment(id)
            for path in [
                "/gauges/H1/chart.png", "/air/H1/chart.png", "/stations/H1/chart.png?metric=temperature",
                "/gauges/\(encoded)/chart.png", "/air/\(encoded)/chart.png", "/stations/\(encoded)/chart.png",
            ] {
                let png = try await get(path)
                #expect(png.status == 200, "\(path): \(png.text.prefix(300))")
                #expect(pngSize(png.bytes) != nil, "\(path)")
            }
        }
    }

    @Test("the cache: a second request is served from memory; a new reading draws anew")
    func cache() async throws {
        let store = try await store()
        let cache = ChartCache()
        try await withSite(store, cache: cache) { get in
            let first = try await get("/gauges/\(Self.gauge)/chart.png")
            #expect(first.status == 200)
            #expect(cache.counts.draws == 1)
            let second = try await get("/gauges/\(Self.gauge)/chart.png")
            #expect(second.bytes == first.bytes)
            #expect(cache.counts.draws == 1)
            #expect(cache.counts.hits == 1)

            // A new reading (any series: the store's data version moves): drawn anew, and it shows.
            try await store.write(
                SourceBatch(
                    readings: [
                        Reading(station: Self.gauge, metric: "gage_height", time: now + 30, value: 27, unit: "ft")
                    ]), at: now + 30)
            let third = try await get("/gauges/\(Self.gauge)/chart.png")
            #expect(third.status == 200)
            #expect(cache.counts.draws == 2)
            #expect(third.header("ETag") != first.header("ETag"))
            #expect(cache.size.entries == 2)
        }
    }

    @Test("concurrent requests for one picture draw it once")
    func concurrentDrawOnce() async throws {
        let cache = ChartCache()
        try await withSite(try await store(days: 60), cache: cache) { get in
            let tags = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await get("/gauges/\(Self.gauge)/chart.png?range=30d").header("ETag") }
                }
                var out: [String?] = []
                for try await tag in group { out.append(tag) }
                return out
            }
            #expect(tags.count == 8)
            #expect(Set(tags).count == 1 && tags[0] != nil)
            #expect(cache.counts.draws == 1)
            #expect(cache.counts.hits == 7)
        }
    }

    @Test("the cache is bounded in pictures and bytes, the least recently used going first")
    func cacheBounds() async throws {
        @Sendable func key(_ n: Int) -> ChartCache.Key {
            .init(kind: .gauge, station: "G\(n)", metric: nil, range: "48h@1", version: 1, scale: 2)
        }
        @Sendable func picture(_ bytes: Int) -> ChartCache.Picture {
            .init(png: Array(repeating: 0, count: bytes), width: 1, height: 1, etag: "\"x\"", empty: false)
        }
        let few = ChartCache(maxEntries: 3, maxBytes: 1 << 20)
        for n in 1...3 { _ = try await few.picture(key(n)) { picture(10) } }
        _ = try await few.picture(key(1)) { picture(10) }  // 1 is used again: 2 is now the oldest
        _ = try await few.picture(key(4)) { picture(10) }
        #expect(few.size.entries == 3)
        #expect(few.counts.draws == 4)
        _ = try await few.picture(key(1)) { picture(10) }
        #expect(few.counts.draws == 4, "1 was kept")
        _ = try await few.picture(key(2)) { picture(10) }
        #expect(few.counts.draws == 5, "2 was dropped")

        let small = ChartCache(maxEntries: 64, maxBytes: 250)
        for n in 1...5 { _ = try await small.picture(key(n)) { picture(100) } }
        #expect(small.size.entries == 2 && small.size.bytes == 200)
        // A picture larger than the budget is served, not kept.
        #expect(try await small.picture(key(9)) { picture(300) }.png.count == 300)
        #expect(small.size.bytes == 200)
        // A failed drawing is not kept: the next request draws again.
        struct Broken: Error {}
        await #expect(throws: Broken.self) { try await small.picture(key(10)) { throw Broken() } }
        #expect(try await small.picture(key(10)) { picture(1) }.png.count == 1)
    }

    @Test("every renderer busy: chart.png is a 503 with Retry-After, and works again after")
    func busy() async throws {
        let raster = SVGRaster(limits: .init(threads: 1, queue: 0))
        let release = DispatchSemaphore(value: 0)
        // The one render thread is held by a job that waits for the test (on that thread, not the pool).
        let holder = Task { try await raster.threads.run { release.wait() } }
        try await poll(until: "the holding job runs") { raster.threads.load.running == 1 }
        let outcome = await Result {
            try await withSite(try await store(), cache: ChartCache(raster: raster)) { get in
                let refused = try await get("/gauges/\(Self.gauge)/chart.png")
                #expect(refused.status == 503)
                #expect(refused.header("Retry-After") == "2")
                #expect(refused.text.contains("busy"))
                release.signal()
                try await holder.value
                let served = try await get("/gauges/\(Self.gauge)/chart.png")
                #expect(served.status == 200)
            }
        }
        release.signal()
        _ = try? await holder.value
        try outcome.get()
    }

    @Test(
        "an anonymous chart flood costs no alert its chart: every visitor renderer taken and a visitor's drawing of the same chart waiting, the email's chart is drawn on delivery's own lane"
    )
    func floodLeavesDeliveryItsCharts() async throws {
        // One visitor renderer and one waiting place: the holder takes the renderer, a visitor's request for
        // the gauge's chart takes the place, and every further visitor is refused (issue 38, item 22).
        let raster = SVGRaster(limits: .init(threads: 1, queue: 1))
        let release = DispatchSemaphore(value: 0)
        let holder = Task { try await raster.threads.run { release.wait() } }
        try await poll(until: "the holding job runs") { raster.threads.load.running == 1 }
        let cache = ChartCache(raster: raster)
        let store = try await store()
        let outcome = await Result {
            try await withSite(store, cache: cache) { get in
                let waiting = Task { try await get("/gauges/\(Self.gauge)/chart.png") }
                try await poll(until: "a visitor's drawing waits") { raster.threads.load.waiting == 1 }
                // The flood: refused at once, as before.
                for _ in 0..<20 {
                    let refused = try await get("/gauges/\(Self.gauge)/chart.png?range=7d")
                    #expect(refused.status == 503)
                }
                // Five alert emails' charts, as the daemon asks for them (`Daemon.emailCharts`): all drawn while
                // the visitors' renderer is still held, so none waited for a visitor's render.
                var settings = StatusSite.Settings(timeZone: TimeZone(identifier: "UTC")!)
                settings.charts = cache
                let clock = now + 60
                let charts = ChartImages(store: store, settings: settings, now: { clock })
                for metric in ["gage_height", "discharge", "gage_height", "discharge", "gage_height"] {
                    let png = try await charts.png(station: Self.gauge, metric: metric, range: "48h")
                    #expect(png.flatMap { pngSize(Array($0)) } != nil, "\(metric)")
                }
                #expect(raster.threads.load.running == 1 && raster.threads.load.waiting == 1)
                release.signal()
                #expect(try await waiting.value.status == 200)
            }
        }
        release.signal()
        _ = try? await holder.value
        try outcome.get()
    }

    @Test("ChartImages.png: bytes for a gauge, a station's metric and a city; nil where there is nothing to chart")
    func chartImagesAPI() async throws {
        let store = try await store()
        var settings = StatusSite.Settings(timeZone: TimeZone(identifier: "UTC")!)
        settings.charts = ChartCache()
        let clock = now + 60
        let charts = ChartImages(store: store, settings: settings, now: { clock })
        for (station, metric) in [
            (Self.gauge, "gage_height"), (Self.gauge, "discharge.max"), ("PRTO3", "stage"),
            ("MWN", "wind_speed"), ("IN-DEL", "aqi"),
        ] {
            let png = try await charts.png(station: station, metric: metric)
            #expect(png.flatMap { pngSize(Array($0)) } != nil, "\(station) \(metric)")
        }
        #expect(try await charts.png(station: Self.gauge, metric: "gage_height", range: "7d") != nil)
        // Quakes and trips have no chart; an unknown station, metric or a range with no reading: nil.
        #expect(try await charts.png(station: "us7000abcd", metric: "quake") == nil)
        #expect(try await charts.png(station: "alice/ski", metric: "packing") == nil)
        #expect(try await charts.png(station: "NOPE", metric: "gage_height") == nil)
        #expect(try await charts.png(station: "MWN", metric: "snow_depth") == nil)
        #expect(try await charts.png(station: "*", metric: "gage_height") == nil)
        let empty = try tempStore()
        try await empty.write(
            SourceBatch(readings: [Reading(station: "OLD", metric: "gage_height", time: now - 90 * 86_400, value: 1)]),
            at: now)
        #expect(
            try await ChartImages(store: empty, settings: settings, now: { clock }).png(
                station: "OLD", metric: "gage_height") == nil)
        // A range that is not one is an error that says so, not worth a retry.
        do {
            _ = try await charts.png(station: Self.gauge, metric: "gage_height", range: "1y")
            Issue.record("range 1y was taken")
        } catch let e as ChartImages.Failure {
            #expect(!e.retryable)
            #expect(e.message.contains("range=1y is not one of"))
        }
        // The settings' cache is shared: the same picture again is not drawn again.
        let draws = settings.charts.counts.draws
        _ = try await charts.png(station: Self.gauge, metric: "gage_height")
        #expect(settings.charts.counts.draws == draws)
    }
}
