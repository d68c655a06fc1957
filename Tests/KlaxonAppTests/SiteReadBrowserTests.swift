import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Testing

/// The read pages in a real browser: the DOM Chromium built from them, and screenshots at phone and
/// desktop width under `.build/screenshots/`.
@Suite(
    "status site read pages in a real browser", .serialized, .timeLimit(.minutes(10)),
    .enabled(
        if: HeadlessBrowser.executable() != nil,
        "no Chromium found: install Debian's chromium (Deploy/setup.sh does) or set KLAXON_CHROMIUM"))
struct SiteReadBrowserTests {
    /// Checks what every page must have: a title, and a `<title>` first in every chart.
    func expectAccessible(_ page: BrowserPage, _ name: String) async throws {
        let title = try await page.evaluate("document.title").string ?? ""
        #expect(!title.isEmpty, "\(name) has no <title>")
        let untitled = try await page.evaluate(
            "Array.from(document.querySelectorAll('svg')).filter(s => !(s.firstElementChild && s.firstElementChild.tagName.toLowerCase() === 'title' && s.firstElementChild.textContent.trim())).length"
        ).int
        #expect(untitled == 0, "\(name): \(untitled ?? -1) charts without a <title>")
    }

    @Test("a gauge's flood bands and a city's 25 AQI points, as the browser draws them")
    func bandsAndPoints() async throws {
        let fixtures = SitePageTests()
        let store = try await fixtures.gaugeStore()
        let values = (0..<30).map { Double(20 + $0 * 6) }  // 20 … 194: Good to Unhealthy
        try await store.write(
            SourceBatch(
                stations: [StationInfo(id: "IN-DEL", name: "Delhi", timeZone: "Asia/Kolkata")],
                readings: values.enumerated().map {
                    Reading(
                        station: "IN-DEL", metric: "aqi", time: fixtures.now - Int64(29 - $0.offset) * 3600,
                        value: $0.element)
                }), at: fixtures.now)
        try await SiteServer.with(store, now: fixtures.now + 60) { site in
            try await HeadlessBrowser.with { browser in
                let page = try await browser.newPage()
                let gauge = try await page.open("http://127.0.0.1:\(site.port)/gauges/PRTO3?refresh=off")
                #expect(gauge.status == 200)
                #expect(
                    try await page.attributes("rect.band", "class").sorted() == [
                        "band band-action", "band band-major", "band band-minor", "band band-moderate",
                    ])
                #expect(
                    try await page.texts("rect.band > title").sorted() == [
                        "Action stage 15 ft", "Major flood stage 28 ft", "Minor flood stage 18 ft",
                        "Moderate flood stage 23 ft",
                    ])
                // The bands are drawn: each has a height on the page.
                let drawn = try await page.evaluate(
                    "Array.from(document.querySelectorAll('rect.band')).filter(r => r.getBoundingClientRect().height > 0).length"
                ).int
                #expect(drawn == 4)
                try await expectAccessible(page, "gauge")
                try await shoot(page, "gauge")

                let air = try await page.open("http://127.0.0.1:\(site.port)/air/IN-DEL?refresh=off")
                #expect(air.status == 200)
                let fills = try await page.attributes("circle.aqi-point", "fill")
                #expect(fills.count == 25)
                #expect(fills == values.suffix(25).map { AQIScale.usEPA.level(for: $0)!.colour })
                #expect(try await page.count("circle.aqi-point > title") == 25)
                try await expectAccessible(page, "air")
                try await shoot(page, "air")
            }
        }
    }

    static let real = packageRoot.appendingPathComponent("Tests/Fixtures/real")

    @Test(
        "every read page over a database of real payloads (USGS IV, NWPS, USGS quakes, WAQI, AirNow)")
    func realData() async throws {
        let scratch = try Scratch()
        let db = scratch.path("real.sqlite")
        let r = Self.real.path
        for (format, file) in [
            ("usgs-iv-json", "usgs_nwis/iv_json_2sites_00060_00065_P1D_streamflow-api.json"),
            ("nwps-json", "nwps/gauge_PRTO3_full_categories_with_forecast.json"),
            ("usgs-quakes", "usgs_earthquakes/summary_significant_month_2023-10.geojson"),
            ("waqi-json", "waqi/feed_city_utrecht_ok.json"),
            ("airnow-json", "airnow/observation_latLong_current_legacy_HA.json"),
        ] {
            let run = await InProcess.ingest(
                db: db, format: try #require(IngestFormat(rawValue: format)), "\(r)/\(file)")
            #expect(run.status == 0, "\(file): \(run.stderr)")
        }
        let store = try SQLiteStore.open(path: db)
        try await SiteServer.with(store) { site in
            try await HeadlessBrowser.with { browser in
                let page = try await browser.newPage()
                for (name, path, selector, count) in [
                    ("real-overview", "/", "h1", 1),
                    ("real-gauges", "/gauges", "tr.gauge", 3),
                    ("real-gauge", "/gauges/08055000", "svg.chart", 2),
                    ("real-nwps-gauge", "/gauges/PRTO3", "h1", 1),
                    ("real-air", "/air", "circle.aqi-point", 2),
                    ("real-quakes", "/quakes?from=2023-09-01&to=2023-10-31", "tr.quake", 18),
                    ("real-station", "/stations/08061540", "figure.metric", 2),
                ] {
                    let loaded = try await page.open(
                        "http://127.0.0.1:\(site.port)\(path)\(path.contains("?") ? "&" : "?")refresh=off")
                    #expect(loaded.status == 200, "\(path)")
                    #expect(try await page.count(selector) == count, "\(path): \(selector)")
                    try await expectAccessible(page, name)
                    if name == "real-nwps-gauge" {
                        // No readings yet, but its flood categories are known: the page says them.
                        let text = try await page.evaluate("document.body.innerText").string ?? ""
                        #expect(text.contains("NWS flood categories"), "\(text)")
                    }
                    try await shoot(page, name)
                }
            }
        }
    }
}
