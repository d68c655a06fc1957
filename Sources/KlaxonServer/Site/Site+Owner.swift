import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

extension StatusSite {
    /// Sign-in and out with an owner's API token (a signed, HttpOnly, SameSite=Strict cookie),
    /// `/trips` and `/trips/NAME`.
    ///
    /// An owner sees their own trips; the team token signs a team member in who sees every owner's
    /// (`/trips/NAME?owner=OWNER`). Another owner's trip is 404, exactly as a trip that does not
    /// exist. See `SiteSession` for the cookie and the CSRF token.
    static func addOwnerPages(to router: RouterGroup<BasicRequestContext>, site: Context) {
        router.get("/signin") { request, _ -> Response in
            let session = SiteSession.from(request, settings: site.settings, now: site.now())
            let next = SiteForm.localPath(request.uri.queryParameters.get("next"))
            return OwnerPages.signIn(request: request, site: site, session: session, next: next, error: nil)
        }
        router.post("/signin") { request, _ -> Response in
            let form: SiteForm
            switch await SiteForm.read(request, allowed: ["token", "name", "next"]) {
            case .success(let f): form = f
            case .failure(let p): return SiteReplies.problem(p, request: request, site: site, back: "/signin")
            }
            // No session yet, so no CSRF token: a sign-in must at least come from this site's page.
            guard SiteSession.sameOrigin(request) else {
                return SiteReplies.problem(
                    .forbidden, "Refused", "The sign-in did not come from this site's sign-in page.", request: request,
                    site: site, back: "/signin")
            }
            let next = SiteForm.localPath(form["next"])
            let name: String?
            switch SiteSession.checkName(form["name"]) {
            case .none: name = nil
            case .valid(let n): name = n
            case .invalid:
                return OwnerPages.signIn(
                    request: request, site: site, session: nil, next: next,
                    error: "The name must be at most 40 letters, digits, spaces or . - _ @.", status: .badRequest)
            }
            let now = site.now()
            guard
                let session = SiteSession.signIn(
                    token: form["token"] ?? "", name: name, settings: site.settings, now: now)
            else {
                return OwnerPages.signIn(
                    request: request, site: site, session: nil, next: next,
                    error: "That token is neither the team token nor an owner's.", status: .unauthorized)
            }
            return SiteReplies.seeOther(
                next ?? (session.isTeam ? "/alerts" : "/trips"),
                setCookie: session.setCookie(settings: site.settings, now: now))
        }
        router.post("/signout") { request, _ -> Response in
            switch await StatusSite.checkedAction(request, site: site, fields: [], teamOnly: false) {
            case .refused(let response): return response
            case .accepted(let session, _):
                site.settings.revocations.revoke(nonce: session.nonce, expires: session.expires, now: site.now())
                return SiteReplies.seeOther("/signin", setCookie: SiteSession.clearCookie)
            }
        }
        router.get("/trips") { request, _ -> Response in
            guard let session = SiteSession.from(request, settings: site.settings, now: site.now()) else {
                return SiteReplies.signIn(request)
            }
            let trips = try await site.store.trips(owner: session.isTeam ? nil : session.name)
            return OwnerPages.trips(trips, session: session, request: request, site: site)
        }
        router.get("/trips/:name") { request, context -> Response in
            guard let session = SiteSession.from(request, settings: site.settings, now: site.now()) else {
                return SiteReplies.signIn(request)
            }
            let notFound = {
                SiteReplies.problem(
                    .notFound, "Trip not found", "You have no trip by that name.", request: request, site: site,
                    back: "/trips")
            }
            guard let raw = context.parameters.get("name"), let name = raw.removingPercentEncoding, !name.isEmpty,
                name.utf8.count <= 256
            else { return notFound() }
            let asked: String? = request.uri.queryParameters.get("owner")
            var owner = session.name
            if let asked, asked != session.name {
                // Another owner's trip is the team's to see; for an owner it does not exist.
                guard session.isTeam else { return notFound() }
                owner = asked
            } else if session.isTeam, asked == nil {
                let matches = try await site.store.trips(owner: nil).filter { $0.name == name }
                if matches.count > 1 {
                    return OwnerPages.choose(matches, session: session, request: request, site: site)
                }
                guard let only = matches.first else { return notFound() }
                owner = only.owner
            }
            guard session.maySee(owner: owner), let trip = try await site.store.trip(owner: owner, name: name) else {
                return notFound()
            }
            let weather = try await site.store.weather(for: trip)
            let list = Packer.pack(trip, weather: weather, air: try await site.store.airDays(for: trip))
            let history = try await site.store.tripHistory(owner: trip.owner, name: trip.name, limit: 50)
            return OwnerPages.trip(
                trip, list: list, weather: weather, history: history, session: session, request: request, site: site)
        }
    }
}
