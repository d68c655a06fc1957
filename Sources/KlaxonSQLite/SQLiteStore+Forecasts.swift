import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Stores forecast issuances as `ForecastRows` says, in the caller's transaction.
    static func write(forecasts: [FloodForecast], at now: Int64, _ db: Database) throws -> ForecastCounts {
        var counts = ForecastCounts()
        let stored = try db.cachedStatement(
            sql: "SELECT unit, source, points FROM forecast_issuances WHERE station = ? AND metric = ? AND issued = ?")
        let newest = try db.cachedStatement(
            sql: "SELECT max(issued) FROM forecast_issuances WHERE station = ? AND metric = ?")
        for f in ForecastRows.ordered(forecasts) {
            let key: StatementArguments = [f.station, f.metric, f.issued]
            let row = try Row.fetchOne(stored, arguments: key)
            let points = ForecastRows.encode(f.points)
            let first = f.points.first?.time ?? f.issued
            let last = f.points.last?.time ?? f.issued
            let found = row.map { (unit: $0[0] as String, source: $0[1] as String, points: $0[2] as String) }
            switch ForecastRows.outcome(f, stored: found) {
            case .unchanged:
                counts.unchanged += 1
            case .replace:
                counts.replaced += 1
                try db.execute(
                    sql: """
                        UPDATE forecast_issuances SET unit = ?, source = ?, points = ?, first_time = ?, last_time = ?,
                            stored_at = ?, seq = (SELECT coalesce(max(seq), 0) + 1 FROM forecast_issuances)
                        WHERE station = ? AND metric = ? AND issued = ?
                        """, arguments: [f.unit, f.source, points, first, last, now, f.station, f.metric, f.issued])
            case .insert:
                counts.new += 1
                if let top = try Int64.fetchOne(newest, arguments: [f.station, f.metric]), top > f.issued {
                    counts.older += 1
                }
                try db.execute(
                    sql: """
                        INSERT INTO forecast_issuances
                            (seq, station, metric, issued, unit, source, points, first_time, last_time, stored_at)
                        VALUES ((SELECT coalesce(max(seq), 0) + 1 FROM forecast_issuances), ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """,
                    arguments: [f.station, f.metric, f.issued, f.unit, f.source, points, first, last, now])
            }
        }
        return counts
    }

    static func forecast(_ row: Row) -> FloodForecast {
        FloodForecast(
            station: row["station"], metric: row["metric"], issued: row["issued"], unit: row["unit"],
            source: row["source"], points: ForecastRows.decode(row["points"]))
    }

    public func latestForecast(station: String, metric: String) async throws -> FloodForecast? {
        try await reader.read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT station, metric, issued, unit, source, points FROM forecast_issuances
                    WHERE station = ? AND metric = ? ORDER BY issued DESC LIMIT 1
                    """, arguments: [station, metric]
            ).map(Self.forecast)
        }
    }

    public func forecasts(station: String, metric: String, from: Int64, to: Int64, limit: Int) async throws
        -> [FloodForecast]
    {
        let limit = min(max(limit, 1), ForecastRows.maxRead)
        return try await reader.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT station, metric, issued, unit, source, points FROM forecast_issuances
                    WHERE station = ? AND metric = ? AND issued BETWEEN ? AND ? ORDER BY issued LIMIT ?
                    """, arguments: [station, metric, from, to, limit]
            ).map(Self.forecast)
        }
    }

    public func forecastSeries() async throws -> [SeriesKey: Int64] {
        try await reader.read { db in
            var out: [SeriesKey: Int64] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT station, metric, max(issued) FROM forecast_issuances GROUP BY station, metric")
            {
                out[SeriesKey(station: row[0], metric: row[1])] = row[2]
            }
            return out
        }
    }
}
