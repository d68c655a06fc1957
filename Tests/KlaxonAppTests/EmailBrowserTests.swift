import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Testing

/// The flood email as a reader sees it (issue 30): rendered by the real notifier with the chart the
/// daemon draws, shown in headless Chromium (the HTML part, its `cid:` image resolved the way a
/// mail client does), and threaded with its resolve. The screenshot is `.build/screenshots/
/// email-flood.png` (the one in `docs/` is a copy).
@Suite(
    "the flood email in a real browser", .serialized, .timeLimit(.minutes(10)),
    .enabled(
        if: HeadlessBrowser.executable() != nil,
        "no Chromium found: install Debian's chromium (Deploy/setup.sh --test does) or set KLAXON_CHROMIUM"))
struct EmailBrowserTests {
    static let base = "https://klaxon.example.org"

    /// A river rising through its flood categories over two days, then falling back: evaluated at
    /// the crest (`now`) and again once it is back below action stage (`later`).
    static func floodStore(now: Int64, later: Int64) async throws -> (any Store, [TransitionRecord], [TransitionRecord])
    {
        let store = try tempStore()
        func stage(_ t: Int64) -> Double { 7 + 6 * sin(Double(t - (now - 172_800)) / 172_800 * .pi / 2) }
        func readings(from: Int64, to: Int64) -> [Reading] {
            stride(from: from, through: to, by: 900).map {
                Reading(station: "01646500", metric: "gage_height", time: $0, value: stage($0), unit: "ft")
            }
        }
        let info = StationInfo(
            id: "01646500", source: "usgs-iv", name: "Potomac River near Wash, DC Little Falls", latitude: 38.9498,
            longitude: -77.1276, timeZone: "America/New_York", usgsID: "01646500", nwsLID: "BRKM2")
        let gauge = GaugeInfo(
            lid: "BRKM2", usgsID: "01646500", name: "Potomac River at Little Falls", state: "MD",
            categories: FloodCategories(stage: ["action": 9, "minor": 10, "moderate": 12, "major": 14]))
        try await store.write(
            SourceBatch(stations: [info], gauges: [gauge], readings: readings(from: now - 172_800, to: now)), at: now)
        let rules = [
            Rule(
                name: "flood-stage", kind: LevelsRule(metric: "gage_height", levels: [], deadband: 0.3, nws: true),
                severity: .critical, labels: ["team": "river"])
        ]
        _ = try await Evaluate.run(store: store, rules: rules, now: now)
        let rising = try await store.transitions()
        // Then it falls back: 12 hours at a steady 8 ft.
        try await store.write(
            SourceBatch(
                readings: stride(from: now + 900, through: later, by: 900).map {
                    Reading(station: "01646500", metric: "gage_height", time: $0, value: 8, unit: "ft")
                }), at: later)
        _ = try await Evaluate.run(store: store, rules: rules, now: later)
        return (store, rising, try await store.transitions())
    }

    @Test("the flood email shows its chart, its links, and threads with its resolve")
    func floodEmail() async throws {
        let now: Int64 = 1_772_400_000
        let later = now + 43_200
        let (store, rising, log) = try await Self.floodStore(now: now, later: later)
        // The message at the crest: moderate flood stage, in the thread its firing opened.
        let crest = try #require(rising.last)
        let firing = try #require(log.first { $0.state == "firing" })
        let resolve = try #require(log.last { $0.state == "resolved" })
        #expect(crest.level == "moderate" && crest.episodeID == firing.id)
        #expect(crest.transition.place == "Potomac River at Little Falls")
        // The chart as the daemon draws it when the message goes out (at the crest).
        let charts = ChartImages(store: store, settings: StatusSite.Settings(), now: { now })
        let png = try #require(try await charts.png(station: "01646500", metric: "gage_height", range: "48h"))
        #expect(png.starts(with: [0x89, 0x50, 0x4e, 0x47]))

        let notifier = try EmailNotifier(
            config: .init(
                name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "Klaxon <klaxon@example.org>",
                to: ["river-team@example.org"]), clock: { now })
        func mail(_ r: TransitionRecord, key: String, chart: Data?) throws -> String {
            let a = NotifiedAlert(record: r)
            return try notifier.render(
                AlertNotification(key: key, receiver: "mail", alerts: [a], externalURL: Self.base), chart: chart)
        }
        let opening = try mail(firing, key: "n-1", chart: png)
        let first = try mail(crest, key: "n-3", chart: png)
        let last = try mail(resolve, key: "n-9", chart: nil)

        // Python's email package reads both back: the threading headers, the HTML and the image.
        let script = """
            import base64, email, json, sys
            from email import policy
            out = []
            for raw in sys.stdin.read().split("\\0"):
                m = email.message_from_string(raw, policy=policy.default)
                html, image, cid = None, None, None
                for p in m.walk():
                    if p.get_content_type() == "text/html": html = p.get_content()
                    if p.get_content_type() == "image/png":
                        image = base64.b64encode(p.get_payload(decode=True)).decode()
                        cid = p["Content-ID"]
                out.append({"subject": str(m["Subject"]), "id": m["Message-ID"], "refs": m["References"],
                            "html": html, "image": image, "cid": cid})
            json.dump(out, sys.stdout)
            """
        let data = try await python(script, input: Data([opening, first, last].joined(separator: "\0").utf8))
        let mails = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        try #require(mails.count == 3)
        // One thread: the same subject (the state the episode opened with), and the later messages,
        // the resolve among them, answer the first.
        #expect(mails[0]["subject"] as? String == "Potomac River at Little Falls: action stage")
        #expect(mails.allSatisfy { $0["subject"] as? String == "Potomac River at Little Falls: action stage" })
        #expect(mails[0]["refs"] is NSNull)
        #expect(mails[1]["refs"] as? String == mails[0]["id"] as? String)
        #expect(mails[2]["refs"] as? String == mails[0]["id"] as? String)
        let html = try #require(mails[1]["html"] as? String)
        let image = try #require(mails[1]["image"] as? String)
        let cid = try #require(mails[1]["cid"] as? String).trimmingCharacters(in: CharacterSet(charactersIn: "<>"))

        // As a mail client shows it: the cid: reference resolved to the attached image.
        let page = html.replacingOccurrences(of: "cid:\(cid)", with: "data:image/png;base64,\(image)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-mail-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("flood.html")
        try page.write(to: file, atomically: true, encoding: .utf8)
        try await HeadlessBrowser.with { browser in
            let tab = try await browser.newPage(width: 760, height: 640)
            _ = try await tab.open(file.absoluteString)
            // The chart is drawn (the image decoded, at its full width), and links go where they say.
            let width = try await tab.evaluate(
                "(() => { const i = document.querySelector('img'); return i && i.complete ? i.naturalWidth : 0 })()"
            ).int
            #expect((width ?? 0) >= 640, "the chart did not load: \(width ?? -1)")
            let links =
                try await tab.evaluate(
                    "Array.from(document.querySelectorAll('a')).map(a => a.textContent + ' ' + a.href).join('\\n')"
                ).string ?? ""
            #expect(
                links.contains("Open alert #\(firing.episodeID) \(Self.base)/alerts/\(firing.episodeID)"), "\(links)")
            #expect(links.contains("River gauge \(Self.base)/gauges/01646500"), "\(links)")
            try FileManager.default.createDirectory(at: screenshotFolder, withIntermediateDirectories: true)
            try await tab.screenshot(to: screenshotFolder.appendingPathComponent("email-flood.png"))
        }

        // The link's page: the episode's chart with each change marked, why, and the runbook's place.
        try await SiteServer.with(store, now: later + 60) { site in
            let page = try await site.get("/alerts/\(firing.episodeID)")
            #expect(page.status == 200)
            #expect(
                page.body.contains("<h1>Potomac River at Little Falls: below action stage again</h1>"), "\(page.body)")
            #expect(page.count("class=\"mark\"") == log.count, "one mark per transition")
            #expect(page.body.contains("Why: 8 ft is below action stage (9 ft)"))
            #expect(page.body.contains("href=\"/gauges/01646500\""))
        }
    }
}
