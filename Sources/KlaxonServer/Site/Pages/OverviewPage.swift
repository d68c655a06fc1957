import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/`: firing alerts with their ack and silence, each source's health, the newest readings and
/// the recent transitions.
enum OverviewPage {
    static let newestShown = 20
    static let transitionsShown = 25

    static func page(request: Request, site: StatusSite.Context) async throws -> SitePage {
        let store = site.store
        let now = site.now()
        let zone = site.settings.timeZone
        // One page of firing alerts (most severe, then newest first) and their counts: bounded
        // work however many fire (`?after=` pages on).
        let position = try SitePaging.position(request, as: FiringCursor.self)
        let page = try await store.firingAlerts(limit: SitePaging.pageSize, after: position.after)
        let firing = page.alerts
        let counts = try await store.firingAlertCounts()
        let (silenced, unchecked) = try await SitePaging.silencing(
            firing, silences: try await store.activeSilences(now: now), now: now)
        let sources = try await store.sourceStates()
        let newest = try await store.newestReadings(limit: newestShown)
        let transitions = try await store.recentTransitions(limit: transitionsShown)
        let infos = try await store.stationInfos()
        func name(_ station: String) -> String { SiteHTML.name(infos[station], id: station) }

        return SitePage(title: "Klaxon — overview") {
            Node<HTML.BodyContext>.h1("Overview")
            Node<HTML.BodyContext>.h2(
                .text("Firing alerts "), .span(.class("count"), SafeHTML.text("(\(SitePaging.grouped(counts.total)))")))
            if counts.total > 0 {
                Node<HTML.BodyContext>.p(.safeClass("severities"), SafeHTML.text(SitePaging.severities(counts)))
            }
            if firing.isEmpty {
                Node<HTML.BodyContext>.p(.class("quiet"), "Nothing is firing.")
            } else {
                Node<HTML.BodyContext>.table(
                    .class("alerts"),
                    .tr(.th("Severity"), .th("Alert"), .th("Level"), .th("Since"), .th("Ack"), .th("Silence")),
                    .group(
                        firing.map { a in
                            let t = a.transition
                            let ack = a.ack
                            let silence = silenced[a.episode]
                            return .tr(
                                .safeClass("alert severity-\(t.severity.rawValue)\(ack == nil ? "" : " acked")"),
                                .td(
                                    SiteHTML.badge(
                                        t.severity.rawValue, background: SiteHTML.severityColour(t.severity),
                                        classes: "severity severity-\(t.severity.rawValue)")),
                                .td(
                                    .a(.safeHref("/alerts/\(a.episode)"), .strong(SiteHTML.text(t.rule))),
                                    .text(" "), .small(.class("muted"), SiteHTML.text("#\(a.episode)")), .text(" · "),
                                    stationLink(t.station, name(t.station), metric: t.metric, request: request),
                                    .text(" · "), SiteHTML.text(t.metric), .br(),
                                    .small(SiteHTML.text(t.summary))),
                                .td(
                                    SiteHTML.text(t.level ?? "–"),
                                    .if(
                                        t.value != nil,
                                        .group(.br(), .small(SiteHTML.text(SiteHTML.value(t.value ?? 0, t.unit)))))),
                                .td(
                                    SiteHTML.text(SiteTime.full(a.startedAt, zone: zone)), .br(),
                                    .small(.class("muted"), SiteHTML.text(SiteTime.ago(a.startedAt, now: now))),
                                    .if(
                                        t.level != nil && t.at != a.startedAt,
                                        .group(
                                            .br(),
                                            .small(
                                                SiteHTML.text(
                                                    "\(t.level ?? "") since \(SiteTime.short(t.at, zone: zone))"))))),
                                .td(
                                    .class("ack"),
                                    ack.map { ack -> Node<HTML.BodyContext> in
                                        .group(
                                            .text("acked by "), .strong(SiteHTML.text(ack.by)), .br(),
                                            .small(.class("muted"), SiteHTML.text(SiteTime.ago(ack.at, now: now))))
                                    } ?? .span(.class("muted"), .text("not acked")),
                                    StatusSite.ackForm(transitionID: a.episode, request: request, site: site)),
                                .td(
                                    .class("silence"),
                                    silence.map { s -> Node<HTML.BodyContext> in
                                        .group(
                                            .text("silenced until "), SiteHTML.text(SiteTime.short(s.ends, zone: zone)),
                                            .br(), .small(SiteHTML.text("\(s.comment) (\(s.createdBy))")))
                                    }
                                        ?? (unchecked.contains(a.episode)
                                            ? .span(
                                                .class("muted unchecked"),
                                                .text(
                                                    "not checked: the silences cost more to match than a page may spend"
                                                ))
                                            : .text("–"))))
                        })
                )
            }
            if counts.total > firing.count || position.after != nil {
                SitePaging.nav(
                    path: "/", shown: firing.count, start: position.start, total: counts.total, what: "firing",
                    next: page.next?.description, request: request)
            }

            Node<HTML.BodyContext>.h2("Sources")
            if sources.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), "No source has run yet.")
            } else {
                Node<HTML.BodyContext>.table(
                    .class("sources"),
                    .tr(.th("Source"), .th("Last success"), .th("Failing streak"), .th("Last error")),
                    .group(
                        sources.map { s in
                            let failing = s.failures > 0
                            return .tr(
                                .safeClass("source \(failing ? "source-failing" : "source-ok")"),
                                .td(SiteHTML.text(s.source)),
                                .td(SiteHTML.text(s.lastSuccess.map { SiteTime.ago($0, now: now) } ?? "never")),
                                .td(
                                    failing
                                        ? SiteHTML.badge(
                                            "\(s.failures) failed", background: "#B00020", classes: "failing")
                                        : .text("0")),
                                .td(.class("error"), SiteHTML.text(s.lastError ?? "–")))
                        })
                )
            }

            Node<HTML.BodyContext>.h2("Newest readings")
            if newest.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), "No readings stored yet.")
            } else {
                Node<HTML.BodyContext>.table(
                    .class("readings"),
                    .tr(.th("Station"), .th("Metric"), .th("Value"), .th("At")),
                    .group(
                        newest.map { r in
                            .tr(
                                .class("reading"),
                                .td(stationLink(r.station, name(r.station), metric: r.metric, request: request)),
                                .td(SiteHTML.text(r.metric)),
                                .td(SiteHTML.text(SiteHTML.value(r.value, r.unit))),
                                .td(SiteHTML.text(SiteTime.ago(r.time, now: now))))
                        })
                )
            }

            Node<HTML.BodyContext>.h2("Recent transitions")
            if transitions.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), "No alert has changed state yet.")
            } else {
                Node<HTML.BodyContext>.table(
                    .class("transitions"),
                    .tr(.th("At"), .th("State"), .th("Alert"), .th("Summary")),
                    .group(
                        transitions.map { t in
                            .tr(
                                .safeClass("transition state-\(t.state)"),
                                .td(SiteHTML.text(SiteTime.short(t.at, zone: zone))),
                                .td(SiteHTML.text(t.state + (t.level.map { " (\($0))" } ?? ""))),
                                .td(
                                    .a(
                                        .safeHref("/alerts/\(t.episodeID)"),
                                        SiteHTML.text("#\(t.episodeID) \(t.rule)")),
                                    SiteHTML.text(" · \(name(t.station)) · \(t.metric)")),
                                .td(SiteHTML.text(t.summary)))
                        })
                )
            }
        }
    }

    /// A station's page: a gauge's for water metrics, an air page for AQI, else the station page.
    static func stationLink(_ station: String, _ label: String, metric: String, request: Request)
        -> Node<HTML.BodyContext>
    {
        guard let path = SubjectPage.path(station: station, metric: metric) else { return SiteHTML.text(label) }
        return SiteHTML.link(path, label, request: request)
    }
}
