import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/air` and `/air/CITY`: each city's recent AQI in its level's colour, with the level's name,
/// emoji and advice on the scale the rules use.
enum AirPages {
    static let samples = 25
    static let metric = "aqi"

    struct City: Sendable {
        var station: String
        var name: String
        var zone: TimeZone
        var scale: AQIScale
        var samples: [(time: Int64, value: Double)]
        var latest: (time: Int64, value: Double)? { samples.last }
    }

    static func city(_ station: String, infos: [String: StationInfo], site: StatusSite.Context) async throws -> City {
        let points = try await site.store.lastValues(station: station, metric: metric, limit: samples)
        return City(
            station: station, name: SiteHTML.name(infos[station], id: station),
            zone: SiteHTML.zone(infos[station], site),
            scale: site.settings.aqiScales[station] ?? site.settings.aqiScale, samples: points)
    }

    /// The city a path names: a station with AQI readings, by its id, its id in any case, or its
    /// name; a 404 otherwise.
    static func resolve(_ typed: String, site: StatusSite.Context) async throws -> (
        station: String, infos: [String: StationInfo]
    ) {
        let infos = try await site.store.stationInfos()
        let stations = try await site.store.latestTimes(metric: metric).keys.map(\.station)
        let wanted = typed.lowercased()
        let station =
            stations.first { $0 == typed } ?? stations.first { $0.lowercased() == wanted }
            ?? stations.first { infos[$0]?.name?.lowercased() == wanted }
        guard let station else { throw SiteError.notFound("No city \"\(typed)\" has AQI readings.") }
        return (station, infos)
    }

    /// A city's chart: the one its page and the list show, and the one `chart.png` draws.
    static func chart(_ c: City) -> String {
        AQIChart(
            title: "Last \(c.samples.count) AQI samples at \(c.name) (\(c.scale.title)), each in its level's colour",
            samples: c.samples, scale: c.scale, zone: c.zone
        ).svg()
    }

    @SiteNodes
    static func section(_ c: City, request: Request, heading: Bool, now: Int64, chart: String) -> [Node<
        HTML.BodyContext
    >] {
        let level = c.latest.flatMap { c.scale.level(for: $0.value) }
        if heading {
            Node<HTML.BodyContext>.h2(SiteHTML.link("/air/" + SiteHTML.segment(c.station), c.name, request: request))
        }
        if let latest = c.latest {
            Node<HTML.BodyContext>.p(
                .class("aqi-now"),
                SiteHTML.badge(
                    "\(level?.emoji ?? "") AQI \(formatValue(latest.value.rounded())) · \(level?.name ?? "off the scale")",
                    background: level?.colour ?? "#EEEEEE", classes: "aqi-level"),
                .text(" "),
                .small(
                    .class("muted"),
                    SiteHTML.text(
                        "\(c.scale.title) · \(SiteTime.full(latest.time, zone: c.zone)) (\(SiteTime.ago(latest.time, now: now)))"
                    )))
            if let advice = level?.advice {
                Node<HTML.BodyContext>.p(.class("advice"), SiteHTML.text(advice))
            }
        }
        Node<HTML.BodyContext>.element(named: "figure", nodes: [.class("chart"), SiteHTML.svg(chart)])
    }

    static func list(request: Request, site: StatusSite.Context) async throws -> SitePage {
        let stations = try await site.store.latestTimes(metric: metric).keys.map(\.station)
        let infos = try await site.store.stationInfos()
        var cities: [City] = []
        for s in stations.sorted(by: { SiteHTML.name(infos[$0], id: $0) < SiteHTML.name(infos[$1], id: $1) }).prefix(
            100)
        {
            cities.append(try await city(s, infos: infos, site: site))
        }
        let now = site.now()
        let charts = cities.map(chart)
        return SitePage(title: "Air quality") {
            Node<HTML.BodyContext>.h1("Air quality")
            if cities.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), "No AQI readings yet: add an air-quality source.")
            }
            for (i, c) in cities.enumerated() {
                Node<HTML.BodyContext>.section(
                    .class("city"), .group(section(c, request: request, heading: true, now: now, chart: charts[i])))
            }
            Node<HTML.BodyContext>.group(legend(site.settings.aqiScale))
        }
    }

    static func page(request: Request, context: BasicRequestContext, site: StatusSite.Context) async throws -> SitePage
    {
        let typed = try SiteHTML.pathID(context, "city", what: "city")
        let (station, infos) = try await resolve(typed, site: site)
        let c = try await city(station, infos: infos, site: site)
        let now = site.now()
        let svg = chart(c)
        return SitePage(title: "\(c.name) — air quality") {
            Node<HTML.BodyContext>.h1(SiteHTML.text("Air quality in \(c.name)"))
            Node<HTML.BodyContext>.section(
                .class("city"), .group(section(c, request: request, heading: false, now: now, chart: svg)))
            Node<HTML.BodyContext>.group(legend(c.scale))
        }
    }

    /// The scale's levels: name, range, colour and advice.
    static func legend(_ scale: AQIScale) -> [Node<HTML.BodyContext>] {
        [
            .h2(SiteHTML.text(scale.title)),
            .table(
                .class("aqi-scale"),
                .tr(.th("Level"), .th("AQI"), .th("What it means")),
                .group(
                    scale.levels.map { l in
                        .tr(
                            .td(SiteHTML.badge("\(l.emoji) \(l.name)", background: l.colour, classes: "aqi-level")),
                            .td(SiteHTML.text("\(formatValue(l.at))–\(formatValue(l.upper))")),
                            .td(SiteHTML.text(l.advice)))
                    })),
        ]
    }
}
