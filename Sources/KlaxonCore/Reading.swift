/// One measured value of one metric at one station at one time.
public struct Reading: Sendable, Hashable {
    public var station: String
    public var metric: String
    /// UTC seconds since the epoch.
    public var time: Int64
    public var value: Double
    public var unit: String?
    public var source: String?
    /// Quality flags as the source gives them (for example USGS `P`, `A`, `e`), or nil.
    public var quality: String?

    public init(
        station: String, metric: String, time: Int64, value: Double, unit: String? = nil, source: String? = nil,
        quality: String? = nil
    ) {
        self.station = station
        self.metric = metric
        self.time = time
        self.value = value
        self.unit = unit
        self.source = source
        self.quality = quality
    }

    public var series: SeriesKey { SeriesKey(station: station, metric: metric) }
}

/// A time series: one metric at one station.
public struct SeriesKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var station: String
    public var metric: String

    public init(station: String, metric: String) {
        self.station = station
        self.metric = metric
    }

    public static func < (a: SeriesKey, b: SeriesKey) -> Bool {
        (a.station, a.metric) < (b.station, b.metric)
    }

    public var description: String { "\(station)/\(metric)" }
}
