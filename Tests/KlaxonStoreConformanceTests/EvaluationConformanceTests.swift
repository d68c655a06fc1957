import Foundation
import KlaxonCore
import KlaxonStore
import Synchronization
import Testing

/// Evaluation: alert states, the transition log and the outbox move together, incrementally.
@Suite(.timeLimit(.minutes(10))) struct EvaluationConformanceTests {
    let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
        Rule(name: "quiet", kind: StaleRule(metric: "gage_height", after: 3600), severity: .info),
    ]

    @Test(arguments: Backend.allCases)
    func incrementalAndRestartSafe(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            let ingester = try store.readingWriter()
            _ = try await ingester.write([
                reading("A", "2026-01-01T00:00:00Z", 5), reading("A", "2026-01-01T00:15:00Z", 11),
            ])
            var r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:20:00Z"))
            #expect(r.newReadings == 2)
            #expect(r.transitions.map { "\($0.transition.rule) \($0.transition.state)" } == ["high firing"])

            // Evaluating again sees no new readings and records nothing.
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:20:00Z"))
            #expect(r.newReadings == 0 && r.transitions.isEmpty)

            // Ingesting the same readings again is not new either.
            _ = try await ingester.write([
                reading("A", "2026-01-01T00:00:00Z", 5), reading("A", "2026-01-01T00:15:00Z", 11),
            ])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:25:00Z"))
            #expect(r.newReadings == 0 && r.transitions.isEmpty)

            // A late reading (older than what the alert saw) is counted and ignored.
            _ = try await ingester.write([
                reading("A", "2026-01-01T00:05:00Z", 1), reading("A", "2026-01-01T00:30:00Z", 9),
            ])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:35:00Z"))
            #expect(r.newReadings == 2 && r.lateReadings == 1)
            #expect(r.transitions.map { "\($0.transition.rule) \($0.transition.state)" } == ["high resolved"])

            // Time passes with no reading: stale fires, at the moment the series went quiet.
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T02:00:00Z"))
            #expect(r.transitions.map(\.transition.state) == [.firing])
            #expect(r.transitions.first?.transition.at == t("2026-01-01T01:30:00Z"))
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T03:00:00Z"))
            #expect(r.transitions.isEmpty)

            let log = try await store.transitions()
            #expect(log.map { "\($0.rule) \($0.state)" } == ["high firing", "high resolved", "quiet firing"])
            #expect(log.allSatisfy { !$0.explanation.isEmpty })
            #expect(try await store.recentTransitions(limit: 1).map(\.rule) == ["quiet"])
            let states = try await store.alertStates()
            #expect(states[AlertKey(rule: "quiet", station: "A", metric: "gage_height")]?.status == .firing)
            #expect(states[AlertKey(rule: "high", station: "A", metric: "gage_height")]?.status == .inactive)
        }
    }

    @Test(
        "a reading dated 23 h ahead (inside max_future) is stored but decides nothing until its time: the present still resolves",
        arguments: Backend.allCases)
    func readingsAheadWaitForTheirTime(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: [rules[0]])
            let ingester = try store.readingWriter()
            func states(_ r: EvaluationResult) -> [String] {
                r.transitions.map {
                    "\($0.transition.rule) \($0.transition.state) \(Timestamp.format($0.transition.at))"
                }
            }
            _ = try await ingester.write([reading("A", "2026-01-01T00:00:00Z", 11)])
            var r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:01:00Z"))
            #expect(states(r) == ["high firing 2026-01-01T00:00:00Z"])
            // 23 hours ahead: stored, not stepped.
            _ = try await ingester.write([reading("A", "2026-01-01T23:00:00Z", 11)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:02:00Z"))
            #expect(r.transitions.isEmpty && r.lateReadings == 0)
            // The present's readings decide: the alert resolves; a reading within the skew (2 min
            // ahead of now) counts at once.
            _ = try await ingester.write([reading("A", "2026-01-01T00:05:00Z", 5)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:06:00Z"))
            #expect(states(r) == ["high resolved 2026-01-01T00:05:00Z"], "\(states(r))")
            #expect(r.lateReadings == 0)
            _ = try await ingester.write([reading("A", "2026-01-01T00:08:00Z", 12)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:06:00Z"))
            #expect(states(r) == ["high firing 2026-01-01T00:08:00Z"], "\(states(r))")
            _ = try await ingester.write([reading("A", "2026-01-01T00:10:00Z", 4)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:10:00Z"))
            #expect(states(r) == ["high resolved 2026-01-01T00:10:00Z"], "\(states(r))")
            // Once time reaches it, the reading counts, in its order.
            _ = try await ingester.write([reading("A", "2026-01-01T23:10:00Z", 3)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T23:15:00Z"))
            #expect(
                states(r) == ["high firing 2026-01-01T23:00:00Z", "high resolved 2026-01-01T23:10:00Z"], "\(states(r))")
        }
    }

    @Test(
        "flapping series in one slice: every transition logged in output order with its episode; one row per alert, the last, with the rest folded in",
        arguments: Backend.allCases)
    func flappingInOneSlice(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: [rules[0]])
            var batch: [Reading] = []
            for station in ["A", "B", "C"] {
                for (i, v) in [5.0, 11, 4, 12, 3, 13].enumerated() {
                    batch.append(reading(station, "2026-01-01T0\(i):00:00Z", v))
                }
            }
            _ = try await store.readingWriter().write(batch)
            let route: @Sendable (Transition) -> [PlannedDelivery] = { _ in
                [PlannedDelivery(receiver: "ops", route: nil, groupKey: "g")]
            }
            let r = try await store.evaluate(engine: engine, now: t("2026-01-01T06:00:00Z"), route: route)
            #expect(r.transitionCount == 15)
            let log = try await store.transitions()
            #expect(log.count == 15)
            // Ids follow the output order (time, then station).
            #expect(log.map(\.id!) == log.map(\.id!).sorted())
            #expect(log.map { "\($0.station)\($0.state.prefix(1))" }.prefix(6) == ["Af", "Bf", "Cf", "Ar", "Br", "Cr"])
            // Each firing opens an episode under its own id; its resolve belongs to it.
            for (i, r) in log.enumerated() {
                let opener = log[..<i].last { $0.station == r.station && $0.state == "firing" }
                #expect(r.episode == (r.state == "firing" ? r.id : opener?.id))
                #expect(r.startedAt == (r.state == "firing" ? r.at : opener?.at))
            }
            // What is sent is the present: one row per alert (its last transition, queued in the
            // order logged), the alert's earlier states folded into its path.
            let outbox = try await store.outbox(state: nil, limit: 100).sorted { $0.seq < $1.seq }
            #expect(outbox.map(\.transitionID) == Array(log.map(\.id!).suffix(3)), "queued in the order logged")
            #expect(
                outbox.allSatisfy {
                    PathStep.decode($0.path).map(\.state.rawValue) == ["firing", "resolved", "firing", "resolved"]
                })
            let states = try await store.alertStates()
            #expect(states.count == 3 && states.values.allSatisfy { $0.status == .firing })
            // Nothing new: nothing stepped again.
            let again = try await store.evaluate(engine: engine, now: t("2026-01-01T06:00:00Z"), route: route)
            #expect(again.transitionCount == 0)
        }
    }

    @Test("an evaluation writes states, transitions and their outbox rows together", arguments: Backend.allCases)
    func statesTransitionsAndOutboxTogether(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T00:00:00Z", 50), reading("B", "2026-01-01T00:00:00Z", 60),
            ])
            let route: @Sendable (Transition) -> [PlannedDelivery] = { t in
                t.station == "A"
                    ? [
                        PlannedDelivery(receiver: "ops", route: nil, groupKey: "a"),
                        PlannedDelivery(receiver: "chat", route: 0, groupKey: "a"),
                    ] : []
            }
            let r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), route: route)
            #expect(r.transitions.count == 2)
            #expect(r.unrouted.map(\.station) == ["B"])
            let log = try await store.transitions()
            let outbox = try await store.outbox().sorted { $0.seq < $1.seq }
            #expect(outbox.map(\.receiver) == ["ops", "chat"])
            #expect(outbox.map(\.route) == [nil, 0])
            #expect(Set(outbox.map(\.transitionID)) == [log.first { $0.station == "A" }!.id!])
            #expect(outbox.allSatisfy { $0.state == .pending && $0.alert == "high|A|gage_height" })
            #expect(outbox.allSatisfy { $0.dueAt == t("2026-01-01T00:00:00Z") * 1000 })
            #expect(try await store.outboxCounts() == [.pending: 2])
            #expect(try await store.nextDue() == t("2026-01-01T00:00:00Z") * 1000)
            #expect(r.transitionCount == 2)

            // The daemon's way: transitions counted, not kept.
            _ = try await store.readingWriter().write([reading("C", "2026-01-01T00:00:00Z", 70)])
            let counted = try await store.evaluate(
                engine: engine, now: t("2026-01-01T00:00:00Z"), route: route, keepTransitions: false)
            #expect(counted.transitionCount == 1 && counted.transitions.isEmpty)
            #expect(counted.unrouted.map(\.station) == ["C"])
        }
    }

    @Test("a failed evaluation writes nothing: no state, no transition, no outbox row", arguments: Backend.allCases)
    func aFailedEvaluationWritesNothing(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:00:00Z", 50)])
            let route: @Sendable (Transition) -> [PlannedDelivery] = { _ in
                [PlannedDelivery(receiver: "ops", route: nil, groupKey: "a")]
            }
            try await f.breakTransitions()
            await #expect(throws: (any Error).self) {
                _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), route: route)
            }
            try await f.repairTransitions()
            #expect(try await store.transitions().isEmpty)
            #expect(try await store.alertStates().isEmpty)
            #expect(try await store.outbox().isEmpty)
            // The readings are still new: the next evaluation sees them.
            let r = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), route: route)
            #expect(r.newReadings == 1 && r.transitions.count == 1)
            #expect(try await store.outbox().count == 1)
        }
    }

    @Test(
        "a revision of a series' newest reading (an hourly AQI corrected) is evaluated, not dropped as late; an hourly level is not held by min_dwell (issue 39)",
        arguments: Backend.allCases)
    func revisionOfTheNewestHour(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: [
                Rule(name: "air", kind: LevelsRule(metric: "aqi", levels: [], minDwell: 600, scale: .usEPA))
            ])
            let writer = try store.readingWriter()
            func aqi(_ time: String, _ v: Double) -> Reading { reading("Central LA", time, v, metric: "aqi") }
            func brief(_ r: EvaluationResult) -> [String] {
                r.transitions.map {
                    "\($0.transition.state) \($0.transition.level ?? "-") \(Timestamp.format($0.transition.at))"
                }
            }
            _ = try await writer.write([aqi("2026-01-01T10:00:00Z", 40), aqi("2026-01-01T11:00:00Z", 45)])
            var r = try await store.evaluate(engine: engine, now: t("2026-01-01T11:05:00Z"))
            #expect(r.transitions.isEmpty)
            // AirNow corrects the current hour: news, announced at its hour.
            _ = try await writer.write([aqi("2026-01-01T11:00:00Z", 74)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T11:20:00Z"))
            #expect(r.lateReadings == 0)
            #expect(brief(r) == ["firing Moderate 2026-01-01T11:00:00Z"])
            // Nothing new: nothing stepped, nothing late.
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T11:25:00Z"))
            #expect(r.transitions.isEmpty && r.lateReadings == 0)
            // The next hour's new level is announced with that hour, not one later.
            _ = try await writer.write([aqi("2026-01-01T12:00:00Z", 120)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T12:05:00Z"))
            #expect(brief(r) == ["changed Unhealthy for Sensitive Groups 2026-01-01T12:00:00Z"])
            // An older hour revised is still late.
            _ = try await writer.write([aqi("2026-01-01T10:00:00Z", 200)])
            r = try await store.evaluate(engine: engine, now: t("2026-01-01T12:10:00Z"))
            #expect(r.transitions.isEmpty && r.lateReadings == 1)
        }
    }

    @Test(
        "evaluation in slices after a first evaluation: each series' newest reading read again takes no reading's place (issue 39)",
        arguments: Backend.allCases)
    func slicedAfterTheFirst(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            let stations = (0..<5).map { "S\($0)" }
            _ = try await store.readingWriter().write(stations.map { reading($0, "2026-01-01T00:00:00Z", 5) })
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"))
            _ = try await store.readingWriter().write(
                stations.flatMap { s in
                    (1...4).map { reading(s, "2026-01-01T00:0\($0):00Z", $0 == 4 ? 20 : 5) }
                })
            let r = try await store.evaluate(
                Evaluation(
                    engine: engine, quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []),
                    now: t("2026-01-01T00:20:00Z"), queuedAt: 0, render: \.summary, sliceReadings: 3,
                    sliceSeries: 2))
            #expect(r.newReadings == 20 && r.lateReadings == 0)
            #expect(r.transitions.filter { $0.transition.rule == "high" }.count == 5, "every series reached 20")
        }
    }

    @Test("evaluation in slices: each slice commits, the result is the same", arguments: Backend.allCases)
    func slicedEvaluation(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            let stations = (0..<7).map { "S\($0)" }
            _ = try await store.readingWriter().write(
                stations.flatMap { s in
                    [reading(s, "2026-01-01T00:00:00Z", 5), reading(s, "2026-01-01T00:15:00Z", 20)]
                })
            let commits = Counter()
            let r = try await store.evaluate(
                Evaluation(
                    engine: engine, quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []),
                    now: t("2026-01-01T00:20:00Z"), queuedAt: 0, render: \.summary, sliceReadings: 3,
                    sliceSeries: 2), observer: ClosureObserver(committed: { commits.add($0) }))
            #expect(r.newReadings == 14 && r.lateReadings == 0)
            #expect(r.transitions.count == 7)
            #expect(commits.value == 7)
            #expect(try await store.transitions().count == 7)
            let again = try await store.evaluate(engine: engine, now: t("2026-01-01T00:20:00Z"))
            #expect(again.newReadings == 0 && again.transitions.isEmpty)
        }
    }
}

/// Counts from `@Sendable` callbacks.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add(_ n: Int) { count.withLock { $0 += n } }
    var value: Int { count.withLock { $0 } }
}

/// Writers and an evaluator at once: every reading is evaluated once, none skipped.
@Suite(.timeLimit(.minutes(10))) struct ConcurrentIngestTests {
    let engine = RuleEngine(rules: [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10))
    ])
    let start = t("2026-01-01T00:00:00Z")

    /// Writer `w`'s batch `b`: four stations of its own, one reading each, in time order.
    func batch(_ w: Int, _ b: Int) -> [Reading] {
        (0..<4).map { s in
            Reading(
                station: "W\(w)S\(s)", metric: "gage_height", time: start + Int64(b) * 900,
                value: (b + s) % 3 == 0 ? 15 : 5, unit: "ft")
        }
    }

    func log(_ store: any Store) async throws -> [String] {
        try await store.transitions().map { "\($0.station) \($0.state) \($0.at)" }.sorted()
    }

    @Test("every reading written during evaluation is evaluated once, in order", arguments: Backend.allCases)
    func concurrentWritersAndEvaluator(_ backend: Backend) async throws {
        // The reference: everything written, then evaluated once.
        var expected: [String] = []
        try await Backend.sqlite.withStore { f in
            for w in 0..<4 { for b in 0..<25 { _ = try await f.store.readingWriter().write(batch(w, b)) } }
            _ = try await f.store.evaluate(engine: engine, now: start + 86_400)
            expected = try await log(f.store)
        }
        #expect(expected.count > 50)
        try await backend.withStore { f in
            let store = f.store
            let counted = Counter()
            // Four writers while an evaluator runs; then a last evaluation. For the evaluator's cursor
            // to miss nothing, the ingest log must be numbered in commit order.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for w in 0..<4 {
                    group.addTask {
                        let writer = try store.readingWriter()
                        for b in 0..<25 { _ = try await writer.write(batch(w, b)) }
                    }
                }
                group.addTask {
                    for _ in 0..<15 {
                        counted.add(try await store.evaluate(engine: engine, now: start + 86_400).newReadings)
                        await Task.yield()
                    }
                }
                try await group.waitForAll()
            }
            counted.add(try await store.evaluate(engine: engine, now: start + 86_400).newReadings)
            #expect(counted.value == 400)
            #expect(try await log(store) == expected)
        }
    }
}
