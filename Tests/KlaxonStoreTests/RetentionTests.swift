import Foundation
import GRDB
import KlaxonCore
import Testing

@testable import KlaxonSQLite
@testable import KlaxonStore

private let day: Int64 = 86_400
private let start = t("2025-01-01T00:00:00Z")

private func lookBack(_ rules: [Rule]) -> Int64 { rules.map(\.kind.historySpan).max() ?? 0 }

private func count(_ store: SQLiteStore, _ sql: String) async throws -> Int {
    try await store.reader.read { db in try Int.fetchOne(db, sql: sql) ?? 0 }
}

@Suite struct RetentionTests {
    /// A rate rule (looks back 2 × 3 h) and a threshold over a wave that crosses both every few days.
    let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
        Rule(
            name: "rising",
            kind: RateRule(metric: "gage_height", direction: .rising, threshold: 0.5, window: 3 * 3_600)),
    ]

    func wave(_ station: String, from: Int64, to: Int64, step: Int64 = 3_600) -> [Reading] {
        stride(from: from, to: to, by: Int(step)).map { time in
            let x = Double(time - start) / Double(day)
            return Reading(
                station: station, metric: "gage_height", time: time,
                value: 8 + 4 * sin(x * 1.3) + (x * 7).truncatingRemainder(dividingBy: 1),
                unit: "ft")
        }
    }

    @Test func pruningReadingsNeverChangesWhatEvaluationSays() async throws {
        let (tmpA, tmpB) = (try TempDatabase(), try TempDatabase())
        let pruned = try SQLiteStore.open(path: tmpA.path)
        let kept = try SQLiteStore.open(path: tmpB.path)
        let engine = RuleEngine(rules: rules)
        let plan = { (now: Int64) in
            RetentionPlan(now: now, keep: [.readings: 10 * day], lookBack: lookBack(rules), batch: 100)
        }
        var said: [[String]] = [[], []]
        // Forty days, two stations, in five-day chunks: ingest, evaluate, prune (one store only).
        for chunk in 0..<8 {
            let from = start + Int64(chunk) * 5 * day
            let batch = wave("A", from: from, to: from + 5 * day) + wave("B", from: from, to: from + 5 * day)
            for (i, store) in [pruned, kept].enumerated() {
                _ = try await store.readingWriter().write(batch)
                let r = try await store.evaluate(engine: engine, now: from + 5 * day, render: \.summary)
                said[i] += r.transitions.map {
                    "\($0.transition.rule) \($0.transition.station) \($0.transition.state) \($0.transition.at)"
                }
            }
            let removed = try await pruned.prune(plan(from + 5 * day))
            if chunk >= 2 { #expect(removed[.readings] > 0) }
        }
        #expect(!said[0].isEmpty)
        #expect(said[0] == said[1])
        // Only the last ten days are left (and the rules' look-back before them, already inside).
        let oldest = try await pruned.reader.read { db in try Int64.fetchOne(db, sql: "SELECT min(time) FROM readings")
        }
        #expect(oldest == start + 30 * day)
        // The ingest log is folded to one entry per series and source, with its counts whole.
        #expect(try await count(pruned, "SELECT count(*) FROM ingest_log") <= 2 + 2)
        #expect(
            try await count(pruned, "SELECT sum(count) FROM ingest_log")
                == (try await count(kept, "SELECT sum(count) FROM ingest_log")))
        #expect(try await pruned.ingestMark() == (try await kept.ingestMark()))
    }

    @Test func aQuietSeriesKeepsItsNewestReadingAndItsLookBack() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        _ = try await store.readingWriter().write(wave("A", from: start, to: start + 2 * day))
        _ = try await store.evaluate(engine: RuleEngine(rules: rules), now: start + 2 * day, render: \.summary)
        let lookBack = lookBack(rules)
        #expect(lookBack == 6 * 3_600)
        let plan = RetentionPlan(now: start + 200 * day, keep: [.readings: 90 * day], lookBack: lookBack)
        let dry = try await store.prunable(plan)
        let removed = try await store.prune(plan)
        #expect(dry == removed)
        let left = try await store.readings(station: "A", metric: "gage_height").map(\.time)
        #expect(left.first == start + 2 * day - 3_600 - lookBack)
        #expect(left.last == start + 2 * day - 3_600)
    }

    @Test func unevaluatedReadingsStay() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        _ = try await store.readingWriter().write(wave("A", from: start, to: start + 2 * day))
        let plan = RetentionPlan(now: start + 200 * day, keep: [.readings: 90 * day])
        #expect(try await store.prunable(plan).total == 0)
        #expect(try await store.prune(plan).total == 0)
        #expect(try await store.readingCount() == 48)
    }

    /// A: firing, delivered. B: fired and resolved, delivered. C: fired and resolved, never delivered.
    @Test func neverAFiringAlertsLatestTransitionNorAnUndeliveredRow() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        let engine = RuleEngine(rules: [rules[0]])
        let route: @Sendable (Transition) -> [PlannedDelivery] = {
            [PlannedDelivery(receiver: "ops", route: nil, groupKey: "\($0.station)")]
        }
        func evaluate(_ now: Int64) async throws {
            _ = try await store.evaluate(
                Evaluation(
                    engine: engine, quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []), now: now,
                    queuedAt: now * 1000, render: \.summary, route: route))
        }
        func deliver(_ now: Int64) async throws {
            for _ in 0..<3 {
                let batches = try await store.claim(now: now * 1000, lease: 60_000)
                try await store.apply(
                    batches.filter { $0.receiver == "ops" && $0.rows[0].alert.contains("|C|") == false }.map {
                        .finish($0, state: .sent, now: now * 1000, retryAt: nil, error: nil)
                    })
                try await store.release(batches.filter { $0.rows[0].alert.contains("|C|") })
            }
        }
        let r = { (s: String, at: Int64, v: Double) in
            Reading(station: s, metric: "gage_height", time: at, value: v, unit: "ft")
        }
        _ = try await store.readingWriter().write([r("A", start, 11), r("B", start, 11), r("C", start, 11)])
        try await evaluate(start)
        try await deliver(start)
        _ = try await store.readingWriter().write([
            r("A", start + day, 12), r("B", start + day, 1), r("C", start + day, 1),
        ])
        try await evaluate(start + day)
        try await deliver(start + day)
        #expect(try await store.outboxCounts() == [.sent: 3, .pending: 2])

        let plan = RetentionPlan(
            now: start + 800 * day, keep: [.transitions: 365 * day, .delivered: 30 * day, .dead: 30 * day], batch: 1)
        let before = try await store.transitions().count
        let dry = try await store.prunable(plan)
        #expect(try await store.transitions().count == before)
        #expect(try await store.outboxCounts() == [.sent: 3, .pending: 2])
        let removed = try await store.prune(plan)
        #expect(dry == removed)
        // B's two rows and two transitions went; A's delivered firing and C's undelivered rows stayed.
        #expect(removed[.delivered] == 2)
        #expect(removed[.transitions] == 2)
        #expect(try await store.outboxCounts() == [.sent: 1, .pending: 2])
        let left = try await store.transitions().map { "\($0.station) \($0.state)" }
        #expect(left == ["A firing", "C firing", "C resolved"])
        #expect(try await store.alertStates().count == 3)
        #expect(try await store.firingAlerts().map(\.key.station) == ["A"])
        // A second pass finds nothing more.
        #expect(try await store.prune(plan).total == 0)
    }

    @Test func quakeRevisionsKeepTheNewestVersion() async throws {
        let tmp = try TempDatabase()
        let store = try SQLiteStore.open(path: tmp.path)
        let v = { (updated: Int64) in
            QuakeEvent(id: "us1", time: start * 1000, updated: updated, magnitude: 5, latitude: 1, longitude: 2)
        }
        try await store.write(quakes: [v(start * 1000)], at: start)
        try await store.write(quakes: [v(start * 1000 + 60_000)], at: start + 60)
        try await store.write(quakes: [v(start * 1000 + 120_000)], at: start + 120)
        #expect(try await store.quakeRevisionCounts() == ["us1": 3])
        let plan = RetentionPlan(now: start + 100 * day, keep: [.quakeRevisions: 90 * day])
        #expect(try await store.prunable(plan)[.quakeRevisions] == 2)
        #expect(try await store.prune(plan)[.quakeRevisions] == 2)
        #expect(try await store.quakeRevisionCounts() == ["us1": 1])
        #expect(try await store.quakes().first?.event.updated == start * 1000 + 120_000)
    }

    @Test func forecastDaysAreCivilDates() {
        #expect(RetentionPlan.day(0) == "1970-01-01")
        #expect(RetentionPlan.day(t("2024-02-29T23:59:59Z")) == "2024-02-29")
        #expect(RetentionPlan.day(t("2026-03-01T00:00:00Z")) == "2026-03-01")
        #expect(RetentionPlan.day(-1) == "1969-12-31")
        #expect(RetentionPlan.day(.min) == "0000-01-01")
        #expect(RetentionPlan.day(.max) == "9999-12-31")
    }
}
