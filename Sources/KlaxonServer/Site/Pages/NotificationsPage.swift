import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// `/notifications`: the notification history, newest first — what was sent to each receiver, or not,
/// when, and why (`NotificationHistory`), one page at a time (`SitePaging`); `?alert=ID` narrows it to
/// an alert's episode, `?receiver=NAME` to a receiver. An alert's page shows its newest ones
/// (`table`). Every value from the store is escaped (`SafeHTML`): receiver names, errors and
/// messages are data.
enum NotificationsPage {
    /// The most notifications an alert's page lists (the rest are one link away).
    static let alertSection = 20

    static func page(request: Request, site: StatusSite.Context) async throws -> SitePage {
        var filter = NotificationFilter()
        var query: [String] = []
        if let text = SiteHTML.query(request, "alert") {
            guard let id = ChatEndpoints.strictInteger(text, in: 1...Int64.max) else {
                throw SiteError.badRequest("alert=\(text.prefix(20)) is not an alert id")
            }
            filter.episode = id
            query.append("alert=\(id)")
        }
        if let receiver = SiteHTML.query(request, "receiver") {
            guard receiver.utf8.count <= NotificationFilter.maxReceiver else {
                throw SiteError.badRequest("receiver= is longer than \(NotificationFilter.maxReceiver) bytes")
            }
            filter.receiver = receiver
            query.append("receiver=\(SafeHTML.segment(receiver))")
        }
        let position = try SitePaging.position(request, as: NotificationCursor.self)
        let page = try await site.store.notifications(filter, limit: SitePaging.pageSize, after: position.after)
        let path = "/notifications" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        var narrowed: [String] = []
        if let id = filter.episode { narrowed.append("alert #\(id)") }
        if let receiver = filter.receiver { narrowed.append("receiver \(receiver)") }
        return SitePage(title: "Notifications — Klaxon") {
            Node<HTML.BodyContext>.h1(.text("Notifications"))
            Node<HTML.BodyContext>.p(
                .class("muted"),
                SafeHTML.text(
                    "What was sent to each receiver, or not, and why; newest first"
                        + (narrowed.isEmpty ? "." : ", of \(narrowed.joined(separator: " and ")).")),
                .if(
                    !narrowed.isEmpty,
                    .group(
                        .text(" "),
                        .a(
                            .safeHref(SitePage.link("/notifications", refreshOff: SitePage.refreshOff(request))),
                            .text("All notifications")))))
            if page.entries.isEmpty {
                Node<HTML.BodyContext>.p(.class("muted"), .text("No notifications."))
            } else {
                table(page.entries, site: site, showAlert: filter.episode == nil)
            }
            if page.total > 0 || position.start > 1 {
                SitePaging.nav(
                    path: path, shown: page.entries.count, start: position.start, total: page.total,
                    what: "notifications", next: page.next?.description, request: request)
            }
        }
    }

    /// The notifications as a table: when, to whom, the alert (unless the page is the alert's), the
    /// change it told, what became of it and why.
    static func table(_ entries: [NotificationEntry], site: StatusSite.Context, showAlert: Bool)
        -> Node<HTML.BodyContext>
    {
        .div(
            .class("scroll"),
            .table(
                .id("notifications"),
                .thead(
                    .tr(
                        .th(.text("Queued")), .th(.text("Receiver")),
                        .if(showAlert, .th(.text("Alert"))), .th(.text("Told")), .th(.text("State")),
                        .th(.text("Why")), .th(.text("Sent")))),
                .tbody(
                    .forEach(entries) { e in
                        .tr(
                            .safeAttribute(named: "data-notification", value: e.row.id),
                            .safeAttribute(named: "data-state", value: e.state),
                            .td(SafeHTML.text(SiteReplies.time(e.row.createdAt / 1000, site: site))),
                            .td(
                                .a(
                                    .safeHref("/notifications?receiver=" + SafeHTML.segment(e.row.receiver)),
                                    SafeHTML.text(e.row.receiver))),
                            .if(showAlert, .td(alert(e))),
                            .td(SafeHTML.text(told(e))),
                            .td(.span(.safeClass("notification \(e.state)"), SafeHTML.text(e.state))),
                            .td(SafeHTML.text(e.reason ?? "")),
                            .td(
                                SafeHTML.text(e.row.sentAt.map { SiteReplies.time($0 / 1000, site: site) } ?? "–"),
                                .if(
                                    e.row.attempts > 1,
                                    .group(.br(), .small(.class("muted"), SafeHTML.text("\(e.row.attempts) attempts"))))
                            ))
                    })))
    }

    /// `#12 flood · 01646500`, linking to the alert's page.
    static func alert(_ e: NotificationEntry) -> Node<HTML.BodyContext> {
        guard let t = e.transition else { return SafeHTML.text(e.row.alert) }
        return .group(
            .a(.safeHref("/alerts/\(t.episodeID)"), SafeHTML.text("#\(t.episodeID)")),
            SafeHTML.text(" \(t.rule) · \(t.station)"))
    }

    /// What it told: `firing action`, `changed minor → moderate`, `resolved`, `reminder: firing minor`.
    static func told(_ e: NotificationEntry) -> String {
        guard let t = e.transition else { return "" }
        var s = t.state
        switch (t.fromLevel, t.level) {
        case (let f?, let l?) where t.state == "changed": s += " \(f) → \(l)"
        case (_, let l?): s += " \(l)"
        default: break
        }
        switch e.row.purpose {
        case "repeat": return "reminder: " + s
        case "system": return "Klaxon: " + s
        default: return s
        }
    }
}
