import Foundation
import Hummingbird
import KlaxonCore
import KlaxonRegex
import KlaxonStore
import Plot

/// Paging for the site's long lists (firing alerts, silences): a page shows at most `pageSize`
/// rows, says how many there are in all, and links to the next page with `?after=CURSOR` (keyset
/// paging, so following the links visits each row once). `start` only numbers the rows shown.
enum SitePaging {
    /// Rows per page: a page of firing alerts with ack forms stays well under 300 KB.
    static let pageSize = 100

    /// Where a page starts: `after` (a cursor from a `next` link; anything else is a 400) and
    /// `start`, the number of its first row (clamped; only for the "showing 101–200" line).
    static func position<Cursor: LosslessStringConvertible>(_ request: Request, as: Cursor.Type) throws -> (
        after: Cursor?, start: Int
    ) {
        var after: Cursor? = nil
        if let text = SiteHTML.query(request, "after") {
            guard let c = Cursor(text) else {
                throw SiteError.badRequest("after=\(text.prefix(40)) is not a page position: follow the next-page link")
            }
            after = c
        }
        let start = after == nil ? 1 : (SiteHTML.query(request, "start").flatMap(Self.count) ?? 1)
        return (after, start)
    }

    /// A decimal count of at most 9 digits, clamped to at least 1; nil for anything else.
    static func count(_ text: String) -> Int? {
        guard (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }) else { return nil }
        return max(1, Int(text) ?? 1)
    }

    /// `showing 101–200 of 5,000 firing · next page`.
    static func nav(
        path: String, shown: Int, start: Int, total: Int, what: String, next: String?, request: Request
    ) -> Node<HTML.BodyContext> {
        let last = max(start, start + shown - 1)
        let range = shown == 0 ? "none" : "\(grouped(start))–\(grouped(min(last, max(total, last))))"
        var nodes: [Node<HTML.BodyContext>] = [
            SafeHTML.text("showing \(range) of \(grouped(total)) \(what)")
        ]
        if start > 1 {
            nodes.append(SafeHTML.text(" · "))
            nodes.append(
                .a(
                    .safeHref(SitePage.link(path, refreshOff: SitePage.refreshOff(request))),
                    SafeHTML.text("first page")))
        }
        if let next {
            let href = "\(path)\(path.contains("?") ? "&" : "?")after=\(SafeHTML.segment(next))&start=\(start + shown)"
            nodes.append(SafeHTML.text(" · "))
            nodes.append(
                .a(
                    .safeClass("next"), .safeAttribute(named: "rel", value: "next"),
                    .safeHref(SitePage.link(href, refreshOff: SitePage.refreshOff(request))),
                    SafeHTML.text("next page")))
        }
        return .p(.safeClass("paging muted"), .group(nodes))
    }

    /// `5,000`: digits grouped by three.
    static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out.append(",") }
            out.append(c)
        }
        return n < 0 ? "-" + out : out
    }

    /// `2 critical · 4,998 warning`, most severe first.
    static func severities(_ counts: FiringCounts) -> String {
        Severity.allCases.reversed().compactMap { s in
            counts.bySeverity[s].flatMap { $0 > 0 ? "\(grouped($0)) \(s.rawValue)" : nil }
        }.joined(separator: " · ")
    }

    /// For each alert shown, the first active silence that mutes it: matched off the pool (a page's
    /// alerts against every active silence), within one request's `MatchBudget`. `unchecked`: the
    /// alerts whose silences the budget did not decide (the page says so rather than guess).
    static func silencing(_ alerts: [FiringAlert], silences: [Silence], now: Int64) async throws -> (
        silenced: [Int64: Silence], unchecked: Set<Int64>
    ) {
        guard !silences.isEmpty, !alerts.isEmpty else { return ([:], []) }
        let labels = alerts.map { ($0.episode, $0.transition.matchLabels) }
        return try await offPool {
            var budget = MatchBudget(steps: MatchBudget.requestSteps)
            var out: [Int64: Silence] = [:]
            var unchecked: Set<Int64> = []
            for (id, l) in labels {
                let found = Silence.muting(silences, l, at: now, budget: &budget, first: true)
                if let s = found.silences.first {
                    out[id] = s
                } else if !found.decided {
                    unchecked.insert(id)
                }
            }
            return (out, unchecked)
        }
    }
}
