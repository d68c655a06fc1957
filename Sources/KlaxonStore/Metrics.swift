import Foundation
import KlaxonCore

/// Counts for `/metrics`. The store keeps them in `metric_counts`, a table of a few rows updated in
/// the same transaction as each event (whichever process writes it: the daemon, `klaxon ingest`,
/// `klaxon dispatch`), so reading them costs the same on day 1 and day 400, and they survive
/// restarts and the pruning of old rows. The hot paths (evaluation, claims, delivery outcomes) sum
/// their changes in memory and write them once per transaction (`MetricDeltas`): a trigger per row
/// had cost a third of delivery's time. Rows waiting (pending, sending) are counted live from the
/// state index: that count follows the backlog, not the history.
public struct StoreMetrics: Sendable {
    /// Readings logged by ingest, by the configured source that fetched them (for files and the push
    /// API, the station's source).
    public var readingsBySource: [String: Int] = [:]
    /// Transitions by rule and state, ever recorded.
    public var transitions: [String: [String: Int]] = [:]
    /// Outbox rows by state, now.
    public var outbox: [String: Int] = [:]
    /// Outcomes by receiver and final state (sent, dead, muted, dropped), ever reached.
    public var deliveries: [String: [String: Int]] = [:]
    /// Seconds from queueing to sending, cumulative counts per upper bound.
    public var latencyBuckets: [(le: Double, count: Int)] = []
    public var latencySum: Double = 0
    public var latencyCount = 0
    /// Deliveries and their summed latency in each bucket alone (not cumulative): `latencyBounds.count
    /// + 1` entries, the last for latencies above the largest bound.
    public var latencyByBucket: [(count: Int, sum: Double)] = []
    /// Per source: consecutive failures, last success, last error.
    public var sources: [SourceStateRecord] = []

    public init() {}

    public static let latencyBounds: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
}

extension StoreMetrics {
    /// The counts from `metric_counts` rows (`MetricDeltas` keeps them) and the rows waiting now
    /// (pending, sending: counted live, not kept).
    public init(counts: [MetricDeltas.Row], waiting: [String: Int], sources: [SourceStateRecord]) {
        self.init()
        let bounds = Self.latencyBounds
        latencyByBucket = Array(repeating: (0, 0), count: bounds.count + 1)
        for row in counts {
            let (a, b, n) = (row.a, row.b, row.n)
            switch row.family {
            case "readings": readingsBySource[a] = n
            case "transitions": transitions[a, default: [:]][b] = n
            case "outbox": if a != "pending" && a != "sending" { outbox[a] = n }
            case "deliveries": deliveries[a, default: [:]][b] = n
            case "latency":
                if let i = Int(a), latencyByBucket.indices.contains(i) { latencyByBucket[i] = (n, row.total) }
            default: break
            }
        }
        var cumulative = 0
        latencyBuckets = bounds.enumerated().map { i, b in
            cumulative += latencyByBucket[i].count
            return (b, cumulative)
        }
        latencyCount = latencyByBucket.reduce(0) { $0 + $1.count }
        latencySum = latencyByBucket.reduce(0) { $0 + $1.sum }
        outbox["pending"] = waiting["pending"] ?? 0
        outbox["sending"] = waiting["sending"] ?? 0
        outbox["held"] = waiting["held"] ?? 0
        self.sources = sources
    }
}
