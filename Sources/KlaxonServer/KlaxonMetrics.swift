import CoreMetrics
import Foundation
import KlaxonStore
import Prometheus

/// The daemon's metrics: one Prometheus registry per daemon (no process-wide bootstrap), exposed by
/// `/metrics`.
///
/// Two kinds of series:
/// - events of this process the store does not hold (evaluations run, failed fetches): swift-metrics
///   counters on this registry, incremented where they happen;
/// - totals the store keeps (readings, transitions, outbox outcomes and depth, delivery latency):
///   triggers update a few rows of `metric_counts` in the same transaction as each event, whichever
///   process writes it. `sync` reads those rows (seeding the counters at start, then bringing them
///   forward at each scrape by what changed since), so a scrape costs the same with a million rows of
///   history as with ten, totals survive restarts, and work done by `klaxon ingest` or `klaxon
///   dispatch` in another process shows at the next scrape.
public final class KlaxonMetrics: @unchecked Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let lock = NSLock()
    /// The store's totals already added to each counter, by series.
    private var seen: [String: Int] = [:]
    private var seenLatency: [(count: Int, sum: Double)] = []
    private var sourceErrors: [String: CoreMetrics.Counter] = [:]
    private var evaluationCount = 0
    private let evaluationsCounter: CoreMetrics.Counter
    private let latency: ValueHistogram

    public init() {
        factory = PrometheusMetricsFactory(registry: registry)
        evaluationsCounter = CoreMetrics.Counter(
            label: Names.evaluations, dimensions: [],
            handler: registry.makeCounter(name: Names.evaluations, help: "Evaluations run since the daemon started."),
            factory: factory)
        latency = registry.makeValueHistogram(
            name: Names.latency, buckets: StoreMetrics.latencyBounds, help: "Seconds from queueing to delivery.")
        seenLatency = Array(repeating: (0, 0), count: StoreMetrics.latencyBounds.count + 1)
        // The families are present, empty, from the start.
        for state in Self.outboxStates { depth(state).set(to: 0.0) }
    }

    enum Names {
        static let readings = "klaxon_readings_total"
        static let sourceFailures = "klaxon_source_failures"
        static let sourceErrors = "klaxon_source_errors_total"
        static let evaluations = "klaxon_evaluations_total"
        static let transitions = "klaxon_transitions_total"
        static let outbox = "klaxon_outbox_depth"
        static let deliveries = "klaxon_deliveries_total"
        static let latency = "klaxon_delivery_latency_seconds"
        static let duties = "klaxon_duty_held"
    }

    static let outboxStates = OutboxRecord.State.allCases.map(\.rawValue)

    /// One evaluation ran.
    public func evaluated() {
        evaluationsCounter.increment()
        lock.withLock { evaluationCount += 1 }
    }

    /// Evaluations run by this daemon.
    public var evaluations: Int { lock.withLock { evaluationCount } }

    /// A fetch of `source` failed.
    public func sourceFailed(_ source: String) {
        let counter = lock.withLock {
            if let c = sourceErrors[source] { return c }
            let c = CoreMetrics.Counter(
                label: Names.sourceErrors, dimensions: [("source", source)],
                handler: registry.makeCounter(
                    name: Names.sourceErrors, labels: [("source", source)],
                    help: "Failed fetches since the daemon started, by source."),
                factory: factory)
            sourceErrors[source] = c
            return c
        }
        counter.increment()
    }

    private func depth(_ state: String) -> Prometheus.Gauge {
        registry.makeGauge(name: Names.outbox, labels: [("state", state)], help: "Outbox rows, by state.")
    }

    /// Brings the store's totals forward: each counter grows by what its row grew since the last
    /// sync (the first sync seeds them); gauges take the current value.
    public func sync(_ m: StoreMetrics) {
        lock.lock()
        defer { lock.unlock() }
        func advance(_ key: String, to total: Int, _ counter: () -> Prometheus.Counter) {
            let delta = total - seen[key, default: 0]
            if delta > 0 { counter().increment(by: Int64(delta)) }
            seen[key] = total
        }
        for (source, n) in m.readingsBySource {
            advance("r\u{0}\(source)", to: n) {
                registry.makeCounter(
                    name: Names.readings, labels: [("source", source)], help: "Readings stored, by source.")
            }
        }
        for (rule, states) in m.transitions {
            for (state, n) in states {
                advance("t\u{0}\(rule)\u{0}\(state)", to: n) {
                    registry.makeCounter(
                        name: Names.transitions, labels: [("rule", rule), ("state", state)],
                        help: "Alert transitions, by rule and state.")
                }
            }
        }
        for (receiver, states) in m.deliveries {
            for (outcome, n) in states {
                advance("d\u{0}\(receiver)\u{0}\(outcome)", to: n) {
                    registry.makeCounter(
                        name: Names.deliveries, labels: [("receiver", receiver), ("outcome", outcome)],
                        help: "Notifications by receiver and outcome.")
                }
            }
        }
        for state in Self.outboxStates { depth(state).set(to: Double(m.outbox[state, default: 0])) }
        for s in m.sources {
            registry.makeGauge(
                name: Names.sourceFailures, labels: [("source", s.source)],
                help: "Consecutive failed fetches, by source."
            ).set(to: Double(s.failures))
        }
        // Each bucket's new deliveries are recorded at their mean latency, which lies in the same
        // bucket: the bucket counts, the count and the sum come out as if each had been recorded.
        let bounds = StoreMetrics.latencyBounds
        for (i, bucket) in m.latencyByBucket.enumerated() where i < seenLatency.count {
            let n = bucket.count - seenLatency[i].count
            if n > 0 {
                let lower = i == 0 ? -Double.infinity : bounds[i - 1]
                let upper = i < bounds.count ? bounds[i] : Double.infinity
                var mean = (bucket.sum - seenLatency[i].sum) / Double(n)
                if !(mean > lower) { mean = lower.nextUp }
                if mean > upper { mean = upper }
                for _ in 0..<n { latency.record(mean) }
            }
            seenLatency[i] = bucket
        }
    }

    /// Which duties this instance holds (1) or waits for while another instance holds them (0).
    public func duties(_ duties: [(duty: String, held: Bool)]) {
        for d in duties {
            registry.makeGauge(
                name: Names.duties, labels: [("duty", d.duty)],
                help:
                    "1 while this instance holds the duty (a source's polling, the evaluator, the pruner), 0 on standby."
            ).set(to: d.held ? 1 : 0)
        }
    }

    /// 1 while the database file is the one the daemon opened; 0 once it was deleted or replaced.
    public func databaseFile(ok: Bool) {
        registry.makeGauge(
            name: "klaxon_database_file_ok",
            help: "1 while the database file is the one the daemon opened, 0 once it was deleted or replaced."
        ).set(to: ok ? 1 : 0)
    }

    /// The outcome of the last reload of the config and rules (and the start, a successful load):
    /// Prometheus' own `…_config_last_reload_successful` and `…_success_timestamp_seconds`.
    public func configReloaded(success: Bool, at date: Date) {
        registry.makeGauge(
            name: "klaxon_config_last_reload_successful",
            help: "1 if the last reload of the config and rules succeeded (or none was tried), 0 if it failed."
        ).set(to: success ? 1 : 0)
        if success {
            registry.makeGauge(
                name: "klaxon_config_last_reload_success_timestamp_seconds",
                help: "When the config and rules were last loaded successfully (Unix time)."
            ).set(to: date.timeIntervalSince1970)
        }
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(4096)
        registry.emit(into: &buffer)
        return buffer
    }
}
