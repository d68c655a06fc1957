import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import Plot

/// A page that cannot be built as asked: a 400 (bad input) or 404 (unknown id) page with a message.
struct SiteError: Error {
    var status: HTTPResponse.Status
    var message: String

    static func badRequest(_ message: String) -> SiteError { SiteError(status: .badRequest, message: message) }
    static func notFound(_ message: String) -> SiteError { SiteError(status: .notFound, message: message) }
}

/// Small pieces the read pages share. Everything that comes from the store or the request goes
/// through `SafeHTML` (here `text`, or the `safe…` attributes): Plot escapes `<`, `>` and `&` in
/// text but leaves entities alone, and writes attribute values as given.
enum SiteHTML {
    /// Text, fully escaped (an entity in a station's name is shown as typed).
    static func text<C>(_ s: String) -> Node<C> { SafeHTML.text(s) }

    /// An attribute value, escaped.
    static func attr(_ s: String) -> String { SafeHTML.escape(s) }

    /// A link within the site (keeping `refresh=off`), its path and label escaped.
    static func link(_ path: String, _ label: String, request: Request) -> Node<HTML.BodyContext> {
        .a(.safeHref(SitePage.link(path, refreshOff: SitePage.refreshOff(request))), text(label))
    }

    /// A path segment for an id: percent-encoded beyond unreserved characters.
    static func segment(_ id: String) -> String { SafeHTML.segment(id) }

    /// A chart written by the chart code (escaped there).
    static func svg(_ svg: String) -> Node<HTML.BodyContext> { SafeHTML.chart(svg) }

    /// `<span class="badge CLASS">label</span>` on `background`, its text black or white, whichever
    /// meets 4.5:1.
    static func badge(_ label: String, background: String, classes: String) -> Node<HTML.BodyContext> {
        .span(
            .safeClass("badge " + classes),
            .safeAttribute(
                named: "style", value: "background:\(background);color:\(SiteColour.text(on: background))"),
            text(label))
    }

    /// A value with its unit, rounded for reading (`12.35 ft`).
    static func value(_ v: Double, _ unit: String?) -> String {
        let digits: Double = abs(v) >= 100 ? 1 : 100
        let s = formatValue((v * digits).rounded() / digits)
        return unit.map { $0.isEmpty ? s : "\(s) \($0)" } ?? s
    }

    /// An id from a path segment, percent-decoded once: any id ingest takes (at most 128 bytes of
    /// UTF-8, no control, line-separator or bidirectional formatting character; spaces, `/` and
    /// letters of any script are fine, as links encode them); otherwise a 400.
    static func pathID(_ context: BasicRequestContext, _ name: String, what: String) throws -> String {
        let raw = context.parameters.get(name) ?? ""
        guard let id = raw.removingPercentEncoding, !id.isEmpty else {
            throw SiteError.badRequest("That is not a \(what) id: it is empty or wrongly percent-encoded.")
        }
        if let problem = ReadingsParser.textProblem(
            "the \(what) id", id, limit: ReadingsParser.Limits.stationBytes)
        {
            throw SiteError.badRequest("That is not a \(what) id: \(problem).")
        }
        return id
    }

    /// A query parameter, or nil when absent or empty.
    static func query(_ request: Request, _ name: String) -> String? {
        guard let v = request.uri.queryParameters.get(name), !v.isEmpty else { return nil }
        return v
    }

    /// A time a person typed: a date (`2025-03-01`, local midnight in `zone`) or a timestamp
    /// (`2025-03-01T06:00:00Z`); otherwise a 400 naming the parameter.
    static func time(_ text: String, parameter: String, zone: TimeZone) throws -> Int64 {
        let t = text.trimmingCharacters(in: .whitespaces)
        let parts = t.split(separator: "-")
        if t.utf8.count == 10, parts.count == 3, let y = Int(parts[0]), let m = Int(parts[1]), let d = Int(parts[2]),
            (1...9999).contains(y), (1...12).contains(m), (1...31).contains(d)
        {
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = zone
            if let date = calendar.date(from: DateComponents(year: y, month: m, day: d)),
                calendar.component(.day, from: date) == d
            {
                return Int64(date.timeIntervalSince1970)
            }
        }
        if let s = Timestamp.parse(t) { return s }
        throw SiteError.badRequest(
            "\(parameter)=\(t.prefix(40)) is not a date: use YYYY-MM-DD (local) or an ISO 8601 time such as 2025-03-01T06:00:00Z"
        )
    }

    /// A station's zone, else the site's.
    static func zone(_ info: StationInfo?, _ site: StatusSite.Context) -> TimeZone {
        info?.timeZone.flatMap(TimeZone.init(identifier:)) ?? site.settings.timeZone
    }

    /// `Willamette River at Portland (14211720)`, or the id alone.
    static func name(_ info: StationInfo?, id: String) -> String {
        guard let n = info?.name, !n.isEmpty else { return id }
        return n
    }

    /// Severity colours (background), each with text meeting 4.5:1.
    static func severityColour(_ s: Severity) -> String {
        switch s {
        case .critical: "#B00020"
        case .warning: "#FFB000"
        case .info: "#DCE9F7"
        }
    }

    /// NWS flood category colours: action yellow, minor orange, moderate red, major purple.
    static func floodColour(_ category: String?) -> String {
        switch category {
        case "action": "#FFFF00"
        case "minor": "#FF9900"
        case "moderate": "#FF0000"
        case "major": "#CC33FF"
        case nil: "#DFF0D8"
        default: "#EEEEEE"
        }
    }

    /// USGS PAGER alert colours.
    static func pagerColour(_ alert: String?) -> String {
        switch alert?.lowercased() {
        case "green": "#00B050"
        case "yellow": "#FFFF00"
        case "orange": "#FF9900"
        case "red": "#FF0000"
        default: "#9AA5B1"
        }
    }
}

extension StatusSite.Context {
    /// Builds a page and answers with it; a `SiteError` becomes its 400 or 404 page.
    func respond(_ request: Request, _ build: () async throws -> SitePage) async throws -> Response {
        let page: SitePage
        do {
            page = try await build()
        } catch let e as SiteError {
            page = errorPage(e, request: request)
        }
        return page.response(for: request, refreshSeconds: settings.refreshSeconds)
    }

    /// The page of a `SiteError`: its status, a title for it and the message.
    func errorPage(_ e: SiteError, request: Request) -> SitePage {
        let title: String
        switch e.status {
        case .notFound: title = "Not found"
        case .badRequest: title = "Bad request"
        case .serviceUnavailable: title = "Busy"
        default: title = "Failed"
        }
        return SitePage(title: title, status: e.status, refreshes: false) {
            Node<HTML.BodyContext>.h1(SafeHTML.text(title))
            Node<HTML.BodyContext>.p(.class("error"), SiteHTML.text(e.message))
            Node<HTML.BodyContext>.p(SiteHTML.link("/", "Back to the overview", request: request))
        }
    }
}
