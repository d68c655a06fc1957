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
    /// Active alerts by rule, severity and state (`Store.alertCounts()`).
    public var alerts: [AlertCount] = []
    /// When the earliest pending row fell due (ms), or was queued if a send of it has failed; nil
    /// when none is pending: `now - oldestDue` is how long the queue has left due work undone, a
    /// row waiting between retries included (rows deferred by group_wait or quiet hours are not due
    /// yet, so they do not count).
    public var oldestDue: Int64?

    public init() {}

    public static let latencyBounds: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
}

extension StoreMetrics {
    /// The counts from `metric_counts` rows (`MetricDeltas` keeps them) and the rows waiting now
    /// (pending, sending: counted live, not kept).
    public init(
        counts: [MetricDeltas.Row], waiting: [String: Int], sources: [SourceStateRecord], alerts: [AlertCount] = [],
        oldestDue: Int64? = nil
    ) {
        self.init()
        self.alerts = alerts
        self.oldestDue = oldestDue
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

/// How many alerts of a rule are in a state (`klaxon_alerts`; the rule's severity comes from its
/// configuration, as every transition of a rule carries the rule's severity).
public struct AlertCount: Sendable, Hashable {
    /// The states an active alert is in: `pending` (the condition holds, `for` not yet met),
    /// `firing` (not acknowledged) and `acked` (firing, acknowledged in its current episode).
    /// Exclusive: an acknowledged alert counts as `acked` only.
    public enum State: String, Sendable, CaseIterable {
        case pending, firing, acked
    }

    public var rule: String
    public var state: State
    public var count: Int

    public init(rule: String, state: State, count: Int) {
        self.rule = rule
        self.state = state
        self.count = count
    }

    /// The counts from active alert states by rule and status, and holding acks by rule.
    public static func make(active: [(rule: String, status: String, count: Int)], acked: [String: Int])
        -> [AlertCount]
    {
        var out: [AlertCount] = []
        for a in active {
            switch a.status {
            case "pending": out.append(AlertCount(rule: a.rule, state: .pending, count: a.count))
            case "firing":
                let k = min(acked[a.rule] ?? 0, a.count)
                if a.count > k { out.append(AlertCount(rule: a.rule, state: .firing, count: a.count - k)) }
                if k > 0 { out.append(AlertCount(rule: a.rule, state: .acked, count: k)) }
            default: break
            }
        }
        return out
    }
}

/// The SQL both backends run for `alertCounts()` (it reads the same in SQLite and PostgreSQL).
public enum AlertCountSQL {
    /// Rule, status, count of the active alert states: a walk of the `alert_states_active` partial
    /// covering index, never of inactive states or the transition log.
    public static let active = """
        SELECT rule, status, count(*) FROM alert_states WHERE status IN ('pending', 'firing') GROUP BY rule, status
        """

    /// Acks that hold (`AckSQL.holding`), by rule: as many probes as there are acks.
    public static let acked = "SELECT h.rule, count(*) FROM (\(AckSQL.holding)) h GROUP BY h.rule"

    /// The partial index `active` walks (the same statement in both backends' migrations).
    public static let index =
        "CREATE INDEX alert_states_active ON alert_states(rule, status) WHERE status IN ('pending', 'firing')"

    /// Since when the oldest pending row has waited: when it fell due, or, for a row whose send
    /// failed and waits for its retry, when it was queued (its `due_at` is the next retry: reading
    /// that would show a receiver failing for hours as waiting for nothing). A walk of the pending
    /// rows on the `(state, due_at)` index: the queue, never the history.
    public static let oldestDue =
        "SELECT min(CASE WHEN attempts > 0 THEN created_at ELSE due_at END) FROM outbox WHERE state = 'pending'"
}
