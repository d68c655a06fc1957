import Foundation
import KlaxonCore
import KlaxonStore
import Testing

private let day: Int64 = 86_400
private let start = t("2025-01-01T00:00:00Z")

private func lookBack(_ rules: [Rule]) -> Int64 { rules.map(\.kind.historySpan).max() ?? 0 }

/// Retention: what goes, what always stays, and that pruning never changes what evaluation says.
@Suite(.timeLimit(.minutes(10))) struct RetentionConformanceTests {
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
                value: 8 + 4 * sin(x * 1.3) + (x * 7).truncatingRemainder(dividingBy: 1), unit: "ft")
        }
    }

    @Test("pruning readings never changes what evaluation says", arguments: Backend.allCases)
    func pruningReadingsNeverChangesWhatEvaluationSays(_ backend: Backend) async throws {
        // The same story on a store that is never pruned (SQLite) and on one that is (the backend).
        let engine = RuleEngine(rules: rules)
        let plan = { (now: Int64) in
            RetentionPlan(now: now, keep: [.readings: 10 * day], lookBack: lookBack(rules), batch: 100)
        }
        func story(_ f: Fixture, prune: Bool) async throws -> [String] {
            var said: [String] = []
            for chunk in 0..<8 {
                let from = start + Int64(chunk) * 5 * day
                _ = try await f.store.readingWriter().write(
                    wave("A", from: from, to: from + 5 * day) + wave("B", from: from, to: from + 5 * day))
                let r = try await f.store.evaluate(engine: engine, now: from + 5 * day)
                said += r.transitions.map {
                    "\($0.transition.rule) \($0.transition.station) \($0.transition.state) \($0.transition.at)"
                }
                if prune {
                    let removed = try await f.store.prune(plan(from + 5 * day))
                    if chunk >= 2 { #expect(removed[.readings] > 0) }
                }
            }
            said.append("ingested \(try await f.integer("SELECT CAST(sum(count) AS BIGINT) FROM ingest_log") ?? 0)")
            return said
        }
        var kept: [String] = []
        try await Backend.sqlite.withStore { kept = try await story($0, prune: false) }
        try await backend.withStore { f in
            let said = try await story(f, prune: true)
            #expect(said.count > 1)
            #expect(said == kept)
            #expect(try await f.integer("SELECT min(time) FROM readings") == start + 30 * day)
            #expect(try await f.integer("SELECT count(*) FROM ingest_log") ?? 99 <= 2 + 2)
        }
    }

    @Test("a quiet series keeps its newest reading and its look-back", arguments: Backend.allCases)
    func aQuietSeriesKeepsItsNewestReadingAndItsLookBack(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            _ = try await store.readingWriter().write(wave("A", from: start, to: start + 2 * day))
            _ = try await store.evaluate(engine: RuleEngine(rules: rules), now: start + 2 * day)
            let lookBack = lookBack(rules)
            let plan = RetentionPlan(now: start + 200 * day, keep: [.readings: 90 * day], lookBack: lookBack)
            let dry = try await store.prunable(plan)
            let removed = try await store.prune(plan)
            #expect(dry == removed)
            let left = try await store.readings(station: "A", metric: "gage_height").map(\.time)
            #expect(left.first == start + 2 * day - 3_600 - lookBack)
            #expect(left.last == start + 2 * day - 3_600)
        }
    }

    @Test("unevaluated readings stay", arguments: Backend.allCases)
    func unevaluatedReadingsStay(_ backend: Backend) async throws {
        try await backend.withStore { f in
            _ = try await f.store.readingWriter().write(wave("A", from: start, to: start + 2 * day))
            let plan = RetentionPlan(now: start + 200 * day, keep: [.readings: 90 * day])
            #expect(try await f.store.prunable(plan).total == 0)
            #expect(try await f.store.prune(plan).total == 0)
            #expect(try await f.store.readingCount() == 48)
        }
    }

    /// A: firing, delivered. B: fired and resolved, delivered. C: fired and resolved, never delivered.
    @Test("never a firing alert's latest transition, nor an undelivered row", arguments: Backend.allCases)
    func neverAFiringAlertsLatestTransitionNorAnUndeliveredRow(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: [rules[0]])
            let route: @Sendable (Transition) -> [PlannedDelivery] = {
                [PlannedDelivery(receiver: "ops", route: nil, groupKey: "\($0.station)")]
            }
            func evaluate(_ now: Int64) async throws {
                _ = try await store.evaluate(engine: engine, now: now, route: route)
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
                now: start + 800 * day, keep: [.transitions: 365 * day, .delivered: 30 * day, .dead: 30 * day],
                batch: 1)
            let before = try await store.transitions().count
            let dry = try await store.prunable(plan)
            #expect(try await store.transitions().count == before)
            let removed = try await store.prune(plan)
            #expect(dry == removed)
            #expect(removed[.delivered] == 2)
            #expect(removed[.transitions] == 2)
            #expect(try await store.outboxCounts() == [.sent: 1, .pending: 2])
            // The metrics count sent rows now, and deliveries ever made.
            let m = try await store.metrics()
            #expect(m.outbox["sent"] == 1 && m.deliveries["ops"]?["sent"] == 3)
            let left = try await store.transitions().map { "\($0.station) \($0.state)" }
            #expect(left == ["A firing", "C firing", "C resolved"])
            #expect(try await store.alertStates().count == 3)
            #expect(try await store.firingAlerts().map(\.key.station) == ["A"])
            #expect(try await store.prune(plan).total == 0)
        }
    }

    @Test("quake revisions keep the newest version", arguments: Backend.allCases)
    func quakeRevisionsKeepTheNewestVersion(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let v = { (updated: Int64) in
                QuakeEvent(id: "us1", time: start * 1000, updated: updated, magnitude: 5, latitude: 1, longitude: 2)
            }
            try await store.write(quakes: [v(start * 1000)], at: start)
            try await store.write(quakes: [v(start * 1000 + 60_000)], at: start + 60)
            try await store.write(quakes: [v(start * 1000 + 120_000)], at: start + 120)
            #expect(try await store.quakeRevisionCounts() == ["us1": 3])
            let plan = RetentionPlan(now: start + 100 * day, keep: [.quakeRevisions: 90 * day], batch: 1)
            #expect(try await store.prunable(plan)[.quakeRevisions] == 2)
            #expect(try await store.prune(plan)[.quakeRevisions] == 2)
            #expect(try await store.quakeRevisionCounts() == ["us1": 1])
            #expect(try await store.quakes().first?.event.updated == start * 1000 + 120_000)
        }
    }

    @Test("forecasts go by the day they are for", arguments: Backend.allCases)
    func forecastsGoByDay(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let weather = ["2025-01-01", "2025-01-02", "2025-03-01"].map { date in
                DayWeather(
                    place: "25.76,-80.19", date: date, tempMaxC: 29, tempMinC: 22, precipitationMm: 0,
                    precipitationProbability: 10, snowfallCm: 0, windMaxKmh: 15, weatherCode: 1, source: "open-meteo",
                    issued: start)
            }
            try await store.write(weather: weather)
            let plan = RetentionPlan(now: start + 40 * day, keep: [.forecasts: 30 * day], batch: 1)
            #expect(try await store.prunable(plan)[.forecasts] == 2)
            #expect(try await store.prune(plan)[.forecasts] == 2)
            #expect(try await store.forecasts(place: "25.76,-80.19").map(\.date) == ["2025-03-01"])
        }
    }

    @Test(
        "river forecast issuances: those older than the retention go, never a gauge series' latest; air forecasts go by day",
        arguments: Backend.allCases)
    func forecastIssuancesKeepTheLatestPerSeries(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            func issuance(_ station: String, _ metric: String = "gage_height", issued: Int64) -> FloodForecast {
                FloodForecast(
                    station: station, metric: metric, issued: issued, unit: "ft", source: "nwps",
                    points: [.init(time: issued + 3_600, value: 10), .init(time: issued + 7_200, value: 12)])
            }
            var batch = SourceBatch()
            // MILC1 stage: four issuances, two within the retention; its flow: one old issuance only
            // (its latest, so it stays); EADM7: two old ones (the newer stays).
            batch.forecasts = [
                issuance("MILC1", issued: start), issuance("MILC1", issued: start + day),
                issuance("MILC1", issued: start + 40 * day), issuance("MILC1", issued: start + 41 * day),
                issuance("MILC1", "discharge", issued: start),
                issuance("EADM7", issued: start + 2 * day), issuance("EADM7", issued: start + 3 * day),
            ]
            batch.airForecasts = ["2025-01-01", "2025-01-02", "2025-02-20"].map {
                AirForecast(area: "Denver-Boulder", date: $0, parameter: "PM2.5", aqi: 60, category: 2, issued: $0)
            }
            _ = try await store.write(batch, source: nil, cursor: nil, at: start + 41 * day)
            let plan = RetentionPlan(
                now: start + 42 * day, keep: [.forecastIssuances: 30 * day, .forecasts: 14 * day], batch: 1)
            let dry = try await store.prunable(plan)
            #expect(dry[.forecastIssuances] == 3)
            #expect(dry[.airForecasts] == 2)
            let removed = try await store.prune(plan)
            #expect(removed == dry)
            let stage = try await store.forecasts(station: "MILC1", metric: "gage_height").map {
                ($0.issued - start) / day
            }
            #expect(stage.sorted() == [40, 41])
            #expect(try await store.latestForecast(station: "MILC1", metric: "discharge")?.issued == start)
            #expect(
                try await store.forecasts(station: "EADM7", metric: "gage_height").map(\.issued) == [start + 3 * day])
            #expect(try await store.airForecasts(area: "denver-boulder").map(\.date) == ["2025-02-20"])
            // Kept forever without a retention for them.
            let forever = RetentionPlan(now: start + 400 * day, keep: [:])
            #expect(try await store.prune(forever).total == 0)
            #expect(try await store.latestForecast(station: "MILC1", metric: "gage_height")?.issued == start + 41 * day)
        }
    }
}
