import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Alert episodes and "notify the present" (`Episodes.swift`), the same on every backend.
@Suite("conformance: episodes, folding, held rows, what a receiver heard", .serialized)
struct EpisodeConformanceTests {
    let engine = RuleEngine(rules: [
        Rule(
            name: "flood",
            kind: LevelsRule(
                metric: "gage_height",
                levels: [.init(name: "action", at: 9), .init(name: "minor", at: 11), .init(name: "moderate", at: 13)]))
    ])

    static func route(maxAge: Int64 = 0) -> @Sendable (Transition) -> [PlannedDelivery] {
        { _ in [PlannedDelivery(receiver: "ops", route: nil, groupKey: "g", maxAge: maxAge)] }
    }

    @Test(
        "an episode keeps one id across evaluations; ack takes it (or any of its transitions' ids) and holds until the resolve",
        arguments: Backend.allCases)
    func oneIdentity(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            var now = t("2026-01-01T00:00:00Z")
            for (i, v) in [9.5, 11.5, 13.5].enumerated() {
                _ = try await store.readingWriter().write([reading("A", "2026-01-01T0\(i):00:00Z", v)])
                now = t("2026-01-01T0\(i):00:00Z")
                _ = try await store.evaluate(engine: engine, now: now, route: Self.route())
            }
            let log = try await store.transitions()
            try #require(log.count == 3)
            let episode = try #require(log[0].id)
            #expect(log.map(\.episode) == [episode, episode, episode])
            #expect(log.map(\.startedAt) == Array(repeating: t("2026-01-01T00:00:00Z"), count: 3))
            let firing = try #require(try await store.firingAlerts(limit: 10, after: nil).alerts.first)
            #expect(firing.episode == episode && firing.startedAt == t("2026-01-01T00:00:00Z"))
            #expect(firing.transition.level == "moderate" && firing.transition.at == t("2026-01-01T02:00:00Z"))
            // What a transition carries beyond its columns (`extra`) reads back as written, and every
            // transition of the episode carries the headline it opened with (a stable mail subject).
            let logged = log.map(\.transition)
            #expect(
                logged.map(\.headline) == [
                    "action stage", "minor flood stage, up from action", "moderate flood stage, up from minor",
                ])
            #expect(logged.map(\.opening) == Array(repeating: "action stage", count: 3))
            #expect(logged[2].details.contains("previous level minor (11)"))
            #expect(logged[2].explanation == "13.5 ft is at or above moderate flood stage (13 ft)")
            #expect(firing.transition.opening == "action stage")

            // The episode's id, or a later transition's (an older message's), acks it; a made-up id does not.
            #expect(try await store.ack(transitionID: episode, by: "a", at: now) != nil)
            #expect(try await store.ack(transitionID: log[2].id!, by: "b", at: now) != nil)
            #expect(try await store.ack(transitionID: 99_999, by: "c", at: now) == nil)
            // The first ack of the episode holds: a second one does not replace who acked (issue 39).
            #expect(try await store.acks().values.map(\.by) == ["a"])
            // A new level does not lift the ack; the resolve ends it, and the next episode has a new id.
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T03:00:00Z", 11.5)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T03:00:00Z"), route: Self.route())
            #expect(try await store.acks().count == 1)
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T04:00:00Z", 5), reading("A", "2026-01-01T05:00:00Z", 10),
            ])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T05:00:00Z"), route: Self.route())
            #expect(try await store.acks().isEmpty)
            let after = try await store.transitions()
            let next = try #require(after.last)
            #expect(next.state == "firing" && next.episode == next.id && next.episode != episode)
            #expect(try await store.ack(transitionID: episode, by: "a", at: now) == nil, "that episode is over")

            // The episode's page: its transitions and their notifications.
            let history = try #require(try await store.episode(log[1].id!))
            #expect(history.id == episode)
            #expect(history.transitions.map(\.id) == after.prefix(5).map(\.id))
            #expect(!history.deliveries.isEmpty)
        }
    }

    @Test(
        "rows of one alert not yet sent are folded into the newest; old data is held, then sent only if it is news",
        arguments: Backend.allCases)
    func foldAndHold(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            // Two evaluations before any claim: the second's row takes the first's place.
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:00:00Z", 9.5)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"), route: Self.route())
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:10:00Z", 11.5)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:10:00Z"), route: Self.route())
            var rows = try await store.outbox().sorted { $0.seq < $1.seq }
            #expect(rows.map(\.state) == [.superseded, .pending])
            #expect(PathStep.decode(rows[1].path).map(\.level) == ["action"])
            let claimed = try await store.claim(now: t("2026-01-01T00:10:00Z") * 1000 + 1, lease: 60_000)
            #expect(claimed.flatMap(\.rows).map(\.id) == [rows[1].id])
            #expect(claimed.first?.rows.first?.heard == nil, "nothing heard yet")
            try await store.apply([
                .finish(claimed[0], state: .sent, now: t("2026-01-01T00:10:00Z") * 1000 + 2, retryAt: nil, error: nil)
            ])

            // Data three hours old with a one-hour limit: held, then decided once caught up.
            let old = Self.route(maxAge: 3600)
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T01:00:00Z", 13.5)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T04:00:00Z"), route: old)
            rows = try await store.outbox().sorted { $0.seq < $1.seq }
            #expect(rows.last?.state == .pending, "moderate is news to a receiver that heard minor: sent, late")
            let late = try await store.claim(now: t("2026-01-01T04:00:00Z") * 1000 + 1, lease: 60_000)
            #expect(late.flatMap(\.rows).map(\.id) == [rows.last?.id])
            try await store.apply([
                .finish(late[0], state: .sent, now: t("2026-01-01T04:00:00Z") * 1000 + 2, retryAt: nil, error: nil)
            ])
            // Down and back up, all old: the newest is what the receiver heard; nothing to send.
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T01:10:00Z", 11.5), reading("A", "2026-01-01T01:20:00Z", 13.5),
            ])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T04:00:00Z"), route: old)
            rows = try await store.outbox().sorted { $0.seq < $1.seq }
            #expect(rows.allSatisfy { $0.state != .held && $0.state != .pending })
            #expect(rows.last?.state == .skipped)
            #expect(PathStep.decode(rows.last?.path).map(\.level) == ["minor"])
        }
    }

    @Test(
        "a quake older than notify_max_age is recorded, not sent (an event never resolves); a fresh one, and a fresh revision of an old one, are sent (issue 39)",
        arguments: Backend.allCases)
    func oldQuakesAreNotNews(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let now = t("2026-01-01T00:00:00Z")
            let rules = [Rule(name: "quakes", kind: QuakeRule(minMagnitude: 4.5))]
            func quake(_ id: String, time: Int64, updated: Int64, alert: String? = nil) -> QuakeEvent {
                QuakeEvent(
                    id: id, time: time * 1000, updated: updated * 1000, magnitude: 6, place: "off the coast",
                    latitude: 40.5, longitude: -124.9, depthKm: 10, alert: alert)
            }
            func evaluate(_ at: Int64) async throws -> [String] {
                let r = try await store.evaluate(
                    Evaluation(
                        engine: RuleEngine(rules: []), quakes: QuakeRunner(rules: rules), trips: TripRunner(rules: []),
                        now: at, queuedAt: at * 1000, render: \.summary, route: Self.route(maxAge: 3600)))
                return r.transitions.map { "\($0.transition.station) \($0.transition.state.rawValue)" }
            }
            func queued() async throws -> [String] {
                let log = Dictionary(uniqueKeysWithValues: try await store.transitions().map { ($0.id!, $0) })
                return try await store.outbox().sorted { $0.seq < $1.seq }.map {
                    "\(log[$0.transitionID]?.station ?? "?") \(log[$0.transitionID]?.state ?? "?") \($0.state.rawValue)"
                }
            }
            // A first start reads a month's feed: last month's quake is recorded, today's is sent.
            _ = try await store.write(
                quakes: [
                    quake("old", time: now - 30 * 86_400, updated: now - 29 * 86_400),
                    quake("new", time: now - 600, updated: now - 300),
                ], at: now)
            #expect(try await evaluate(now).sorted() == ["new firing", "old firing"], "both are recorded")
            #expect(try await queued() == ["new firing pending"], "only the fresh one is queued")
            #expect(try await queued() == ["new firing pending"])

            // USGS revises the old quake now (PAGER orange): the revision is news, by its own time.
            _ = try await store.write(
                quakes: [quake("old", time: now - 30 * 86_400, updated: now + 600, alert: "orange")], at: now + 600)
            #expect(try await evaluate(now + 900) == ["old changed"])
            #expect(try await queued() == ["new firing pending", "old changed pending"])

            // A revision published long ago, read only now, is not.
            _ = try await store.write(
                quakes: [quake("older", time: now - 40 * 86_400, updated: now - 39 * 86_400)], at: now + 900)
            _ = try await evaluate(now + 900)
            _ = try await store.write(
                quakes: [quake("older", time: now - 40 * 86_400, updated: now - 38 * 86_400, alert: "red")],
                at: now + 900)
            #expect(try await evaluate(now + 900) == ["older changed"])
            #expect(try await queued() == ["new firing pending", "old changed pending"])
        }
    }

    @Test(
        "an alert that keeps changing inside group_wait is sent when its group's wait ends, not put off by each change",
        arguments: Backend.allCases)
    func foldingKeepsTheGroupsTime(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let route: @Sendable (Transition) -> [PlannedDelivery] = { _ in
                [PlannedDelivery(receiver: "ops", route: nil, groupKey: "g", groupWait: 30)]
            }
            let start = t("2026-01-01T00:00:00Z")
            for (i, v) in [9.5, 11.5, 13.5].enumerated() {
                let at = start + Int64(i) * 20
                _ = try await store.readingWriter().write([
                    Reading(station: "A", metric: "gage_height", time: at, value: v)
                ]
                )
                _ = try await store.evaluate(engine: engine, now: at, route: route)
            }
            let rows = try await store.outbox().sorted { $0.seq < $1.seq }
            #expect(rows.map(\.state) == [.superseded, .superseded, .pending])
            #expect(rows.last?.dueAt == (start + 30) * 1000, "due when the first change's wait ends")
            #expect(PathStep.decode(rows.last?.path).compactMap(\.level) == ["action", "minor"])
        }
    }
}
