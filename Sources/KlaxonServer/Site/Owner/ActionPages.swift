import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/alerts` and `/silences`.
enum ActionPages {
    static func alerts(
        _ firing: [(key: AlertKey, transitionID: Int64, transition: Transition)], acks: [AlertKey: Ack],
        session: SiteSession?, request: Request, site: StatusSite.Context
    ) -> Response {
        let page = SitePage(title: "Alerts — Klaxon") {
            Node<HTML.BodyContext>.h1(.text("Firing alerts"))
            SiteReplies.sessionBar(session, request: request, site: site)
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
                                    .attribute(named: "data-alert", value: String(a.transitionID)),
                                    .td(.text("#\(a.transitionID)")),
                                    .td(
                                        .if(
                                            acks[a.key] != nil,
                                            .span(
                                                .class("acked"),
                                                .text(
                                                    "acked by \(acks[a.key]?.by ?? "") at \(SiteReplies.time(acks[a.key]?.at ?? 0, site: site))"
                                                )),
                                            else: StatusSite.ackForm(
                                                transitionID: a.transitionID, request: request, site: site)
                                        )),
                                    .td(.text(a.transition.severity.rawValue)),
                                    .td(.text(a.key.rule)), .td(.text(a.key.station)),
                                    .td(.text(SiteReplies.time(a.transition.at, site: site))),
                                    .td(.text(a.transition.summary)))
                            })
                    ))
            }
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }

    static func silences(_ silences: [Silence], session: SiteSession, request: Request, site: StatusSite.Context)
        -> Response
    {
        let back = SiteReplies.here(request)
        let page = SitePage(title: "Silences — Klaxon", refreshes: false) {
            Node<HTML.BodyContext>.h1(.text("Silences"))
            SiteReplies.sessionBar(session, request: request, site: site)
            if silences.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), .text("No silences."))
            } else {
                Node<HTML.BodyContext>.div(
                    .class("scroll"),
                    .table(
                        .id("silences"),
                        .thead(
                            .tr(
                                .th(.text("Matchers")), .th(.text("Until")), .th(.text("Expire")), .th(.text("Id")),
                                .th(.text("From")), .th(.text("By")), .th(.text("Comment")))),
                        .tbody(
                            .forEach(silences) { s in
                                .tr(
                                    .attribute(named: "data-silence", value: s.id),
                                    .td(.text(s.matchers.map(\.description).joined(separator: " "))),
                                    .td(.text(SiteReplies.time(s.ends, site: site))),
                                    .td(
                                        .form(
                                            .class("inline expire"), .action("/silences/\(s.id)/expire"),
                                            .method(.post),
                                            SiteReplies.hidden(
                                                session: session, request: request, site: site, back: back),
                                            .button(
                                                .type(.submit),
                                                .attribute(
                                                    named: "aria-label", value: "Expire silence \(s.id.prefix(8))"),
                                                .text("Expire")))),
                                    .td(.code(.text(String(s.id.prefix(8))))),
                                    .td(.text(SiteReplies.time(s.starts, site: site))),
                                    .td(.text(s.createdBy)), .td(.text(s.comment)))
                            })
                    ))
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
