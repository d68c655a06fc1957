import Foundation
import KlaxonCore

/// A time-series line chart as SVG: down-sampled to its pixel width (min and max per column, so a
/// spike survives), broken at gaps, with value and local-time axes, the unit, and optional labelled
/// bands behind the line (a gauge's flood categories).
struct LineChart {
    /// A horizontal band from `low` to `high` (nil: to the top of the chart).
    struct Band: Equatable {
        /// `action`: the band's class is `band band-action`.
        var name: String
        /// What the band's label and `<title>` say (`Action stage 15 ft`).
        var label: String
        var low: Double
        var high: Double?
        /// `#RRGGBB`.
        var colour: String
    }

    /// The chart's accessible name (its `<title>`).
    var title: String
    var unit: String?
    var points: [(time: Int64, value: Double)]
    var from: Int64
    var to: Int64
    var zone: TimeZone
    var bands: [Band] = []
    /// Moments marked with a dashed line and a label (an alert's transitions on its page).
    var marks: [(time: Int64, label: String, colour: String)] = []
    /// A river forecast drawn after "now": a dashed line, its crest marked, its issuance stated.
    var forecast: Forecast? = nil

    /// The part of a forecast issuance after "now" (`points` by time, all after `now`).
    struct Forecast {
        var now: Int64
        var points: [(time: Int64, value: Double)]
        /// `forecast issued Mon 09:12` (shown in the plot and in the line's `<title>`).
        var issued: String
        /// `crest 16.5 ft Wed 06:00` (the crest marker's `<title>` and label).
        var crestLabel: String

        /// The highest point (the earliest of equal highs).
        var crest: (time: Int64, value: Double)? {
            var best: (time: Int64, value: Double)?
            for p in points where best == nil || p.value > best!.value { best = p }
            return best
        }
    }
    var width = 720
    var height = 260
    /// A small multiple: smaller margins and fewer ticks.
    var compact = false
    var stroke = "#0b4f8a"
    /// Extra classes after `chart line-chart`.
    var classes: String? = nil

    var margin: (left: Int, right: Int, top: Int, bottom: Int) {
        compact ? (44, 8, 22, 20) : (56, 12, 20, 24)
    }

    func svg() -> String {
        let m = margin
        let plotW = max(10, width - m.left - m.right)
        let plotH = max(10, height - m.top - m.bottom)
        let gap = Downsample.gapThreshold(points.map(\.time))
        let segments = Downsample.segments(points, from: from, to: to, width: plotW, gap: gap)

        // The value domain: the data and every band's lower edge (so each band shows).
        var lo = Double.infinity
        var hi = -Double.infinity
        for s in segments {
            for c in s {
                lo = min(lo, c.min)
                hi = max(hi, c.max)
            }
        }
        for p in forecast?.points ?? [] where p.time >= from && p.time <= to && p.value.isFinite {
            lo = min(lo, p.value)
            hi = max(hi, p.value)
        }
        let bandLows = bands.map(\.low).filter(\.isFinite)
        if let bl = bandLows.min(), let bh = bandLows.max() {
            lo = min(lo, bl)
            hi = max(hi, bh + max(0.1 * (max(hi, bh) - min(lo, bl)), 0.5))
        }
        if !lo.isFinite || !hi.isFinite { (lo, hi) = (0, 1) }
        let (yTicks, domain) = Ticks.values(low: lo, high: hi, count: compact ? 3 : 5)
        let dlo = domain.lowerBound
        let dhi = domain.upperBound
        let left = Double(m.left)
        let top = Double(m.top)
        let bottom = Double(m.top + plotH)
        func y(_ v: Double) -> Double { bottom - (v - dlo) / (dhi - dlo) * Double(plotH) }
        func x(_ t: Int64) -> Double { left + Double(t - from) / Double(max(1, to - from)) * Double(plotW) }

        var w = SVGWriter(capacity: 8192 + points.count.clamped(to: 0...plotW) * 40)
        let classes = "chart line-chart" + (self.classes.map { " " + $0 } ?? "")
        w.open(
            "svg",
            [
                "xmlns": "http://www.w3.org/2000/svg", "class": classes, "viewBox": "0 0 \(width) \(height)",
                "width": "\(width)", "height": "\(height)", "role": "img",
                "font-family": "system-ui, sans-serif", "font-size": compact ? "10" : "11",
            ])
        w.title(title)

        // Bands, lowest first, clipped to the plot.
        if !bands.isEmpty {
            w.open("g", ["class": "bands"])
            for b in bands where b.low.isFinite && b.low < dhi {
                let y0 = y(max(b.low, dlo))
                let y1 = y(min(b.high ?? dhi, dhi))
                guard y0 - y1 > 0 else { continue }
                w.open(
                    "rect",
                    [
                        "class": "band band-\(b.name)", "x": SVGWriter.num(left), "y": SVGWriter.num(y1),
                        "width": "\(plotW)", "height": SVGWriter.num(y0 - y1), "fill": b.colour,
                        "fill-opacity": "0.35",
                    ])
                w.title(b.label)
                w.close("rect")
                w.element(
                    "text",
                    [
                        "class": "band-label", "x": SVGWriter.num(left + Double(plotW) - 4),
                        "y": SVGWriter.num(max(y1 + 11, min(y0 - 3, y1 + 11))), "text-anchor": "end",
                        "fill": "#1a1a1a",
                    ], text: b.label)
            }
            w.close("g")
        }

        // Grid and the value axis.
        w.open("g", ["class": "axis axis-y", "fill": "#333333"])
        for v in yTicks {
            let yy = SVGWriter.num(y(v))
            w.leaf(
                "line",
                [
                    "x1": SVGWriter.num(left), "x2": SVGWriter.num(left + Double(plotW)), "y1": yy, "y2": yy,
                    "stroke": "#d0d4da", "stroke-width": "1",
                ])
            w.element(
                "text", ["x": SVGWriter.num(left - 4), "y": SVGWriter.num(y(v) + 4), "text-anchor": "end"],
                text: Ticks.label(v))
        }
        w.close("g")
        if let unit, !unit.isEmpty {
            w.element("text", ["class": "unit", "x": "4", "y": "12", "fill": "#333333"], text: unit)
        }

        // The time axis, in local time.
        let maxTicks = max(2, plotW / (compact ? 70 : 80))
        w.open("g", ["class": "axis axis-x", "fill": "#333333"])
        w.leaf(
            "line",
            [
                "x1": SVGWriter.num(left), "x2": SVGWriter.num(left + Double(plotW)), "y1": SVGWriter.num(bottom),
                "y2": SVGWriter.num(bottom), "stroke": "#4a5360",
            ])
        for tick in Ticks.times(from: from, to: to, zone: zone, maxCount: maxTicks) {
            let xx = x(tick.time)
            w.leaf(
                "line",
                [
                    "x1": SVGWriter.num(xx), "x2": SVGWriter.num(xx), "y1": SVGWriter.num(bottom),
                    "y2": SVGWriter.num(bottom + 4), "stroke": "#4a5360",
                ])
            w.element(
                "text", ["x": SVGWriter.num(xx), "y": SVGWriter.num(bottom + 15), "text-anchor": "middle"],
                text: tick.label)
        }
        w.close("g")

        // Marks: a dashed line at each moment in range, its label in its <title> and above the plot.
        if !marks.isEmpty {
            w.open("g", ["class": "marks"])
            for (i, mark) in marks.enumerated() where mark.time >= from && mark.time <= to {
                let xx = SVGWriter.num(x(mark.time))
                w.open("g", ["class": "mark"])
                w.title(mark.label)
                w.leaf(
                    "line",
                    [
                        "x1": xx, "x2": xx, "y1": SVGWriter.num(top), "y2": SVGWriter.num(bottom),
                        "stroke": mark.colour, "stroke-width": "1.5", "stroke-dasharray": "4 3",
                    ])
                w.element(
                    "text",
                    [
                        "x": SVGWriter.num(x(mark.time) + 3), "y": SVGWriter.num(top + 10 + Double(i % 3) * 11),
                        "fill": "#1a1a1a", "font-size": "10",
                    ], text: mark.label)
                w.close("g")
            }
            w.close("g")
        }

        // The line: one path per segment; a segment of one reading is a dot.
        if segments.isEmpty {
            w.element(
                "text",
                [
                    "class": "empty", "x": SVGWriter.num(left + Double(plotW) / 2),
                    "y": SVGWriter.num(top + Double(plotH) / 2), "text-anchor": "middle", "fill": "#333333",
                ], text: "no readings in this range")
        }
        for s in segments {
            if s.count == 1, s[0].min == s[0].max {
                w.leaf(
                    "circle",
                    [
                        "class": "point", "cx": SVGWriter.num(left + Double(s[0].x) + 0.5),
                        "cy": SVGWriter.num(y(s[0].first)), "r": "2", "fill": stroke,
                    ])
                continue
            }
            var d = ""
            d.reserveCapacity(s.count * 16)
            var started = false
            for c in s {
                let xx = SVGWriter.num(left + Double(c.x) + 0.5)
                var lastY = ""
                for v in Downsample.visits(c) {
                    let yy = SVGWriter.num(y(v))
                    if yy == lastY { continue }
                    if lastY.isEmpty {
                        d += started ? "L" : "M"
                        d += xx
                        d += " "
                        d += yy
                        started = true
                    } else {
                        d += "V"
                        d += yy
                    }
                    lastY = yy
                }
            }
            w.leaf(
                "path",
                [
                    "class": "line", "d": d, "fill": "none", "stroke": stroke, "stroke-width": "1.5",
                    "stroke-linejoin": "round", "stroke-linecap": "round",
                ])
        }
        if let forecast { drawForecast(forecast, &w, x: x, y: y, top: top, bottom: bottom) }
        w.close("svg")
        return w.output
    }

    /// "now" as a thin line, the forecast after it dashed, the crest as a ring with its label, and
    /// the issuance time at the top of the plot.
    private func drawForecast(
        _ f: Forecast, _ w: inout SVGWriter, x: (Int64) -> Double, y: (Double) -> Double, top: Double, bottom: Double
    ) {
        let shown = f.points.filter { $0.time >= from && $0.time <= to && $0.value.isFinite }
        w.open("g", ["class": "forecast"])
        w.title(f.issued)
        if f.now >= from && f.now <= to {
            let xx = SVGWriter.num(x(f.now))
            w.leaf(
                "line",
                [
                    "class": "now", "x1": xx, "x2": xx, "y1": SVGWriter.num(top), "y2": SVGWriter.num(bottom),
                    "stroke": "#4a5360", "stroke-width": "1",
                ])
        }
        if shown.count > 1 {
            var d = ""
            for (i, p) in shown.enumerated() {
                d += i == 0 ? "M" : "L"
                d += SVGWriter.num(x(p.time)) + " " + SVGWriter.num(y(p.value))
            }
            w.leaf(
                "path",
                [
                    "class": "forecast-line", "d": d, "fill": "none", "stroke": stroke, "stroke-width": "1.5",
                    "stroke-dasharray": "6 4", "stroke-linejoin": "round",
                ])
        } else if let p = shown.first {
            w.leaf(
                "circle",
                [
                    "class": "forecast-point", "cx": SVGWriter.num(x(p.time)), "cy": SVGWriter.num(y(p.value)),
                    "r": "2", "fill": stroke,
                ])
        }
        if let c = f.crest, c.time >= from, c.time <= to {
            w.open("g", ["class": "crest"])
            w.title(f.crestLabel)
            w.leaf(
                "circle",
                [
                    "cx": SVGWriter.num(x(c.time)), "cy": SVGWriter.num(y(c.value)), "r": "4", "fill": "#ffffff",
                    "stroke": stroke, "stroke-width": "2",
                ])
            w.element(
                "text",
                [
                    "x": SVGWriter.num(x(c.time)), "y": SVGWriter.num(max(top + 10, y(c.value) - 8)),
                    "text-anchor": "middle", "fill": "#1a1a1a", "font-size": "10",
                ], text: f.crestLabel)
            w.close("g")
        }
        w.element(
            "text",
            [
                "class": "forecast-issued", "x": SVGWriter.num(x(max(from, min(f.now, to))) + 3),
                "y": SVGWriter.num(top + 10), "fill": "#1a1a1a", "font-size": "10",
            ], text: f.issued)
        w.close("g")
    }
}

extension Comparable {
    func clamped(to r: ClosedRange<Self>) -> Self { min(max(self, r.lowerBound), r.upperBound) }
}
