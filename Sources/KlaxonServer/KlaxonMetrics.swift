import CoreMetrics
import Foundation
import KlaxonCore
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
///
/// And state read at each scrape: active alerts, the configured sources' health, the outbox's
/// depths (the store, in the same read), and this process (`/proc/self`, `ProcessMetrics`).
/// `docs/metrics.md` lists every family.
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
    /// `klaxon_alerts` series reported at the last scrape, so one that emptied reads 0.
    private var alertSeries: Set<AlertSeries> = []
    /// Per configured source, its two gauges (removed when a reload drops the source).
    private var sourceGauges: [String: (up: Prometheus.Gauge, lastSuccess: Prometheus.Gauge)] = [:]
    private var sendLatency: [String: ValueHistogram] = [:]
    /// Each rule's configured severity: the `severity` label of its alerts.
    private var severities: [String: String] = [:]
    private let oldestDue: Prometheus.Gauge
    private let reloadOK: Prometheus.Gauge
    private let reloadAt: Prometheus.Gauge

    struct AlertSeries: Hashable {
        var rule: String
        var severity: String
        var state: String
    }

    /// `started`: when the daemon started (the config it started with counts as its first successful load).
    public init(started: Date = Date()) {
        factory = PrometheusMetricsFactory(registry: registry)
        evaluationsCounter = CoreMetrics.Counter(
            label: Names.evaluations, dimensions: [],
            handler: registry.counter(name: Names.evaluations, help: "Evaluations run since the daemon started."),
            factory: factory)
        latency = registry.histogram(
            name: Names.queue, buckets: StoreMetrics.latencyBounds,
            help:
                "Seconds from queueing a notification to its delivery, group_wait, quiet-hours deferral and retries included."
        )
        seenLatency = Array(repeating: (0, 0), count: StoreMetrics.latencyBounds.count + 1)
        oldestDue = registry.gauge(
            name: Names.oldestDue,
            help:
                "Seconds the oldest due pending notification has waited since it fell due, or since it was queued once a send of it failed (0: nothing is due)."
        )
        reloadOK = registry.gauge(
            name: Names.reloadOK, help: "Whether the last configuration reload attempt was successful.")
        reloadAt = registry.gauge(
            name: Names.reloadAt, help: "Timestamp of the last successful configuration reload.")
        registry.gauge(
            name: Names.buildInfo,
            labels: [
                ("version", BuildInfo.version), ("revision", BuildInfo.revision), ("build_date", BuildInfo.date),
                ("swift_version", BuildInfo.swift),
            ],
            help: "A metric with a constant '1' value labeled by version, revision, build_date and swift_version."
        ).set(to: 1)
        // The families are present, empty, from the start.
        for state in Self.outboxStates { depth(state).set(to: 0.0) }
        oldestDue.set(to: 0.0)
        configReloaded(success: true, at: started)
    }

    enum Names {
        static let readings = "klaxon_readings_total"
        static let sourceFailures = "klaxon_source_failures"
        static let sourceErrors = "klaxon_source_errors_total"
        static let evaluations = "klaxon_evaluations_total"
        static let transitions = "klaxon_transitions_total"
        static let outbox = "klaxon_outbox_depth"
        static let deliveries = "klaxon_deliveries_total"
        /// Was `klaxon_delivery_latency_seconds` (0.x): it measured the queue, not the send.
        static let queue = "klaxon_notification_queue_seconds"
        static let sendLatency = "klaxon_notification_latency_seconds"
        static let failed = "klaxon_notifications_failed_total"
        static let resolvesUnsent = "klaxon_resolves_unsent_total"
        static let folded = "klaxon_notifications_folded_total"
        static let duties = "klaxon_duty_held"
        static let buildInfo = "klaxon_build_info"
        static let alerts = "klaxon_alerts"
        static let watches = "klaxon_watches"
        static let sourceUp = "klaxon_source_up"
        static let sourceLastSuccess = "klaxon_source_last_success_timestamp_seconds"
        static let oldestDue = "klaxon_outbox_oldest_pending_age_seconds"
        static let reloadOK = "klaxon_config_last_reload_successful"
        static let reloadAt = "klaxon_config_last_reload_success_timestamp_seconds"
    }

    /// The outbox states rows wait in (a depth): `pending` (queued, due now or later), `sending`
    /// (claimed, lease running) and `held` (data older than `notify_max_age`, until evaluation
    /// catches up). The final states (sent, dead, muted, dropped, superseded, skipped) are outcomes:
    /// `klaxon_deliveries_total{outcome}` counts them.
    static let outboxStates = ["pending", "sending", "held"]

    /// Buckets of `klaxon_notification_latency_seconds`: Alertmanager's are 1, 5, 10, 15, 20 s;
    /// webhooks and chat answer in tens of milliseconds, so finer ones below a second.
    public static let sendBounds: [Double] = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30]

    /// One send to `receiver` took `seconds` (the notifier's send alone), whatever its outcome
    /// (as Alertmanager observes every attempt).
    public func sent(receiver: String, seconds: Double) {
        let histogram = lock.withLock {
            if let h = sendLatency[receiver] { return h }
            let h = registry.histogram(
                name: Names.sendLatency, labels: [("receiver", receiver)], buckets: Self.sendBounds,
                help: "Seconds one notification took to send, by receiver (the send alone, every attempt).")
            sendLatency[receiver] = h
            return h
        }
        histogram.record(seconds)
    }

    /// The configured receivers (start, reload) and their integrations: each receiver's
    /// `klaxon_notifications_failed_total` series are present at 0 for every reason from the first
    /// scrape, so `increase()` sees the first failure (as Alertmanager initializes its own).
    public func receivers(_ integrations: [String: String]) {
        for (receiver, integration) in integrations {
            for reason in Self.failureReasons { _ = failedCounter(receiver, integration, reason) }
        }
    }

    /// `DeliveryError.reason`'s closed set.
    public static let failureReasons = DeliveryFailureReason.allCases.map(\.rawValue)

    /// A send to `receiver` failed for `reason` (every attempt: as Alertmanager's
    /// `alertmanager_notifications_failed_total{integration,reason}`).
    public func notificationFailed(receiver: String, integration: String, reason: String) {
        failedCounter(receiver, integration, reason).increment()
    }

    private func failedCounter(_ receiver: String, _ integration: String, _ reason: String) -> Prometheus.Counter {
        registry.counter(
            name: Names.failed, labels: [("receiver", receiver), ("integration", integration), ("reason", reason)],
            help: "Failed sends since the daemon started, by receiver, integration and reason.")
    }

    /// A resolve owed to `receiver` (it heard the alert firing) that could not be sent, for `reason`
    /// (`receiver_removed`): the resolve contract's exceptions, counted (docs/receivers.md).
    public func resolveUnsent(receiver: String, reason: String) {
        registry.counter(
            name: Names.resolvesUnsent, labels: [("receiver", receiver), ("reason", reason)],
            help: "Resolves owed to a receiver that heard the alert firing and not sent, by receiver and reason."
        ).increment()
    }

    /// `alerts` alerts for `receiver` folded into its storm summary: it was over its `budget`.
    public func folded(receiver: String, alerts: Int) {
        guard alerts > 0 else { return }
        registry.counter(
            name: Names.folded, labels: [("receiver", receiver)],
            help: "Alerts folded into a receiver's storm summary (past its budget) since the daemon started, by receiver."
        ).increment(by: Int64(alerts))
    }

    /// The rules loaded (start, reload): their alerts report their severity.
    public func rules(_ rules: [Rule]) {
        let map = Dictionary(rules.map { ($0.name, $0.severity.rawValue) }, uniquingKeysWith: { a, _ in a })
        lock.withLock { severities = map }
    }

    /// The outcome of a configuration load (start or reload): `klaxon_config_last_reload_successful`,
    /// and on success `klaxon_config_last_reload_success_timestamp_seconds` (Prometheus' own names,
    /// `prometheus_config_…`). A failed reload keeps the running configuration and its timestamp.
    public func configReloaded(success: Bool, at: Date) {
        reloadOK.set(to: success ? 1.0 : 0.0)
        if success { reloadAt.set(to: at.timeIntervalSince1970) }
    }

    /// One evaluation ran.
    /// `klaxon_watches`: the watches evaluated (their destination has a receiver), at the last evaluation.
    public func watches(_ evaluated: Int) {
        registry.gauge(
            name: Names.watches, help: "People's watches evaluated at the last evaluation (issue 43)."
        ).set(to: Double(evaluated))
    }

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
                handler: registry.counter(
                    name: Names.sourceErrors, labels: [("source", source)],
                    help: "Failed fetches since the daemon started, by source."),
                factory: factory)
            sourceErrors[source] = c
            return c
        }
        counter.increment()
    }

    private func depth(_ state: String) -> Prometheus.Gauge {
        registry.gauge(
            name: Names.outbox, labels: [("state", state)],
            help: "Notifications waiting in the outbox, by state (pending, sending, held).")
    }

    /// Brings the store's totals forward: each counter grows by what its row grew since the last
    /// sync (the first sync seeds them); gauges take the current value. `sources`: the configured
    /// sources' names (`klaxon_source_up`, `…_last_success_timestamp_seconds`: each present from
    /// the first scrape); nil leaves those gauges as they are. `now` dates the outbox's wait.
    public func sync(_ m: StoreMetrics, sources: [String]? = nil, now: Date = Date()) {
        lock.lock()
        defer { lock.unlock() }
        if let sources { syncSources(sources, states: m.sources) }
        syncAlerts(m.alerts)
        let nowMs = Int64(now.timeIntervalSince1970 * 1000)
        oldestDue.set(to: m.oldestDue.map { Double(max(0, nowMs - $0)) / 1000 } ?? 0)
        func advance(_ key: String, to total: Int, _ counter: () -> Prometheus.Counter) {
            let delta = total - seen[key, default: 0]
            if delta > 0 { counter().increment(by: Int64(delta)) }
            seen[key] = total
        }
        for (source, n) in m.readingsBySource {
            advance("r\u{0}\(source)", to: n) {
                registry.counter(
                    name: Names.readings, labels: [("source", source)], help: "Readings stored, by source.")
            }
        }
        for (rule, states) in m.transitions {
            for (state, n) in states {
                advance("t\u{0}\(rule)\u{0}\(state)", to: n) {
                    registry.counter(
                        name: Names.transitions, labels: [("rule", rule), ("state", state)],
                        help: "Alert transitions, by rule and state.")
                }
            }
        }
        for (receiver, states) in m.deliveries {
            for (outcome, n) in states {
                advance("d\u{0}\(receiver)\u{0}\(outcome)", to: n) {
                    registry.counter(
                        name: Names.deliveries, labels: [("receiver", receiver), ("outcome", outcome)],
                        help: "Notifications by receiver and outcome.")
                }
            }
        }
        for state in Self.outboxStates { depth(state).set(to: Double(m.outbox[state, default: 0])) }
        for s in m.sources {
            registry.gauge(
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

    /// Per configured source: up (its last fetch succeeded) and when it last succeeded (0: never),
    /// from the store's source state, so another daemon's or `klaxon fetch`'s fetches show too.
    /// Sources no longer configured lose their series. Under `lock`.
    private func syncSources(_ names: [String], states: [SourceStateRecord]) {
        let byName = Dictionary(states.map { ($0.source, $0) }, uniquingKeysWith: { a, _ in a })
        for gone in Set(sourceGauges.keys).subtracting(names) {
            if let g = sourceGauges.removeValue(forKey: gone) {
                registry.unregisterGauge(g.up)
                registry.unregisterGauge(g.lastSuccess)
            }
        }
        for name in names {
            let gauges: (up: Prometheus.Gauge, lastSuccess: Prometheus.Gauge)
            if let g = sourceGauges[name] {
                gauges = g
            } else {
                gauges = (
                    registry.gauge(
                        name: Names.sourceUp, labels: [("source", name)],
                        help: "1 if the configured source's last fetch succeeded, 0 if it failed or none succeeded yet."
                    ),
                    registry.gauge(
                        name: Names.sourceLastSuccess, labels: [("source", name)],
                        help: "When the configured source's last successful fetch ended (0: never).")
                )
                sourceGauges[name] = gauges
            }
            let state = byName[name]
            let up = state.map { $0.failures == 0 && $0.lastSuccess != nil } ?? false
            gauges.up.set(to: up ? 1.0 : 0.0)
            gauges.lastSuccess.set(to: Double(state?.lastSuccess ?? 0))
        }
    }

    /// `klaxon_alerts`: the current counts; a series that emptied since the last scrape reads 0
    /// (like a gauge that went down), never its old value. Under `lock`.
    private func syncAlerts(_ counts: [AlertCount]) {
        var now: [AlertSeries: Int] = [:]
        for c in counts {
            // People's watches (`watch-12`, issue 43) are one series, `rule="watch"`: one per watch
            // would grow with the people, not with the configuration.
            if c.rule.hasPrefix("watch-") {
                now[AlertSeries(rule: "watch", severity: "warning", state: c.state.rawValue), default: 0] += c.count
                continue
            }
            // Every transition of a rule carries the rule's severity: the configuration says it
            // (`unknown` for alert states of a rule no longer configured).
            let severity = severities[c.rule] ?? "unknown"
            now[AlertSeries(rule: c.rule, severity: severity, state: c.state.rawValue), default: 0] += c.count
        }
        for series in alertSeries.union(now.keys) {
            registry.gauge(
                name: Names.alerts,
                labels: [("rule", series.rule), ("severity", series.severity), ("state", series.state)],
                help: "Active alerts by rule, severity and state (pending, firing, acked)."
            ).set(to: Double(now[series] ?? 0))
        }
        alertSeries.formUnion(now.keys)
    }

    /// Which duties this instance holds (1) or waits for while another instance holds them (0).
    public func duties(_ duties: [(duty: String, held: Bool)]) {
        for d in duties {
            registry.gauge(
                name: Names.duties, labels: [("duty", d.duty)],
                help:
                    "1 while this instance holds the duty (a source's polling, the evaluator, the pruner), 0 on standby."
            ).set(to: d.held ? 1 : 0)
        }
    }

    /// 1 while the database file is the one the daemon opened; 0 once it was deleted or replaced.
    public func databaseFile(ok: Bool) {
        registry.gauge(
            name: "klaxon_database_file_ok",
            help: "1 while the database file is the one the daemon opened, 0 once it was deleted or replaced."
        ).set(to: ok ? 1 : 0)
    }

    /// The Prometheus text exposition; `process` adds the `process_*` families.
    public func exposition(process: ProcessMetrics? = nil) -> [UInt8] {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(8192)
        registry.emit(into: &buffer)
        if let process {
            var text = ""
            process.emit(into: &text)
            buffer.append(contentsOf: text.utf8)
        }
        return buffer
    }
}

/// swift-prometheus' descriptor API spoken with this file's full names: each family is named whole
/// (`klaxon_readings_total`), so the descriptor carries it as its metric name, with no unit part.
extension PrometheusCollectorRegistry {
    fileprivate static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
    }

    fileprivate func counter(name: String, labels: [(String, String)] = [], help: String) -> Prometheus.Counter {
        makeCounter(descriptor: Self.descriptor(name, help), labels: labels)
    }

    fileprivate func gauge(name: String, labels: [(String, String)] = [], help: String) -> Prometheus.Gauge {
        makeGauge(descriptor: Self.descriptor(name, help), labels: labels)
    }

    fileprivate func histogram(
        name: String, labels: [(String, String)] = [], buckets: [Double], help: String
    ) -> ValueHistogram {
        makeValueHistogram(descriptor: Self.descriptor(name, help), labels: labels, buckets: buckets)
    }
}
