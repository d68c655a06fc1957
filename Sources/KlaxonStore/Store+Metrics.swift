import Foundation
import GRDB
import KlaxonCore

/// Counts for `/metrics`. The store keeps them in `metric_counts`, a table of a few rows that triggers
/// update in the same transaction as each event (whichever process writes it: the daemon, `klaxon
/// ingest`, `klaxon dispatch`), so reading them costs the same on day 1 and day 400, and they survive
/// restarts and the pruning of old rows.
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

/// The `metric_counts` table, its seed from the tables' contents, and the triggers that keep it.
let metricCountsSchema: String = {
    let final = "('sent', 'dead', 'muted', 'dropped')"
    func bucket(_ latency: String) -> String {
        let cases = StoreMetrics.latencyBounds.enumerated().map { i, b in "WHEN \(latency) <= \(b) THEN '\(i)'" }
        return "CASE \(cases.joined(separator: " ")) ELSE '\(StoreMetrics.latencyBounds.count)' END"
    }
    let upsert = "ON CONFLICT (family, a, b) DO UPDATE SET n = n + excluded.n, total = total + excluded.total"
    let latency = "(NEW.sent_at - NEW.created_at) / 1000.0"
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
        CREATE TRIGGER metric_transitions AFTER INSERT ON transitions BEGIN
            INSERT INTO metric_counts (family, a, b, n) VALUES ('transitions', NEW.rule, NEW.state, 1) \(upsert);
        END;
        CREATE TRIGGER metric_outbox_insert AFTER INSERT ON outbox BEGIN
            INSERT INTO metric_counts (family, a, n) VALUES ('outbox', NEW.state, 1) \(upsert);
        END;
        CREATE TRIGGER metric_outbox_delete AFTER DELETE ON outbox BEGIN
            INSERT INTO metric_counts (family, a, n) VALUES ('outbox', OLD.state, -1) \(upsert);
        END;
        CREATE TRIGGER metric_outbox_state AFTER UPDATE OF state ON outbox WHEN OLD.state IS NOT NEW.state BEGIN
            INSERT INTO metric_counts (family, a, n) VALUES ('outbox', OLD.state, -1) \(upsert);
            INSERT INTO metric_counts (family, a, n) VALUES ('outbox', NEW.state, 1) \(upsert);
        END;
        CREATE TRIGGER metric_outbox_outcome AFTER UPDATE OF state ON outbox
            WHEN OLD.state IS NOT NEW.state AND NEW.state IN \(final) BEGIN
            INSERT INTO metric_counts (family, a, b, n) VALUES ('deliveries', NEW.receiver, NEW.state, 1) \(upsert);
        END;
        CREATE TRIGGER metric_outbox_inserted_outcome AFTER INSERT ON outbox WHEN NEW.state IN \(final) BEGIN
            INSERT INTO metric_counts (family, a, b, n) VALUES ('deliveries', NEW.receiver, NEW.state, 1) \(upsert);
        END;
        CREATE TRIGGER metric_outbox_sent AFTER UPDATE OF state ON outbox
            WHEN OLD.state IS NOT NEW.state AND NEW.state = 'sent' AND NEW.sent_at IS NOT NULL BEGIN
            INSERT INTO metric_counts (family, a, n, total) VALUES ('latency', \(bucket(latency)), 1, \(latency)) \(upsert);
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
                case "outbox": m.outbox[a] = n
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
