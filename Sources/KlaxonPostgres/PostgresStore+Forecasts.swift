import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// Stores forecast issuances as `ForecastRows` says, in the caller's transaction.
    func write(forecasts: [FloodForecast], at now: Int64, on c: PostgresConnection) async throws -> ForecastCounts {
        var counts = ForecastCounts()
        for f in ForecastRows.ordered(forecasts) {
            let found = try await rows(
                """
                SELECT unit, source, points FROM forecast_issuances
                WHERE station = \(f.station) AND metric = \(f.metric) AND issued = \(f.issued)
                """, on: c
            ).first
            let stored = try found.map {
                (
                    unit: try $0[0].decode(String.self), source: try $0[1].decode(String.self),
                    points: try $0[2].decode(String.self)
                )
            }
            let points = ForecastRows.encode(f.points)
            let first = f.points.first?.time ?? f.issued
            let last = f.points.last?.time ?? f.issued
            switch ForecastRows.outcome(f, stored: stored) {
            case .unchanged:
                counts.unchanged += 1
            case .replace:
                counts.replaced += 1
                try await execute(
                    """
                    UPDATE forecast_issuances SET unit = \(f.unit), source = \(f.source), points = \(points),
                        first_time = \(first), last_time = \(last), stored_at = \(now),
                        seq = nextval(pg_get_serial_sequence('forecast_issuances', 'seq'))
                    WHERE station = \(f.station) AND metric = \(f.metric) AND issued = \(f.issued)
                    """, on: c)
            case .insert:
                counts.new += 1
                let top = try await rows(
                    """
                    SELECT max(issued) FROM forecast_issuances WHERE station = \(f.station) AND metric = \(f.metric)
                    """, on: c
                ).first.flatMap { try $0[0].decode(Int64?.self) }
                if let top, top > f.issued { counts.older += 1 }
                try await execute(
                    """
                    INSERT INTO forecast_issuances
                        (station, metric, issued, unit, source, points, first_time, last_time, stored_at)
                    VALUES (\(f.station), \(f.metric), \(f.issued), \(f.unit), \(f.source), \(points), \(first),
                        \(last), \(now))
                    """, on: c)
            }
        }
        return counts
    }

    static func forecast(_ row: PostgresRandomAccessRow) throws -> FloodForecast {
        FloodForecast(
            station: try row[0].decode(String.self), metric: try row[1].decode(String.self),
            issued: try row[2].decode(Int64.self), unit: try row[3].decode(String.self),
            source: try row[4].decode(String.self), points: ForecastRows.decode(try row[5].decode(String.self)))
    }

    public func latestForecast(station: String, metric: String) async throws -> FloodForecast? {
        try await rows(
            """
            SELECT station, metric, issued, unit, source, points FROM forecast_issuances
            WHERE station = \(station) AND metric = \(metric) ORDER BY issued DESC LIMIT 1
            """
        ).first.map(Self.forecast)
    }

    public func forecasts(station: String, metric: String, from: Int64, to: Int64, limit: Int) async throws
        -> [FloodForecast]
    {
        let limit = min(max(limit, 1), ForecastRows.maxRead)
        return try await rows(
            """
            SELECT station, metric, issued, unit, source, points FROM forecast_issuances
            WHERE station = \(station) AND metric = \(metric) AND issued BETWEEN \(from) AND \(to)
            ORDER BY issued LIMIT \(limit)
            """
        ).map(Self.forecast)
    }

    public func forecastSeries() async throws -> [SeriesKey: Int64] {
        var out: [SeriesKey: Int64] = [:]
        for row in try await rows(
            "SELECT station, metric, max(issued) FROM forecast_issuances GROUP BY station, metric")
        {
            out[SeriesKey(station: try row[0].decode(String.self), metric: try row[1].decode(String.self))] =
                try row[2].decode(Int64.self)
        }
        return out
    }
}
