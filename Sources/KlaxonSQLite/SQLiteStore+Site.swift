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

    public func episode(_ id: Int64) async throws -> EpisodeHistory? {
        try await reader.read { db in
            guard let episode = try Int64.fetchOne(db, sql: EpisodeHistory.episodeOf, arguments: [id]) else {
                return nil
            }
            let transitions = try TransitionRecord.fetchAll(
                db, sql: EpisodeHistory.transitionsSQL(select: "*"), arguments: [episode])
            guard let first = transitions.first else { return nil }
            let ids = "[" + transitions.compactMap(\.id).map(String.init).joined(separator: ",") + "]"
            let deliveries = try OutboxRecord.fetchAll(
                db,
                sql: """
                    SELECT * FROM outbox WHERE alert = ? AND transition_id IN (SELECT value FROM json_each(?))
                    ORDER BY seq
                    """, arguments: [OutboxRecord.alertKey(first.transition), ids])
            return EpisodeHistory(id: episode, transitions: transitions, deliveries: deliveries)
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
