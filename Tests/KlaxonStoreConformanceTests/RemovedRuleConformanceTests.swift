import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// `resolveRemoved(rules:_:)` (issue 38, item 18): the firing alerts of rules a reload removed are
/// resolved with their reason, their state and outbox rows in the same transaction, once.
@Suite("conformance: resolving the alerts of removed rules", .serialized)
struct RemovedRuleConformanceTests {
    let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
        Rule(name: "low", kind: ThresholdRule(metric: "gage_height", direction: .below, threshold: 2)),
    ]

    static let route: @Sendable (Transition) -> [PlannedDelivery] = { _ in
        [PlannedDelivery(receiver: "ops", route: nil, groupKey: "g")]
    }

    func evaluation(_ now: Int64) -> Evaluation<ClosurePlanner> {
        Evaluation(
            engine: RuleEngine(rules: []), quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []), now: now,
            queuedAt: now * 1000, render: \.summary, route: Self.route)
    }

    @Test(
        "firing alerts of a removed rule resolve with the reason and an outbox row; others stay; a second call does nothing",
        arguments: Backend.allCases)
    func resolvesOnce(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T00:00:00Z", 12), reading("B", "2026-01-01T00:00:00Z", 12),
                reading("C", "2026-01-01T00:00:00Z", 1), reading("D", "2026-01-01T00:00:00Z", 5),
            ])
            let engine = RuleEngine(rules: rules)
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:10:00Z"), route: Self.route)
            #expect(try await store.firingAlerts().map(\.key.rule).sorted() == ["high", "high", "low"])

            let now = t("2026-01-01T01:00:00Z")
            let logged = try await store.resolveRemoved(rules: ["high", "gone"], evaluation(now))
            #expect(
                logged.map { "\($0.transition.rule)/\($0.transition.station) \($0.transition.state)" } == [
                    "high/A resolved", "high/B resolved",
                ])
            #expect(logged.allSatisfy { $0.routed && $0.message == "resolved: rule high was removed by a reload" })
            #expect(
                try await store.firingAlerts().map(\.key) == [
                    AlertKey(rule: "low", station: "C", metric: "gage_height")
                ])

            // The log: each resolve belongs to its alert's episode and carries the reason.
            let log = try await store.transitions()
            let resolves = log.filter { $0.state == "resolved" }
            #expect(resolves.count == 2)
            for r in resolves {
                let opening = log.first { $0.state == "firing" && $0.station == r.station && $0.rule == "high" }
                #expect(r.episode == opening?.id)
                #expect(r.at == now)
                #expect(r.transition.annotations["resolve_reason"] == "rule high was removed by a reload")
            }
            // Queued in the same transaction, one row per resolve.
            let queued = try await store.outbox(state: .pending)
            let resolveIDs = Set(resolves.compactMap(\.id))
            #expect(queued.filter { resolveIDs.contains($0.transitionID) }.count == 2)

            // The states are inactive and keep the last reading seen.
            let states = try await store.alertStates()
            let a = try #require(states[AlertKey(rule: "high", station: "A", metric: "gage_height")])
            #expect(a.status == .inactive && a.lastTime == t("2026-01-01T00:00:00Z") && a.lastValue == 12)

            // Again (another daemon's reload): nothing more.
            #expect(try await store.resolveRemoved(rules: ["high"], evaluation(now + 60)).isEmpty)
            #expect(try await store.transitions().count == log.count)
            // Nothing named: nothing done.
            #expect(try await store.resolveRemoved(rules: [], evaluation(now + 60)).isEmpty)
        }
    }
}
