import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/quakes`: stored events newest first, over the feed's span (`span=hour|day|week|month`) or a
/// date range (`from`, `to`), at or above `minmagnitude`; with an epicentre plot.
enum QuakesPage {
    static let spans: [(key: String, seconds: Int64)] = [
        ("hour", 3600), ("day", 86_400), ("week", 7 * 86_400), ("month", 30 * 86_400),
    ]
    /// At most this many events are listed (the plot shows the same ones).
    static let listLimit = 500

    struct Filter: Equatable {
        var from: Int64
        var to: Int64
        var span: String?
        var minMagnitude: Double?
    }

    static func filter(_ request: Request, now: Int64, zone: TimeZone) throws -> Filter {
        let span = SiteHTML.query(request, "span")
        let fromText = SiteHTML.query(request, "from")
        let toText = SiteHTML.query(request, "to")
        var minMagnitude: Double? = nil
        if let m = SiteHTML.query(request, "minmagnitude") {
            guard let v = Double(m), v.isFinite, (-2...10).contains(v) else {
                throw SiteError.badRequest("minmagnitude=\(m.prefix(20)) is not a magnitude between -2 and 10")
            }
            minMagnitude = v
        }
        if span != nil, fromText != nil || toText != nil {
            throw SiteError.badRequest("give span or from/to, not both")
        }
        if let fromText {
            let from = try SiteHTML.time(fromText, parameter: "from", zone: zone)
            var to = now
            if let toText {
                to = try SiteHTML.time(toText, parameter: "to", zone: zone)
                if toText.utf8.count == 10 { to += 86_400 }  // the whole of that day
            }
            guard from < to else { throw SiteError.badRequest("from must be before to (or now)") }
            return Filter(from: from, to: to, span: nil, minMagnitude: minMagnitude)
        }
        if toText != nil { throw SiteError.badRequest("to needs from") }
        let key = span ?? "week"
        guard let s = spans.first(where: { $0.key == key }) else {
            throw SiteError.badRequest("span=\(key.prefix(20)) is not one of hour, day, week, month")
        }
        return Filter(from: now - s.seconds, to: now, span: s.key, minMagnitude: minMagnitude)
    }

    struct Row {
        var key: String
        var event: QuakeEvent
        var revisions: Int
        /// The nearest watched place and its distance.
        var nearest: (name: String, km: Double)?
    }

    static func page(request: Request, site: StatusSite.Context) async throws -> SitePage {
        let zone = site.settings.timeZone
        let now = site.now()
        let f = try filter(request, now: now, zone: zone)
        let places = site.settings.places
        // The newest `listLimit` of the span, their count and their revision counts: bounded work
        // however far back `from` reaches.
        let stored = try await site.store.quakes(
            from: f.from * 1000, to: f.to * 1000, minMagnitude: f.minMagnitude, limit: listLimit)
        let revisions = stored.revisions
        let total = stored.total
        var rows: [Row] = []
        for q in stored.quakes {
            let e = q.event
            let nearest = places.map { p -> (name: String, km: Double) in
                (p.name, Geo.distanceKm(lat1: p.latitude, lon1: p.longitude, lat2: e.latitude, lon2: e.longitude))
            }.min { $0.km < $1.km }
            rows.append(Row(key: q.key, event: e, revisions: revisions[q.key, default: 1], nearest: nearest))
        }
        rows.sort { $0.event.time > $1.event.time }
        let refreshOff = SitePage.refreshOff(request)
        let map = QuakeMap(
            title:
                "Epicentres of \(rows.count) earthquakes, \(SiteTime.short(f.from, zone: zone)) to \(SiteTime.short(f.to, zone: zone)), sized by magnitude",
            quakes: rows.map { r in
                QuakeMap.Mark(
                    latitude: r.event.latitude, longitude: r.event.longitude, magnitude: r.event.magnitude,
                    label:
                        "\(magnitude(r.event)) \(r.event.place ?? "(no place)"), \(SiteTime.short(r.event.timeSeconds, zone: zone))",
                    colour: r.event.alert == nil ? "#C0392B" : SiteHTML.pagerColour(r.event.alert))
            }, places: places.map { ($0.name, $0.latitude, $0.longitude) }
        ).svg()
        var what =
            f.span.map { "the last \($0)" }
            ?? "\(SiteTime.full(f.from, zone: zone)) to \(SiteTime.full(f.to, zone: zone))"
        if let m = f.minMagnitude { what += ", magnitude \(formatValue(m)) and above" }
        func spanLink(_ key: String) -> String {
            var q = "/quakes?span=\(key)"
            if let m = f.minMagnitude { q += "&minmagnitude=\(formatValue(m))" }
            return SitePage.link(q, refreshOff: refreshOff)
        }

        return SitePage(title: "Earthquakes") {
            Node<HTML.BodyContext>.h1("Earthquakes")
            Node<HTML.BodyContext>.nav(
                .class("ranges"), .attribute(named: "aria-label", value: "Span"),
                .group(
                    spans.map { s in
                        .a(
                            .safeHref(spanLink(s.key)), .safeClass(f.span == s.key ? "range current" : "range"),
                            .safeAttribute(named: "aria-current", value: f.span == s.key ? "page" : nil),
                            SiteHTML.text(s.key))
                    }),
                .form(
                    .class("since"), .action("/quakes"), .method(.get),
                    .label(.text("from "), .input(.type(.date), .name("from"))),
                    .label(.text(" to "), .input(.type(.date), .name("to"))),
                    .label(
                        .text(" min. magnitude "),
                        .input(
                            .type(.number), .name("minmagnitude"), .attribute(named: "step", value: "0.1"),
                            .attribute(named: "min", value: "-2"), .attribute(named: "max", value: "10"),
                            .safeValue(f.minMagnitude.map(formatValue) ?? ""))),
                    .if(refreshOff, .input(.type(.hidden), .name("refresh"), .value("off"))),
                    .button(.type(.submit), .text("Show")))
            )
            Node<HTML.BodyContext>.p(
                .class("summary"),
                SiteHTML.text(
                    "\(total) earthquake\(total == 1 ? "" : "s") in \(what)"
                        + (total > rows.count ? "; the newest \(rows.count) are listed." : ".")))
            Node<HTML.BodyContext>.element(named: "figure", nodes: [.class("chart"), SiteHTML.svg(map)])
            if !rows.isEmpty {
                Node<HTML.BodyContext>.div(
                    .class("table-scroll"),
                    .table(
                        .class("quakes"),
                        .tr(
                            .th("Time"), .th("Magnitude"), .th("Place"), .th("Depth"),
                            .th(places.isEmpty ? "Distance" : "Nearest watched place"), .th("PAGER"), .th("Versions"),
                            .th("Event")),
                        .group(rows.map { row(request: request, $0, zone: zone, now: now) })))
            }
        }
    }

    static func magnitude(_ e: QuakeEvent) -> String {
        (e.magnitude.map { "M\(formatValue(($0 * 10).rounded() / 10))" } ?? "M?") + (e.magType.map { " \($0)" } ?? "")
    }

    static func row(request: Request, _ r: Row, zone: TimeZone, now: Int64) -> Node<HTML.TableContext> {
        let e = r.event
        let url = e.url.flatMap { u -> String? in
            let lower = u.lowercased()
            return lower.hasPrefix("https://") || lower.hasPrefix("http://") ? u : nil
        }
        var status = e.status
        if e.isDeleted { status = "deleted" }
        if e.tsunami { status += ", tsunami flag" }
        return .tr(
            .safeClass("quake\(e.isDeleted ? " deleted" : "")"),
            .td(
                SiteHTML.text(SiteTime.full(e.timeSeconds, zone: zone)), .br(),
                .small(.class("muted"), SiteHTML.text(SiteTime.ago(e.timeSeconds, now: now)))),
            .td(.class("magnitude"), .strong(SiteHTML.text(magnitude(e)))),
            .td(SiteHTML.text(e.place ?? "(no place)"), .br(), .small(.class("muted"), SiteHTML.text(status))),
            .td(SiteHTML.text(e.depthKm.map { "\(formatValue($0.rounded())) km" } ?? "–")),
            .td(SiteHTML.text(r.nearest.map { "\(formatValue($0.km.rounded())) km from \($0.name)" } ?? "–")),
            .td(
                e.alert.map {
                    SiteHTML.badge($0, background: SiteHTML.pagerColour($0), classes: "pager pager-\($0.lowercased())")
                } ?? .text("–")),
            .td(SiteHTML.text(String(r.revisions))),
            .td(
                url.map { u -> Node<HTML.BodyContext> in
                    .a(.safeHref(u), .attribute(named: "rel", value: "noreferrer"), SiteHTML.text(e.id))
                }
                    ?? SiteHTML.text(e.id)))
    }
}
