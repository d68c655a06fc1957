import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Synchronization
import Testing

/// An evaluation hands the rows it queues to this process's dispatcher (`Dispatcher.handoffRoom`),
/// claimed in the slice's own transaction: the claim the dispatcher would have made, under the
/// claim's own rules (a resolve waits for its firing, a group goes as one batch).
@Suite(.serialized, .timeLimit(.minutes(10))) struct HandoffTests {
    static let start = Timestamp.parse("2026-03-01T06:00:00Z")!

    /// A firing and its resolve for A, one alert for C; two rules on B that share B's group.
    let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "level", direction: .above, threshold: 100)),
        Rule(
            name: "very-high", kind: ThresholdRule(metric: "level", stations: ["B"], direction: .above, threshold: 140)),
    ]
    let readings = [
        Reading(station: "A", metric: "level", time: start, value: 150, unit: "ft"),
        Reading(station: "A", metric: "level", time: start + 900, value: 50, unit: "ft"),
        Reading(station: "B", metric: "level", time: start, value: 150, unit: "ft"),
        Reading(station: "C", metric: "level", time: start, value: 120, unit: "ft"),
    ]

    let routing = Routing(routes: [Route(receivers: ["hook"], groupBy: ["station"])])

    func evaluate(
        _ store: any Store, handoff: some EvaluationObserver, sliceTransitions: Int = 1_000,
        queuedAt: Int64 = nowMillis()
    ) async throws -> EvaluationResult {
        let routing = self.routing
        let e = Evaluation(
            engine: RuleEngine(rules: rules), quakes: QuakeRunner(rules: rules), trips: TripRunner(rules: rules),
            now: Self.start + 3_600, queuedAt: queuedAt, render: { $0.summary },
            route: { routing.plan(for: $0, notify: ["hook"]) }, sliceTransitions: sliceTransitions)
        return try await store.evaluate(e, observer: handoff)
    }

    /// A dispatcher's side of the handoff, by hand: `room` and `take` as given.
    struct Handoff: EvaluationObserver {
        let instance: String
        let lease: Int64
        let clock: @Sendable () -> Int64
        let room: @Sendable () -> (limit: Int, excluding: [String])?
        let accept: @Sendable ([OutboxBatch]) -> Bool

        init(
            instance: String, lease: Int64, clock: @escaping @Sendable () -> Int64,
            room: @escaping @Sendable () -> (limit: Int, excluding: [String])?,
            take: @escaping @Sendable ([OutboxBatch]) -> Bool
        ) {
            self.instance = instance
            self.lease = lease
            self.clock = clock
            self.room = room
            accept = take
        }

        func handoffRoom() -> HandoffRoom? {
            room().map {
                HandoffRoom(instance: instance, lease: lease, now: clock(), limit: $0.limit, excluding: $0.excluding)
            }
        }
        func take(_ batches: [OutboxBatch]) -> Bool { accept(batches) }
    }

    @Test(
        "the slice claims what is due for the dispatcher: leased, its instance, a group in one batch, a firing and its resolve folded into one row"
    )
    func sliceClaimsForTheDispatcher() async throws {
        let fixture = try OutboxFixture()
        _ = try await fixture.store.readingWriter().write(readings)
        let taken = Mutex<[OutboxBatch]>([])
        let clock: Int64 = nowMillis()
        let handoff = Handoff(
            instance: "me", lease: 7_000, clock: { clock }, room: { (100, []) },
            take: { batches in
                taken.withLock { $0 += batches }
                return true
            })
        let result = try await evaluate(fixture.store, handoff: handoff, queuedAt: clock)
        #expect(result.transitionCount == 5)

        let batches = taken.withLock { $0 }
        try #require(batches.count == 3)
        // B's two alerts in one batch, C's firing, and A's resolve with its firing folded in (queue
        // order is transition order: A's resolve is the slice's last).
        #expect(
            batches.map { $0.rows.map(\.alert) } == [
                ["high|B|level", "very-high|B|level"], ["high|C|level"], ["high|A|level"],
            ])
        let a = try #require(batches[2].rows.first)
        #expect(PathStep.decode(a.path).map(\.state) == [.firing])
        #expect(batches[2].transitions.map(\.state) == ["resolved"])
        #expect(batches.allSatisfy { $0.transitions.map(\.id) == $0.rows.map { Optional($0.transitionID) } })
        #expect(batches.allSatisfy { $0.attempt == 1 && $0.key == $0.rows[0].id })
        #expect(batches[0].transitions.map(\.rule) == ["high", "very-high"])
        let rows = try await fixture.store.outbox()
        #expect(rows.count == 4)
        for batch in batches {
            for row in batch.rows {
                let stored = try #require(rows.first { $0.id == row.id })
                #expect(stored.state == .sending && stored.batch == batch.key && stored.attempts == 1)
                #expect(stored.leaseUntil == clock + 7_000)
            }
        }
        #expect(rows.filter { $0.state == .pending }.isEmpty)
        // The claims are the instance's: a dispatcher that took them back would name "me".
        let other = try await fixture.store.claim(
            now: clock + 1, lease: 1_000, limit: 100, instance: "other", excluding: [])
        #expect(other.isEmpty, "every row is in flight")
    }

    @Test("no room, a full lane or a row not yet due: queued pending, for a claim")
    func noRoomQueuesPending() async throws {
        let fixture = try OutboxFixture()
        _ = try await fixture.store.readingWriter().write(readings)
        let offered = Atomic(0)
        let handoff = Handoff(
            instance: "me", lease: 7_000, clock: { nowMillis() },
            room: { offered.add(1, ordering: .relaxed).newValue == 1 ? (1, []) : nil },
            take: { _ in true })
        // One slice per transition: the first is offered room for one row, the rest none.
        _ = try await evaluate(fixture.store, handoff: handoff, sliceTransitions: 1)
        let rows = try await fixture.store.outbox()
        #expect(rows.filter { $0.state == .sending }.count == 1)
        #expect(rows.filter { $0.state == .pending }.count == 3)

        let lanes = try OutboxFixture()
        _ = try await lanes.store.readingWriter().write(readings)
        let full = Handoff(
            instance: "me", lease: 7_000, clock: { nowMillis() }, room: { (100, ["hook"]) }, take: { _ in true })
        _ = try await evaluate(lanes.store, handoff: full)
        #expect(try await lanes.store.outbox().allSatisfy { $0.state == .pending })
    }

    @Test("a dispatcher that has stopped takes nothing: the evaluation gives the rows back, pending")
    func stoppedDispatcherTakesNothing() async throws {
        let fixture = try OutboxFixture()
        _ = try await fixture.store.readingWriter().write(readings)
        let handoff = Handoff(
            instance: "me", lease: 7_000, clock: { nowMillis() }, room: { (100, []) }, take: { _ in false })
        _ = try await evaluate(fixture.store, handoff: handoff)
        let rows = try await fixture.store.outbox()
        #expect(rows.count == 4 && rows.allSatisfy { $0.state == .pending && $0.leaseUntil == nil })

        // A dispatcher that is not running offers no room and takes nothing.
        let idle = Dispatcher(store: fixture.store, notifiers: [:], routing: Routing())
        #expect(idle.handoffRoom() == nil)
        #expect(!idle.take([]))
    }

    @Test(
        "the running dispatcher sends what the evaluation handed it, each once; a resolve after its firing was heard, none for a firing never sent"
    )
    func dispatcherSendsWhatWasHanded() async throws {
        try await HTTPSink.with { sink in try await dispatcherSendsWhatWasHanded(sink: sink) }
    }

    func dispatcherSendsWhatWasHanded(sink: HTTPSink) async throws {
        // Claims last an hour: what was handed over goes out at once only if the dispatcher took it
        // (a claim left stranded would wait out its lease, past the test's limit).
        let longLeaseSettings = fastSettings(lease: longLease)
        let fixture = try OutboxFixture()
        // A's resolve comes in a later evaluation, after its firing went out.
        let later = readings.filter { $0.station == "A" && $0.value < 100 }
        _ = try await fixture.store.readingWriter().write(readings.filter { !later.contains($0) })
        let dispatcher = Dispatcher(
            store: fixture.store,
            notifiers: ["hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h")))],
            routing: routing, settings: longLeaseSettings)
        let stop = Atomic(false)
        let running = Task { try await dispatcher.run(poll: 50, stop: { stop.load(ordering: .relaxed) }) }
        let result = await Result {
            // The dispatcher offers room once it has registered its instance.
            try await poll(until: "the dispatcher offers room") { dispatcher.handoffRoom() != nil }
            _ = try await evaluate(fixture.store, handoff: dispatcher, sliceTransitions: 1)
            try await poll(until: "3 requests") { await sink.requests().count >= 3 }
            try await poll(until: "every row recorded sent") {
                try await fixture.store.outbox().allSatisfy { $0.state == .sent }
            }
            _ = try await fixture.store.readingWriter().write(later)
            _ = try await evaluate(fixture.store, handoff: dispatcher, sliceTransitions: 1)
            try await poll(until: "4 requests") { await sink.requests().count >= 4 }
            try await poll(until: "every row recorded sent") {
                try await fixture.store.outbox().allSatisfy { $0.state == .sent }
            }
        }
        stop.store(true, ordering: .relaxed)
        dispatcher.nudge()
        try await running.value
        try result.get()

        let requests = await sink.requests()
        #expect(requests.count == 4)
        #expect(Set(requests.compactMap { $0.headers["idempotency-key"] }).count == 4)
        let bodies = requests.map { String(decoding: $0.body, as: UTF8.self) }
        let a = bodies.enumerated().filter { $0.element.contains("\"station\":\"A\"") }.map(\.offset)
        #expect(a.count == 2)
        #expect(bodies[a[0]].contains("\"status\":\"firing\"") && bodies[a[1]].contains("\"status\":\"resolved\""))
    }
}
