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
        text.split(separator: "\n").first { $0.hasPrefix("klaxon_notification_queue_seconds_sum ") }
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
        #expect(text.contains("klaxon_notification_queue_seconds_count 0"))
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
        // Depths only of the states rows wait in: the final ones are `klaxon_deliveries_total`.
        #expect(!text.contains("klaxon_outbox_depth{state=\"sent\"}"))
        #expect(text.contains("klaxon_outbox_depth{state=\"pending\"} 0.0\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_bucket{le=\"0.05\"} 2\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_count 2\n"))
        #expect(text.contains("klaxon_evaluations_total 1\n"))
        #expect(text.contains("klaxon_source_errors_total{source=\"broken\"} 1\n"))

        // More events, one dead: the counters grow by what happened.
        try await events(store, stations: ["C"], outcome: .dead)
        metrics.sync(try await store.metrics())
        text = Self.text(metrics)
        #expect(text.contains("klaxon_readings_total{source=\"texas\"} 3\n"))
        #expect(text.contains("klaxon_transitions_total{rule=\"high-flow\",state=\"firing\"} 3\n"))
        #expect(text.contains("klaxon_deliveries_total{receiver=\"hook\",outcome=\"dead\"} 1\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_count 2\n"))

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
            "klaxon_notification_queue_seconds_bucket{le=\"0.05\"} 2\n",
            "klaxon_notification_queue_seconds_count 2\n",
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
        #expect(text.contains("klaxon_notification_queue_seconds_bucket{le=\"0.05\"} 3\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_bucket{le=\"0.5\"} 3\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_bucket{le=\"1.0\"} 5\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_bucket{le=\"300.0\"} 5\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_bucket{le=\"+Inf\"} 6\n"))
        #expect(text.contains("klaxon_notification_queue_seconds_count 6\n"))
        #expect(abs((Self.sum(text) ?? 0) - 1001.53) < 1e-9)
    }

    static func source(_ json: String) throws -> SourceStateRecord {
        try JSONDecoder().decode(SourceStateRecord.self, from: Data(json.utf8))
    }

    @Test("scrape state: alerts that emptied read 0, every configured source present, build info, reloads")
    func scrapeState() throws {
        let metrics = KlaxonMetrics(started: Date(timeIntervalSince1970: 1_000))
        metrics.rules([
            Rule(name: "high", kind: ThresholdRule(metric: "m", direction: .above, threshold: 1)),
            Rule(
                name: "slow", kind: ThresholdRule(metric: "m", direction: .above, threshold: 1, holdFor: 60),
                severity: .critical),
        ])
        var m = StoreMetrics()
        m.alerts = [
            AlertCount(rule: "high", state: .firing, count: 2),
            AlertCount(rule: "high", state: .acked, count: 1),
            AlertCount(rule: "slow", state: .pending, count: 1),
            // A rule no longer configured: its severity is unknown.
            AlertCount(rule: "gone", state: .firing, count: 1),
        ]
        m.sources = [
            try Self.source(#"{"source":"ok","failures":0,"last_success":1700000000}"#),
            try Self.source(#"{"source":"failing","failures":3,"last_success":1600000000}"#),
            try Self.source(#"{"source":"gone","failures":0,"last_success":1700000000}"#),
        ]
        m.oldestDue = 10_000
        metrics.sync(m, sources: ["ok", "failing", "new"], now: Date(timeIntervalSince1970: 25))
        var text = Self.text(metrics)
        for line in [
            #"klaxon_alerts{rule="high",severity="warning",state="firing"} 2.0"#,
            #"klaxon_alerts{rule="high",severity="warning",state="acked"} 1.0"#,
            #"klaxon_alerts{rule="slow",severity="critical",state="pending"} 1.0"#,
            #"klaxon_alerts{rule="gone",severity="unknown",state="firing"} 1.0"#,
            #"klaxon_source_up{source="ok"} 1.0"#, #"klaxon_source_up{source="failing"} 0.0"#,
            #"klaxon_source_up{source="new"} 0.0"#,
            #"klaxon_source_last_success_timestamp_seconds{source="ok"} 1700000000.0"#,
            #"klaxon_source_last_success_timestamp_seconds{source="failing"} 1600000000.0"#,
            #"klaxon_source_last_success_timestamp_seconds{source="new"} 0.0"#,
            "klaxon_outbox_oldest_pending_age_seconds 15.0",
            "klaxon_config_last_reload_successful 1.0",
            "klaxon_config_last_reload_success_timestamp_seconds 1000.0",
            #"klaxon_build_info{version="\#(BuildInfo.version)",revision="\#(BuildInfo.revision)","#,
        ] {
            #expect(text.contains(line), "\(line) in \(text)")
        }
        // Configured only: a source in the store but not in the config is not reported.
        #expect(!text.contains(#"klaxon_source_up{source="gone"}"#))
        #expect(!text.contains(#"klaxon_source_last_success_timestamp_seconds{source="gone"}"#))

        // The alerts end, a reload drops a source and fails.
        m.alerts = [AlertCount(rule: "high", state: .firing, count: 1)]
        m.oldestDue = nil
        metrics.sync(m, sources: ["ok"])
        metrics.configReloaded(success: false, at: Date(timeIntervalSince1970: 2_000))
        text = Self.text(metrics)
        for line in [
            #"klaxon_alerts{rule="high",severity="warning",state="firing"} 1.0"#,
            #"klaxon_alerts{rule="high",severity="warning",state="acked"} 0.0"#,
            #"klaxon_alerts{rule="slow",severity="critical",state="pending"} 0.0"#,
            "klaxon_outbox_oldest_pending_age_seconds 0.0",
            "klaxon_config_last_reload_successful 0.0",
            "klaxon_config_last_reload_success_timestamp_seconds 1000.0",
        ] {
            #expect(text.contains(line), "\(line) in \(text)")
        }
        for name in ["failing", "new"] {
            #expect(!text.contains(#"klaxon_source_up{source="\#(name)"}"#))
            #expect(!text.contains(#"klaxon_source_last_success_timestamp_seconds{source="\#(name)"}"#))
        }
        metrics.configReloaded(success: true, at: Date(timeIntervalSince1970: 3_000))
        text = Self.text(metrics)
        #expect(text.contains("klaxon_config_last_reload_successful 1.0"))
        #expect(text.contains("klaxon_config_last_reload_success_timestamp_seconds 3000.0"))
    }

    @Test("send latency: one histogram series per receiver")
    func sendLatency() {
        let metrics = KlaxonMetrics()
        metrics.sent(receiver: "hook", seconds: 0.02)
        metrics.sent(receiver: "hook", seconds: 3)
        metrics.sent(receiver: "mail", seconds: 0.2)
        let text = Self.text(metrics)
        #expect(text.contains(#"klaxon_notification_latency_seconds_bucket{receiver="hook",le="0.025"} 1"#), "\(text)")
        #expect(text.contains(#"klaxon_notification_latency_seconds_bucket{receiver="hook",le="5.0"} 2"#))
        #expect(text.contains(#"klaxon_notification_latency_seconds_count{receiver="hook"} 2"#))
        #expect(text.contains(#"klaxon_notification_latency_seconds_count{receiver="mail"} 1"#))
    }
}
