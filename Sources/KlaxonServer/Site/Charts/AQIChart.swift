import Foundation
import KlaxonCore

/// A city's recent AQI samples as points in their level's colour (the scale's official colours),
/// over the scale's levels drawn as faint bands.
struct AQIChart {
    var title: String
    var samples: [(time: Int64, value: Double)]
    var scale: AQIScale
    var zone: TimeZone
    var width = 720
    var height = 240

    func svg() -> String {
        let (left, right, top, bottom) = (44, 12, 12, 24)
        let plotW = max(10, width - left - right)
        let plotH = max(10, height - top - bottom)
        let peak = samples.map(\.value).max() ?? 0
        // Up to the top of the highest level reached, so the colours above are in view.
        let ceiling = scale.level(for: peak).map { min($0.upper, 500) } ?? 50
        let (ticks, domain) = Ticks.values(low: 0, high: max(ceiling, peak), count: 5)
        let yBottom = Double(top + plotH)
        func y(_ v: Double) -> Double {
            yBottom - (v - domain.lowerBound) / (domain.upperBound - domain.lowerBound) * Double(plotH)
        }
        let first = samples.first?.time ?? 0
        let last = samples.last?.time ?? 0
        func x(_ t: Int64) -> Double {
            guard last > first else { return Double(left) + Double(plotW) / 2 }
            return Double(left) + 8 + Double(t - first) / Double(last - first) * Double(plotW - 16)
        }

        var w = SVGWriter()
        w.open(
            "svg",
            [
                "xmlns": "http://www.w3.org/2000/svg", "class": "chart aqi-chart", "viewBox": "0 0 \(width) \(height)",
                "width": "\(width)", "height": "\(height)", "role": "img", "font-family": "system-ui, sans-serif",
                "font-size": "11",
            ])
        w.title(title)
        w.open("g", ["class": "aqi-bands"])
        for level in scale.levels where level.at < domain.upperBound {
            let y0 = y(max(level.at - 0.5, 0))
            let y1 = y(min(level.upper + 0.5, domain.upperBound))
            guard y0 > y1 else { continue }
            w.open(
                "rect",
                [
                    "class": "aqi-band", "x": "\(left)", "y": SVGWriter.num(y1), "width": "\(plotW)",
                    "height": SVGWriter.num(y0 - y1), "fill": level.colour, "fill-opacity": "0.18",
                ])
            w.title("\(level.name): \(formatValue(level.at))–\(formatValue(level.upper))")
            w.close("rect")
        }
        w.close("g")
        w.open("g", ["class": "axis axis-y", "fill": "#333333"])
        for v in ticks {
            w.element(
                "text", ["x": "\(left - 4)", "y": SVGWriter.num(y(v) + 4), "text-anchor": "end"], text: Ticks.label(v))
        }
        w.close("g")
        w.open("g", ["class": "axis axis-x", "fill": "#333333"])
        if last > first {
            for tick in Ticks.times(from: first, to: last, zone: zone, maxCount: max(2, plotW / 80)) {
                w.element(
                    "text",
                    ["x": SVGWriter.num(x(tick.time)), "y": SVGWriter.num(yBottom + 15), "text-anchor": "middle"],
                    text: tick.label)
            }
        }
        w.close("g")
        if samples.count > 1 {
            let pts = samples.map { "\(SVGWriter.num(x($0.time))),\(SVGWriter.num(y($0.value)))" }
            w.leaf(
                "polyline",
                ["class": "aqi-line", "points": pts.joined(separator: " "), "fill": "none", "stroke": "#4a5360"])
        }
        for s in samples {
            let level = scale.level(for: s.value)
            w.open(
                "circle",
                [
                    "class": "aqi-point", "cx": SVGWriter.num(x(s.time)), "cy": SVGWriter.num(y(s.value)), "r": "6",
                    "fill": level?.colour ?? "#999999", "stroke": "#1a1a1a", "stroke-width": "1",
                ])
            w.title(
                "AQI \(formatValue(s.value.rounded())) (\(level?.name ?? "off the scale")) at \(SiteTime.short(s.time, zone: zone))"
            )
            w.close("circle")
        }
        w.close("svg")
        return w.output
    }
}
