import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import NIOCore
import Plot

/// One page of the status site: a title and a body, rendered into the site's shell (navigation,
/// inline CSS) as a self-contained HTML document.
struct SitePage {
    var title: String
    var body: Node<HTML.BodyContext>
    /// Whether the page refreshes itself (unless the request says `refresh=off`).
    var refreshes: Bool = true
    var status: HTTPResponse.Status = .ok
    /// Extra response headers (e.g. `Set-Cookie`).
    var headers: HTTPFields = HTTPFields()

    init(
        title: String, status: HTTPResponse.Status = .ok, refreshes: Bool = true,
        @SiteNodes body: () -> [Node<HTML.BodyContext>]
    ) {
        self.title = title
        self.status = status
        self.refreshes = refreshes
        self.body = .group(body())
    }

    /// The document, as text.
    func html(refreshOff: Bool) -> String {
        let document = HTML(
            .lang(.english),
            .head(
                .meta(.charset(.utf8)),
                .meta(.name("viewport"), .content("width=device-width, initial-scale=1")),
                // Escaped in full (Plot's text escaping leaves entities such as `&amp;` as written).
                .element(named: "title", nodes: [SafeHTML.text(title)]),
                SafeHTML.style(SiteStyle.css)
            ),
            .body(
                .header(
                    .class("site"),
                    .nav(
                        .attribute(named: "aria-label", value: "Sections"),
                        .group(
                            SiteStyle.sections.map { section in
                                .a(
                                    .safeHref(SitePage.link(section.path, refreshOff: refreshOff)),
                                    SafeHTML.text(section.label))
                            })
                    )
                ),
                .main(body)
            )
        )
        return document.render()
    }

    /// The response: HTML, the refresh header unless turned off, and headers that keep the page
    /// self-contained (no scripts, nothing from another host, no framing).
    func response(for request: Request, refreshSeconds: Int) -> Response {
        let off = Self.refreshOff(request)
        var h = headers
        h[.contentType] = "text/html; charset=utf-8"
        h[.contentSecurityPolicy] =
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
        h[.xContentTypeOptions] = "nosniff"
        h[.referrerPolicy] = "same-origin"
        h[.cacheControl] = "no-store"
        if refreshes && !off && refreshSeconds > 0 { h[.refresh] = "\(refreshSeconds)" }
        return Response(
            status: status, headers: h, body: .init(byteBuffer: ByteBuffer(string: html(refreshOff: off))))
    }

    /// `?refresh=off` (or `0`, `no`, `false`) turns the refresh off, and links keep it off.
    static func refreshOff(_ request: Request) -> Bool {
        guard let v = request.uri.queryParameters.get("refresh") else { return false }
        return ["off", "0", "no", "false"].contains(v.lowercased())
    }

    /// A site link that keeps `refresh=off` when the current page has it.
    static func link(_ path: String, refreshOff: Bool) -> String {
        guard refreshOff else { return path }
        return path + (path.contains("?") ? "&" : "?") + "refresh=off"
    }
}

@resultBuilder
enum SiteNodes {
    static func buildExpression(_ node: Node<HTML.BodyContext>) -> [Node<HTML.BodyContext>] { [node] }
    static func buildExpression(_ nodes: [Node<HTML.BodyContext>]) -> [Node<HTML.BodyContext>] { nodes }
    static func buildBlock(_ parts: [Node<HTML.BodyContext>]...) -> [Node<HTML.BodyContext>] { parts.flatMap { $0 } }
    static func buildOptional(_ part: [Node<HTML.BodyContext>]?) -> [Node<HTML.BodyContext>] { part ?? [] }
    static func buildEither(first: [Node<HTML.BodyContext>]) -> [Node<HTML.BodyContext>] { first }
    static func buildEither(second: [Node<HTML.BodyContext>]) -> [Node<HTML.BodyContext>] { second }
    static func buildArray(_ parts: [[Node<HTML.BodyContext>]]) -> [Node<HTML.BodyContext>] { parts.flatMap { $0 } }
}

extension HTTPField.Name {
    static let refresh = Self("Refresh")!
    static let xContentTypeOptions = Self("X-Content-Type-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}
