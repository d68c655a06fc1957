import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/alerts` and `/silences`.
enum ActionPages {
    /// One page of firing alerts (`SitePaging`), with the counts and a link to the next page.
    static func alerts(
        _ firingPage: FiringPage, counts: FiringCounts, start: Int, session: SiteSession?, request: Request,
        site: StatusSite.Context
    ) -> Response {
        let firing = firingPage.alerts
        let page = SitePage(title: "Alerts — Klaxon") {
            Node<HTML.BodyContext>.h1(.text("Firing alerts"))
            SiteReplies.sessionBar(session, request: request, site: site)
            if counts.total > 0 {
                Node<HTML.BodyContext>.p(.safeClass("severities"), SafeHTML.text(SitePaging.severities(counts)))
            }
            if firing.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), .text("Nothing is firing."))
            } else {
                Node<HTML.BodyContext>.div(
                    .class("scroll"),
                    .table(
                        .id("alerts"),
                        .thead(
                            .tr(
                                .th(.text("Alert")), .th(.text("Ack")), .th(.text("Severity")), .th(.text("Rule")),
                                .th(.text("Station")), .th(.text("Since")), .th(.text("Summary")))),
                        .tbody(
                            .forEach(firing) { a in
                                .tr(
                                    .safeAttribute(named: "data-alert", value: String(a.episode)),
                                    .td(.a(.safeHref("/alerts/\(a.episode)"), SafeHTML.text("#\(a.episode)"))),
                                    .td(
                                        .if(
                                            a.ack != nil,
                                            .span(
                                                .class("acked"),
                                                SafeHTML.text(
                                                    "acked by \(a.ack?.by ?? "") at \(SiteReplies.time(a.ack?.at ?? 0, site: site))"
                                                )),
                                            else: StatusSite.ackForm(
                                                transitionID: a.episode, request: request, site: site)
                                        )),
                                    .td(SafeHTML.text(a.transition.severity.rawValue)),
                                    .td(SafeHTML.text(a.key.rule)), .td(SafeHTML.text(a.key.station)),
                                    .td(
                                        SafeHTML.text(SiteReplies.time(a.startedAt, site: site)),
                                        .if(
                                            a.transition.level != nil && a.transition.at != a.startedAt,
                                            .group(
                                                .br(),
                                                .small(
                                                    SafeHTML.text(
                                                        "\(a.transition.level ?? "") since \(SiteReplies.time(a.transition.at, site: site))"
                                                    ))))),
                                    .td(SafeHTML.text(a.transition.summary)))
                            })
                    ))
            }
            if counts.total > 0 || start > 1 {
                SitePaging.nav(
                    path: "/alerts", shown: firing.count, start: start, total: counts.total, what: "firing",
                    next: firingPage.next?.description, request: request)
            }
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }

    /// One page of the silences not ended (`SitePaging`), with how many firing alerts each mutes
    /// now, and the form that adds one. `added`: the silence just added, and what it reaches.
    static func silences(
        _ silencePage: SilencePage, counts: [String: SilenceReach.Count],
        added: (silence: Silence, reach: SilenceReach)?,
        start: Int, session: SiteSession, request: Request, site: StatusSite.Context
    ) -> Response {
        let silences = silencePage.silences
        let back = SiteReplies.here(request)
        // Counted off the pool within one request's budget (`SilenceReach.mutedCounts`).
        func mutes(_ s: Silence) -> String {
            let c = counts[s.id] ?? SilenceReach.Count(muted: 0, complete: true)
            return c.complete ? String(c.muted) : "at least \(c.muted)"
        }
        let page = SitePage(title: "Silences — Klaxon", refreshes: false) {
            Node<HTML.BodyContext>.h1(.text("Silences"))
            SiteReplies.sessionBar(session, request: request, site: site)
            if let added {
                Node<HTML.BodyContext>.div(
                    .id("silence-added"), .class("notice"), .attribute(named: "role", value: "status"),
                    .p(
                        SafeHTML.text(
                            "Silence \(added.silence.id.prefix(8)) added: it \(added.reach.mutedText).")),
                    .forEach(added.reach.unknown) { unknown in
                        .p(.class("warning"), SafeHTML.text("Warning: \(unknown)."))
                    }
                )
            }
            if silences.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), .text("No silences."))
            } else {
                Node<HTML.BodyContext>.div(
                    .class("scroll"),
                    .table(
                        .id("silences"),
                        .thead(
                            .tr(
                                .th(.text("Matchers")), .th(.class("num"), .text("Mutes now")), .th(.text("Until")),
                                .th(.text("Expire")), .th(.text("Id")),
                                .th(.text("From")), .th(.text("By")), .th(.text("Comment")))),
                        .tbody(
                            .forEach(silences) { s in
                                .tr(
                                    .safeAttribute(named: "data-silence", value: s.id),
                                    .td(SafeHTML.text(s.matchers.map(\.description).joined(separator: " "))),
                                    .td(.class("num mutes"), SafeHTML.text(mutes(s))),
                                    .td(SafeHTML.text(SiteReplies.time(s.ends, site: site))),
                                    .td(
                                        .form(
                                            .class("inline expire"),
                                            .safeAction("/silences/" + SafeHTML.segment(s.id) + "/expire"),
                                            .method(.post),
                                            SiteReplies.hidden(
                                                session: session, request: request, site: site, back: back),
                                            .button(
                                                .type(.submit),
                                                .safeAttribute(
                                                    named: "aria-label", value: "Expire silence \(s.id.prefix(8))"),
                                                .text("Expire")))),
                                    .td(.code(SafeHTML.text(String(s.id.prefix(8))))),
                                    .td(SafeHTML.text(SiteReplies.time(s.starts, site: site))),
                                    .td(SafeHTML.text(s.createdBy)), .td(SafeHTML.text(s.comment)))
                            })
                    ))
            }
            if silencePage.total > silences.count || start > 1 {
                SitePaging.nav(
                    path: "/silences", shown: silences.count, start: start, total: silencePage.total,
                    what: "silences", next: silencePage.next?.description, request: request)
            }
            Node<HTML.BodyContext>.h2(.text("Add a silence"))
            Node<HTML.BodyContext>.p(
                .class("muted"),
                .text(
                    "Mutes a rule's notifications, at one station or all, for a while: alerts keep their state and are only not sent."
                ))
            Node<HTML.BodyContext>.form(
                .id("add-silence"), .class("stack"), .action("/silences"), .method(.post),
                SiteReplies.hidden(session: session, request: request, site: site, back: back),
                .label(.for("rule"), .text("Rule")),
                .input(
                    .type(.text), .id("rule"), .name("rule"), .required(true),
                    .attribute(named: "maxlength", value: "200"), .placeholder("flood-stage")),
                .label(.for("station"), .text("Station (optional: every station when empty)")),
                .input(
                    .type(.text), .id("station"), .name("station"), .attribute(named: "maxlength", value: "200"),
                    .placeholder("14211720")),
                .label(.for("for"), .text("For (like 30m, 2h, 3d)")),
                .input(
                    .type(.text), .id("for"), .name("for"), .required(true),
                    .attribute(named: "maxlength", value: "20"),
                    .placeholder("2h")),
                .label(.for("comment"), .text("Why (optional)")),
                .input(.type(.text), .id("comment"), .name("comment"), .attribute(named: "maxlength", value: "500")),
                .button(.type(.submit), .text("Add silence"))
            )
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }
}
