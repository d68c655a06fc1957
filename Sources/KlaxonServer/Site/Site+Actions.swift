import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

extension StatusSite {
    /// Ack an alert, add or expire a silence: POST forms with a CSRF token, for a team member
    /// signed in with the team token.
    ///
    /// - `GET /alerts`: what is firing, with an ack form beside each (for the team).
    /// - `POST /alerts/ID/ack`: acks the firing alert whose current transition is `ID`, as
    ///   `web:NAME` (the chat's `ack ALERT_ID`).
    /// - `GET /silences`: the silences that have not ended, how many firing alerts each mutes now,
    ///   an expire button each, and a form that adds one (the chat's `silence RULE [STATION] DURATION`).
    ///   With `added=ID` (where adding one lands), it says what that silence mutes and warns of a
    ///   rule or station name nothing knows, with the known names near it.
    /// - `POST /silences`, `POST /silences/ID/expire`.
    ///
    /// Every POST is checked in this order: a bounded, strict form; a session; its CSRF token; a
    /// same-origin `Origin`/`Referer`; the team role. Success answers 303 back to the page.
    static func addActions(to router: RouterGroup<BasicRequestContext>, site: Context) {
        router.get("/alerts") { request, _ -> Response in
            let session = SiteSession.from(request, settings: site.settings, now: site.now())
            // One page (`?after=` pages on) and the counts: bounded work however many fire.
            let position: (after: FiringCursor?, start: Int)
            do {
                position = try SitePaging.position(request, as: FiringCursor.self)
            } catch let e as SiteError {
                return SiteReplies.problem(e.status, "Bad request", e.message, request: request, site: site)
            }
            let page = try await site.store.firingAlerts(limit: SitePaging.pageSize, after: position.after)
            let counts = try await site.store.firingAlertCounts()
            return ActionPages.alerts(
                page, counts: counts, start: position.start, session: session, request: request, site: site)
        }
        router.post("/alerts/:id/ack") { request, context -> Response in
            let session: SiteSession
            let form: SiteForm
            switch await checkedAction(request, site: site, fields: ["back"], teamOnly: true) {
            case .refused(let r): return r
            case .accepted(let s, let f): (session, form) = (s, f)
            }
            let back = SiteForm.localPath(form["back"]) ?? "/alerts"
            guard let id = context.parameters.get("id").flatMap({ ChatEndpoints.strictInteger($0, in: 1...Int64.max) })
            else {
                return SiteReplies.problem(
                    .notFound, "No such alert", "That is not an alert id.", request: request, site: site, back: back)
            }
            guard try await site.store.ack(transitionID: id, by: session.actor, at: site.now()) != nil else {
                return SiteReplies.problem(
                    .notFound, "No such alert",
                    "No firing alert has id \(id): it may have resolved or changed since the page was loaded.",
                    request: request, site: site, back: back)
            }
            return SiteReplies.seeOther(back)
        }
        router.get("/silences") { request, _ -> Response in
            guard let session = SiteSession.from(request, settings: site.settings, now: site.now()) else {
                return SiteReplies.signIn(request)
            }
            guard session.isTeam else {
                return SiteReplies.problem(
                    .forbidden, "For the team", "Silences are managed with the team token: sign in with it.",
                    request: request, site: site, back: "/signin")
            }
            let position: (after: SilenceCursor?, start: Int)
            do {
                position = try SitePaging.position(request, as: SilenceCursor.self)
            } catch let e as SiteError {
                return SiteReplies.problem(e.status, "Bad request", e.message, request: request, site: site)
            }
            let now = site.now()
            let page = try await site.store.silences(
                now: now, includeExpired: false, limit: SitePaging.pageSize, after: position.after)
            // What each silence mutes now, counted over one bounded read of the firing alerts.
            let addedID = SiteHTML.query(request, "added").flatMap { Self.isSilenceID($0) ? $0 : nil }
            let firing =
                page.silences.isEmpty && addedID == nil
                ? SilenceReach.Firing([], complete: true)
                : try await SilenceReach.firing(site.store, limit: Self.firingCounted)
            var added: (silence: Silence, reach: SilenceReach)? = nil
            if let id = addedID {
                var silence = page.silences.first { $0.id == id }
                if silence == nil { silence = try await site.store.activeSilences(now: now).first { $0.id == id } }
                if let silence {
                    added = (silence, try await Self.reach(silence, firing: firing, now: now, site: site))
                }
            }
            let counts = try await SilenceReach.mutedCounts(page.silences, firing: firing, now: now)
            return ActionPages.silences(
                page, counts: counts, added: added, start: position.start, session: session, request: request,
                site: site)
        }
        router.post("/silences") { request, _ -> Response in
            let session: SiteSession
            let form: SiteForm
            switch await checkedAction(
                request, site: site, fields: ["back", "rule", "station", "for", "comment"], teamOnly: true)
            {
            case .refused(let r): return r
            case .accepted(let s, let f): (session, form) = (s, f)
            }
            let back = SiteForm.localPath(form["back"]) ?? "/silences"
            let refuse = { (message: String) in
                SiteReplies.problem(
                    .badRequest, "The silence was not added", message, request: request, site: site, back: back)
            }
            let rule = (form["rule"] ?? "").trimmingCharacters(in: .whitespaces)
            guard !rule.isEmpty, rule.count <= 200 else {
                return refuse("Give the rule to silence (at most 200 characters).")
            }
            let station = (form["station"] ?? "").trimmingCharacters(in: .whitespaces)
            guard station.count <= 200 else { return refuse("The station is longer than 200 characters.") }
            let duration: Int64
            switch DurationText.read((form["for"] ?? "").trimmingCharacters(in: .whitespaces)) {
            case .success(let d) where d > 0: duration = d
            case .failure(.tooLong):
                return refuse("A silence lasts at most \(DurationText.format(DurationText.maximum)).")
            default:
                return refuse("For how long: a duration like 30m, 2h, 3d or 1h30m.")
            }
            let comment = (form["comment"] ?? "").trimmingCharacters(in: .whitespaces)
            let now = site.now()
            let silence: Silence
            do {
                silence = try Silence.forAlert(
                    rule: rule, station: station.isEmpty ? nil : station, duration: duration, now: now,
                    comment: comment.isEmpty ? "from the status site" : comment, createdBy: session.actor)
            } catch let e as SilenceError {
                return refuse("\(e.message.prefix(1).uppercased())\(e.message.dropFirst()).")
            }
            try await site.store.addSilence(silence, now: now)
            // Back to the list, which then says what the new silence mutes and names.
            return SiteReplies.seeOther(Self.addedLocation(back, id: silence.id))
        }
        router.post("/silences/:id/expire") { request, context -> Response in
            let form: SiteForm
            switch await checkedAction(request, site: site, fields: ["back"], teamOnly: true) {
            case .refused(let r): return r
            case .accepted(_, let f): form = f
            }
            let back = SiteForm.localPath(form["back"]) ?? "/silences"
            let id = context.parameters.get("id") ?? ""
            guard Self.isSilenceID(id) else {
                return SiteReplies.problem(
                    .notFound, "No such silence", "That is not a silence id.", request: request, site: site, back: back)
            }
            switch try await site.store.expireSilence(id: id, now: site.now()) {
            case .expired: return SiteReplies.seeOther(back)
            case .notFound:
                return SiteReplies.problem(
                    .notFound, "No such silence", "No active silence has id \(id): it may have ended already.",
                    request: request, site: site, back: back)
            case .ambiguous(let ids):
                return SiteReplies.problem(
                    .conflict, "Which silence?", "\(id) names \(ids.count) silences; give more of the id.",
                    request: request, site: site, back: back)
            }
        }
    }

    static let silenceIDBytes = Set("0123456789abcdefABCDEF-".utf8)

    /// Whether a path segment or query value can be a silence id: 1 to 64 hex digits and dashes.
    static func isSilenceID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { silenceIDBytes.contains($0) }
    }

    /// The most firing alerts the silences page reads to count what each silence mutes: one query
    /// however many fire (past it, a count is "at least").
    static let firingCounted = FiringQueries.maximumPage

    /// Where adding a silence goes back to: the silences page with `added=ID` (replacing an earlier
    /// one); any other page as it is.
    static func addedLocation(_ back: String, id: String) -> String {
        let parts = back.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.first == "/silences" else { return back }
        var query = parts.count > 1 ? parts[1].split(separator: "&").map(String.init) : []
        query.removeAll { $0 == "added" || $0.hasPrefix("added=") }
        query.append("added=" + SafeHTML.segment(id))
        return "/silences?" + query.joined(separator: "&")
    }

    /// What a silence reaches now: how many firing alerts it mutes, and the rule and station names
    /// it gives that the daemon's rules and the store do not know.
    static func reach(_ silence: Silence, firing: SilenceReach.Firing, now: Int64, site: Context) async throws
        -> SilenceReach
    {
        let stations =
            silence.namesStation
            ? try await SilenceReach.knownStations(site.store, firing: firing, listed: site.settings.ruleStations)
            : nil
        let rules = site.settings.ruleNames
        return try await offPool { SilenceReach(silence, firing: firing, rules: rules, stations: stations, now: now) }
    }

    /// The ack form shown beside a firing alert (on the overview), or nothing when the viewer
    /// cannot act. `transitionID` is the firing transition's id.
    static func ackForm(transitionID: Int64, request: Request, site: Context) -> Node<HTML.BodyContext> {
        guard let session = SiteSession.from(request, settings: site.settings, now: site.now()), session.isTeam else {
            return .empty
        }
        return .form(
            .class("inline ack"), .safeAction("/alerts/\(transitionID)/ack"), .method(.post),
            SiteReplies.hidden(session: session, request: request, site: site, back: SiteReplies.here(request)),
            .button(
                .type(.submit), .safeAttribute(named: "aria-label", value: "Ack alert \(transitionID)"), .text("Ack"))
        )
    }

    /// What a POST's checks decided.
    enum ActionCheck {
        case accepted(SiteSession, SiteForm)
        case refused(Response)
    }

    /// The checks every action runs before it looks at its fields, in order: the form (bounded,
    /// strict, only `fields` and `csrf`), a session, its CSRF token, a same-origin request, and (for
    /// `teamOnly`) the team role.
    static func checkedAction(_ request: Request, site: Context, fields: Set<String>, teamOnly: Bool) async
        -> ActionCheck
    {
        let form: SiteForm
        switch await SiteForm.read(request, allowed: fields.union(["csrf"])) {
        case .success(let f): form = f
        case .failure(let p): return .refused(SiteReplies.problem(p, request: request, site: site, back: nil))
        }
        let refuse = { (message: String) in
            ActionCheck.refused(
                SiteReplies.problem(.forbidden, "Refused", message, request: request, site: site, back: "/signin"))
        }
        guard let session = SiteSession.from(request, settings: site.settings, now: site.now()) else {
            return refuse("You are not signed in (or your session ended): sign in and try again.")
        }
        guard session.acceptsCSRF(form["csrf"], settings: site.settings) else {
            return refuse("The form's CSRF token does not match your session: reload the page and try again.")
        }
        guard SiteSession.sameOrigin(request) else {
            return refuse("The form did not come from a page of this site.")
        }
        guard !teamOnly || session.isTeam else {
            return refuse("Acks and silences are for the team: sign in with the team token.")
        }
        return .accepted(session, form)
    }
}
