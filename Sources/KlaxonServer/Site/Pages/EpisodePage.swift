import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/alerts/ID`: one alert episode, the page messages and the webhook's `generatorURL` link to.
/// Its id for its whole life, when it began, its level now and since when; then every transition it
/// logged (recorded) and, for each, what became of its notifications (sent, folded into a later
/// one, held as too old, skipped): what a team received, next to what happened.
enum EpisodePage {
    static func page(request: Request, context: BasicRequestContext, site: StatusSite.Context) async throws -> SitePage
    {
        let typed = try SiteHTML.pathID(context, "id", what: "alert")
        guard let id = Int64(typed), id > 0, let history = try await site.store.episode(id),
            let first = history.transitions.first, let last = history.transitions.last
        else {
            throw SiteError.notFound("No alert has the id \"\(typed)\".")
        }
        let info = try await site.store.stationInfos()[first.station]
        let zone = SiteHTML.zone(info, site)
        let name = SiteHTML.name(info, id: first.station)
        let now = site.now()
        let open = last.state != TransitionState.resolved.rawValue
        let started = last.startedAt ?? first.at
        var status = open ? "firing since \(SiteTime.full(started, zone: zone))" : "resolved"
        if open, let level = last.level, last.at != started {
            status += "; \(level) since \(SiteTime.full(last.at, zone: zone))"
        }
        if !open {
            status +=
                " at \(SiteTime.full(last.at, zone: zone)), after firing from \(SiteTime.full(started, zone: zone))"
        }
        let byTransition = Dictionary(grouping: history.deliveries, by: \.transitionID)

        return SitePage(title: "#\(history.id) \(first.rule) — alert") {
            Node<HTML.BodyContext>.h1(SiteHTML.text("#\(history.id) \(first.rule) · \(name)"))
            Node<HTML.BodyContext>.p(
                .safeClass("alert-status \(open ? "firing" : "resolved")"), SiteHTML.text(status), .br(),
                .small(
                    .class("muted"),
                    SiteHTML.text(
                        "station \(first.station) · \(first.metric) · severity \(last.severity) · `ack \(history.id)` in chat"
                    )), .br(),
                .a(.safeHref("/stations/\(first.station)"), .text("the station's readings")))
            Node<HTML.BodyContext>.h2("What happened, and what was sent")
            Node<HTML.BodyContext>.div(
                .class("scroll"),
                .table(
                    .id("episode"),
                    .thead(
                        .tr(
                            .th(.text("Data time")), .th(.text("Change")), .th(.text("Level")), .th(.text("Value")),
                            .th(.text("Message")), .th(.text("Notifications")))),
                    .tbody(
                        .forEach(history.transitions) { t in
                            .tr(
                                .safeAttribute(named: "data-transition", value: String(t.id ?? 0)),
                                .td(
                                    SiteHTML.text(SiteTime.full(t.at, zone: zone)), .br(),
                                    .small(.class("muted"), SiteHTML.text(SiteTime.ago(t.at, now: now)))),
                                .td(SiteHTML.text(t.state)),
                                .td(SiteHTML.text(change(t))),
                                .td(SiteHTML.text(t.value.map { SiteHTML.value($0, t.unit) } ?? "–")),
                                .td(SiteHTML.text(t.message)),
                                .td(
                                    .class("deliveries"),
                                    .forEach(byTransition[t.id ?? -1] ?? []) { row in
                                        .group(
                                            .span(
                                                .safeClass("delivery \(row.state.rawValue)"),
                                                SiteHTML.text("\(row.receiver): \(describe(row))")), .br())
                                    }))
                        })))
            if history.transitions.count >= EpisodeHistory.limit {
                Node<HTML.BodyContext>.p(
                    .class("muted"), SiteHTML.text("The first \(EpisodeHistory.limit) transitions are shown."))
            }
        }
    }

    /// `action → minor`, `minor`, `was minor`.
    static func change(_ t: TransitionRecord) -> String {
        switch (t.fromLevel, t.level) {
        case (let f?, let l?): "\(f) → \(l)"
        case (nil, let l?): l
        case (let f?, nil): "was \(f)"
        default: "–"
        }
    }

    /// What became of a notification, in words.
    static func describe(_ row: OutboxRecord) -> String {
        switch row.state {
        case .sent: "sent"
        case .superseded: "folded into a later message"
        case .held: "held: data older than notify_max_age"
        case .skipped: row.lastError ?? "not sent"
        case .pending, .sending: "queued"
        case .muted: "muted by a silence"
        case .dropped: "dropped (quiet hours)"
        case .dead: "given up: \(row.lastError ?? "")"
        }
    }
}
