import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Marks the stored readings `Plausibility` calls suspect (the `v12-reading-quality` migration:
    /// readings stored before the flag existed). Series by series: the range check in SQL, the
    /// quality codes once per distinct code. The station's source stands in for the reading's.
    static func markSuspectReadings(_ db: Database) throws {
        let series = try Row.fetchAll(
            db,
            sql: "SELECT s.id, s.metric, s.unit, st.source FROM series s LEFT JOIN stations st ON st.id = s.station")
        for row in series {
            let id: Int64 = row["id"]
            if let range = Plausibility.range(metric: row["metric"], unit: row["unit"]) {
                try db.execute(
                    sql: "UPDATE readings SET suspect = 1 WHERE series_id = ? AND NOT (value BETWEEN ? AND ?)",
                    arguments: [id, range.lowerBound, range.upperBound])
            }
            let codes = try String.fetchAll(
                db, sql: "SELECT DISTINCT quality FROM readings WHERE series_id = ? AND quality IS NOT NULL",
                arguments: [id])
            for code in codes where Plausibility.qualityIsSuspect(code, source: row["source"]) {
                try db.execute(
                    sql: "UPDATE readings SET suspect = 1 WHERE series_id = ? AND quality = ?", arguments: [id, code])
            }
        }
    }

    /// The suspect readings of a series for `from < time <= to`, newest first, at most `limit` of
    /// them, and how many there are in all.
    public func suspectReadings(station: String, metric: String, from: Int64, to: Int64, limit: Int) async throws
        -> (count: Int, newest: [StoredReading])
    {
        try await reader.read { db in
            let arguments: StatementArguments = [station, metric, from, to]
            let count =
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) FROM readings r JOIN series s ON s.id = r.series_id
                        WHERE s.station = ? AND s.metric = ? AND r.time > ? AND r.time <= ? AND r.suspect = 1
                        """, arguments: arguments) ?? 0
            guard count > 0 else { return (0, []) }
            let newest = try StoredReading.fetchAll(
                db,
                sql: """
                    SELECT s.station, s.metric, s.unit, r.time, r.value, r.quality, r.revised, r.suspect
                    FROM readings r JOIN series s ON s.id = r.series_id
                    WHERE s.station = ? AND s.metric = ? AND r.time > ? AND r.time <= ? AND r.suspect = 1
                    ORDER BY r.time DESC LIMIT ?
                    """, arguments: arguments + [max(0, limit)])
            return (count, newest)
        }
    }
}
