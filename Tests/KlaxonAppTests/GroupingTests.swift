import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Testing

@Suite struct GroupingTests {
    @Test func groupWaitCollectsAndGroupIntervalSpaces() async throws {
        try await HTTPSink.with { sink in try await groupWaitCollectsAndGroupIntervalSpaces(sink: sink) }
    }

    func groupWaitCollectsAndGroupIntervalSpaces(sink: HTTPSink) async throws {
        let s = try Scratch()
        let store = try SQLiteStore.open(path: s.path("k.sqlite"))
        let rules = [Rule(name: "high", kind: ThresholdRule(metric: "m", direction: .above, threshold: 10))]
        let routing = Routing(routes: [
            Route(receivers: ["hook"], groupBy: ["rule"], groupWait: 30, groupInterval: 300)
        ])
        let t0: Int64 = 1_800_000_000_000
        let ingester = try store.readingWriter()
        _ = try await ingester.write([
            Reading(station: "A", metric: "m", time: 1_800_000_000, value: 20),
            Reading(station: "B", metric: "m", time: 1_800_000_000, value: 20),
        ])
        _ = try await Evaluate.run(store: store, rules: rules, now: 1_800_000_000, routing: routing, queuedAt: t0)
        // A new group waits group_wait: both alerts are due together, 30 s later.
        await #expect(try store.outbox().map(\.dueAt) == [t0 + 30_000, t0 + 30_000])

        let dispatcher = Dispatcher(
            store: store,
            notifiers: [
                "hook": try WebhookNotifier(
                    config: .init(name: "hook", url: Secret(sink.url + "/h")), groupBy: ["rule"])
            ],
            routing: routing, clock: { t0 + 30_000 })
        #expect(try await dispatcher.dispatchOnce().sent == 1)
        let first = await sink.requests()
        #expect(first.count == 1)
        #expect((first.first?.json?["alerts"] as? [[String: Any]])?.count == 2, "one notification for the group")
        #expect((first.first?.json?["groupLabels"] as? [String: String]) == ["alertname": "high"])

        // A group notified recently waits out group_interval.
        _ = try await ingester.write([Reading(station: "C", metric: "m", time: 1_800_000_060, value: 20)])
        _ = try await Evaluate.run(
            store: store, rules: rules, now: 1_800_000_060, routing: routing, queuedAt: t0 + 40_000)
        let pending = try await store.outbox(state: .pending)
        #expect(pending.map(\.dueAt) == [t0 + 30_000 + 300_000])
    }
}
