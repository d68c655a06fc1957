import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

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

/// v16: readings count by the name the ingest recorded (a configured source's, `api` for a push;
/// none: `file`, `klaxon ingest`), never by the station's origin; rows logged before this migration
/// without a source (pushes and files alike) count as `unknown`. The counts are
/// re-seeded from `ingest_log` (pruning folds its entries, keeping their sums), and active alerts get
/// the partial index `klaxon_alerts` reads.
let readingsBySourceSchema = """
    DROP TRIGGER metric_readings;
    CREATE TRIGGER metric_readings AFTER INSERT ON ingest_log BEGIN
        INSERT INTO metric_counts (family, a, n) VALUES ('readings', coalesce(NEW.source, 'file'), NEW.count)
        ON CONFLICT (family, a, b) DO UPDATE SET n = n + excluded.n;
    END;
    DELETE FROM metric_counts WHERE family = 'readings';
    INSERT INTO metric_counts (family, a, b, n)
        SELECT 'readings', coalesce(source, 'unknown'), '', sum(count) FROM ingest_log GROUP BY 2;
    \(AlertCountSQL.index);
    """

extension SQLiteStore {
    /// The counts behind `/metrics`: a read of `metric_counts` (a few rows per rule, receiver and
    /// source) and of the sources' state, never of the history tables.
    public func metrics() async throws -> StoreMetrics {
        try await reader.read { db in
            let counts = try Row.fetchAll(db, sql: "SELECT family, a, b, n, total FROM metric_counts").map { row in
                MetricDeltas.Row(family: row[0], a: row[1], b: row[2], n: row[3], total: row[4])
            }
            // Waiting rows, counted live through the (state, due_at) index.
            var waiting: [String: Int] = [:]
            for row in try Row.fetchAll(
                db.cachedStatement(
                    sql:
                        "SELECT state, count(*) FROM outbox WHERE state IN ('pending', 'sending', 'held') GROUP BY state"
                ))
            {
                waiting[row[0]] = row[1]
            }
            let oldestDue = try Int64.fetchOne(db.cachedStatement(sql: AlertCountSQL.oldestDue))
            return StoreMetrics(
                counts: counts, waiting: waiting, sources: try sourceStates(db), alerts: try alertCounts(db),
                oldestDue: oldestDue)
        }
    }

    /// Active alerts by rule, severity and state (`AlertCountSQL`).
    public func alertCounts() async throws -> [AlertCount] {
        try await reader.read { db in try alertCounts(db) }
    }

    func alertCounts(_ db: Database) throws -> [AlertCount] {
        let active = try Row.fetchAll(db.cachedStatement(sql: AlertCountSQL.active)).map {
            (rule: $0[0] as String, status: $0[1] as String, count: $0[2] as Int)
        }
        var acked: [String: Int] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: AlertCountSQL.acked)) { acked[row[0]] = row[1] }
        return AlertCount.make(active: active, acked: acked)
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

extension MetricDeltas {
    /// Writes the changes in the caller's transaction, one upsert per key.
    func write(_ db: Database) throws {
        let rows = self.rows
        guard !rows.isEmpty else { return }
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO metric_counts (family, a, b, n, total) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (family, a, b) DO UPDATE SET n = n + excluded.n, total = total + excluded.total
                """)
        for (key, n, total) in rows {
            try upsert.execute(arguments: [key.family, key.a, key.b, n, total])
        }
    }
}
