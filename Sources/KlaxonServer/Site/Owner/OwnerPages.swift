import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// The sign-in page and the trips pages.
enum OwnerPages {
    static func signIn(
        request: Request, site: StatusSite.Context, session: SiteSession?, next: String?, error: String?,
        status: HTTPResponse.Status = .ok
    ) -> Response {
        let page = SitePage(title: "Sign in — Klaxon", status: status, refreshes: false) {
            Node<HTML.BodyContext>.h1(.text("Sign in"))
            if let session {
                Node<HTML.BodyContext>.p(SafeHTML.text("You are signed in as \(session.name)."))
                SiteReplies.sessionBar(session, request: request, site: site)
            }
            if let error {
                Node<HTML.BodyContext>.p(
                    .class("problem"), .attribute(named: "role", value: "alert"), SafeHTML.text(error))
            }
            Node<HTML.BodyContext>.p(
                .text(
                    "Sign in with your API token (api.owners) to see your trips, or with the team token (api.token) to see every trip, ack alerts and manage silences. The session lasts 12 hours."
                ))
            Node<HTML.BodyContext>.form(
                .id("signin"), .class("stack"), .action("/signin"), .method(.post),
                .label(.for("token"), .text("API token")),
                .input(
                    .type(.password), .id("token"), .name("token"), .required(true), .autocomplete(false),
                    .attribute(named: "maxlength", value: "1024")),
                .label(.for("name"), .text("Your name, for acks and silences (team token only; optional)")),
                .input(
                    .type(.text), .id("name"), .name("name"), .attribute(named: "maxlength", value: "40"),
                    .autocomplete(false)),
                .if(next != nil, .input(.type(.hidden), .name("next"), .safeValue(next ?? ""))),
                .button(.type(.submit), .text("Sign in"))
            )
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }

    /// `/trips`: the trips the session may see.
    static func trips(_ trips: [Trip], session: SiteSession, request: Request, site: StatusSite.Context) -> Response {
        let off = SitePage.refreshOff(request)
        let page = SitePage(title: "Trips — Klaxon") {
            Node<HTML.BodyContext>.h1(SafeHTML.text(session.isTeam ? "Trips" : "Your trips"))
            SiteReplies.sessionBar(session, request: request, site: site)
            if trips.isEmpty {
                Node<HTML.BodyContext>.p(
                    .class("muted"), .text("No trips yet. Add one with "), .code(.text("klaxon trip add FILE.yaml")),
                    .text("."))
            } else {
                Node<HTML.BodyContext>.div(
                    .class("scroll"),
                    .table(
                        .id("trips"),
                        .thead(
                            .tr(
                                .th(.text("Trip")), .if(session.isTeam, .th(.text("Owner"))), .th(.text("Stops")),
                                .th(.text("Days")), .th(.text("Purpose")))),
                        .tbody(
                            .forEach(trips) { t in
                                let days = Packer.days(of: t)
                                let span = [days.first?.date, days.last?.date].compactMap { $0 }
                                return .tr(
                                    .safeAttribute(named: "data-trip", value: t.name),
                                    .td(
                                        .a(
                                            .safeHref(SitePage.link(link(t, session: session), refreshOff: off)),
                                            SafeHTML.text(t.name))),
                                    .if(session.isTeam, .td(SafeHTML.text(t.owner))),
                                    .td(SafeHTML.text(t.stops.map(\.place).joined(separator: " → "))),
                                    .td(
                                        SafeHTML.text(
                                            span.count == 2 && span[0] != span[1]
                                                ? "\(span[0]) – \(span[1])" : span.first ?? "—")),
                                    .td(SafeHTML.text(t.purpose.rawValue)))
                            })
                    ))
            }
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }

    /// A trip's page link (the team's carries the owner).
    static func link(_ t: Trip, session: SiteSession) -> String {
        let path = "/trips/" + SiteReplies.segment(t.name)
        return session.isTeam ? path + "?owner=" + SiteReplies.segment(t.owner) : path
    }

    /// For the team: several owners have a trip by this name.
    static func choose(_ trips: [Trip], session: SiteSession, request: Request, site: StatusSite.Context) -> Response {
        let off = SitePage.refreshOff(request)
        let page = SitePage(title: "Which trip? — Klaxon", refreshes: false) {
            Node<HTML.BodyContext>.h1(SafeHTML.text("Several owners have a trip called \(trips[0].name)"))
            Node<HTML.BodyContext>.ul(
                .forEach(trips) { t in
                    .li(
                        .a(
                            .safeHref(SitePage.link(link(t, session: session), refreshOff: off)),
                            SafeHTML.text("\(t.name) (\(t.owner))")))
                })
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }

    /// `/trips/NAME`: stops, the weather per day (climatology marked), the packing table by
    /// category, and the list's history.
    static func trip(
        _ trip: Trip, list: PackingList, weather: [DayWeather], history: [TransitionRecord], session: SiteSession,
        request: Request, site: StatusSite.Context
    ) -> Response {
        let units = trip.preferences.units
        let days = TripView.days(trip, weather: weather)
        let page = SitePage(title: "\(trip.name) — Trips — Klaxon") {
            Node<HTML.BodyContext>.h1(SafeHTML.text(trip.name))
            SiteReplies.sessionBar(session, request: request, site: site)
            Node<HTML.BodyContext>.p(
                .class("muted"),
                SafeHTML.text(
                    "\(trip.owner) · \(trip.purpose.rawValue)"
                        + (trip.activities.isEmpty ? "" : " · " + trip.activities.joined(separator: ", "))))
            Node<HTML.BodyContext>.ul(
                .id("stops"),
                .forEach(trip.stops) { s in
                    .li(SafeHTML.text("\(s.place): arrive \(s.arrive), \(s.nights) night\(s.nights == 1 ? "" : "s")"))
                })
            Node<HTML.BodyContext>.h2(.text("Weather"))
            Node<HTML.BodyContext>.div(
                .class("scroll"),
                .table(
                    .id("weather"),
                    .thead(.tr(.th(.text("Day")), .th(.text("Place")), .th(.text("Weather")), .th(.text("Source")))),
                    .tbody(
                        .forEach(days) { day in
                            guard let w = day.weather else {
                                return .tr(
                                    .class("none"), .td(SafeHTML.text(day.date)), .td(SafeHTML.text(day.place)),
                                    .td(.class("muted"), .text("no forecast yet")), .td(.text("—")))
                            }
                            return .tr(
                                .safeClass(w.climatology ? "climatology" : "forecast"),
                                .td(SafeHTML.text(day.date)), .td(SafeHTML.text(day.place)),
                                .td(SafeHTML.text(TripView.conditions(w, units: units).joined(separator: ", "))),
                                .td(
                                    w.climatology
                                        ? .element(named: "mark", nodes: [.text("climatology")])
                                        : .text("forecast")))
                        })
                ))
            if days.contains(where: { $0.weather?.climatology == true }) {
                Node<HTML.BodyContext>.p(
                    .class("muted"),
                    .text(
                        "Climatology: days past the forecast's reach use the usual weather for the date, not a forecast."
                    ))
            }
            Node<HTML.BodyContext>.h2(.text("Packing list"))
            Node<HTML.BodyContext>.div(
                .class("scroll"),
                .table(
                    .id("packing"),
                    .thead(.tr(.th(.text("Item")), .th(.class("num"), .text("Quantity")), .th(.text("Reason")))),
                    .forEach(list.byCategory) { group in
                        .tbody(
                            .safeAttribute(named: "data-category", value: group.category),
                            .tr(
                                .class("category"),
                                .th(
                                    .attribute(named: "colspan", value: "3"),
                                    .attribute(named: "scope", value: "rowgroup"),
                                    SafeHTML.text(group.category))),
                            .forEach(group.items) { item in
                                .tr(
                                    .safeAttribute(named: "data-item", value: item.item),
                                    .td(SafeHTML.text(item.item)),
                                    .td(.class("num"), SafeHTML.text(String(item.quantity))),
                                    .td(SafeHTML.text(item.reasons.joined(separator: "; "))))
                            })
                    }
                ))
            Node<HTML.BodyContext>.h2(.text("Changes"))
            if history.isEmpty {
                Node<HTML.BodyContext>.p(
                    .class("muted"),
                    .text(
                        "No announcements yet: a trip-packing rule announces the list once the trip has weather, then each change."
                    ))
            } else {
                Node<HTML.BodyContext>.div(
                    .class("scroll"),
                    .table(
                        .id("history"),
                        .thead(.tr(.th(.text("When")), .th(.text("What")), .th(.text("Because")))),
                        .tbody(
                            .forEach(history) { h in
                                .tr(
                                    .td(SafeHTML.text(SiteReplies.time(h.at, site: site))),
                                    .td(SafeHTML.text(h.summary)),
                                    .td(SafeHTML.text(h.state == "changed" ? h.explanation : "")))
                            })
                    ))
            }
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }
}
