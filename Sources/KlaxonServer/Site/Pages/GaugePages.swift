import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/gauges` and `/gauges/ID`: river gauges with their NWS flood categories.
enum GaugePages {
    /// Metrics for each part of a gauge, preferred first (as `klaxon gauge` picks them).
    static let heightMetrics = ["gage_height", "stage", "gage_height.mean"]
    static let dischargeMetrics = ["discharge", "flow", "discharge.mean"]
    static let precipitationMetrics = ["precipitation", "precipitation.sum"]

    /// The ranges `?range=` offers (the page and its `chart.png`).
    static let ranges: [(key: String, label: String, seconds: Int64)] = [
        ("48h", "48 h", 48 * 3600), ("7d", "7 d", 7 * 86_400), ("30d", "30 d", 30 * 86_400),
        ("365d", "1 y", 365 * 86_400),
    ]
    /// The longest range `since` may ask for.
    static let longest: Int64 = 731 * 86_400

    /// The chosen range: `range=48h|7d|30d|365d` (default 48 h) or `since=DATE` (and `until=DATE`).
    static func range(_ request: Request, now: Int64, zone: TimeZone) throws -> (
        from: Int64, to: Int64, key: String?
    ) {
        try range(
            since: SiteHTML.query(request, "since"), until: SiteHTML.query(request, "until"),
            key: SiteHTML.query(request, "range"), now: now, zone: zone)
    }

    /// `range`, `since` and `until` as given (nil: absent): the range they choose, or a 400 saying why not.
    static func range(since: String?, until: String?, key: String?, now: Int64, zone: TimeZone) throws -> (
        from: Int64, to: Int64, key: String?
    ) {
        if since != nil, key != nil { throw SiteError.badRequest("give range or since, not both") }
        if until != nil, since == nil { throw SiteError.badRequest("until needs since") }
        if let since {
            let from = try SiteHTML.time(since, parameter: "since", zone: zone)
            var to = now
            if let until {
                to = try SiteHTML.time(until, parameter: "until", zone: zone)
                // A date alone means the whole of that day.
                if until.utf8.count == 10 { to += 86_400 }
            }
            guard from < to else { throw SiteError.badRequest("since must be before until (or now)") }
            guard to - from <= longest else { throw SiteError.badRequest("since … until may span at most 731 days") }
            return (from, to, nil)
        }
        let chosen = key ?? "48h"
        guard let r = ranges.first(where: { $0.key == chosen }) else {
            throw SiteError.badRequest(
                "range=\(chosen.prefix(20)) is not one of \(ranges.map(\.key).joined(separator: ", "))")
        }
        return (now - r.seconds, now, r.key)
    }

    static func pick(_ preferred: [String], _ names: [String]) -> String? { preferred.first { names.contains($0) } }

    /// The bands of a flood ladder, each up to the next category.
    static func bands(_ ladder: [LevelsRule.Level], unit: String) -> [LineChart.Band] {
        ladder.enumerated().map { i, level in
            LineChart.Band(
                name: level.name,
                label: "\(LevelsRule.floodTitle(level.name).capitalizedFirst) \(SiteHTML.value(level.at, unit))",
                low: level.at, high: i + 1 < ladder.count ? ladder[i + 1].at : nil,
                colour: SiteHTML.floodColour(level.name))
        }
    }

    /// The category a value is in (nil: below the lowest).
    static func category(_ value: Double, _ ladder: [LevelsRule.Level]) -> LevelsRule.Level? {
        ladder.last { value >= $0.at }
    }

    /// `rising 0.12 ft/h` over the last 3 h of readings before the latest.
    static func trend(_ points: [(time: Int64, value: Double)], unit: String?) -> String? {
        guard let last = points.last,
            let first = points.last(where: { $0.time <= last.time - 3 * 3600 })
                ?? points.first, last.time > first.time
        else { return nil }
        let perHour = (last.value - first.value) / (Double(last.time - first.time) / 3600)
        let steady = abs(perHour) < max(0.01, 0.002 * abs(last.value))
        if steady { return "steady" }
        let per = SiteHTML.value(abs(perHour), unit.map { "\($0)/h" } ?? "/h")
        return perHour > 0 ? "rising \(per)" : "falling \(per)"
    }

    // MARK: Charts (the page's and chart.png's)

    /// A gauge's stage or discharge chart over `from…to`, with its NWS flood categories as labelled
    /// bands: the chart its page shows, and the one `chart.png` draws.
    static func seriesChart(
        stage: Bool, name: String, unit: String?, points: [(time: Int64, value: Double)],
        ladder: [LevelsRule.Level], flood: FloodCategories?, from: Int64, to: Int64, zone: TimeZone,
        forecast: LineChart.Forecast? = nil
    ) -> LineChart {
        LineChart(
            title:
                "\(stage ? "Stage" : "Discharge") at \(name), \(SiteTime.short(from, zone: zone)) to \(SiteTime.short(to, zone: zone))\(ladder.isEmpty ? "" : ", with NWS flood categories")\(forecast == nil ? "" : ", and the river forecast after now (dashed)")",
            unit: unit, points: points, from: from, to: to, zone: zone,
            bands: bands(ladder, unit: stage ? (flood?.stageUnit ?? "ft") : (flood?.flowUnit ?? "cfs")),
            forecast: forecast, classes: stage ? "stage" : "discharge")
    }

    /// The furthest after "now" a gauge chart extends to show a forecast.
    static let forecastReach: Int64 = 10 * 86_400

    /// What the page says and draws of a series' latest forecast issuance, when the range ends now.
    struct ForecastView: Sendable {
        /// The issuance's points after now (at most `forecastReach` ahead).
        var points: [(time: Int64, value: Double)]
        var issued: Int64
        var source: String

        var crest: (time: Int64, value: Double)? {
            var best: (time: Int64, value: Double)?
            for p in points where best == nil || p.value > best!.value { best = p }
            return best
        }

        /// The chart's overlay.
        func chart(now: Int64, unit: String?, zone: TimeZone) -> LineChart.Forecast {
            LineChart.Forecast(
                now: now, points: points, issued: "forecast issued \(SiteTime.short(issued, zone: zone))",
                crestLabel: crest.map {
                    "crest \(SiteHTML.value($0.value, unit)) \(SiteTime.short($0.time, zone: zone))"
                }
                    ?? "")
        }

        /// `Forecast (dashed), issued 2025-03-03 09:12 PST (nwps): crest 16.5 ft 2025-03-05 06:00 PST,
        /// minor flood stage.`
        func sentence(unit: String?, ladder: [LevelsRule.Level], zone: TimeZone) -> String {
            var text = "Forecast (dashed), issued \(SiteTime.full(issued, zone: zone)) (\(source))"
            guard let c = crest else { return text + ": no values after now." }
            text += ": crest \(SiteHTML.value(c.value, unit)) \(SiteTime.full(c.time, zone: zone))"
            if !ladder.isEmpty {
                let cat = category(c.value, ladder)
                text += ", " + (cat.map { LevelsRule.floodTitle($0.name) } ?? "below flood categories")
            }
            return text + "."
        }
    }

    /// The latest issuance of `metric` as drawn after `now`, nil when none is stored.
    static func forecastView(
        station: String, metric: String, now: Int64, store: any SiteStore
    ) async throws -> ForecastView? {
        guard let f = try await store.latestForecast(station: station, metric: metric) else { return nil }
        let ahead = f.points.lazy.filter { $0.time > now && $0.time <= now + forecastReach && $0.value.isFinite }
            .map { (time: $0.time, value: $0.value) }
        return ForecastView(points: Array(ahead), issued: f.issued, source: f.source)
    }

    /// A gauge's precipitation bars over `from…to`.
    static func rainChart(
        name: String, unit: String?, points: [(time: Int64, value: Double)], from: Int64, to: Int64, zone: TimeZone
    ) -> BarChart {
        BarChart(
            title: "Precipitation at \(name), \(SiteTime.short(from, zone: zone)) to \(SiteTime.short(to, zone: zone))",
            unit: unit, points: points, from: from, to: to, zone: zone)
    }

    /// The picture of a gauge for `chart.png`: its page's first chart over `from…to` (stage, else
    /// discharge, else precipitation), as SVG, and whether any reading falls in the range. Read and
    /// drawn as the page reads and draws it: with `forecastAfter` (a range that ends then, now), the
    /// series' latest forecast issuance after it, dashed.
    static func chart(
        station: String, from: Int64, to: Int64, site: StatusSite.Context, forecastAfter: Int64? = nil
    ) async throws -> (
        svg: String, empty: Bool
    ) {
        let store = site.store
        let (infos, floods) = try await store.stationsAndFloods()
        let info = infos[station]
        let zone = SiteHTML.zone(info, site)
        let name = SiteHTML.name(info, id: station)
        let flood = floods[station]
        let series = try await store.series(station: station)
        let names = series.map(\.metric)
        let unitOf = Dictionary(series.map { ($0.metric, $0.unit) }, uniquingKeysWith: { a, _ in a })
        let height = pick(heightMetrics, names)
        if let metric = height ?? pick(dischargeMetrics, names) {
            let points = try await store.values(station: station, metric: metric, from: from, to: to)
            var unit = unitOf[metric] ?? nil
            if unit == nil { unit = try await store.latest(station: station, metric: metric)?.unit }
            let ladder = flood?.ladder(forMetric: metric) ?? []
            var forecast: ForecastView? = nil
            if let now = forecastAfter {
                forecast = try await forecastView(station: station, metric: metric, now: now, store: store)
            }
            let overlay = forecast.flatMap { $0.points.isEmpty ? nil : $0.chart(now: to, unit: unit, zone: zone) }
            let chart = seriesChart(
                stage: metric == height, name: name, unit: unit, points: points, ladder: ladder, flood: flood,
                from: from, to: overlay?.points.last.map { max(to, $0.time) } ?? to, zone: zone, forecast: overlay)
            return (try await offPool { chart.svg() }, points.isEmpty)
        }
        if let metric = pick(precipitationMetrics, names) {
            let points = try await store.values(station: station, metric: metric, from: from, to: to)
            let chart = rainChart(
                name: name, unit: unitOf[metric] ?? nil, points: points, from: from, to: to, zone: zone)
            return (try await offPool { chart.svg() }, points.isEmpty)
        }
        // No series yet: the empty stage chart, with the categories if they are known.
        let chart = seriesChart(
            stage: true, name: name, unit: flood?.stageUnit, points: [],
            ladder: flood?.ladder(forMetric: "gage_height") ?? [], flood: flood, from: from, to: to, zone: zone)
        return (chart.svg(), true)
    }

    // MARK: /gauges/ID

    static func page(request: Request, context: BasicRequestContext, site: StatusSite.Context) async throws -> SitePage
    {
        let typed = try SiteHTML.pathID(context, "id", what: "gauge")
        let store = site.store
        guard let station = try await store.resolveStation(typed) else {
            throw SiteError.notFound("No gauge \"\(typed)\" is known (a USGS site number or an NWS id).")
        }
        let (infos, floods) = try await store.stationsAndFloods()
        let info = infos[station]
        let zone = SiteHTML.zone(info, site)
        let now = site.now()
        let range = try Self.range(request, now: now, zone: zone)
        let series = try await store.series(station: station)
        let names = series.map(\.metric)
        let unitOf = Dictionary(series.map { ($0.metric, $0.unit) }, uniquingKeysWith: { a, _ in a })
        let height = pick(heightMetrics, names)
        let discharge = pick(dischargeMetrics, names)
        let precipitation = pick(precipitationMetrics, names)
        let flood = floods[station]
        let gauge = try await store.gauges().first { $0.stationID == station }
        let name = SiteHTML.name(info, id: station)

        // Each chart's readings, read in the range; the charts are drawn off the pool.
        struct Part: Sendable {
            var metric: String
            var unit: String?
            var points: [(time: Int64, value: Double)]
            var latest: StoredReading?
            var ladder: [LevelsRule.Level]
            /// Its latest forecast, when the range ends now.
            var forecast: ForecastView?
        }
        // The three series are read at once (the pool has several readers): a year of 15-minute
        // readings is 35,040 rows each.
        let (from, to) = (range.from, range.to)
        @Sendable func read(_ metric: String?) async throws -> [(time: Int64, value: Double)] {
            guard let metric else { return [] }
            return try await store.values(station: station, metric: metric, from: from, to: to)
        }
        async let heightValues = read(height)
        async let dischargeValues = read(discharge)
        async let rainValues = read(precipitation)
        let read = try await (height: heightValues, discharge: dischargeValues, rain: rainValues)
        var parts: [Part] = []
        for metric in [height, discharge].compactMap({ $0 }) {
            let points = metric == height ? read.height : read.discharge
            let latest = try await store.latest(station: station, metric: metric)
            let unit = unitOf[metric] ?? nil
            let ladder = flood?.ladder(forMetric: metric) ?? []
            // A chosen range (not since/until) ends now: the forecast goes after it.
            var forecast: ForecastView? = nil
            if range.key != nil {
                forecast = try await forecastView(station: station, metric: metric, now: now, store: store)
            }
            parts.append(
                Part(
                    metric: metric, unit: unit ?? latest?.unit, points: points, latest: latest, ladder: ladder,
                    forecast: forecast))
        }
        var rain: [(time: Int64, value: Double)] = []
        var totals: [(label: String, total: Double)] = []
        let rainUnit = precipitation.flatMap { unitOf[$0] ?? nil }
        if let precipitation {
            rain = read.rain
            for (label, seconds) in [("24 h", Int64(86_400)), ("7 d", Int64(7 * 86_400))] {
                let s = try await store.summary(station: station, metric: precipitation, from: now - seconds, to: now)
                totals.append((label, s?.sum ?? 0))
            }
        }
        // The trend needs the 3 h before the latest reading, which the range may not hold.
        var recent: [String: [(time: Int64, value: Double)]] = [:]
        for p in parts {
            guard let l = p.latest else { continue }
            recent[p.metric] = try await store.values(
                station: station, metric: p.metric, from: l.time - 3 * 3600 - 1, to: l.time)
        }
        let drawn = parts
        let rainfall = rain
        let charts: [String] = try await offPool {
            var out: [String] = []
            for p in drawn {
                let ahead = p.forecast?.points.last.map { max(to, $0.time) } ?? to
                out.append(
                    seriesChart(
                        stage: p.metric == height, name: name, unit: p.unit, points: p.points, ladder: p.ladder,
                        flood: flood, from: from, to: ahead, zone: zone,
                        forecast: p.forecast.flatMap {
                            $0.points.isEmpty ? nil : $0.chart(now: to, unit: p.unit, zone: zone)
                        }
                    ).svg())
            }
            if precipitation != nil {
                out.append(
                    rainChart(name: name, unit: rainUnit, points: rainfall, from: from, to: to, zone: zone).svg())
            }
            return out
        }

        let refreshOff = SitePage.refreshOff(request)
        let path = "/gauges/" + SiteHTML.segment(typed)
        var ids: [String] = []
        if let u = info?.usgsID ?? gauge?.usgsID { ids.append("USGS \(u)") }
        if let l = info?.nwsLID ?? gauge?.lid { ids.append("NWS \(l)") }
        if ids.isEmpty { ids.append("station \(station)") }
        var place: [String] = []
        if let d = gauge?.description, d != name { place.append(d) }
        if let st = gauge?.state { place.append(st) }
        if let la = info?.latitude, let lo = info?.longitude {
            place.append("\(formatValue((la * 1e4).rounded() / 1e4)), \(formatValue((lo * 1e4).rounded() / 1e4))")
        }
        place.append("times in \(zone.identifier)")

        return SitePage(title: "\(name) — gauge") {
            Node<HTML.BodyContext>.h1(SiteHTML.text(name))
            Node<HTML.BodyContext>.p(.class("ids"), SiteHTML.text(ids.joined(separator: " · ")))
            Node<HTML.BodyContext>.p(.class("place muted"), SiteHTML.text(place.joined(separator: " · ")))
            Node<HTML.BodyContext>.nav(
                .class("ranges"), .attribute(named: "aria-label", value: "Range"),
                .group(
                    ranges.map { r in
                        let here = range.key == r.key
                        return .a(
                            .safeHref(SitePage.link(path + "?range=" + r.key, refreshOff: refreshOff)),
                            .safeClass(here ? "range current" : "range"),
                            .safeAttribute(named: "aria-current", value: here ? "page" : nil), SiteHTML.text(r.label))
                    }),
                .form(
                    .class("since"), .safeAction(path), .method(.get),
                    .label(.text("since "), .input(.type(.date), .name("since"))),
                    .if(refreshOff, .input(.type(.hidden), .name("refresh"), .value("off"))),
                    .button(.type(.submit), .text("Show")))
            )
            Node<HTML.BodyContext>.section(
                .class("current"),
                .table(
                    .tr(.th("Series"), .th("Now"), .th("Category"), .th("Trend (3 h)"), .th("At")),
                    .group(
                        parts.map { p in
                            let isHeight = p.metric == height
                            let cat = p.latest.flatMap { l in p.ladder.isEmpty ? nil : category(l.value, p.ladder) }
                            let categoryCell: Node<HTML.BodyContext> =
                                p.ladder.isEmpty
                                ? SiteHTML.text("no NWS categories")
                                : p.latest == nil
                                    ? SiteHTML.text("–")
                                    : SiteHTML.badge(
                                        cat.map { LevelsRule.floodTitle($0.name).capitalizedFirst }
                                            ?? "Below flood categories",
                                        background: SiteHTML.floodColour(cat?.name),
                                        classes: "category-\(cat?.name ?? "none")")
                            return .tr(
                                .safeClass("series-\(isHeight ? "stage" : "discharge")"),
                                .td(SiteHTML.text(isHeight ? "Stage (\(p.metric))" : "Discharge (\(p.metric))")),
                                .td(
                                    .class("value"),
                                    SiteHTML.text(p.latest.map { SiteHTML.value($0.value, p.unit) } ?? "no reading")),
                                .td(categoryCell),
                                .td(SiteHTML.text(trend(recent[p.metric] ?? [], unit: p.unit) ?? "–")),
                                .td(SiteHTML.text(p.latest.map { SiteTime.full($0.time, zone: zone) } ?? "–")))
                        })
                ))
            if parts.isEmpty {
                Node<HTML.BodyContext>.p(SiteHTML.text("No stage or discharge readings are stored for this gauge."))
                // Its flood categories may be known before its first reading (NWPS before USGS).
                if let ladder = flood?.ladder(forMetric: height ?? "gage_height"), !ladder.isEmpty {
                    Node<HTML.BodyContext>.p(
                        .class("categories muted"),
                        SiteHTML.text(
                            "NWS flood categories: "
                                + ladder.map { "\($0.name) \(SiteHTML.value($0.at, nil))" }.joined(separator: " · ")
                                + " " + (flood?.stageUnit ?? "ft")))
                }
            }
            for (i, p) in parts.enumerated() {
                Node<HTML.BodyContext>.h2(SiteHTML.text(p.metric == height ? "Stage" : "Discharge"))
                Node<HTML.BodyContext>.element(named: "figure", nodes: [.class("chart"), SiteHTML.svg(charts[i])])
                if let f = p.forecast {
                    Node<HTML.BodyContext>.p(
                        .class("forecast"), SiteHTML.text(f.sentence(unit: p.unit, ladder: p.ladder, zone: zone)))
                }
                if !p.ladder.isEmpty {
                    Node<HTML.BodyContext>.p(
                        .class("categories muted"),
                        SiteHTML.text(
                            "NWS flood categories: "
                                + p.ladder.map { "\($0.name) \(SiteHTML.value($0.at, nil))" }.joined(separator: " · ")
                                + " " + (p.metric == height ? flood?.stageUnit ?? "ft" : flood?.flowUnit ?? "cfs")))
                }
            }
            if precipitation != nil, let bars = charts.last {
                Node<HTML.BodyContext>.h2("Precipitation")
                Node<HTML.BodyContext>.p(
                    .class("totals"),
                    SiteHTML.text(
                        totals.map { "\($0.label): \(SiteHTML.value($0.total, rainUnit))" }.joined(separator: " · ")))
                Node<HTML.BodyContext>.element(named: "figure", nodes: [.class("chart"), SiteHTML.svg(bars)])
            }
        }
    }

    // MARK: /gauges

    /// At most this many gauges are listed.
    static let listLimit = 200

    static func list(request: Request, site: StatusSite.Context) async throws -> SitePage {
        let store = site.store
        let (infos, floods) = try await store.stationsAndFloods()
        let gauges = try await store.gauges()
        var stations = Set(gauges.map(\.stationID))
        var heightOf: [String: String] = [:]
        for metric in heightMetrics.reversed() {
            for key in try await store.latestTimes(metric: metric).keys {
                stations.insert(key.station)
                heightOf[key.station] = metric
            }
        }
        for metric in dischargeMetrics {
            for key in try await store.latestTimes(metric: metric).keys { stations.insert(key.station) }
        }
        let sorted = stations.sorted {
            SiteHTML.name(infos[$0], id: $0).lowercased() < SiteHTML.name(infos[$1], id: $1).lowercased()
        }
        let shown = Array(sorted.prefix(listLimit))
        let now = site.now()
        let from = now - 48 * 3600
        struct Row: Sendable {
            var station: String
            var name: String
            var latest: StoredReading?
            var category: String?
            var hasLadder: Bool
            var points: [(time: Int64, value: Double)]
            var zone: TimeZone
            var unit: String?
        }
        var rows: [Row] = []
        for station in shown {
            let info = infos[station]
            let metric = heightOf[station]
            let latest = try await metric.asyncMap { try await store.latest(station: station, metric: $0) }
            let ladder = floods[station]?.ladder(forMetric: "gage_height") ?? []
            let points =
                try await metric.asyncMap {
                    try await store.values(station: station, metric: $0, from: from, to: now)
                } ?? []
            rows.append(
                Row(
                    station: station, name: SiteHTML.name(info, id: station), latest: latest ?? nil,
                    category: (latest ?? nil).flatMap { category($0.value, ladder)?.name }, hasLadder: !ladder.isEmpty,
                    points: points, zone: SiteHTML.zone(info, site), unit: (latest ?? nil)?.unit))
        }
        let listed = rows
        let charts: [String] = try await offPool {
            listed.map { r in
                LineChart(
                    title: "Stage at \(r.name), last 48 h", unit: r.unit, points: r.points, from: from, to: now,
                    zone: r.zone, width: 240, height: 64, compact: true, classes: "spark"
                ).svg()
            }
        }
        return SitePage(title: "Gauges") {
            Node<HTML.BodyContext>.h1("Gauges")
            if rows.isEmpty {
                Node<HTML.BodyContext>.p(SiteHTML.text("No gauges yet: add a usgs-iv or nwps source."))
            } else {
                Node<HTML.BodyContext>.table(
                    .class("gauges"),
                    .tr(.th("Gauge"), .th("Stage"), .th("Category"), .th("Last 48 h")),
                    .group(
                        rows.enumerated().map { i, r in
                            let badge: Node<HTML.BodyContext> =
                                r.latest == nil
                                ? SiteHTML.badge("No reading", background: "#EEEEEE", classes: "category-unknown")
                                : !r.hasLadder
                                    ? SiteHTML.badge(
                                        "No NWS categories", background: "#EEEEEE", classes: "category-unknown")
                                    : SiteHTML.badge(
                                        r.category.map { LevelsRule.floodTitle($0).capitalizedFirst }
                                            ?? "Below flood categories",
                                        background: SiteHTML.floodColour(r.category),
                                        classes: "category-\(r.category ?? "none")")
                            return .tr(
                                .class("gauge"),
                                .td(
                                    SiteHTML.link("/gauges/" + SiteHTML.segment(r.station), r.name, request: request),
                                    .br(), .small(.class("muted"), SiteHTML.text(r.station))),
                                .td(
                                    SiteHTML.text(r.latest.map { SiteHTML.value($0.value, $0.unit) } ?? "–"),
                                    .br(),
                                    .small(
                                        .class("muted"),
                                        SiteHTML.text(r.latest.map { SiteTime.ago($0.time, now: now) } ?? ""))),
                                .td(badge),
                                .td(.class("spark"), SiteHTML.svg(charts[i])))
                        })
                )
                if sorted.count > shown.count {
                    Node<HTML.BodyContext>.p(
                        .class("muted"), SiteHTML.text("\(sorted.count - shown.count) more gauges not listed."))
                }
            }
        }
    }
}

extension Optional {
    func asyncMap<U>(_ body: (Wrapped) async throws -> U) async rethrows -> U? {
        guard let v = self else { return nil }
        return try await body(v)
    }
}

extension String {
    /// `action stage` → `Action stage`.
    var capitalizedFirst: String { prefix(1).uppercased() + dropFirst() }
}
