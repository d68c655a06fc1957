import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

/// Bounded reads for the status site: each returns at most `limit` rows, whatever the history holds.
extension SQLiteStore {
    /// The newest `limit` transitions, newest first (the transition log may hold millions).
    public func recentTransitions(limit: Int) async throws -> [TransitionRecord] {
        try await reader.read { db in
            try TransitionRecord.fetchAll(
                db, sql: "SELECT * FROM transitions ORDER BY id DESC LIMIT ?", arguments: [max(0, limit)])
        }
    }

    /// The newest reading (not suspect) of each series, newest first, at most `limit` of them: one
    /// primary-key probe per series (`CROSS JOIN` keeps the series as the outer loop; SQLite would
    /// otherwise scan every reading).
    public func newestReadings(limit: Int) async throws -> [StoredReading] {
        try await reader.read { db in
            try StoredReading.fetchAll(
                db,
                sql: """
                    SELECT s.station, s.metric, s.unit, r.time, r.value, r.quality, r.revised, r.suspect
                    FROM series s CROSS JOIN readings r ON r.series_id = s.id AND r.time = (
                        SELECT time FROM readings WHERE series_id = s.id AND suspect = 0
                        ORDER BY time DESC LIMIT 1)
                    ORDER BY r.time DESC, s.station, s.metric LIMIT ?
                    """, arguments: [max(0, limit)])
        }
    }

    /// The newest `limit` readings (not suspect) of a series, oldest first.
    public func lastValues(station: String, metric: String, limit: Int) async throws -> [(time: Int64, value: Double)] {
        try await reader.read { db in
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT r.time, r.value FROM readings r JOIN series s ON s.id = r.series_id
                        WHERE s.station = ? AND s.metric = ? AND r.suspect = 0
                        ORDER BY r.time DESC LIMIT ?
                        """), arguments: [station, metric, max(0, limit)])
            var out: [(time: Int64, value: Double)] = []
            while let r = try rows.next() { out.append((r[0], r[1])) }
            return out.reversed()
        }
    }
}
