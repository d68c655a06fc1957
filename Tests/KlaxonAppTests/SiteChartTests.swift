import Foundation
import KlaxonCore
import Testing

@testable import KlaxonServer

/// The status site's charts: pure, values in and SVG out.
@Suite("site charts")
struct SiteChartTests {
    let utc = TimeZone(identifier: "UTC")!
    let start: Int64 = 1_767_225_600  // 2026-01-01T00:00:00Z

    func series(count: Int, step: Int64 = 900, value: (Int) -> Double) -> [(time: Int64, value: Double)] {
        (0..<count).map { (start + Int64($0) * step, value($0)) }
    }

    @Test("down-sampling keeps a one-reading spike and a one-reading dip")
    func spike() {
        var points = series(count: 10_000) { _ in 1.0 }
        points[4321].value = 50
        points[7000].value = -20
        let segments = Downsample.segments(
            points, from: start, to: points.last!.time, width: 100, gap: Downsample.gapThreshold(points.map(\.time)))
        #expect(segments.count == 1)
        #expect(segments[0].count == 100)
        #expect(segments[0].map(\.max).max() == 50)
        #expect(segments[0].map(\.min).min() == -20)
        #expect(segments[0].reduce(0) { $0 + $1.count } == 10_000)
        // The column with the spike visits it.
        let column = segments[0].first { $0.max == 50 }!
        #expect(Downsample.visits(column).contains(50))
    }

    @Test("a gap longer than 3 × the median interval breaks the line")
    func gaps() {
        var points = series(count: 96) { Double($0) }
        points += series(count: 96) { Double($0) }.map { ($0.time + 96 * 900 + 6 * 3600, $0.value) }
        #expect(Downsample.gapThreshold(points.map(\.time)) == 2700)
        let segments = Downsample.segments(points, from: start, to: points.last!.time, width: 300, gap: 2700)
        #expect(segments.count == 2)
        let svg = LineChart(
            title: "t", unit: "ft", points: points, from: start, to: points.last!.time, zone: utc
        ).svg()
        #expect(svg.components(separatedBy: "<path class=\"line\"").count - 1 == 2)
        // Regular readings with no hole: one path.
        let whole = LineChart(
            title: "t", unit: "ft", points: series(count: 192) { Double($0) }, from: start, to: start + 191 * 900,
            zone: utc
        ).svg()
        #expect(whole.components(separatedBy: "<path class=\"line\"").count - 1 == 1)
    }

    @Test("value ticks are round numbers covering the data")
    func valueTicks() {
        let (ticks, domain) = Ticks.values(low: 0.3, high: 9.7, count: 5)
        #expect(ticks == [0, 2, 4, 6, 8, 10])
        #expect(domain == 0...10)
        let small = Ticks.values(low: 0.12, high: 0.47, count: 4)
        #expect(small.ticks == [0.1, 0.2, 0.3, 0.4, 0.5])
        let flat = Ticks.values(low: 5, high: 5)
        #expect(flat.domain.lowerBound < 5 && flat.domain.upperBound > 5)
    }

    @Test("time ticks fall on local hours and midnights, labelled in the zone")
    func timeTicks() {
        let ticks = Ticks.times(from: start, to: start + 48 * 3600, zone: utc, maxCount: 8)
        #expect(ticks.map(\.label) == ["Thu 1", "12:00", "Fri 2", "12:00", "Sat 3"])
        let chicago = TimeZone(identifier: "America/Chicago")!
        let local = Ticks.times(from: start, to: start + 48 * 3600, zone: chicago, maxCount: 8)
        // 2026-01-01T00:00Z is 18:00 on Dec 31 in Chicago: the first tick is local midnight, 06:00Z.
        #expect(local.first?.time == start + 6 * 3600)
        #expect(local.first?.label == "Thu 1")
        let month = Ticks.times(from: start, to: start + 30 * 86_400, zone: utc, maxCount: 8)
        #expect(month.allSatisfy { $0.label.hasPrefix("Jan") })
        let year = Ticks.times(from: start, to: start + 365 * 86_400, zone: utc, maxCount: 8)
        #expect(year.first?.label == "Jan 2026")
        #expect(year.count <= 8)
    }

    @Test("flood bands are drawn, coloured and labelled, each with a title")
    func bands() {
        let bands = GaugePages.bands(
            [
                .init(name: "action", at: 15), .init(name: "minor", at: 18), .init(name: "moderate", at: 23),
                .init(name: "major", at: 28),
            ], unit: "ft")
        let svg = LineChart(
            title: "Stage", unit: "ft", points: series(count: 200) { 10 + Double($0) / 50 }, from: start,
            to: start + 199 * 900, zone: utc, bands: bands
        ).svg()
        for (name, label) in [
            ("action", "Action stage 15 ft"), ("minor", "Minor flood stage 18 ft"),
            ("moderate", "Moderate flood stage 23 ft"), ("major", "Major flood stage 28 ft"),
        ] {
            #expect(svg.contains("<rect class=\"band band-\(name)\""), "\(name)")
            #expect(svg.contains("<title>\(label)</title>"), "\(label)")
            #expect(svg.contains(">\(label)</text>"), "\(label)")
        }
        #expect(svg.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart line-chart\""))
        #expect(svg.contains("<title>Stage</title>"))
    }

    @Test("text in a chart is escaped")
    func escaping() {
        let hostile = "<script>alert(\"x\")</script> & 'q'"
        let svg = LineChart(
            title: hostile, unit: hostile, points: series(count: 3) { Double($0) }, from: start, to: start + 1800,
            zone: utc
        ).svg()
        #expect(!svg.contains("<script>"))
        #expect(svg.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39;"))
        let map = QuakeMap(
            title: "m", quakes: [.init(latitude: 1, longitude: 2, magnitude: 5, label: hostile, colour: "#FF0000")],
            places: [(hostile, 3, 4)]
        ).svg()
        #expect(!map.contains("<script>"))
    }

    @Test("AQI points are in their level's colour, each with a title")
    func aqiPoints() {
        let values: [Double] = (0..<25).map { Double($0 * 13) }
        let samples = values.enumerated().map { (start + Int64($0.offset) * 3600, $0.element) }
        let svg = AQIChart(title: "AQI", samples: samples, scale: .usEPA, zone: utc).svg()
        #expect(svg.components(separatedBy: "<circle class=\"aqi-point\"").count - 1 == 25)
        for v in values {
            let colour = AQIScale.usEPA.level(for: v)!.colour
            #expect(svg.contains("fill=\"\(colour)\""))
        }
        #expect(svg.contains("<title>AQI 52 (Moderate) at Jan 1 04:00</title>"))
    }

    @Test("text on every scale, flood, severity and PAGER colour meets 4.5:1")
    func contrast() {
        var colours = (AQIScale.usEPA.levels + AQIScale.indiaNAQI.levels).map(\.colour)
        colours += [nil, "action", "minor", "moderate", "major"].map(SiteHTML.floodColour)
        colours += Severity.allCases.map(SiteHTML.severityColour)
        colours += ["green", "yellow", "orange", "red", nil].map(SiteHTML.pagerColour)
        for c in colours {
            #expect(SiteColour.contrast(c, SiteColour.text(on: c)) >= 4.5, "\(c)")
        }
        #expect(abs(SiteColour.contrast("#000000", "#FFFFFF") - 21) < 0.01)
    }

    @Test("precipitation bars sum per local bucket")
    func bars() {
        let points = series(count: 8, step: 900) { _ in 0.25 }
        let totals = BarChart.totals(points, from: start - 1, to: start + 7 * 900, bucket: 3600, zone: utc)
        // Readings at :00 close the previous hour.
        #expect(totals.map(\.total) == [0.25, 1.0, 0.75])
        let svg = BarChart(
            title: "Rain", unit: "in", points: points, from: start - 3600, to: start + 7200, zone: utc
        ).svg()
        #expect(svg.contains("class=\"chart bar-chart\""))
        #expect(svg.contains("<rect class=\"bar\""))
    }

    @Test("a year of 15-minute readings draws in a bounded size")
    func yearSize() {
        let points = series(count: 365 * 96) { i in 10 + 5 * sin(Double(i) / 500) + (i % 9_000 == 0 ? 8 : 0) }
        let svg = LineChart(
            title: "Stage", unit: "ft", points: points, from: start, to: points.last!.time, zone: utc
        ).svg()
        #expect(svg.utf8.count < 40_000, "\(svg.utf8.count) bytes")
    }

    @Test("times show in the zone: fields and the zone's abbreviation")
    func siteTime() {
        #expect(
            SiteTime.full(start, zone: utc) == "2026-01-01 00:00 GMT"
                || SiteTime.full(start, zone: utc) == "2026-01-01 00:00 UTC")
        let la = TimeZone(identifier: "America/Los_Angeles")!
        #expect(SiteTime.short(start, zone: la) == "Dec 31 16:00")
        #expect(SiteTime.ago(start - 7200, now: start) == "2 h ago")
        #expect(SiteTime.short(-1, zone: utc) == "Dec 31 23:59")
    }
}
