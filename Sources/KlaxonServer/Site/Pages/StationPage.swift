import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/stations/ID`: a station's current conditions as a table and every metric's last 48 hours as
/// small multiples (a summit observatory: temperature, humidity, wind, pressure, visibility, …).
/// Works for whatever metrics the store holds for the station.
enum StationPage {
    static let window: Int64 = 48 * 3600
    /// At most this many metrics are charted.
    static let metricLimit = 40

    static func page(request: Request, context: BasicRequestContext, site: StatusSite.Context) async throws -> SitePage
    {
        let typed = try SiteHTML.pathID(context, "id", what: "station")
        let store = site.store
        guard let station = try await store.resolveStation(typed) else {
            throw SiteError.notFound("No station \"\(typed)\" is known.")
        }
        let info = try await store.stationInfos()[station]
        let zone = SiteHTML.zone(info, site)
        let name = SiteHTML.name(info, id: station)
        let now = site.now()
        let from = now - window
        struct Metric: Sendable {
            var metric: String
            var unit: String?
            var latest: StoredReading?
            var points: [(time: Int64, value: Double)]
        }
        var metrics: [Metric] = []
        for s in try await store.series(station: station).prefix(metricLimit) {
            let latest = try await store.latest(station: station, metric: s.metric)
            let points = try await store.values(station: station, metric: s.metric, from: from, to: now)
            metrics.append(Metric(metric: s.metric, unit: s.unit ?? latest?.unit, latest: latest, points: points))
        }
        let drawn = metrics
        let charts: [String] = try await offPool {
            drawn.map { m in
                chart(metric: m.metric, name: name, unit: m.unit, points: m.points, from: from, to: now, zone: zone)
                    .svg()
            }
        }
        var place: [String] = []
        if let la = info?.latitude, let lo = info?.longitude {
            place.append("\(formatValue((la * 1e4).rounded() / 1e4)), \(formatValue((lo * 1e4).rounded() / 1e4))")
        }
        if let elevation = info?.attributes["elevation"] { place.append("elevation \(elevation)") }
        place.append("times in \(zone.identifier)")

        return SitePage(title: "\(name) — station") {
            Node<HTML.BodyContext>.h1(SiteHTML.text(name))
            Node<HTML.BodyContext>.p(
                .class("ids muted"), SiteHTML.text((["station \(station)"] + place).joined(separator: " · ")))
            if metrics.isEmpty {
                Node<HTML.BodyContext>.p("No readings are stored for this station.")
            } else {
                Node<HTML.BodyContext>.h2("Current conditions")
                Node<HTML.BodyContext>.table(
                    .class("conditions"),
                    .tr(.th("Metric"), .th("Now"), .th("At")),
                    .group(
                        metrics.map { m in
                            .tr(
                                .class("condition"),
                                .td(SiteHTML.text(label(m.metric))),
                                .td(
                                    .class("value"),
                                    SiteHTML.text(m.latest.map { show(m.metric, $0.value, m.unit) } ?? "no reading")),
                                .td(
                                    SiteHTML.text(
                                        m.latest.map {
                                            "\(SiteTime.short($0.time, zone: zone)) (\(SiteTime.ago($0.time, now: now)))"
                                        }
                                            ?? "–")))
                        }))
                Node<HTML.BodyContext>.h2("Last 48 hours")
                Node<HTML.BodyContext>.div(
                    .class("multiples"),
                    .group(
                        metrics.enumerated().map { i, m in
                            .element(
                                named: "figure",
                                nodes: [
                                    .class("metric"), .safeAttribute(named: "data-metric", value: m.metric),
                                    .element(
                                        named: "figcaption",
                                        nodes: [
                                            .strong(SiteHTML.text(label(m.metric))),
                                            .text(" "),
                                            SiteHTML.text(m.latest.map { show(m.metric, $0.value, m.unit) } ?? ""),
                                        ]),
                                    SiteHTML.svg(charts[i]),
                                ])
                        }))
            }
        }
    }

    /// One metric's small multiple: the chart the page shows, and the one `chart.png?metric=` draws.
    /// The page's covers the last 48 hours; `chart.png` takes the gauge page's ranges.
    static func chart(
        metric: String, name: String, unit: String?, points: [(time: Int64, value: Double)], from: Int64,
        to: Int64, zone: TimeZone
    ) -> LineChart {
        let span =
            to - from == window
            ? "last 48 hours" : "\(SiteTime.short(from, zone: zone)) to \(SiteTime.short(to, zone: zone))"
        return LineChart(
            title: "\(label(metric)) at \(name), \(span)", unit: unit, points: points, from: from, to: to, zone: zone,
            width: 340, height: 150, compact: true, classes: "multiple")
    }

    /// The picture of a station's metric for `chart.png` (nil metric: the first the page shows),
    /// over `from…to`, as SVG, and whether any reading falls in the range; a 404 for a metric the
    /// station has no readings of.
    static func chart(station: String, metric: String?, from: Int64, to: Int64, site: StatusSite.Context)
        async throws -> (svg: String, empty: Bool)
    {
        let store = site.store
        let info = try await store.stationInfos()[station]
        let series = try await store.series(station: station).prefix(metricLimit)
        let chosen = metric == nil ? series.first : series.first { $0.metric == metric }
        guard let s = chosen else {
            throw SiteError.notFound(
                metric.map { "Station \"\(station)\" has no readings of \"\($0)\"." }
                    ?? "No readings are stored for station \"\(station)\".")
        }
        let points = try await store.values(station: station, metric: s.metric, from: from, to: to)
        var unit = s.unit
        if unit == nil { unit = try await store.latest(station: station, metric: s.metric)?.unit }
        let drawn = chart(
            metric: s.metric, name: SiteHTML.name(info, id: station), unit: unit, points: points, from: from, to: to,
            zone: SiteHTML.zone(info, site))
        return (try await offPool { drawn.svg() }, points.isEmpty)
    }

    /// `wind_speed` → `Wind speed`.
    static func label(_ metric: String) -> String {
        metric.replacingOccurrences(of: "_", with: " ").replacingOccurrences(of: ".", with: " ").capitalizedFirst
    }

    /// A value for the table; a direction in degrees also as a compass point (`270° W`).
    static func show(_ metric: String, _ value: Double, _ unit: String?) -> String {
        let text = SiteHTML.value(value, unit)
        let lower = metric.lowercased()
        guard lower.contains("direction") || lower.hasSuffix("_dir"), value.isFinite, (0...360).contains(value) else {
            return text
        }
        let points = [
            "N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW",
        ]
        return "\(text) \(points[Int((value / 22.5).rounded()) % 16])"
    }
}
