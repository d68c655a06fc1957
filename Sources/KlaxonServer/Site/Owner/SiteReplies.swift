import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Plot

/// What the sign-in, trips and action pages share: redirects, error pages, the session bar and the
/// hidden fields of a form.
enum SiteReplies {
    /// A 303 to a local path (Post/Redirect/Get), with extra headers such as `Set-Cookie`.
    static func seeOther(_ path: String, setCookie: String? = nil) -> Response {
        var h = HTTPFields()
        h[.location] = path
        h[.cacheControl] = "no-store"
        if let setCookie { h[.setCookie] = setCookie }
        return Response(status: .seeOther, headers: h)
    }

    /// The sign-in page, coming back to this request's page afterwards.
    static func signIn(_ request: Request) -> Response {
        seeOther("/signin?next=" + SafeHTML.segment(here(request)))
    }

    /// This request's path and query, to come back to.
    static func here(_ request: Request) -> String {
        let path = request.uri.path
        guard let q = request.uri.query, !q.isEmpty else { return path }
        return path + "?" + q
    }

    /// A page saying what went wrong, with a link back.
    static func problem(
        _ status: HTTPResponse.Status, _ title: String, _ message: String, request: Request, site: StatusSite.Context,
        back: String? = nil
    ) -> Response {
        let off = SitePage.refreshOff(request)
        let page = SitePage(title: title, status: status, refreshes: false) {
            Node<HTML.BodyContext>.h1(SafeHTML.text(title))
            Node<HTML.BodyContext>.p(
                .class("problem"), .attribute(named: "role", value: "alert"), SafeHTML.text(message))
            if let back {
                Node<HTML.BodyContext>.p(.a(.safeHref(SitePage.link(back, refreshOff: off)), .text("Back")))
            }
        }
        return page.response(for: request, refreshSeconds: site.settings.refreshSeconds)
    }

    static func problem(_ p: SiteForm.Problem, request: Request, site: StatusSite.Context, back: String?) -> Response {
        problem(p.status, "The form was refused", p.message, request: request, site: site, back: back)
    }

    /// Who is signed in, links to the signed-in pages and a sign-out button; or a sign-in link.
    static func sessionBar(_ session: SiteSession?, request: Request, site: StatusSite.Context) -> Node<
        HTML.BodyContext
    > {
        let off = SitePage.refreshOff(request)
        guard let session else {
            return .p(
                .class("session"),
                .a(.safeHref(SitePage.link("/signin", refreshOff: off)), .text("Sign in")),
                .text(" to see your trips, or with the team token to ack alerts and manage silences."))
        }
        return .div(
            .class("session"),
            .span(
                .text("Signed in as "), .strong(SafeHTML.text(session.name)),
                SafeHTML.text(session.isTeam ? " (team)" : " (owner)")),
            .a(.safeHref(SitePage.link("/trips", refreshOff: off)), .text("Trips")),
            .if(session.isTeam, .a(.safeHref(SitePage.link("/alerts", refreshOff: off)), .text("Alerts"))),
            .if(session.isTeam, .a(.safeHref(SitePage.link("/silences", refreshOff: off)), .text("Silences"))),
            .form(
                .class("inline"), .action("/signout"), .method(.post),
                hidden(session: session, request: request, site: site, back: nil),
                .button(.type(.submit), .text("Sign out"))
            )
        )
    }

    /// A form's hidden fields: the session's CSRF token and the page to come back to.
    static func hidden(session: SiteSession, request: Request, site: StatusSite.Context, back: String?)
        -> Node<HTML.FormContext>
    {
        .group(
            .input(.type(.hidden), .name("csrf"), .safeValue(session.csrfToken(settings: site.settings))),
            .if(back != nil, .input(.type(.hidden), .name("back"), .safeValue(back ?? "")))
        )
    }

    /// A time for people, in the site's zone: `2026-12-01 14:05 MST`.
    static func time(_ t: Int64, site: StatusSite.Context) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = site.settings.timeZone
        f.dateFormat = "yyyy-MM-dd HH:mm zzz"
        return f.string(from: Date(timeIntervalSince1970: TimeInterval(t)))
    }

    /// A path segment, percent-encoded (ASCII unreserved characters only).
    static func segment(_ s: String) -> String { SafeHTML.segment(s) }
}
