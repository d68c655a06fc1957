import Foundation
import KlaxonCore

/// Totals per time bucket as bars (precipitation): the bucket is the shortest of 15 min … 1 week
/// that keeps the bars at least 3 px wide; buckets start on local clock boundaries.
struct BarChart {
    var title: String
    var unit: String?
    var points: [(time: Int64, value: Double)]
    var from: Int64
    var to: Int64
    var zone: TimeZone
    var width = 720
    var height = 160
    var fill = "#1f6fb2"

    static let bucketSizes: [Int64] = [900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800]

    /// The bucket for a range drawn `plotWidth` px wide.
    static func bucket(span: Int64, plotWidth: Int) -> Int64 {
        bucketSizes.first { span / $0 <= Int64(max(1, plotWidth / 3)) } ?? 604_800
    }

    /// Sums per bucket, keyed by the bucket's start (local boundaries, from the zone's offset at `from`).
    static func totals(_ points: [(time: Int64, value: Double)], from: Int64, to: Int64, bucket: Int64, zone: TimeZone)
        -> [(start: Int64, total: Double)]
    {
        let offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(from))))
        var out: [(start: Int64, total: Double)] = []
        for p in points where p.time > from && p.time <= to && p.value.isFinite {
            // A reading closes its interval: the one at 15:00 is the rain of 14:45–15:00.
            let local = p.time - 1 + offset
            let start = local - ((local % bucket) + bucket) % bucket - offset
            if let last = out.last, last.start == start {
                out[out.count - 1].total += p.value
            } else {
                out.append((start, p.value))
            }
        }
        return out
    }

    func svg() -> String {
        let (left, right, top, bottom) = (56, 12, 20, 24)
        let plotW = max(10, width - left - right)
        let plotH = max(10, height - top - bottom)
        let size = Self.bucket(span: to - from, plotWidth: plotW)
        let bars = Self.totals(points, from: from, to: to, bucket: size, zone: zone)
        let peak = bars.map(\.total).max() ?? 0
        let (ticks, domain) = Ticks.values(low: 0, high: max(peak, 0.01), count: 3)
        let yBottom = Double(top + plotH)
        func y(_ v: Double) -> Double {
            yBottom - (v - domain.lowerBound) / (domain.upperBound - domain.lowerBound) * Double(plotH)
        }
        func x(_ t: Int64) -> Double { Double(left) + Double(t - from) / Double(max(1, to - from)) * Double(plotW) }

        var w = SVGWriter(capacity: 4096 + bars.count * 80)
        w.open(
            "svg",
            [
                "xmlns": "http://www.w3.org/2000/svg", "class": "chart bar-chart", "viewBox": "0 0 \(width) \(height)",
                "width": "\(width)", "height": "\(height)", "role": "img", "font-family": "system-ui, sans-serif",
                "font-size": "11",
            ])
        w.title(title)
        w.open("g", ["class": "axis axis-y", "fill": "#333333"])
        for v in ticks {
            let yy = SVGWriter.num(y(v))
            w.leaf(
                "line",
                [
                    "x1": "\(left)", "x2": "\(left + plotW)", "y1": yy, "y2": yy, "stroke": "#d0d4da",
                ])
            w.element(
                "text", ["x": "\(left - 4)", "y": SVGWriter.num(y(v) + 4), "text-anchor": "end"],
                text: Ticks.label(v))
        }
        w.close("g")
        if let unit, !unit.isEmpty {
            w.element("text", ["class": "unit", "x": "4", "y": "12", "fill": "#333333"], text: unit)
        }
        w.open("g", ["class": "axis axis-x", "fill": "#333333"])
        for tick in Ticks.times(from: from, to: to, zone: zone, maxCount: max(2, plotW / 80)) {
            w.element(
                "text", ["x": SVGWriter.num(x(tick.time)), "y": SVGWriter.num(yBottom + 15), "text-anchor": "middle"],
                text: tick.label)
        }
        w.close("g")
        let barW = max(1, Double(plotW) * Double(size) / Double(max(1, to - from)) - 1)
        w.open("g", ["class": "bars", "fill": fill])
        for b in bars where b.total > 0 {
            let x0 = max(Double(left), x(b.start))
            let y0 = y(b.total)
            w.open(
                "rect",
                [
                    "class": "bar", "x": SVGWriter.num(x0), "y": SVGWriter.num(y0),
                    "width": SVGWriter.num(min(barW, Double(left + plotW) - x0)),
                    "height": SVGWriter.num(max(0.5, yBottom - y0)),
                ])
            w.title(
                "\(formatValue((b.total * 100).rounded() / 100))\(unit.map { " " + $0 } ?? "") by \(SiteTime.short(min(to, b.start + size), zone: zone))"
            )
            w.close("rect")
        }
        w.close("g")
        w.leaf(
            "line",
            [
                "x1": "\(left)", "x2": "\(left + plotW)", "y1": SVGWriter.num(yBottom), "y2": SVGWriter.num(yBottom),
                "stroke": "#4a5360",
            ])
        w.close("svg")
        return w.output
    }
}
