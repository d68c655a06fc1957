import Foundation
import KlaxonCore

/// Epicentres on an equirectangular plot (longitude → x, latitude → y), each a circle sized by
/// magnitude and filled with its PAGER colour, with the watched places marked. No coastlines: a
/// graticule every 30° (nothing is loaded from another host).
struct QuakeMap {
    struct Mark {
        var latitude: Double
        var longitude: Double
        var magnitude: Double?
        var label: String
        var colour: String
    }

    var title: String
    var quakes: [Mark]
    var places: [(name: String, latitude: Double, longitude: Double)]
    var width = 720
    var height = 360

    /// A circle's radius for a magnitude: grows with the square, 2 px at most small events, 30 px at most.
    static func radius(_ magnitude: Double?) -> Double {
        guard let m = magnitude, m.isFinite else { return 2 }
        return min(30, max(2, 0.6 * m * m))
    }

    func svg() -> String {
        func x(_ lon: Double) -> Double { (lon + 180) / 360 * Double(width) }
        func y(_ lat: Double) -> Double { (90 - lat) / 180 * Double(height) }
        var w = SVGWriter(capacity: 4096 + quakes.count * 160)
        w.open(
            "svg",
            [
                "xmlns": "http://www.w3.org/2000/svg", "class": "chart quake-map", "viewBox": "0 0 \(width) \(height)",
                "width": "\(width)", "height": "\(height)", "role": "img", "font-family": "system-ui, sans-serif",
                "font-size": "10",
            ])
        w.title(title)
        w.leaf("rect", ["x": "0", "y": "0", "width": "\(width)", "height": "\(height)", "fill": "#eef3f8"])
        w.open("g", ["class": "graticule", "stroke": "#c3ccd6", "stroke-width": "1"])
        for lon in stride(from: -150.0, through: 150, by: 30) {
            w.leaf("line", ["x1": SVGWriter.num(x(lon)), "x2": SVGWriter.num(x(lon)), "y1": "0", "y2": "\(height)"])
        }
        for lat in stride(from: -60.0, through: 60, by: 30) {
            w.leaf("line", ["x1": "0", "x2": "\(width)", "y1": SVGWriter.num(y(lat)), "y2": SVGWriter.num(y(lat))])
        }
        w.close("g")
        w.open("g", ["class": "graticule-labels", "fill": "#333333"])
        for lat in stride(from: -60.0, through: 60, by: 30) {
            w.element("text", ["x": "3", "y": SVGWriter.num(y(lat) - 2)], text: "\(Int(lat))°")
        }
        w.close("g")
        // Biggest first, so small circles stay on top and can be hovered.
        let order = quakes.sorted { ($0.magnitude ?? -1) > ($1.magnitude ?? -1) }
        for q in order where q.latitude.isFinite && q.longitude.isFinite {
            w.open(
                "circle",
                [
                    "class": "epicentre", "cx": SVGWriter.num(x(q.longitude)), "cy": SVGWriter.num(y(q.latitude)),
                    "r": SVGWriter.num(Self.radius(q.magnitude)), "fill": q.colour, "fill-opacity": "0.7",
                    "stroke": "#1a1a1a", "stroke-width": "0.75",
                ])
            w.title(q.label)
            w.close("circle")
        }
        for p in places where p.latitude.isFinite && p.longitude.isFinite {
            let cx = x(p.longitude)
            let cy = y(p.latitude)
            w.open(
                "path",
                [
                    "class": "place",
                    "d": "M\(SVGWriter.num(cx)) \(SVGWriter.num(cy - 6))l5 9h-10z",
                    "fill": "#12355b", "stroke": "#ffffff", "stroke-width": "1",
                ])
            w.title(p.name)
            w.close("path")
        }
        w.close("svg")
        return w.output
    }
}
