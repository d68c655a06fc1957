import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore
import Synchronization
import Testing

/// `evaluate` (the daemon's path) and `dry-run` run quake and trip rules through one runner: fed the
/// same events, they announce the same transitions.
@Suite("one runner for evaluate and dry-run")
struct SharedRunnerTests {
    func event(_ id: String, ids: [String] = [], updated: Int64, magnitude: Double, status: String = "automatic")
        -> QuakeEvent
    {
        QuakeEvent(
            id: id, ids: ids, time: 1_790_000_000_000, updated: updated, magnitude: magnitude, place: "off the coast",
            latitude: 40.5, longitude: -124.9, depthKm: 10, status: status)
    }

    @Test("quake versions: new, revised, merged under another id, deleted")
    func quakes() async throws {
        let rules = [
            Rule(name: "big-quakes", kind: QuakeRule(minMagnitude: 5)),
            Rule(name: "any-quake", kind: QuakeRule(minMagnitude: 2.5)),
        ]
        // Arrival batches, as polls would store them.
        let batches: [[QuakeEvent]] = [
            [
                event("nc1", updated: 1_790_000_100_000, magnitude: 4.8),
                event("ak9", updated: 1_790_000_050_000, magnitude: 2),
            ],
            [event("nc1", updated: 1_790_000_200_000, magnitude: 5.3)],
            // The same event, now preferred under another network's id, and reviewed.
            [event("us7", ids: ["nc1", "us7"], updated: 1_790_000_300_000, magnitude: 5.4, status: "reviewed")],
            [event("ak9", updated: 1_790_000_400_000, magnitude: 3.1)],
            [event("ak9", updated: 1_790_000_500_000, magnitude: 3.1, status: "deleted")],
        ]
        let store = try tempStore()
        var evaluated: [Transition] = []
        for (i, batch) in batches.enumerated() {
            try await store.write(quakes: batch, at: 1_790_001_000 + Int64(i))
            evaluated += try await Evaluate.run(store: store, rules: rules, now: 1_790_001_000 + Int64(i)).transitions
                .map(
                    \.transition)
        }
        let stored = try await store.quakeRevisions().map { (key: Optional($0.key), event: $0.event) }
        let replayed = DryRun(rules: rules).replay(quakes: stored)
        #expect(evaluated.count >= 4)
        #expect(describe(evaluated) == describe(replayed))
        // Events files carry no stored key: dry-run merges by id and aliases the way the store does.
        let fromFiles = DryRun(rules: rules).replay(quakes: batches.flatMap { $0 }.map { (nil, $0) })
        #expect(describe(fromFiles) == describe(evaluated))
    }

    @Test("trips: the same lists and changes from evaluate and dry-run")
    func trips() async throws {
        let rules = [Rule(name: "packing", kind: TripPackingRule())]
        let store = try tempStore()
        let now = Timestamp.parse("2026-11-25T00:00:00Z")!
        for (name, place, lat, lon) in [("denver", "Denver", 39.7392, -104.9903), ("miami", "Miami", 25.76, -80.19)] {
            try await store.save(
                trip: Trip(
                    name: name, owner: "alice",
                    stops: [.init(place: place, latitude: lat, longitude: lon, arrive: "2026-12-01", nights: 2)]),
                at: now)
        }
        // An ended trip: neither path says anything about it.
        try await store.save(
            trip: Trip(
                name: "past", owner: "bob",
                stops: [
                    .init(place: "Denver", latitude: 39.7392, longitude: -104.9903, arrive: "2026-10-01", nights: 1)
                ]),
            at: now)
        let weather = ["2026-12-01", "2026-12-02", "2026-12-03"].flatMap { date in
            [
                DayWeather(
                    place: "39.7392,-104.9903", date: date, tempMaxC: -2, tempMinC: -12, precipitationMm: 8,
                    precipitationProbability: 80, snowfallCm: 6, windMaxKmh: 30, weatherCode: 73, source: "open-meteo",
                    issued: now),
                DayWeather(
                    place: "25.76,-80.19", date: date, tempMaxC: 29, tempMinC: 22, precipitationMm: 0,
                    precipitationProbability: 10, snowfallCm: 0, windMaxKmh: 15, weatherCode: 1, source: "open-meteo",
                    issued: now),
            ]
        }
        try await store.write(weather: weather)
        let evaluated = try await Evaluate.run(store: store, rules: rules, now: now).transitions.map(\.transition)
        let replayed = try await DryRun(rules: rules).replay(trips: store, now: now)
        #expect(evaluated.count == 2)
        #expect(describe(evaluated) == describe(replayed))
    }

    func describe(_ ts: [Transition]) -> [String] {
        ts.sorted(by: Transition.outputOrder).map {
            "\($0.rule) \($0.station) \($0.metric) \($0.state.rawValue) \($0.level ?? "-") \($0.at) \($0.summary)"
        }
    }
}

/// A backlog is evaluated in bounded slices: the outcome is the one a single transaction gives.
@Suite("evaluation in slices")
struct EvaluationSliceTests {
    @Test("tiny slices give the same transitions, states and counts as one slice")
    func slicesMatchOneTransaction() async throws {
        let rules = [
            Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
            Rule(name: "rising", kind: RateRule(metric: "gage_height", direction: .rising, threshold: 3)),
            Rule(name: "quiet", kind: StaleRule(metric: "gage_height", after: 7_200)),
        ]
        func load(_ store: any Store) async throws {
            var readings: [Reading] = []
            let start = Timestamp.parse("2026-03-01T00:00:00Z")!
            for s in 0..<12 {
                // Station 0 goes quiet early (stale); the others rise through the threshold and fall back.
                let count = s == 0 ? 3 : 40
                for i in 0..<count {
                    let v = 6 + 6 * sin(Double(i + s) / 5)
                    readings.append(
                        Reading(
                            station: "S\(s)", metric: "gage_height", time: start + Int64(i) * 900, value: v, unit: "ft")
                    )
                }
            }
            _ = try await store.readingWriter().write(readings)
        }
        let now = Timestamp.parse("2026-03-01T12:00:00Z")!
        var outcomes: [(transitions: [String], late: Int, new: Int, states: [String])] = []
        for (slice, transitions) in [(50_000, 1_000), (7, 1_000), (1, 1_000), (50_000, 1), (50_000, 3)] {
            let store = try tempStore()
            try await load(store)
            let committed = Mutex(0)
            let r = try await Evaluate.run(
                store: store, rules: rules, now: now, sliceReadings: slice, sliceTransitions: transitions,
                observer: ClosureObserver(committed: { n in committed.withLock { $0 += n } }))
            // Every logged transition was announced as its transaction committed.
            #expect(committed.withLock { $0 } == r.transitions.count)
            let states = try await store.alertStates().map { "\($0.key.rule) \($0.key.station) \($0.value.status)" }
            outcomes.append(
                (
                    r.transitions.map {
                        "\($0.transition.rule) \($0.transition.station) \($0.transition.state) \($0.transition.at)"
                    },
                    r.lateReadings, r.newReadings, states.sorted()
                ))
            // Evaluating again finds nothing new: no slice stepped a reading twice.
            let again = try await Evaluate.run(store: store, rules: rules, now: now, sliceReadings: slice)
            #expect(again.transitions.isEmpty && again.newReadings == 0)
        }
        #expect(outcomes[0].transitions.count > 10)
        #expect(outcomes[0].new == 3 + 11 * 40)
        for o in outcomes.dropFirst() {
            #expect(o.transitions == outcomes[0].transitions)
            #expect(o.late == outcomes[0].late && o.new == outcomes[0].new)
            #expect(o.states == outcomes[0].states)
        }
    }
}
