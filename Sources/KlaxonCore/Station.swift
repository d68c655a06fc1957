import Foundation

/// What Klaxon knows about a station besides its readings: where it is, what it is called, and the
/// ids other agencies know it by. Sources report it with their readings; messages and `klaxon gauge`
/// use it.
public struct StationInfo: Sendable, Hashable, Codable {
    /// The id readings are stored under: a USGS site number (`14211720`, no `USGS-` prefix), an NWS
    /// LID (`PRTO3`) for a gauge without USGS, or a CWMS location (`ARBU`).
    public var id: String
    /// The source kind that reported it (`usgs-iv`, `nwps`, `cwms`, …).
    public var source: String?
    public var name: String?
    public var latitude: Double?
    public var longitude: Double?
    /// An IANA zone (`America/Chicago`) where known.
    public var timeZone: String?
    public var usgsID: String?
    public var nwsLID: String?
    /// Anything else worth keeping (`office`, `state`, `site_type`, …).
    public var attributes: [String: String]

    public init(
        id: String, source: String? = nil, name: String? = nil, latitude: Double? = nil, longitude: Double? = nil,
        timeZone: String? = nil, usgsID: String? = nil, nwsLID: String? = nil, attributes: [String: String] = [:]
    ) {
        self.id = id
        self.source = source
        self.name = name
        self.latitude = latitude
        self.longitude = longitude
        self.timeZone = timeZone
        self.usgsID = usgsID
        self.nwsLID = nwsLID
        self.attributes = attributes
    }
}

/// NWS flood categories for one gauge. An undefined category (`-9999` in NWPS) is absent.
public struct FloodCategories: Sendable, Hashable, Codable {
    /// The categories from lowest to highest.
    public static let names = ["action", "minor", "moderate", "major"]

    /// Stage thresholds by category name (`stageUnit`, normally ft).
    public var stage: [String: Double]
    /// Flow thresholds by category name (`flowUnit`, normally cfs).
    public var flow: [String: Double]
    public var stageUnit: String
    public var flowUnit: String

    public init(
        stage: [String: Double] = [:], flow: [String: Double] = [:], stageUnit: String = "ft", flowUnit: String = "cfs"
    ) {
        self.stage = stage
        self.flow = flow
        self.stageUnit = stageUnit
        self.flowUnit = flowUnit
    }

    public var isEmpty: Bool { stage.isEmpty && flow.isEmpty }

    /// The ladder for a metric: stage categories for `gage_height`/`stage`, flow categories for
    /// `discharge`/`flow`; nil for any other metric. Undefined categories are skipped, and a category
    /// not above the one below it (bad metadata) is dropped rather than breaking the ladder's order.
    public func ladder(forMetric metric: String) -> [LevelsRule.Level]? {
        let base = metric.split(separator: ".").first.map(String.init) ?? metric
        let table: [String: Double]
        switch base {
        case "gage_height", "stage": table = stage
        case "discharge", "flow": table = flow
        default: return nil
        }
        var out: [LevelsRule.Level] = []
        for name in Self.names {
            guard let at = table[name], at.isFinite else { continue }
            if let last = out.last, at <= last.at { continue }
            out.append(LevelsRule.Level(name: name, at: at))
        }
        return out
    }
}

/// An NWS gauge as the National Water Prediction Service describes it (`/gauges/{id}`).
public struct GaugeInfo: Sendable, Hashable, Codable {
    /// The NWS location id (`PRTO3`).
    public var lid: String
    /// The USGS site number, nil when NWPS gives none (`""`).
    public var usgsID: String?
    /// `Willamette River at Portland`.
    public var name: String?
    /// `Willamette R at Portland, OR`.
    public var description: String?
    /// Two-letter state (`OR`).
    public var state: String?
    public var latitude: Double?
    public var longitude: Double?
    /// IANA zone converted from NWPS' POSIX string (`PST8PDT` → `America/Los_Angeles`); the raw
    /// string when it has no known IANA equivalent.
    public var timeZone: String?
    public var categories: FloodCategories
    /// The observed status NWPS reports (stage in ft), when it has one.
    public var observedStage: Double?
    public var observedFlow: Double?
    public var observedCategory: String?
    public var observedTime: Int64?

    public init(
        lid: String, usgsID: String? = nil, name: String? = nil, description: String? = nil, state: String? = nil,
        latitude: Double? = nil, longitude: Double? = nil, timeZone: String? = nil,
        categories: FloodCategories = FloodCategories(), observedStage: Double? = nil, observedFlow: Double? = nil,
        observedCategory: String? = nil, observedTime: Int64? = nil
    ) {
        self.lid = lid
        self.usgsID = usgsID
        self.name = name
        self.description = description
        self.state = state
        self.latitude = latitude
        self.longitude = longitude
        self.timeZone = timeZone
        self.categories = categories
        self.observedStage = observedStage
        self.observedFlow = observedFlow
        self.observedCategory = observedCategory
        self.observedTime = observedTime
    }

    /// The station id readings of this gauge are stored under: its USGS site when it has one.
    public var stationID: String { usgsID ?? lid }
}

/// What one fetch or one imported file produced. A batch is written in one transaction: all of it
/// or none of it.
public struct SourceBatch: Sendable {
    public var stations: [StationInfo]
    public var gauges: [GaugeInfo]
    public var readings: [Reading]
    /// Quake events (stored as events, not readings).
    public var quakes: [QuakeEvent] = []
    /// Daily forecasts (and climatology) for trip places.
    public var weather: [DayWeather] = []
    /// The readings are a forecast's (Open-Meteo's daily variables, a river's forecast discharge):
    /// dated ahead by nature, so they are bounded by `FutureBound.forecastHorizon`, not the margin
    /// for observations.
    public var readingsAreForecast = false
    /// Active weather alerts, by the place key they were asked for.
    public var weatherAlerts: [PlaceAlert] = []
    /// River forecast issuances (NWPS, HML, AHPS): stored apart from readings, one per issuance.
    public var forecasts: [FloodForecast] = []
    /// Items of a forecast product that were not stored, each with why (counted by ingest).
    public var forecastSkips: [ForecastSkip] = []
    /// AirNow air-quality forecasts (stored by reporting area, date and pollutant; the latest
    /// issuance wins).
    public var airForecasts: [AirForecast] = []
    /// The `aqi` readings are each hour's overall AQI derived from its pollutants' (`aqi.*`, AirNow's
    /// reporting areas): the store sets each to the highest pollutant AQI of its hour, stored or in
    /// the batch, so the overall does not depend on the order the pollutants arrive in.
    public var overallAQI = false
    /// Values that were not values (the USGS `noDataValue`, outage qualifiers such as `Ice`, an empty
    /// RDB field, a CWMS `null`): nothing was stored for them.
    public var gaps: Int

    public init(stations: [StationInfo] = [], gauges: [GaugeInfo] = [], readings: [Reading] = [], gaps: Int = 0) {
        self.stations = stations
        self.gauges = gauges
        self.readings = readings
        self.gaps = gaps
    }

    /// Nothing at all: no reading, station, gauge, event or forecast, not even a missing value.
    public var isEmpty: Bool {
        readings.isEmpty && stations.isEmpty && gauges.isEmpty && quakes.isEmpty && weather.isEmpty
            && weatherAlerts.isEmpty && gaps == 0 && forecasts.isEmpty && forecastSkips.isEmpty
            && airForecasts.isEmpty
    }

    public mutating func append(_ other: SourceBatch) {
        stations += other.stations
        gauges += other.gauges
        readings += other.readings
        quakes += other.quakes
        weather += other.weather
        weatherAlerts += other.weatherAlerts
        forecasts += other.forecasts
        forecastSkips += other.forecastSkips
        airForecasts += other.airForecasts
        gaps += other.gaps
        overallAQI = overallAQI || other.overallAQI
    }
}

/// A weather alert in force at a place (a trip stop's place key).
public struct PlaceAlert: Sendable, Hashable, Codable {
    public var place: String
    public var alert: WeatherAlert

    public init(place: String, alert: WeatherAlert) {
        self.place = place
        self.alert = alert
    }
}

/// Where forecasts are asked for and stored: a point, keyed `"39.74,-104.99"` (2 decimals).
public struct PlacePoint: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    public var key: String {
        func two(_ v: Double) -> String {
            let r = (v * 100).rounded() / 100
            var s = String(format: "%.2f", r)
            if s == "-0.00" { s = "0.00" }
            return s
        }
        return "\(two(latitude)),\(two(longitude))"
    }

    /// Parses `"39.74,-104.99"`.
    public init?(key: String) {
        let parts = key.split(separator: ",")
        guard parts.count == 2, let a = Double(parts[0]), let b = Double(parts[1]) else { return nil }
        self.init(latitude: a, longitude: b)
    }
}

extension SourceBatch {
    /// Why this batch, parsed from a payload, cannot be stored as it is, or nil. The bounds are
    /// those of `klaxon ingest`'s CSV: ids, metrics, units, sources and quality codes short,
    /// printable single-line text; times in the years 1800–2199; numbers finite. A payload that
    /// breaks them is refused whole, with the first thing wrong named, rather than stored in part
    /// or with a value it did not mean (a unit conversion that overflowed, a NUL in a station id).
    public func problem() -> String? {
        typealias P = ReadingsParser
        typealias L = ReadingsParser.Limits
        func text(_ name: String, _ value: String?, _ limit: Int) -> String? {
            value.flatMap { P.textProblem(name, $0, limit: limit) }
        }
        func finite(_ name: String, _ values: [Double?]) -> String? {
            values.contains { $0.map { !$0.isFinite } ?? false } ? "\(name) holds a number out of range" : nil
        }
        func first(_ checks: [String?]) -> String? { checks.lazy.compactMap { $0 }.first }
        for (i, r) in readings.enumerated() {
            if r.station.isEmpty || r.metric.isEmpty { return "reading \(i + 1): empty station or metric" }
            let checks: [String?] = [
                text("station", r.station, L.stationBytes), text("metric", r.metric, L.metricBytes),
                P.optionalProblem(unit: r.unit, source: r.source, quality: r.quality), P.timeProblem(r.time),
                finite("the value", [r.value]),
            ]
            if let p = first(checks) { return "reading \(i + 1) (\(P.shown(r.station)) \(P.shown(r.metric))): \(p)" }
        }
        for s in stations {
            if s.id.isEmpty { return "a station with an empty id" }
            var checks: [String?] = [
                text("station id", s.id, L.stationBytes), text("name", s.name, 1024), text("time zone", s.timeZone, 64),
                text("USGS id", s.usgsID, L.stationBytes), text("NWS id", s.nwsLID, L.stationBytes),
                finite("the position", [s.latitude, s.longitude]),
            ]
            for (key, value) in s.attributes { checks += [text("attribute", key, 64), text(key, value, 1024)] }
            if let p = first(checks) { return "station \(P.shown(s.id)): \(p)" }
        }
        for q in quakes {
            if q.id.isEmpty { return "a quake with an empty id" }
            var checks: [String?] = [
                text("quake id", q.id, L.stationBytes),
                finite("the quake", [q.magnitude, q.latitude, q.longitude, q.depthKm, q.cdi, q.mmi]),
                text("magType", q.magType, 32), text("place", q.place, 1024), text("title", q.title, 1024),
                text("alert", q.alert, 32), text("status", q.status, 32), text("type", q.type, 64),
                text("url", q.url, 2048),
            ]
            checks += q.ids.map { text("quake id", $0, L.stationBytes) }
            if let p = first(checks) { return "quake \(P.shown(q.id)): \(p)" }
        }
        for w in weather {
            let checks: [String?] = [
                text("place", w.place, L.stationBytes),
                finite(
                    "the forecast",
                    [w.tempMaxC, w.tempMinC, w.precipitationMm, w.precipitationProbability, w.snowfallCm, w.windMaxKmh]),
            ]
            if let p = first(checks) { return "forecast for \(P.shown(w.place)) on \(P.shown(w.date)): \(p)" }
        }
        for a in weatherAlerts {
            let w = a.alert
            let checks: [String?] = [
                text("place", a.place, L.stationBytes), text("alert id", w.id, 1024), text("event", w.event, 256),
                text("severity", w.severity, 64), text("url", w.url, 2048),
            ]
            if let p = first(checks) { return "alert for \(P.shown(a.place)): \(p)" }
        }
        for f in forecasts {
            if f.station.isEmpty { return "a forecast with an empty station" }
            let checks: [String?] = [
                text("station", f.station, L.stationBytes), text("metric", f.metric, L.metricBytes),
                P.optionalProblem(unit: f.unit, source: f.source, quality: nil), P.timeProblem(f.issued),
                f.points.lazy.compactMap { P.timeProblem($0.time) }.first,
                finite("the forecast", f.points.map(\.value)),
            ]
            if let p = first(checks) { return "forecast for \(P.shown(f.station)) issued \(f.issued): \(p)" }
        }
        return nil
    }
}
