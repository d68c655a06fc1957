import Foundation
import KlaxonCore
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import Testing

/// `/metrics` from the store's running totals: counters after events, after a restart, and one
/// registry per daemon.
@Suite("metrics")
struct MetricsTests {
    static func transition(_ station: String, _ state: TransitionState = .firing) -> Transition {
        Transition(
            rule: "high-flow", kind: "threshold", station: station, metric: "discharge", state: state, at: 1_000,
            value: 9, severity: .warning, labels: [:], summary: "high", explanation: "why")
    }

    func events(_ store: any Store, stations: [String], outcome: OutboxRecord.State) async throws {
        let readings = stations.map { Reading(station: $0, metric: "discharge", time: 1_000, value: 9) }
        try await store.write(SourceBatch(readings: readings), source: "texas", at: 1_000)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try await store.record(
            stations.map {
                (Self.transition($0), "high", [PlannedDelivery(receiver: "hook", route: nil, groupKey: "k-\($0)")])
            }, now: now)
        let batches = try await store.claim(now: now + 1, lease: 60_000, limit: 100, instance: nil)
        try await store.apply(
            batches.map { .finish($0, state: outcome, now: now + 20, retryAt: nil, error: nil) })
    }

    static func sum(_ text: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix("klaxon_delivery_latency_seconds_sum ") }
            .flatMap { Double($0.split(separator: " ")[1]) }
    }

    static func text(_ metrics: KlaxonMetrics) -> String { String(decoding: metrics.exposition(), as: UTF8.self) }

    @Test("counters follow the events, seed a new registry after a restart, and count the same once")
    func countersAndRestart() async throws {
        let s = try Scratch()
        let path = s.path("k.sqlite")
        let store = try SQLiteStore.open(path: path)
        let metrics = KlaxonMetrics()
        metrics.sync(try await store.metrics())
        var text = Self.text(metrics)
        #expect(!text.contains("klaxon_transitions_total{"))
        #expect(text.contains("klaxon_outbox_depth{state=\"pending\"} 0"))
        #expect(text.contains("klaxon_delivery_latency_seconds_count 0"))
        #expect(!text.contains("klaxon_readings_total{"))

        try await events(store, stations: ["A", "B"], outcome: .sent)
        metrics.evaluated()
        metrics.sourceFailed("broken")
        metrics.sync(try await store.metrics())
        // A second sync with nothing new adds nothing.
        metrics.sync(try await store.metrics())
        text = Self.text(metrics)
        #expect(text.contains("klaxon_readings_total{source=\"texas\"} 2\n"), "\(text)")
        #expect(text.contains("klaxon_transitions_total{rule=\"high-flow\",state=\"firing\"} 2\n"))
        #expect(text.contains("klaxon_deliveries_total{receiver=\"hook\",outcome=\"sent\"} 2\n"))
        #expect(text.contains("klaxon_outbox_depth{state=\"sent\"} 2.0\n"))
        #expect(text.contains("klaxon_outbox_depth{state=\"pending\"} 0.0\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_bucket{le=\"0.05\"} 2\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_count 2\n"))
        #expect(text.contains("klaxon_evaluations_total 1\n"))
        #expect(text.contains("klaxon_source_errors_total{source=\"broken\"} 1\n"))

        // More events, one dead: the counters grow by what happened.
        try await events(store, stations: ["C"], outcome: .dead)
        metrics.sync(try await store.metrics())
        text = Self.text(metrics)
        #expect(text.contains("klaxon_readings_total{source=\"texas\"} 3\n"))
        #expect(text.contains("klaxon_transitions_total{rule=\"high-flow\",state=\"firing\"} 3\n"))
        #expect(text.contains("klaxon_deliveries_total{receiver=\"hook\",outcome=\"dead\"} 1\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_count 2\n"))

        // A restart: a new store connection and a new registry start from the store's totals; the
        // in-process counters start again.
        let reopened = try SQLiteStore.open(path: path)
        let restarted = KlaxonMetrics()
        restarted.sync(try await reopened.metrics())
        let after = Self.text(restarted)
        for line in [
            "klaxon_readings_total{source=\"texas\"} 3\n",
            "klaxon_transitions_total{rule=\"high-flow\",state=\"firing\"} 3\n",
            "klaxon_deliveries_total{receiver=\"hook\",outcome=\"sent\"} 2\n",
            "klaxon_deliveries_total{receiver=\"hook\",outcome=\"dead\"} 1\n",
            "klaxon_outbox_depth{state=\"dead\"} 1.0\n",
            "klaxon_delivery_latency_seconds_bucket{le=\"0.05\"} 2\n",
            "klaxon_delivery_latency_seconds_count 2\n",
            "klaxon_evaluations_total 0\n",
        ] {
            #expect(after.contains(line), "\(line) in \(after)")
        }
        // The latency sum survives too (two deliveries of 20 ms each).
        #expect(abs(try #require(Self.sum(after)) - 0.04) < 1e-9)
    }

    @Test("latencies recorded in bulk land in the buckets they came from")
    func latencyBuckets() {
        var m = StoreMetrics()
        m.latencyByBucket = Array(repeating: (0, 0), count: StoreMetrics.latencyBounds.count + 1)
        m.latencyByBucket[0] = (3, 0.03)
        m.latencyByBucket[4] = (2, 1.5)  // (0.5, 1]
        m.latencyByBucket[11] = (1, 1000)  // above 300 s
        let metrics = KlaxonMetrics()
        metrics.sync(m)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains("klaxon_delivery_latency_seconds_bucket{le=\"0.05\"} 3\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_bucket{le=\"0.5\"} 3\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_bucket{le=\"1.0\"} 5\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_bucket{le=\"300.0\"} 5\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_bucket{le=\"+Inf\"} 6\n"))
        #expect(text.contains("klaxon_delivery_latency_seconds_count 6\n"))
        #expect(abs((Self.sum(text) ?? 0) - 1001.53) < 1e-9)
    }
}
