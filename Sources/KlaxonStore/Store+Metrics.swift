import Foundation
import GRDB
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

/// The `metric_counts` table, its seed from the tables' contents, and the two triggers that keep it
/// for rare or per-batch events (an ingest batch's log entries, pruned delivered rows).
let metricCountsSchema: String = {
    let final = "('sent', 'dead', 'muted', 'dropped')"
    func bucket(_ latency: String) -> String {
        let cases = StoreMetrics.latencyBounds.enumerated().map { i, b in "WHEN \(latency) <= \(b) THEN '\(i)'" }
        return "CASE \(cases.joined(separator: " ")) ELSE '\(StoreMetrics.latencyBounds.count)' END"
    }
    let upsert = "ON CONFLICT (family, a, b) DO UPDATE SET n = n + excluded.n, total = total + excluded.total"
    return """
        CREATE TABLE metric_counts (
            family TEXT NOT NULL,
            a TEXT NOT NULL,
            b TEXT NOT NULL DEFAULT '',
            n INTEGER NOT NULL DEFAULT 0,
            total REAL NOT NULL DEFAULT 0,
            PRIMARY KEY (family, a, b)
        ) WITHOUT ROWID;
        INSERT INTO metric_counts (family, a, b, n)
            SELECT 'readings', coalesce(l.source, st.source, ''), '', sum(l.count) FROM ingest_log l
            JOIN series s ON s.id = l.series_id JOIN stations st ON st.id = s.station GROUP BY 2;
        INSERT INTO metric_counts (family, a, b, n)
            SELECT 'transitions', rule, state, count(*) FROM transitions GROUP BY 2, 3;
        INSERT INTO metric_counts (family, a, b, n) SELECT 'outbox', state, '', count(*) FROM outbox GROUP BY 2;
        INSERT INTO metric_counts (family, a, b, n)
            SELECT 'deliveries', receiver, state, count(*) FROM outbox WHERE state IN \(final) GROUP BY 2, 3;
        INSERT INTO metric_counts (family, a, b, n, total)
            SELECT 'latency', \(bucket("latency")), '', count(*), sum(latency) FROM (
                SELECT (sent_at - created_at) / 1000.0 AS latency FROM outbox
                WHERE state = 'sent' AND sent_at IS NOT NULL)
            GROUP BY 2;

        CREATE TRIGGER metric_readings AFTER INSERT ON ingest_log BEGIN
            INSERT INTO metric_counts (family, a, n) VALUES ('readings', coalesce(NEW.source, (
                SELECT st.source FROM series s JOIN stations st ON st.id = s.station WHERE s.id = NEW.series_id), ''),
                NEW.count) \(upsert);
        END;
        CREATE TRIGGER metric_outbox_delete AFTER DELETE ON outbox WHEN OLD.state IN \(final) BEGIN
            INSERT INTO metric_counts (family, a, n) VALUES ('outbox', OLD.state, -1) \(upsert);
        END;
        """
}()

extension SQLiteStore {
    /// The counts behind `/metrics`: a read of `metric_counts` (a few rows per rule, receiver and
    /// source) and of the sources' state, never of the history tables.
    public func metrics() async throws -> StoreMetrics {
        try await reader.read { db in
            var m = StoreMetrics()
            let bounds = StoreMetrics.latencyBounds
            m.latencyByBucket = Array(repeating: (0, 0), count: bounds.count + 1)
            for row in try Row.fetchAll(db, sql: "SELECT family, a, b, n, total FROM metric_counts") {
                let family: String = row[0]
                let a: String = row[1]
                let b: String = row[2]
                let n: Int = row[3]
                switch family {
                case "readings": m.readingsBySource[a] = n
                case "transitions": m.transitions[a, default: [:]][b] = n
                case "outbox": if a != "pending" && a != "sending" { m.outbox[a] = n }
                case "deliveries": m.deliveries[a, default: [:]][b] = n
                case "latency":
                    let total: Double = row[4]
                    if let i = Int(a), m.latencyByBucket.indices.contains(i) { m.latencyByBucket[i] = (n, total) }
                default: break
                }
            }
            var cumulative = 0
            m.latencyBuckets = bounds.enumerated().map { i, b in
                cumulative += m.latencyByBucket[i].count
                return (b, cumulative)
            }
            m.latencyCount = m.latencyByBucket.reduce(0) { $0 + $1.count }
            m.latencySum = m.latencyByBucket.reduce(0) { $0 + $1.sum }
            // Waiting rows, counted live through the (state, due_at) index.
            m.outbox["pending"] = 0
            m.outbox["sending"] = 0
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT state, count(*) FROM outbox WHERE state IN ('pending', 'sending') GROUP BY state"))
            {
                m.outbox[row[0]] = row[1]
            }
            m.sources = try sourceStates(db)
            return m
        }
    }

    /// Every configured source's cursor and health, by name.
    public func sourceStates() async throws -> [SourceStateRecord] {
        try await reader.read { db in try sourceStates(db) }
    }

    func sourceStates(_ db: Database) throws -> [SourceStateRecord] {
        try SourceStateRecord.order(Column("source")).fetchAll(db)
    }

    /// True when the database answers a query.
    public func isReachable() async -> Bool {
        (try? await reader.read { db in try Int.fetchOne(db, sql: "SELECT 1") }) == 1
    }
}

/// Changes to `metric_counts` summed in memory, written once per transaction (one upsert per key).
struct MetricDeltas {
    private struct Key: Hashable {
        var family: String
        var a: String
        var b: String
    }
    private var changes: [Key: (n: Int, total: Double)] = [:]

    mutating func add(_ family: String, _ a: String, _ b: String = "", n: Int = 1, total: Double = 0) {
        let key = Key(family: family, a: a, b: b)
        let old = changes[key] ?? (0, 0)
        changes[key] = (old.n + n, old.total + total)
    }

    /// A transition logged.
    mutating func transition(rule: String, state: String) { add("transitions", rule, state) }

    /// A row reaching a final state (sent, dead, muted, dropped) from `sending`; `latency` in
    /// seconds from queueing to sending, for `sent`.
    mutating func outcome(receiver: String, state: String, latency: Double?) {
        add("outbox", state)
        add("deliveries", receiver, state)
        if let latency { add("latency", String(Self.bucket(latency)), total: latency) }
    }

    /// The histogram bucket of a latency: the first bound it is within, else past the last.
    static func bucket(_ latency: Double) -> Int {
        StoreMetrics.latencyBounds.firstIndex { latency <= $0 } ?? StoreMetrics.latencyBounds.count
    }

    func write(_ db: Database) throws {
        guard !changes.isEmpty else { return }
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO metric_counts (family, a, b, n, total) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (family, a, b) DO UPDATE SET n = n + excluded.n, total = total + excluded.total
                """)
        for (key, change) in changes where change.n != 0 || change.total != 0 {
            try upsert.execute(arguments: [key.family, key.a, key.b, change.n, change.total])
        }
    }
}
