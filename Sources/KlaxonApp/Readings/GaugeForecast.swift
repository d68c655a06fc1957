import Foundation
import KlaxonCore
import KlaxonStore

/// `klaxon gauge ID --forecast`: the latest forecast issuance of a gauge (issue 42), with its crest
/// and the first time it reaches each of the gauge's flood categories.
public enum GaugeForecast {
    public struct Point: Codable, Sendable, Equatable {
        public var time: String
        public var value: Double
    }

    public struct Crossing: Codable, Sendable, Equatable {
        public var category: String
        public var time: String
    }

    /// `{"station", "issued", "units", "points": [{"time", "value"}], "crest": {"time", "value"},
    /// "crossings": [{"category", "time"}]}`: the interface, exactly.
    public struct Report: Codable, Sendable, Equatable {
        public var station: String
        public var issued: String
        public var units: String
        public var points: [Point]
        public var crest: Point?
        public var crossings: [Crossing]
    }

    /// The report and, when the gauge has no flood categories (no crossings can be named), a note
    /// saying so; nil when no forecast is stored for the gauge.
    public static func build(store: any StationReads & ForecastReads, id: String) async throws
        -> (report: Report, note: String?)?
    {
        var candidates: [String] = []
        if let s = try await store.resolveStation(id) { candidates.append(s) }
        candidates += [id, id.uppercased()]
        for station in candidates {
            for metric in ["gage_height", "discharge"] {
                guard let f = try await store.latestForecast(station: station, metric: metric) else { continue }
                let floods = try await store.floodCategories()
                let ladder = (floods[station] ?? floods[id.uppercased()])?.ladder(forMetric: metric) ?? []
                let note =
                    ladder.isEmpty
                    ? "\(station) has no flood categories for \(metric): no crossings to name (give the gauge's categories in the station config, or fetch its NWPS metadata)"
                    : nil
                return (report(f, ladder: ladder), note)
            }
        }
        return nil
    }

    public static func report(_ f: FloodForecast, ladder: [LevelsRule.Level]) -> Report {
        Report(
            station: f.station, issued: Timestamp.format(f.issued), units: f.unit,
            points: f.points.map { Point(time: Timestamp.format($0.time), value: $0.value) },
            crest: f.crest.map { Point(time: Timestamp.format($0.time), value: $0.value) },
            crossings: f.crossings(ladder).map { Crossing(category: $0.category, time: Timestamp.format($0.time)) })
    }

    public static func json(_ r: Report) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(r)) ?? Data("{}".utf8), as: UTF8.self)
    }

    public static func text(_ r: Report, note: String?) -> String {
        var lines = ["\(r.station): forecast issued \(r.issued), \(r.points.count) points (\(r.units))"]
        if let c = r.crest { lines.append("  crest \(formatValue(c.value)) \(r.units) at \(c.time)") }
        for c in r.crossings { lines.append("  reaches \(c.category) at \(c.time)") }
        if r.crossings.isEmpty && note == nil { lines.append("  reaches no flood category") }
        if let note { lines.append("  " + note) }
        for p in r.points { lines.append("  \(p.time)  \(formatValue(p.value))") }
        return lines.joined(separator: "\n")
    }
}
