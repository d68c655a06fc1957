import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Logging
import Testing

/// Issue 41, "no storms", on an HA pair: two daemons' dispatchers on one PostgreSQL database share a
/// receiver's budget. Between them they send it exactly the budget and one summary (posted by one,
/// edited by either), never the budget twice.
@Suite(.timeLimit(.minutes(10))) struct BudgetHATests {
    static let quiet = Logger(label: "klaxon.test.budget", factory: { _ in SwiftLogNoOpLogHandler() })

    static func flood(_ i: Int) -> Transition {
        Transition(
            rule: "river-levels", kind: "levels", station: "G\(i)", metric: "gage_height", state: .firing,
            level: "minor", at: Int64(Date().timeIntervalSince1970) - 60, value: 12, unit: "ft", severity: .warning,
            summary: "gage_height at G\(i) reached minor", explanation: "12 ft ≥ minor (11)", place: "Gauge \(i)")
    }

    @Test("two dispatchers on one PostgreSQL database: 100 alerts, budget 5 per 10m: 5 messages and one summary")
    func twoDaemons() async throws {
        try await PostgresServer.withDatabase { db in
            try await DiscordStandIn.with { standIn in
                let location = try StoreLocation.parse(db.url, environment: [:])
                try await location.withStore(logger: Self.quiet) { a in
                    try await location.withStore(logger: Self.quiet) { b in
                        let now = Int64(Date().timeIntervalSince1970 * 1000)
                        try await a.record(
                            (1...100).map { i in
                                let t = Self.flood(i)
                                return (
                                    t, t.summary, [PlannedDelivery(receiver: "pager", route: nil, groupKey: "g\(i)")]
                                )
                            }, now: now - 1)
                        var settings = Dispatcher.Settings()
                        settings.backoff = Backoff(initial: 0.02, cap: 0.1, retryAfterCap: 3600)
                        settings.budgets = ["pager": Budget(messages: 5, per: 600)]
                        func dispatcher(_ store: any Store) throws -> Dispatcher {
                            Dispatcher(
                                store: store,
                                notifiers: [
                                    "pager": try WebhookNotifier(
                                        config: Receiver.Webhook(
                                            name: "pager", url: Secret(standIn.url), preset: .discord))
                                ], routing: Routing(), settings: settings, logger: Self.quiet)
                        }
                        let one = try dispatcher(a)
                        let two = try dispatcher(b)
                        let deadline = now + 120_000
                        async let first = one.runUntilEmpty(deadline: deadline)
                        async let second = two.runUntilEmpty(deadline: deadline)
                        let (p, q) = try await (first, second)
                        #expect(p.sent + q.sent == 5, "\(p) \(q)")
                        #expect(p.folded + q.folded == 95, "\(p) \(q)")
                        #expect(standIn.problems == [])
                        #expect(standIn.messages.count == 6)
                        let summary = try #require(standIn.messages.first { $0.content.contains("Storm summary") })
                        #expect(summary.content.contains("95 more alerts"), "\(summary.content)")
                    }
                }
            }
        }
    }
}
