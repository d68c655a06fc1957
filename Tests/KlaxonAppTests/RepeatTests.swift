import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Testing

@Suite struct RepeatTests {
    let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "m", direction: .above, threshold: 10), notify: ["hook"])
    ]
    let routing = Routing(routes: [
        Route(matchers: [try! Matcher.parse("rule=high")], receivers: [], repeatInterval: 3600)
    ])
    let t0: Int64 = 1_800_000_000_000

    /// A store where `high` fires for station A at t0 and its notification went out to `sink`.
    func firingAndSent(to sink: HTTPSink) async throws -> (any Store, any ReadingWriter) {
        let store = try tempStore()
        let ingester = try store.readingWriter()
        _ = try await ingester.write([Reading(station: "A", metric: "m", time: 1_800_000_000, value: 20)])
        _ = try await Evaluate.run(store: store, rules: rules, now: 1_800_000_000, routing: routing, queuedAt: t0)
        let t0 = self.t0
        let dispatcher = Dispatcher(
            store: store,
            notifiers: ["hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h")))],
            routing: routing, clock: { t0 })
        #expect(try await dispatcher.dispatchOnce().sent == 1)
        return (store, ingester)
    }

    @Test func stillFiringAlertsAreRemindedAfterRepeatInterval() async throws {
        try await HTTPSink.with { sink in try await stillFiringAlertsAreRemindedAfterRepeatInterval(sink: sink) }
    }

    func stillFiringAlertsAreRemindedAfterRepeatInterval(sink: HTTPSink) async throws {
        let (store, ingester) = try await firingAndSent(to: sink)

        await #expect(try Repeats.enqueue(store: store, rules: rules, routing: routing, now: t0 + 1_800_000) == 0)
        await #expect(try Repeats.enqueue(store: store, rules: rules, routing: routing, now: t0 + 3_600_000) == 1)
        await #expect(try Repeats.enqueue(store: store, rules: rules, routing: routing, now: t0 + 3_700_000) == 0)  // one queued already
        let rows = try await store.outbox()
        #expect(rows.map(\.purpose).sorted() == ["repeat", "transition"])
        #expect(Set(rows.map(\.transitionID)).count == 1)  // the reminder carries the announcing transition

        // Once resolved, no more reminders.
        _ = try await ingester.write([Reading(station: "A", metric: "m", time: 1_800_000_900, value: 1)])
        _ = try await Evaluate.run(
            store: store, rules: rules, now: 1_800_000_900, routing: routing, queuedAt: t0 + 3_800_000)
        await #expect(try Repeats.enqueue(store: store, rules: rules, routing: routing, now: t0 + 99_000_000) == 0)
    }

    /// A reminder's webhook says why it came (Alertmanager's `notification_reason`): the first message
    /// was the `first notification`, the reminder `repeat interval elapsed`.
    @Test func aReminderSaysRepeatIntervalElapsed() async throws {
        try await HTTPSink.with { sink in try await aReminderSaysRepeatIntervalElapsed(sink: sink) }
    }

    func aReminderSaysRepeatIntervalElapsed(sink: HTTPSink) async throws {
        let (store, _) = try await firingAndSent(to: sink)
        await #expect(try Repeats.enqueue(store: store, rules: rules, routing: routing, now: t0 + 3_600_000) == 1)
        let later = t0 + 3_600_000
        let dispatcher = Dispatcher(
            store: store,
            notifiers: ["hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h")))],
            routing: routing, clock: { later })
        #expect(try await dispatcher.dispatchOnce().sent == 1)
        let reasons = await sink.requests().map { $0.json?["notification_reason"] as? String }
        #expect(reasons == ["first notification", "repeat interval elapsed"])
    }

    @Test func anAckedAlertIsNotRemindedUntilItChanges() async throws {
        try await HTTPSink.with { sink in try await anAckedAlertIsNotRemindedUntilItChanges(sink: sink) }
    }

    func anAckedAlertIsNotRemindedUntilItChanges(sink: HTTPSink) async throws {
        let (store, ingester) = try await firingAndSent(to: sink)
        let id = try await #require(try store.firingAlerts().first?.transitionID)
        await #expect(try store.ack(transitionID: id, by: "alice", at: 1_800_000_100) != nil)
        await #expect(try Repeats.enqueue(store: store, rules: rules, routing: routing, now: t0 + 3_600_000) == 0)
        // Resolved and firing again: a new state, so the old ack no longer holds.
        _ = try await ingester.write([
            Reading(station: "A", metric: "m", time: 1_800_000_900, value: 1),
            Reading(station: "A", metric: "m", time: 1_800_001_800, value: 30),
        ])
        _ = try await Evaluate.run(
            store: store, rules: rules, now: 1_800_001_800, routing: routing, queuedAt: t0 + 3_700_000)
        await #expect(try store.acks().isEmpty)
    }

    @Test func anUnackedFiringAlertEscalatesOnceAfterEscalateAfter() async throws {
        try await HTTPSink.with { sink in try await anUnackedFiringAlertEscalatesOnceAfterEscalateAfter(sink: sink) }
    }

    func anUnackedFiringAlertEscalatesOnceAfterEscalateAfter(sink: HTTPSink) async throws {
        let s = try Scratch()
        let store = try SQLiteStore.open(path: s.path("k.sqlite"))
        let rules = [
            Rule(name: "high", kind: ThresholdRule(metric: "m", direction: .above, threshold: 10), notify: ["hook"])
        ]
        let routing = Routing(routes: [
            Route(
                matchers: [try Matcher.parse("rule=high")], receivers: ["hook"], escalateAfter: 1800,
                escalateTo: "boss")
        ])
        let t0: Int64 = 1_800_000_000_000
        let ingester = try store.readingWriter()
        _ = try await ingester.write([
            Reading(station: "A", metric: "m", time: 1_800_000_000, value: 20),
            Reading(station: "B", metric: "m", time: 1_800_000_000, value: 20),
        ])
        _ = try await Evaluate.run(store: store, rules: rules, now: 1_800_000_000, routing: routing, queuedAt: t0)
        await #expect(try Escalations.enqueue(store: store, rules: rules, routing: routing, now: t0 + 1_799_000) == 0)
        // B is acked: only A escalates.
        let b = try await #require(try store.firingAlerts().first { $0.key.station == "B" })
        _ = try await store.ack(transitionID: b.transitionID, by: "carol", at: 1_800_000_060)
        await #expect(try Escalations.enqueue(store: store, rules: rules, routing: routing, now: t0 + 1_800_000) == 1)
        await #expect(try Escalations.enqueue(store: store, rules: rules, routing: routing, now: t0 + 3_600_000) == 0)
        let boss = try await store.outbox().filter { $0.receiver == "boss" }
        #expect(boss.count == 1)
        #expect(boss.first?.alert.contains("|A|") == true)
        let dispatcher = Dispatcher(
            store: store,
            notifiers: [
                "hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/hook"))),
                "boss": try WebhookNotifier(config: .init(name: "boss", url: Secret(sink.url + "/boss"))),
            ],
            routing: routing, clock: { t0 + 1_800_000 })
        _ = try await dispatcher.runUntilEmpty(deadline: t0 + 1_900_000)
        let paths = await sink.requests().map(\.path).sorted()
        #expect(paths == ["/boss", "/hook", "/hook"])
        // The escalation is news to its receiver: a first notification, not a reminder.
        let told = await sink.requests().filter { $0.path == "/boss" }.map {
            $0.json?["notification_reason"] as? String
        }
        #expect(told == ["first notification"])
    }
}
