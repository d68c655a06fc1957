/// One issuance of an official river forecast (issue 42, item 1): the hydrograph a River Forecast
/// Center issued for one gauge and one series at one time, as NWPS (`/gauges/{lid}/stageflow`), the
/// NWS HML product or AHPS `hydrograph.php?output=xml` carry it. Stored apart from observations,
/// one row per issuance; the newest issuance of a gauge's series is its forecast.
///
/// Units are Klaxon's for the metric: stage (`gage_height`) in ft, flow (`discharge`) in ft³/s, as
/// observations and NWS flood categories are; the parsers convert (m → ft, kcfs → cfs).
public struct FloodForecast: Sendable, Hashable, Codable {
    /// A forecast value at a valid time (seconds).
    public struct Point: Sendable, Hashable, Codable {
        public var time: Int64
        public var value: Double

        public init(time: Int64, value: Double) {
            self.time = time
            self.value = value
        }
    }

    /// The station id the gauge's readings are stored under (`GaugeInfo.stationID`).
    public var station: String
    /// `gage_height` or `discharge`.
    public var metric: String
    /// When the forecast was issued (seconds).
    public var issued: Int64
    /// `ft` or `ft³/s`.
    public var unit: String
    /// `nwps`, `hml` or `ahps`.
    public var source: String
    /// By time, one per time.
    public var points: [Point]

    /// The most points one issuance keeps (NWPS forecasts hold a few dozen; an HML forecast rarely
    /// more than a couple of hundred): a longer one is cut to its first `maxPoints`, counted.
    public static let maxPoints = 2_000

    public init(station: String, metric: String, issued: Int64, unit: String, source: String, points: [Point]) {
        self.station = station
        self.metric = metric
        self.issued = issued
        self.unit = unit
        self.source = source
        self.points = points
    }

    /// The highest value (the earliest of equal highs); nil for an issuance without points.
    public var crest: Point? {
        var best: Point?
        for p in points where best == nil || p.value > best!.value { best = p }
        return best
    }

    /// A category the forecast reaches, and the first time it does.
    public struct Crossing: Sendable, Hashable, Codable {
        public var category: String
        public var time: Int64

        public init(category: String, time: Int64) {
            self.category = category
            self.time = time
        }
    }

    /// Per level of `ladder` (ascending), the first forecast time at or after `from` whose value is
    /// at or above it; levels never reached are absent.
    public func crossings(_ ladder: [LevelsRule.Level], from: Int64 = .min) -> [Crossing] {
        var out: [Crossing] = []
        for level in ladder {
            if let p = points.first(where: { $0.time >= from && $0.value >= level.at }) {
                out.append(Crossing(category: level.name, time: p.time))
            }
        }
        return out
    }

    /// Points sorted by time, one per time (the last given wins), cut to `maxPoints`: what a parser
    /// stores. Returns how many were cut.
    public mutating func normalize() -> Int {
        var byTime: [Int64: Double] = [:]
        for p in points { byTime[p.time] = p.value }
        var sorted = byTime.map { Point(time: $0.key, value: $0.value) }.sorted { $0.time < $1.time }
        let cut = max(0, sorted.count - Self.maxPoints)
        if cut > 0 { sorted.removeLast(cut) }
        points = sorted
        return cut
    }
}

/// An item of a forecast product that was not stored, and why: every skip is counted and named.
public struct ForecastSkip: Sendable, Hashable, Codable {
    /// The site or gauge it belongs to (`PRTO3`), or `?` when the product does not say.
    public var site: String
    public var reason: String

    public init(site: String, reason: String) {
        self.site = site
        self.reason = reason
    }
}
