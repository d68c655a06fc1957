import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// The notification history (`NotificationHistory`, issue 41): the outbox read newest first, page by
/// page, narrowed to an alert or a receiver, each row with its transition and what became of it. The
/// same on every backend.
@Suite("conformance: the notification history", .serialized)
struct NotificationHistoryConformanceTests {
    let engine = RuleEngine(rules: [
        Rule(
            name: "flood",
            kind: LevelsRule(
                metric: "gage_height",
                levels: [.init(name: "action", at: 9), .init(name: "minor", at: 11), .init(name: "moderate", at: 13)]))
    ])

    static let route: @Sendable (Transition) -> [PlannedDelivery] = { _ in
        [
            PlannedDelivery(receiver: "ops", route: nil, groupKey: "g", maxAge: 0),
            PlannedDelivery(receiver: "pager", route: nil, groupKey: "g", maxAge: 0),
        ]
    }

    /// A fires (action), both receivers are sent it; A rises to minor: ops is sent it, the pager's
    /// send is given up (HTTP 500); B fires and waits in the queue; C fires and rises before any
    /// claim (its firing is folded into the rise). Returns A's transitions' ids.
    func fill(_ store: any Store) async throws -> [Int64] {
        func evaluate(_ station: String, _ time: String, _ value: Double) async throws {
            _ = try await store.readingWriter().write([reading(station, time, value)])
            _ = try await store.evaluate(engine: engine, now: t(time), route: Self.route)
        }
        func claimAndFinish(_ time: String, failing: String? = nil) async throws {
            let now = t(time) * 1000 + 1
            let batches = try await store.claim(now: now, lease: 60_000)
            #expect(batches.count == 2)
            try await store.apply(
                batches.map { b -> OutboxOutcome in
                    b.receiver == failing
                        ? .finish(b, state: .dead, now: now + 1, retryAt: nil, error: "receiver pager: HTTP 500")
                        : .finish(b, state: .sent, now: now + 1, retryAt: nil, error: nil)
                })
        }
        try await evaluate("A", "2026-01-01T00:00:00Z", 9.5)
        try await claimAndFinish("2026-01-01T00:00:00Z")
        try await evaluate("A", "2026-01-01T01:00:00Z", 11.5)
        try await claimAndFinish("2026-01-01T01:00:00Z", failing: "pager")
        try await evaluate("B", "2026-01-01T02:00:00Z", 9.5)
        try await evaluate("C", "2026-01-01T03:00:00Z", 9.5)
        try await evaluate("C", "2026-01-01T03:10:00Z", 11.5)
        return try await store.transitions().filter { $0.station == "A" }.compactMap(\.id)
    }

    @Test("newest first, each with its transition and what became of it", arguments: Backend.allCases)
    func wholeHistory(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let a = try await fill(store)
            try #require(a.count == 2)
            let page = try await store.notifications(NotificationFilter(), limit: 100, after: nil)
            #expect(page.total == 10 && page.entries.count == 10 && page.next == nil)
            let seqs = page.entries.map(\.row.seq)
            #expect(seqs == seqs.sorted(by: >), "newest first")
            let outbox = try await store.outbox()
            #expect(Set(page.entries.map(\.row.id)) == Set(outbox.map(\.id)))
            func states(_ station: String) -> [String] {
                page.entries.filter { $0.transition?.station == station }.map { "\($0.row.receiver) \($0.state)" }
            }
            // Newest first: A's rise (ops delivered, the pager's failed), then A's firing (both delivered).
            let ofA = page.entries.filter { $0.transition?.station == "A" }
            #expect(ofA.map { $0.transition?.id } == [a[1], a[1], a[0], a[0]])
            #expect(states("A").prefix(2).sorted() == ["ops delivered", "pager failed"])
            #expect(states("A").suffix(2).sorted() == ["ops delivered", "pager delivered"])
            #expect(states("B").sorted() == ["ops pending", "pager pending"])
            #expect(states("C").sorted() == ["ops folded", "ops pending", "pager folded", "pager pending"])
            let failed = try #require(page.entries.first { $0.state == "failed" })
            #expect(failed.reason == "receiver pager: HTTP 500")
            #expect(failed.transition?.level == "minor" && failed.transition?.id == a[1])
            #expect(page.entries.first { $0.state == "folded" }?.reason == "folded into a later message of the alert")
            let delivered = page.entries.filter { $0.state == "delivered" }
            #expect(delivered.count == 3 && delivered.allSatisfy { $0.reason == nil && $0.row.sentAt != nil })
            // Rows sent in one claim carry their message's key.
            #expect(delivered.allSatisfy { $0.key == ($0.row.batch ?? $0.row.id) })
        }
    }

    @Test("narrowed to an alert (by any of its ids) or a receiver, or both", arguments: Backend.allCases)
    func filters(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let a = try await fill(store)
            for id in a {
                let page = try await store.notifications(NotificationFilter(episode: id), limit: 100, after: nil)
                #expect(page.total == 4 && page.entries.count == 4, "id \(id)")
                #expect(page.entries.allSatisfy { $0.transition?.station == "A" && $0.transition?.episodeID == a[0] })
            }
            let pager = try await store.notifications(NotificationFilter(receiver: "pager"), limit: 100, after: nil)
            #expect(pager.total == 5 && pager.entries.allSatisfy { $0.row.receiver == "pager" })
            let both = try await store.notifications(
                NotificationFilter(episode: a[0], receiver: "pager"), limit: 100, after: nil)
            #expect(both.entries.map(\.state) == ["failed", "delivered"] && both.total == 2)
            // An id no transition has, a receiver nothing was sent to: nothing, counted as nothing.
            let none = try await store.notifications(NotificationFilter(episode: 99_999), limit: 100, after: nil)
            #expect(none.entries.isEmpty && none.total == 0 && none.next == nil)
            let nobody = try await store.notifications(
                NotificationFilter(receiver: "nobody' OR '1'='1"), limit: 100, after: nil)
            #expect(nobody.entries.isEmpty && nobody.total == 0)
            // The next episode of A is its own: the first one's filter does not list its rows.
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T04:00:00Z", 5), reading("A", "2026-01-01T05:00:00Z", 9.5),
            ])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T05:00:00Z"), route: Self.route)
            let next = try #require(try await store.transitions().last { $0.station == "A" })
            #expect(next.state == "firing" && next.episodeID != a[0])
            let first = try await store.notifications(NotificationFilter(episode: a[0]), limit: 100, after: nil)
            #expect(first.total == first.entries.count && first.total >= 4, "its four, and its resolve's rows")
            #expect(first.entries.allSatisfy { $0.transition?.episodeID == a[0] })
            let second = try await store.notifications(
                NotificationFilter(episode: next.id ?? 0), limit: 100, after: nil)
            #expect(second.total == 2 && second.entries.allSatisfy { $0.transition?.id == next.id })
        }
    }

    @Test("page by page: each once, in order; hostile sizes clamped", arguments: Backend.allCases)
    func paging(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            _ = try await fill(store)
            let all = try await store.notifications(NotificationFilter(), limit: 100, after: nil).entries.map(\.row.id)
            for size in [1, 3, 10, 11] {
                var seen: [String] = []
                var after: NotificationCursor? = nil
                var pages = 0
                repeat {
                    let page = try await store.notifications(NotificationFilter(), limit: size, after: after)
                    #expect(page.entries.count <= size && page.total == 10)
                    seen += page.entries.map(\.row.id)
                    after = page.next
                    pages += 1
                    if let next = page.next { #expect(NotificationCursor(next.description) == next) }
                } while after != nil && pages < 100
                #expect(seen == all, "size \(size)")
                #expect(pages == (10 + size - 1) / size, "the last full page says there is no next")
            }
            for limit in [0, -1, Int.min] {
                #expect(
                    try await store.notifications(NotificationFilter(), limit: limit, after: nil).entries.count == 1)
            }
            #expect(try await store.notifications(NotificationFilter(), limit: .max, after: nil).entries.count == 10)
            let end = NotificationCursor(seq: 0)
            #expect(try await store.notifications(NotificationFilter(), limit: 10, after: end).entries.isEmpty)
            for text in ["", "-1", "1.5", "x", "99999999999999999999", " 1"] {
                #expect(NotificationCursor(text) == nil, "\(text)")
            }
        }
    }
}
