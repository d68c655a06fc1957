import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Quake events, trips and weather: each backend stores them and evaluates their rules exactly as
/// SQLite does (each test runs the same story on a reference SQLite store and compares).
@Suite(.timeLimit(.minutes(10))) struct EventConformanceTests {
    func event(_ id: String, ids: [String] = [], updated: Int64, magnitude: Double, status: String = "automatic")
        -> QuakeEvent
    {
        QuakeEvent(
            id: id, ids: ids, time: 1_790_000_000_000, updated: updated, magnitude: magnitude, place: "off the coast",
            latitude: 40.5, longitude: -124.9, depthKm: 10, status: status)
    }

    func describe(_ ts: [Transition]) -> [String] {
        ts.sorted(by: Transition.outputOrder).map {
            "\($0.rule) \($0.station) \($0.metric) \($0.state.rawValue) \($0.level ?? "-") \($0.at) \($0.summary)"
        }
    }

    /// Quake versions arrive (new, revised, merged under another id, deleted), each batch evaluated.
    func quakeStory(_ store: any Store) async throws -> [String] {
        let rules = [
            Rule(name: "big-quakes", kind: QuakeRule(minMagnitude: 5)),
            Rule(name: "any-quake", kind: QuakeRule(minMagnitude: 2.5)),
        ]
        let batches: [[QuakeEvent]] = [
            [
                event("nc1", updated: 1_790_000_100_000, magnitude: 4.8),
                event("ak9", updated: 1_790_000_050_000, magnitude: 2),
            ],
            [event("nc1", updated: 1_790_000_200_000, magnitude: 5.3)],
            [event("us7", ids: ["nc1", "us7"], updated: 1_790_000_300_000, magnitude: 5.4, status: "reviewed")],
            [event("ak9", updated: 1_790_000_400_000, magnitude: 3.1)],
            [event("ak9", updated: 1_790_000_400_000, magnitude: 3.1)],
            [event("ak9", updated: 1_790_000_500_000, magnitude: 3.1, status: "deleted")],
        ]
        var out: [String] = []
        for (i, batch) in batches.enumerated() {
            // The last batch arrives through a source's batch, like a fetch.
            if i == batches.count - 1 {
                var b = SourceBatch()
                b.quakes = batch
                let s = try await store.write(b, source: "usgs-quakes", cursor: nil, at: 1_790_001_000 + Int64(i))
                out.append("batch \(s.events.new) \(s.events.revised) \(s.events.unchanged) \(s.inserted)")
            } else {
                let s = try await store.write(quakes: batch, at: 1_790_001_000 + Int64(i))
                out.append("quakes \(s.new) \(s.revised) \(s.unchanged) \(s.conflicts.count)")
            }
            let r = try await store.evaluate(
                Evaluation(
                    engine: RuleEngine(rules: []), quakes: QuakeRunner(rules: rules), trips: TripRunner(rules: []),
                    now: 1_790_001_000 + Int64(i), queuedAt: 0, render: \.summary))
            out += describe(r.transitions.map(\.transition))
        }
        out += try await store.quakes().map { "\($0.key) \($0.event.magnitude ?? 0) \($0.event.status)" }
        out += try await store.quakeRevisions().map { "\($0.key) \($0.event.updated)" }
        out += try await store.quakeRevisionCounts().sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        return out
    }

    @Test("quake versions, revisions and evaluation", arguments: Backend.allCases)
    func quakes(_ backend: Backend) async throws {
        var expected: [String] = []
        try await Backend.sqlite.withStore { expected = try await quakeStory($0.store) }
        #expect(expected.count > 10)
        try await backend.withStore { f in
            let got = try await quakeStory(f.store)
            #expect(got == expected)
        }
    }

    /// Trips saved, weather and an alert stored, trip-packing rules evaluated twice.
    func tripStory(_ store: any Store) async throws -> [String] {
        let rules = [Rule(name: "packing", kind: TripPackingRule())]
        let now = Timestamp.parse("2026-11-25T00:00:00Z")!
        for (name, place, lat, lon) in [("denver", "Denver", 39.7392, -104.9903), ("miami", "Miami", 25.76, -80.19)] {
            try await store.save(
                trip: Trip(
                    name: name, owner: "alice",
                    stops: [.init(place: place, latitude: lat, longitude: lon, arrive: "2026-12-01", nights: 2)]),
                at: now)
        }
        var out: [String] = []
        do {
            try await store.save(trip: Trip(name: "miami", owner: "alice", stops: []), at: now)
            out.append("saved twice")
        } catch {
            out.append("\(error)")
        }
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
        let alert = PlaceAlert(
            place: "25.76,-80.19", alert: WeatherAlert(id: "nws-1", event: "Hurricane Warning", severity: "Extreme"))
        out.append("weather \(try await store.write(weather: weather, alerts: [alert]))")
        out.append("again \(try await store.write(weather: weather, alerts: [alert]))")
        func evaluate(_ at: Int64) async throws {
            let r = try await store.evaluate(
                Evaluation(
                    engine: RuleEngine(rules: []), quakes: QuakeRunner(rules: []), trips: TripRunner(rules: rules),
                    now: at, queuedAt: 0, render: \.summary))
            out += describe(r.transitions.map(\.transition))
        }
        try await evaluate(now)
        // Colder in Denver: its list changes.
        var colder = weather[0]
        colder.tempMinC = -25
        colder.issued = now + 3600
        out.append("colder \(try await store.write(weather: [colder], alerts: []))")
        try await evaluate(now + 7200)
        let denver = try #require(try await store.trip(owner: "alice", name: "denver"))
        out += try await store.weather(for: denver).map { "\($0.place) \($0.date) \(String(describing: $0.tempMinC))" }
        let miami = try #require(try await store.trip(owner: "alice", name: "miami"))
        out += try await store.alerts(for: miami).map { "\($0.stop) \($0.alert.id)" }
        out += try await store.trips(owner: nil).map { "\($0.owner)/\($0.name)" }
        out += try await store.forecasts(place: "25.76,-80.19").map(\.date)
        out.append(
            "announced \(try await store.tripAnnouncement(rule: "packing", owner: "alice", name: "denver") != nil)")
        out += try await store.tripHistory(owner: "alice", name: "denver", limit: 10).map { "\($0.rule) \($0.state)" }
        out.append("removed \(try await store.removeTrip(owner: "alice", name: "denver"))")
        out.append("removed \(try await store.removeTrip(owner: "alice", name: "denver"))")
        out += try await store.trips(owner: "alice").map(\.name)
        return out
    }

    @Test("trips, weather and alerts, and trip-packing evaluation", arguments: Backend.allCases)
    func trips(_ backend: Backend) async throws {
        var expected: [String] = []
        try await Backend.sqlite.withStore { expected = try await tripStory($0.store) }
        #expect(expected.contains { $0.hasPrefix("packing alice/denver") })
        try await backend.withStore { f in
            let got = try await tripStory(f.store)
            #expect(got == expected)
        }
    }
}
