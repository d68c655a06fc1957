import Foundation
import GRDB
import KlaxonCore

/// Counts for `/metrics`, read from the store so they survive restarts and agree with it.
public struct StoreMetrics: Sendable {
    /// Readings logged by ingest, by the configured source that fetched them (for files and the push
    /// API, the station's source).
    public var readingsBySource: [String: Int] = [:]
    /// Transitions by rule and state.
    public var transitions: [String: [String: Int]] = [:]
    /// Outbox rows by state.
    public var outbox: [String: Int] = [:]
    /// Outbox rows by receiver and final state (sent, dead, muted, dropped).
    public var deliveries: [String: [String: Int]] = [:]
    /// Seconds from queueing to sending, cumulative counts per upper bound.
    public var latencyBuckets: [(le: Double, count: Int)] = []
    public var latencySum: Double = 0
    public var latencyCount = 0
    /// Per source: consecutive failures, last success, last error.
    public var sources: [SourceStateRecord] = []

    public init() {}

    public static let latencyBounds: [Double] = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300]
}

extension SQLiteStore {
    public func metrics() async throws -> StoreMetrics {
        try await reader.read { db in
            var m = StoreMetrics()
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT coalesce(l.source, st.source, '') AS source, sum(l.count) AS n FROM ingest_log l
                    JOIN series s ON s.id = l.series_id JOIN stations st ON st.id = s.station GROUP BY 1
                    """)
            {
                m.readingsBySource[row["source"]] = row["n"]
            }
            for row in try Row.fetchAll(db, sql: "SELECT rule, state, count(*) AS n FROM transitions GROUP BY 1, 2") {
                m.transitions[row["rule"], default: [:]][row["state"]] = row["n"]
            }
            for row in try Row.fetchAll(db, sql: "SELECT state, count(*) AS n FROM outbox GROUP BY 1") {
                m.outbox[row["state"]] = row["n"]
            }
            for row in try Row.fetchAll(
                db,
                sql:
                    "SELECT receiver, state, count(*) AS n FROM outbox WHERE state IN ('sent','dead','muted','dropped') GROUP BY 1, 2"
            ) {
                m.deliveries[row["receiver"], default: [:]][row["state"]] = row["n"]
            }
            // The histogram is counted by SQLite in one pass, not by loading every delivery.
            let bounds = StoreMetrics.latencyBounds
            let buckets = bounds.map { "sum(latency <= \($0))" }.joined(separator: ", ")
            if let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), coalesce(sum(latency), 0), \(buckets) FROM (
                        SELECT (sent_at - created_at) / 1000.0 AS latency FROM outbox
                        WHERE state = 'sent' AND sent_at IS NOT NULL AND created_at IS NOT NULL)
                    """)
            {
                m.latencyCount = row[0]
                m.latencySum = row[1]
                m.latencyBuckets = bounds.enumerated().map { i, b in (b, (row[i + 2] as Int?) ?? 0) }
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
