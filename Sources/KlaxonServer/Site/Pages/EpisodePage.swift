import Foundation
import Hummingbird
import KlaxonCore
import KlaxonRegex
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
        let now_ = last.transition
        let place = now_.place ?? (name == first.station ? nil : name) ?? first.station
        let heading = now_.headline.map { "\(place): \($0)" } ?? "#\(history.id) \(first.rule) · \(name)"
        // Who acted on it: the ack that holds (until the resolve) and the silences that mute it now.
        let key = AlertKey(rule: first.rule, station: first.station, metric: first.metric)
        let ack = open ? try await site.store.acks()[key].flatMap { $0.transitionID == history.id ? $0 : nil } : nil
        let active = open ? try await site.store.activeSilences(now: now) : []
        let (silences, silencesChecked) = try await offPool {
            var budget = MatchBudget(steps: MatchBudget.requestSteps)
            return Silence.muting(active, now_.matchLabels, at: now, budget: &budget)
        }
        let subject = SubjectPage.path(station: first.station, metric: first.metric)
        let chart = try await chart(history, info: info, name: name, zone: zone, now: now, site: site)
        let sent = try await site.store.notifications(
            NotificationFilter(episode: history.id), limit: NotificationsPage.alertSection, after: nil)

        return SitePage(title: "#\(history.id) \(place) — alert") {
            Node<HTML.BodyContext>.h1(SiteHTML.text(heading))
            Node<HTML.BodyContext>.p(
                .safeClass("alert-status \(open ? "firing" : "resolved")"), SiteHTML.text(status), .br(),
                .small(
                    .class("muted"),
                    SiteHTML.text(
                        "alert #\(history.id) · rule \(first.rule) · station \(first.station) · \(first.metric) · severity \(last.severity)"
                            + (open ? " · `ack \(history.id)` in chat" : "")
                    )),
                .unwrap(subject) { path in .group(.br(), .a(.safeHref(path), .text("the readings and chart"))) },
                .unwrap(now_.annotations["runbook_url"]) { url in
                    .group(.text(" · "), .a(.safeHref(url), .text("runbook")))
                })
            Node<HTML.BodyContext>.p(SiteHTML.text("Why: \(now_.explanation)"))
            if !now_.details.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), .small(SiteHTML.text("Engine: \(now_.details)")))
            }
            if let ack {
                Node<HTML.BodyContext>.p(
                    .class("acked"),
                    SiteHTML.text(
                        "Acked by \(ack.by) at \(SiteTime.full(ack.at, zone: zone)): no reminders or escalation until it resolves."
                    ))
            }
            if !silences.isEmpty {
                Node<HTML.BodyContext>.p(
                    .class("silenced"),
                    SiteHTML.text(
                        "Muted by "
                            + silences.prefix(5).map { s in
                                "silence \(s.id.prefix(8)) by \(s.createdBy) until \(SiteTime.full(s.ends, zone: zone))"
                                    + (s.comment.isEmpty ? "" : " (\(s.comment))")
                            }.joined(separator: "; ")))
            }
            if !silencesChecked {
                Node<HTML.BodyContext>.p(
                    .class("muted unchecked"),
                    .text("Some silences were not checked: they cost more to match than a page may spend."))
            }
            if let chart {
                Node<HTML.BodyContext>.div(.class("chart-wrap"), SiteHTML.svg(chart))
            }
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
                                                SiteHTML.text("\(row.receiver): \(describe(row, zone: zone))")), .br())
                                    }))
                        })))
            if history.transitions.count >= EpisodeHistory.limit {
                Node<HTML.BodyContext>.p(
                    .class("muted"), SiteHTML.text("The first \(EpisodeHistory.limit) transitions are shown."))
            }
            // Its notifications, newest first, with what became of each and why.
            Node<HTML.BodyContext>.h2(.id("notifications-of-alert"), .text("Notifications"))
            if sent.entries.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), .text("No notifications."))
            } else {
                NotificationsPage.table(sent.entries, site: site, showAlert: false)
            }
            if sent.total > sent.entries.count {
                Node<HTML.BodyContext>.p(
                    .a(
                        .safeHref("/notifications?alert=\(history.id)"),
                        SiteHTML.text("All \(sent.total) notifications of this alert")))
            }
        }
    }

    /// The most transitions marked on the chart (a flapping episode's are in the table below).
    static let maxMarks = 40

    /// The alert's series from six hours before the episode began to its end (or now), at most 30
    /// days, with the flood categories as bands for a gauge and each transition marked; nil for
    /// alerts with no series to draw (quakes, trips, a stale alert's missing data).
    static func chart(
        _ history: EpisodeHistory, info: StationInfo?, name: String, zone: TimeZone, now: Int64,
        site: StatusSite.Context
    ) async throws -> String? {
        guard let first = history.transitions.first, let last = history.transitions.last else { return nil }
        let page = SubjectPage.of(metric: first.metric)
        guard page == .gauge || page == .air || page == .station else { return nil }
        let open = last.state != TransitionState.resolved.rawValue
        let end = min(now, (open ? now : last.at + 3 * 3600))
        let start = max((first.startedAt ?? first.at) - 6 * 3600, end - 30 * 86_400)
        guard end > start else { return nil }
        let points = try await site.store.values(station: first.station, metric: first.metric, from: start, to: end)
        guard !points.isEmpty else { return nil }
        var bands: [LineChart.Band] = []
        if page == .gauge, let flood = try await site.store.stationsAndFloods().floods[first.station] {
            bands = GaugePages.bands(flood.ladder(forMetric: first.metric) ?? [], unit: last.unit ?? flood.stageUnit)
        }
        let marks = history.transitions.suffix(maxMarks).map { t -> (time: Int64, label: String, colour: String) in
            let words: String
            switch t.state {
            case "firing": words = "fired" + (t.level.map { " · \($0)" } ?? "")
            case "resolved": words = "resolved"
            default: words = t.level.map { "→ \($0)" } ?? t.state
            }
            return (t.at, words, t.state == "resolved" ? "#1a7f37" : "#b42318")
        }
        let chart = LineChart(
            title:
                "\(MetricWords.name(first.metric)) at \(name) during alert #\(history.id), \(SiteTime.short(start, zone: zone)) to \(SiteTime.short(end, zone: zone)), its changes marked",
            unit: last.unit, points: points, from: start, to: end, zone: zone, bands: bands, marks: marks)
        return try await offPool { chart.svg() }
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

    /// What became of a notification, in words (a time in `zone`).
    static func describe(_ row: OutboxRecord, zone: TimeZone) -> String {
        if let until = row.quietUntil { return "held by quiet hours until \(SiteTime.full(until, zone: zone))" }
        return switch row.state {
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
