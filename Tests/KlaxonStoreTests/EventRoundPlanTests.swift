import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// The event rounds a backend executes: what each asks to read, and the plan it returns (the
/// announcements to save, the transitions to log), with no store at all.
@Suite struct EventRoundPlanTests {
    let quakeRules = [
        Rule(name: "big-quakes", kind: QuakeRule(minMagnitude: 5)),
        Rule(name: "any-quake", kind: QuakeRule(minMagnitude: 2.5)),
    ]

    func json(_ e: QuakeEvent) throws -> String { String(decoding: try JSONEncoder().encode(e), as: UTF8.self) }

    func event(_ id: String, updated: Int64, magnitude: Double) -> QuakeEvent {
        QuakeEvent(
            id: id, ids: [], time: 1_790_000_000_000, updated: updated, magnitude: magnitude, place: "off the coast",
            latitude: 40.5, longitude: -124.9, depthKm: 10, status: "automatic")
    }

    @Test(
        "a quake round reads each event's announcement per rule once, passes over a version that does not decode, saves only what changed"
    )
    func quakeRound() throws {
        let runner = QuakeRunner(rules: quakeRules)
        let rows = [
            (key: "nc1", event: try json(event("nc1", updated: 1_790_000_100_000, magnitude: 4.8)), seq: Int64(11)),
            (key: "ak9", event: "{not json", seq: Int64(12)),
            (key: "nc1", event: try json(event("nc1", updated: 1_790_000_200_000, magnitude: 5.3)), seq: Int64(13)),
        ]
        let round = EventRounds.QuakeRound(rows: rows, after: 10, runner: runner)
        #expect(round.cursor == 13 && !round.more)
        // One event that decodes, two rules: two announcements to read, none for the broken version.
        #expect(round.wanted.map { $0.map(\.value) } == [["big-quakes", "nc1"], ["any-quake", "nc1"]])
        #expect(round.wanted.allSatisfy { $0.map(\.column) == ["rule", "event_id"] })

        let first = round.plan(announced: [nil, nil])
        #expect(first.table == EventRounds.quakeTable && first.events)
        #expect(first.transitions.contains { $0.rule == "any-quake" })
        #expect(first.transitions.contains { $0.rule == "big-quakes" })
        // Each rule saved once, though it spoke twice (4.8 then 5.3).
        #expect(
            first.saves.map { $0.key.map(\.value) }.sorted { $0[0] < $1[0] } == [
                ["any-quake", "nc1"], ["big-quakes", "nc1"],
            ])

        // The same versions again, with what was saved: nothing is news, nothing saved.
        let saved = Dictionary(uniqueKeysWithValues: first.saves.map { ($0.key[0].value, $0.json) })
        let again = round.plan(announced: round.wanted.map { saved[$0[0].value] })
        #expect(again.transitions.isEmpty && again.saves.isEmpty)
    }

    @Test("a quake round that read a full slice says more wait")
    func quakeRoundFull() throws {
        let body = try json(event("nc1", updated: 1_790_000_100_000, magnitude: 4.8))
        let rows = (1...EventRounds.quakeSlice).map { (key: "nc1", event: body, seq: Int64($0)) }
        let round = EventRounds.QuakeRound(rows: rows, after: 0, runner: QuakeRunner(rules: quakeRules))
        #expect(round.more && round.cursor == Int64(EventRounds.quakeSlice))
        #expect(round.wanted.count == 2)
    }

    @Test("a trip round reads the trips not ended, their announcement per rule, and saves the lists that changed")
    func tripRound() throws {
        let now = Timestamp.parse("2026-11-25T00:00:00Z")!
        let ahead = Trip(
            name: "denver", owner: "alice",
            stops: [.init(place: "Denver", latitude: 39.7392, longitude: -104.9903, arrive: "2026-12-01", nights: 2)])
        let ended = Trip(
            name: "paris", owner: "alice",
            stops: [.init(place: "Paris", latitude: 48.85, longitude: 2.35, arrive: "2026-01-01", nights: 2)])
        let runner = TripRunner(rules: [Rule(name: "packing", kind: TripPackingRule())])
        let round = EventRounds.TripRound(trips: [ended, ahead], runner: runner, now: now)
        #expect(round.trips.map(\.name) == ["denver"])
        #expect(round.wanted.map { $0.map(\.value) } == [["packing", "alice", "denver"]])

        let weather = ["2026-12-01", "2026-12-02", "2026-12-03"].map { date in
            DayWeather(
                place: "39.7392,-104.9903", date: date, tempMaxC: -2, tempMinC: -12, precipitationMm: 8,
                precipitationProbability: 80, snowfallCm: 6, windMaxKmh: 30, weatherCode: 73, source: "open-meteo",
                issued: now)
        }
        let first = round.plan([(weather, [])], announced: [nil])
        #expect(first.table == EventRounds.tripTable && !first.events)
        #expect(first.transitions.count == 1 && first.transitions[0].rule == "packing")
        #expect(first.saves.map { $0.key.map(\.value) } == [["packing", "alice", "denver"]])

        let again = round.plan([(weather, [])], announced: [first.saves[0].json])
        #expect(again.transitions.isEmpty && again.saves.isEmpty)
    }

    @Test(
        "settling held rows: the present that is news goes out; a step on the way, or old news, is skipped and counted")
    func heldSettlement() {
        var settle = HeldSettlement()
        // The alert's newest transition, never heard: sent.
        settle.add(id: "a", state: "firing", level: "minor", episode: 1, latest: true, heard: nil)
        // A later state followed: skipped.
        settle.add(id: "b", state: "firing", level: "minor", episode: 2, latest: false, heard: nil)
        // Heard already, same episode and level: nothing new, skipped.
        settle.add(
            id: "c", state: "firing", level: "minor", episode: 3, latest: true,
            heard: Heard(episode: 3, state: .firing, level: "minor"))
        // A resolve the receiver never heard fire: skipped.
        settle.add(id: "d", state: "resolved", level: nil, episode: 4, latest: true, heard: nil)
        #expect(settle.send == ["a"])
        #expect(settle.skip.map(\.id) == ["b", "c", "d"])
        #expect(settle.skip[0].reason == HeldRow.skipReason(latest: false))
        #expect(settle.skip[1].reason == HeldRow.skipReason(latest: true))
        #expect(settle.deltas.rows.map { "\($0.key.family) \($0.key.a) \($0.n)" } == ["outbox skipped 3"])
    }
}
