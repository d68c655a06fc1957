import KlaxonCore

/// The overall AQI of an hour (`aqi`) is the highest of its pollutants' AQIs (`aqi.o3`, `aqi.pm25`,
/// …), whatever order they arrive in. A batch that derives it from its pollutants
/// (`SourceBatch.overallAQI`: AirNow's reporting areas) knows only the pollutants it carries: one
/// file in the 2026 field set with ozone at 32 and one in the legacy set with PM2.5 at 74 for the
/// same hour would leave `aqi` at whichever came last. So before such a batch's readings are written,
/// each of its `aqi` readings is set to the highest of the hour's pollutant AQIs: those of the batch
/// (a revised pollutant counts at its new value) and those already stored that the batch does not
/// carry. Each backend reads the stored ones its own way; the rest is here.
public enum OverallAQI {
    public static let metric = "aqi"
    public static let pollutantPrefix = "aqi."

    /// One station's hour.
    public struct Hour: Hashable, Sendable {
        public var station: String
        public var time: Int64

        public init(station: String, time: Int64) {
            self.station = station
            self.time = time
        }
    }

    /// `aqi.pm25`, not a derived `aqi.pm25.nowcast` (`NowCastSeries`), which is another series of
    /// the same pollutant, not a pollutant of the hour.
    public static func isPollutant(_ metric: String) -> Bool {
        metric.hasPrefix(pollutantPrefix) && !metric.hasSuffix(NowCastSeries.suffix)
    }

    /// The hours whose overall AQI the readings set: the stored pollutants of these are wanted.
    public static func hours(_ readings: [Reading]) -> Set<Hour> {
        Set(readings.lazy.filter { $0.metric == metric }.map { Hour(station: $0.station, time: $0.time) })
    }

    /// Sets every `aqi` reading to the highest pollutant AQI of its hour: the readings' own
    /// pollutants, and `stored` (by hour, the stored pollutants' values by metric) for the metrics
    /// the readings do not carry. An hour with no pollutant known keeps its value.
    public static func apply(_ readings: inout [Reading], stored: [Hour: [String: Double]]) {
        var pollutants = stored.mapValues { $0.filter { isPollutant($0.key) } }
        // The batch's pollutants take the place of the stored values of the same metric; of two
        // values of one metric in the batch (two sites of one area), the higher counts.
        var carried: [Hour: [String: Double]] = [:]
        for r in readings where isPollutant(r.metric) && r.value.isFinite {
            let hour = Hour(station: r.station, time: r.time)
            carried[hour, default: [:]][r.metric] = max(carried[hour]?[r.metric] ?? -.infinity, r.value)
        }
        for (hour, values) in carried { pollutants[hour, default: [:]].merge(values) { _, new in new } }
        for i in readings.indices where readings[i].metric == metric {
            let hour = Hour(station: readings[i].station, time: readings[i].time)
            if let highest = pollutants[hour]?.values.max() { readings[i].value = highest }
        }
    }
}
