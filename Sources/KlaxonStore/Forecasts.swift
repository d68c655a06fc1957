import Foundation
import KlaxonCore

/// River forecast issuances (issue 42, item 1), stored apart from readings: one row per gauge
/// series and issue time (`forecast_issuances`). The newest issue time of a series is its forecast;
/// an issuance older than one stored (out of order) is kept as history, never made the latest; the
/// same issuance again is unchanged; a different body under the same issue time replaces it.
/// Written by `ReadingIngest.write(_:)` with the batch's `forecasts`.
public protocol ForecastReads: Sendable {
    /// The newest issuance of a series (by issue time), nil when none is stored.
    func latestForecast(station: String, metric: String) async throws -> FloodForecast?
    /// The issuances of a series issued in `[from, to]` (seconds), oldest first, at most `limit`
    /// (clamped to 1…100,000): `dry-run --lead-time`, the gauge page.
    func forecasts(station: String, metric: String, from: Int64, to: Int64, limit: Int) async throws
        -> [FloodForecast]
    /// Every series with a stored forecast, and its newest issue time.
    func forecastSeries() async throws -> [SeriesKey: Int64]
}

/// What storing a batch's forecast issuances did; each issuance is counted once.
public struct ForecastCounts: Sendable, Equatable {
    /// Issuances seen for the first time (including `older` ones).
    public var new = 0
    /// Issuances stored already with the same body: nothing written.
    public var unchanged = 0
    /// Issuances stored already under the same issue time with another body: replaced.
    public var replaced = 0
    /// New issuances older than the newest stored for their series (out of order): kept as history,
    /// not the series' forecast.
    public var older = 0

    public init(new: Int = 0, unchanged: Int = 0, replaced: Int = 0, older: Int = 0) {
        self.new = new
        self.unchanged = unchanged
        self.replaced = replaced
        self.older = older
    }

    public static func += (a: inout ForecastCounts, b: ForecastCounts) {
        a.new += b.new
        a.unchanged += b.unchanged
        a.replaced += b.replaced
        a.older += b.older
    }
}

/// The rows of `forecast_issuances`, written once for both backends: how points are kept (JSON
/// `[[time, value], …]`) and what a write of one issuance does given what is stored.
public enum ForecastRows {
    public static let table = "forecast_issuances"
    /// The most issuances one read returns.
    public static let maxRead = 100_000

    public static func encode(_ points: [FloodForecast.Point]) -> String {
        var out = "["
        out.reserveCapacity(points.count * 24)
        for (i, p) in points.enumerated() {
            if i > 0 { out += "," }
            out += "[\(p.time),\(p.value)]"
        }
        return out + "]"
    }

    /// Points from their JSON; a row that no longer decodes has none.
    public static func decode(_ text: String) -> [FloodForecast.Point] {
        guard let rows = try? JSONDecoder().decode([[Double]].self, from: Data(text.utf8)) else { return [] }
        return rows.compactMap { row in
            guard row.count == 2, row[0].isFinite, abs(row[0]) < 1e15 else { return nil }
            return FloodForecast.Point(time: Int64(row[0]), value: row[1])
        }
    }

    public enum Outcome: Sendable, Equatable { case insert, replace, unchanged }

    /// What to do with `f` given the stored row under its key (its unit, source and points JSON).
    public static func outcome(_ f: FloodForecast, stored: (unit: String, source: String, points: String)?) -> Outcome {
        guard let stored else { return .insert }
        return stored.unit == f.unit && stored.source == f.source && stored.points == encode(f.points)
            ? .unchanged : .replace
    }

    /// The batch's issuances in the order they are written: by series, then issue time, so that of
    /// two issuances of one series in a batch the later is written last.
    public static func ordered(_ forecasts: [FloodForecast]) -> [FloodForecast] {
        forecasts.enumerated().sorted {
            ($0.element.station, $0.element.metric, $0.element.issued, $0.offset)
                < ($1.element.station, $1.element.metric, $1.element.issued, $1.offset)
        }.map(\.element)
    }
}

/// The usual arguments.
extension ForecastReads {
    public func forecasts(station: String, metric: String, from: Int64 = .min, to: Int64 = .max) async throws
        -> [FloodForecast]
    {
        try await forecasts(station: station, metric: metric, from: from, to: to, limit: ForecastRows.maxRead)
    }
}
