import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// What `/metrics` reads from the store: active alerts by rule, severity and state, readings by the
/// name their ingest recorded, and the outbox's oldest due row. The same on every backend.
@Suite(.timeLimit(.minutes(10))) struct MetricsConformanceTests {
    let rules = [
        Rule(
            name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10),
            severity: .critical),
        Rule(name: "slow", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10, holdFor: 3600)),
    ]

    static func sorted(_ counts: [AlertCount]) -> [String] {
        counts.map { "\($0.rule)/\($0.state.rawValue)=\($0.count)" }.sorted()
    }

    @Test("alert counts: pending, firing and acked apart; an emptied state drops out", arguments: Backend.allCases)
    func alertCounts(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            #expect(try await store.alertCounts().isEmpty)
            _ = try await store.readingWriter().write(
                ["A", "B", "C"].map { reading($0, "2026-01-01T00:00:00Z", 50) })
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"))
            let a = try #require(try await store.firingAlerts().first { $0.key.station == "A" })
            #expect(try await store.ack(transitionID: a.transitionID, by: "ops:ann", at: 100) != nil)
            let expected = ["high/acked=1", "high/firing=2", "slow/pending=3"]
            #expect(Self.sorted(try await store.alertCounts()) == expected)
            // `metrics()` carries the same counts (one read per scrape).
            #expect(Self.sorted(try await store.metrics().alerts) == expected)

            // A falls back: its alerts end (and its ack with them); inactive states are not counted.
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:15:00Z", 1)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:15:00Z"))
            #expect(Self.sorted(try await store.alertCounts()) == ["high/firing=2", "slow/pending=2"])

            // B and C hold past `for`: slow fires.
            _ = try await store.readingWriter().write(
                ["B", "C"].map { reading($0, "2026-01-01T01:10:00Z", 60) })
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T01:10:00Z"))
            #expect(Self.sorted(try await store.alertCounts()) == ["high/firing=2", "slow/firing=2"])
        }
    }

    @Test("readings count by the source their ingest named: configured, api, file", arguments: Backend.allCases)
    func readingsBySource(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            // The station says it is USGS's; the counts go by who stored the readings.
            try await store.upsert(station: StationRecord(id: "A", source: "USGS"))
            try await store.write(
                SourceBatch(readings: [
                    reading("A", "2026-01-01T00:00:00Z", 1), reading("A", "2026-01-01T00:15:00Z", 2),
                ]),
                source: "texas", at: 1_000)
            _ = try await store.readingWriter(source: "api").write([reading("A", "2026-01-01T00:30:00Z", 3)])
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T00:45:00Z", 4), reading("B", "2026-01-01T00:45:00Z", 4),
                reading("C", "2026-01-01T00:45:00Z", 4),
            ])
            // A reading stored again unchanged is not counted again.
            _ = try await store.readingWriter(source: "api").write([reading("A", "2026-01-01T00:30:00Z", 3)])
            #expect(try await store.metrics().readingsBySource == ["texas": 2, "api": 1, "file": 3])
        }
    }

    @Test("the oldest due pending row: none, one due, deferred rows not yet due", arguments: Backend.allCases)
    func oldestDue(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            #expect(try await store.metrics().oldestDue == nil)
            try await store.queue([transition(station: "A")], receivers: ["hook"], now: 5_000)
            try await store.queue([transition(station: "B")], receivers: ["hook"], now: 9_000)
            #expect(try await store.metrics().oldestDue == 5_000)
            // Claimed rows are sending, no longer pending.
            let claimed = try await store.claim(now: 6_000, lease: 60_000, limit: 1, instance: nil)
            #expect(claimed.count == 1)
            #expect(try await store.metrics().oldestDue == 9_000)
        }
    }

    @Test(
        "a row waiting between retries of a failed send counts from when it was queued, not from its next retry",
        arguments: Backend.allCases)
    func oldestDueWhileRetrying(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await store.queue([transition(station: "A")], receivers: ["hook"], now: 5_000)
            let claimed = try await store.claim(now: 6_000, lease: 60_000, limit: 10, instance: nil)
            #expect(claimed.count == 1)
            // The send failed; the retry is due at 600 s. The row has waited since 5 s.
            try await store.apply(
                claimed.map { .finish($0, state: .pending, now: 6_000, retryAt: 600_000, error: "HTTP 500") })
            #expect(try await store.metrics().oldestDue == 5_000)
            // A row queued later and due now does not hide it; one deferred to later does not count.
            try await store.queue([transition(station: "B")], receivers: ["hook"], now: 9_000)
            #expect(try await store.metrics().oldestDue == 5_000)
        }
    }
}
