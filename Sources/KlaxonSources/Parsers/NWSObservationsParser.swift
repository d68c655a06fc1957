import Foundation
import KlaxonCore

/// The units a weather station's readings are stored in (`units:` of `nws-observations`).
public enum StationUnits: String, Sendable, CaseIterable {
    /// °C, km/h, hPa, m (visibility), mm (precipitation).
    case metric
    /// °F, mph, inHg, mi (visibility), in (precipitation).
    case us
}

/// NWS station observations from `api.weather.gov`: `/stations/{id}/observations` (a GeoJSON
/// FeatureCollection), `/stations/{id}/observations/latest` (one Feature), and the station itself
/// (`/stations/{id}`, a Feature with `stationIdentifier`, `name`, `timeZone`, `elevation` and a Point).
///
/// Each observation's values are `{"unitCode": "wmoUnit:degC", "value": 3.2, "qualityControl": "V"}`;
/// a `null` value is a gap, never a reading. Values are converted to `StationUnits` and stored under
/// the metrics of `metrics`; the quality-control letter is kept as the reading's quality (`X`
/// rejected, `Q` questioned and `B` subjectively bad make it suspect, see `Plausibility`).
public enum NWSObservationsParser {
    static let format = "nws-observations"
    public static let source = "nws-observations"

    /// What a metric measures, which decides the units it comes in and is converted to.
    enum Quantity {
        case temperature, speed, pressure, distance, precipitation, angle, percent
    }

    /// Observation property → (metric, quantity).
    static let metrics: [(property: String, metric: String, quantity: Quantity)] = [
        ("temperature", "temperature", .temperature),
        ("dewpoint", "dewpoint", .temperature),
        ("relativeHumidity", "humidity", .percent),
        ("windSpeed", "wind_speed", .speed),
        ("windGust", "wind_gust", .speed),
        ("windDirection", "wind_direction", .angle),
        ("barometricPressure", "pressure", .pressure),
        ("seaLevelPressure", "sea_level_pressure", .pressure),
        ("visibility", "visibility", .distance),
        ("windChill", "wind_chill", .temperature),
        ("heatIndex", "heat_index", .temperature),
        ("maxTemperatureLast24Hours", "temperature.max_24h", .temperature),
        ("minTemperatureLast24Hours", "temperature.min_24h", .temperature),
        ("precipitationLastHour", "precipitation.1h", .precipitation),
        ("precipitationLast3Hours", "precipitation.3h", .precipitation),
        ("precipitationLast6Hours", "precipitation.6h", .precipitation),
    ]

    /// The metrics this parser stores and their units, for documentation and `klaxon check`.
    public static func units(_ units: StationUnits) -> [(metric: String, unit: String)] {
        metrics.map { ($0.metric, unit(of: $0.quantity, units)) }
    }

    /// A value beyond this (in the unit the station sent) is no measurement: it is skipped as a gap.
    static let largest = 1e12

    /// Observations, and the stations they name; or a station (`/stations/{id}`); or a list of
    /// stations (`/stations?state=…`). `station` overrides the id the observations give (the source
    /// knows which station it asked for).
    ///
    /// Values in a unit code this parser does not know are not stored (nor counted as missing); a
    /// body whose values are all in unknown units is an error that names the codes it saw.
    public static func parse(_ data: Data, units: StationUnits = .metric, station: String? = nil) throws
        -> SourceBatch
    {
        try parseReporting(data, units: units, station: station).batch
    }

    /// `parse`, and the values left out for their unit code: code → how many (a body with some
    /// values in known units is stored, and the caller may say what was left out).
    public static func parseReporting(_ data: Data, units: StationUnits = .metric, station: String? = nil) throws
        -> (batch: SourceBatch, unknownUnits: [String: Int])
    {
        let body = try JSONInput.decode(Body.self, from: data, format: format)
        var batch = SourceBatch()
        var unknown: [String: Int] = [:]
        var stations = StationList()
        let features: [(Feature, String)]
        switch body {
        case .collection(let list): features = list.enumerated().map { ($1, "features[\($0)].properties") }
        case .single(let feature): features = [(feature, "properties")]
        }
        for (feature, path) in features {
            guard let p = feature.properties?.fields else { continue }
            if p["timestamp"] != nil {
                let id = try station ?? observationStation(p, path: path)
                try observation(p, station: id, path: path, units: units, into: &batch, unknown: &unknown)
                if let name = nonEmpty(p["stationName"]?.string) {
                    stations.add(StationInfo(id: id, source: source, name: name))
                }
            } else if let s = stationInfo(feature) {
                stations.add(s)
            }
        }
        batch.stations = stations.stations
        if batch.readings.isEmpty && !unknown.isEmpty {
            throw ParseError(
                .badValue, format: format,
                "no observation had a value in a known unit: " + unknownUnitsSummary(unknown)
                    + " (known: the wmoUnit:, wmo:, unit:, nwsUnit: and uc: spellings of °C, °F, K, km/h, m/s, kt, "
                    + "Pa, hPa, m, km, mm, degrees and percent)")
        }
        return (batch, unknown)
    }

    /// A unit code from the payload as it may be shown: at most 40 characters, control and format
    /// characters (terminal escapes, bidi overrides) as `?`.
    static func printable(_ code: String) -> String {
        ParseError.excerpt(Escape.printable(code), limit: 40)
    }

    /// `saw unitCode 'unit:xyz' 40 times, 'foo' 2 times`: the most frequent codes first, at most 5.
    public static func unknownUnitsSummary(_ unknown: [String: Int]) -> String {
        let sorted = unknown.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
        var text =
            "saw unitCode "
            + sorted.prefix(5).map { "'\(printable($0.key))' \($0.value) time\($0.value == 1 ? "" : "s")" }
            .joined(separator: ", ")
        if sorted.count > 5 { text += " and \(sorted.count - 5) other codes" }
        return text
    }

    /// A station document (`/stations/{id}`); nil when the body is a Feature but not a station.
    public static func station(_ data: Data) throws -> StationInfo? {
        let feature = try JSONInput.decode(Feature.self, from: data, format: format)
        return stationInfo(feature)
    }

    /// The next page of a collection (`pagination.next`), nil when there is none.
    public static func nextPage(_ data: Data) -> String? {
        guard let page = try? JSONDecoder().decode(Pagination.self, from: data) else { return nil }
        return page.pagination?.next
    }

    /// The station an observation names: `stationId`, else the last part of its `station` URL.
    static func observationStation(_ p: [String: JSONValue], path: String) throws -> String {
        if let id = nonEmpty(p["stationId"]?.string) { return id }
        if let url = nonEmpty(p["station"]?.string), let last = url.split(separator: "/").last, !last.isEmpty {
            return String(last)
        }
        throw ParseError(.missingField, format: format, "missing field '\(path).station'")
    }

    static func observation(
        _ p: [String: JSONValue], station: String, path: String, units: StationUnits, into batch: inout SourceBatch,
        unknown: inout [String: Int]
    ) throws {
        guard let text = p["timestamp"]?.string, let time = Timestamp.parse(text) else {
            let shown = p["timestamp"]?.string.map { "'\(ParseError.excerpt($0, limit: 40))'" } ?? "value"
            throw ParseError(.badValue, format: format, "bad time \(shown) in \(path).timestamp")
        }
        for (property, metric, quantity) in metrics {
            guard let field = p[property] else { continue }
            let value: JSONValue?
            var unitCode: String? = nil
            var quality: String? = nil
            switch field {
            case .null:
                continue
            case .object(let o):
                value = o["value"]
                unitCode = o["unitCode"]?.string
                quality = nonEmpty(o["qualityControl"]?.string)
            default:
                throw ParseError(
                    .badValue, format: format, "field '\(path).\(property)' is not an object with a value")
            }
            switch value {
            case nil, .null?:
                batch.gaps += 1
            case .number(let raw)?:
                guard abs(raw) <= largest else {
                    batch.gaps += 1
                    continue
                }
                guard let v = convert(raw, from: unitCode, quantity: quantity, to: units) else {
                    // Not a missing value: a value this parser cannot read. Counted apart, by code, so
                    // a body in an unknown spelling says so instead of storing nothing quietly.
                    if unknown.count < 100 || unknown[unitCode ?? ""] != nil {
                        unknown[unitCode ?? "", default: 0] += 1
                    }
                    continue
                }
                batch.readings.append(
                    Reading(
                        station: station, metric: metric, time: time, value: v, unit: unit(of: quantity, units),
                        source: source, quality: quality))
            default:
                throw ParseError(.badValue, format: format, "field '\(path).\(property).value' is not a number")
            }
        }
    }

    static func stationInfo(_ feature: Feature) -> StationInfo? {
        guard let p = feature.properties?.fields, let id = nonEmpty(p["stationIdentifier"]?.string) else { return nil }
        var point: (Double, Double)? = nil
        if case .array(let c)? = feature.geometry?.coordinates, c.count >= 2, let lon = c[0].number,
            let lat = c[1].number, (-90.0...90.0).contains(lat), (-180.0...180.0).contains(lon)
        {
            point = (lat, lon)
        }
        var attributes: [String: String] = [:]
        if case .object(let e)? = p["elevation"], let v = e["value"]?.number, abs(v) <= 10_000 {
            let meters = e["unitCode"]?.string.map { $0.hasSuffix(":ft") } == true ? v * 0.3048 : v
            attributes["elevation_m"] = formatValue((meters * 10).rounded() / 10)
        }
        let zone = nonEmpty(p["timeZone"]?.string).flatMap { TimeZone(identifier: $0) != nil ? $0 : nil }
        return StationInfo(
            id: id, source: source, name: nonEmpty(p["name"]?.string), latitude: point?.0, longitude: point?.1,
            timeZone: zone, nwsLID: nil, attributes: attributes)
    }

    // MARK: Units

    static func unit(of quantity: Quantity, _ units: StationUnits) -> String {
        switch (quantity, units) {
        case (.temperature, .metric): "°C"
        case (.temperature, .us): "°F"
        case (.speed, .metric): "km/h"
        case (.speed, .us): "mph"
        case (.pressure, .metric): "hPa"
        case (.pressure, .us): "inHg"
        case (.distance, .metric): "m"
        case (.distance, .us): "mi"
        case (.precipitation, .metric): "mm"
        case (.precipitation, .us): "in"
        case (.angle, _): "°"
        case (.percent, _): "%"
        }
    }

    /// The namespaces a unit code may carry. The API documents `{namespace}:{unit}` with `wmoUnit`
    /// or `wmo` (WMO codes: `degC`, `km_h-1`), `nwsUnit` (NWS's own) and `uc` or none (UCUM: `Cel`,
    /// `km/h`); observations before October 2021 wrote WMO codes as `unit:degC`, `unit:m_s-1`.
    static let namespaces: Set<Substring> = ["wmoUnit", "wmo", "unit", "nwsUnit", "uc"]

    /// A unit code without its namespace (`wmoUnit:km_h-1` → `km_h-1`); other text as it is.
    static func unitName(_ code: String) -> String {
        guard let colon = code.firstIndex(of: ":"), namespaces.contains(code[..<colon]) else { return code }
        return String(code[code.index(after: colon)...])
    }

    /// `value` in `unitCode` (`wmoUnit:km_h-1`, `unit:km_h-1`, `uc:km/h`) as `quantity` in `units`;
    /// nil for a unit code the quantity does not come in. A missing unit code is the unit NWS
    /// documents for the property. A converted value is rounded to 4 decimals; one that needs no
    /// conversion is kept as it is.
    static func convert(_ value: Double, from unitCode: String?, quantity: Quantity, to units: StationUnits)
        -> Double?
    {
        let code = unitCode.map(unitName)
        // To the metric unit first (factor, offset), then to US units. WMO codes, then UCUM.
        let toMetric: (scale: Double, offset: Double)
        switch (quantity, code) {
        case (.temperature, nil), (.temperature, "degC"?), (.temperature, "Cel"?): toMetric = (1, 0)
        case (.temperature, "degF"?), (.temperature, "[degF]"?): toMetric = (5.0 / 9.0, -32.0 * 5.0 / 9.0)
        case (.temperature, "K"?): toMetric = (1, -273.15)
        case (.speed, nil), (.speed, "km_h-1"?), (.speed, "km/h"?): toMetric = (1, 0)
        case (.speed, "m_s-1"?), (.speed, "m/s"?): toMetric = (3.6, 0)
        case (.speed, "kn"?), (.speed, "kt"?), (.speed, "[kn_i]"?): toMetric = (1.852, 0)
        case (.speed, "[mi_i]/h"?): toMetric = (1.609_344, 0)
        case (.pressure, nil), (.pressure, "Pa"?): toMetric = (0.01, 0)
        case (.pressure, "hPa"?): toMetric = (1, 0)
        case (.pressure, "kPa"?): toMetric = (10, 0)
        case (.pressure, "[in_i'Hg]"?): toMetric = (33.863_89, 0)
        case (.distance, nil), (.distance, "m"?): toMetric = (1, 0)
        case (.distance, "km"?): toMetric = (1000, 0)
        case (.distance, "[mi_i]"?): toMetric = (1_609.344, 0)
        case (.distance, "[ft_i]"?): toMetric = (0.3048, 0)
        case (.precipitation, nil), (.precipitation, "mm"?): toMetric = (1, 0)
        case (.precipitation, "m"?): toMetric = (1000, 0)
        case (.precipitation, "cm"?): toMetric = (10, 0)
        case (.precipitation, "[in_i]"?): toMetric = (25.4, 0)
        case (.angle, nil), (.angle, "degree_(angle)"?), (.angle, "deg"?): toMetric = (1, 0)
        case (.percent, nil), (.percent, "percent"?), (.percent, "%"?): toMetric = (1, 0)
        default: return nil
        }
        let fromUS: (scale: Double, offset: Double)
        switch (units, quantity) {
        case (.metric, _), (.us, .angle), (.us, .percent): fromUS = (1, 0)
        case (.us, .temperature): fromUS = (9.0 / 5.0, 32)
        case (.us, .speed): fromUS = (1 / 1.609_344, 0)
        case (.us, .pressure): fromUS = (100 / 3_386.389, 0)
        case (.us, .distance): fromUS = (1 / 1_609.344, 0)
        case (.us, .precipitation): fromUS = (1 / 25.4, 0)
        }
        if toMetric == (1, 0) && fromUS == (1, 0) { return value }
        let converted = (value * toMetric.scale + toMetric.offset) * fromUS.scale + fromUS.offset
        let rounded = (converted * 10_000).rounded() / 10_000
        return rounded.isFinite ? (rounded == 0 ? 0 : rounded) : nil
    }

    static func nonEmpty(_ s: String?) -> String? {
        guard let s = s?.trimmingSpaces(), !s.isEmpty else { return nil }
        return s
    }

    // MARK: - GeoJSON, the parts Klaxon reads

    enum Body: Decodable {
        case collection([Feature])
        case single(Feature)

        enum Keys: String, CodingKey { case features, properties }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            if c.contains(.features) {
                self = .collection(try c.decode([Feature].self, forKey: .features))
            } else if c.contains(.properties) {
                self = .single(try Feature(from: decoder))
            } else {
                throw DecodingError.keyNotFound(
                    Keys.features, .init(codingPath: [], debugDescription: "neither 'features' nor 'properties'"))
            }
        }
    }

    struct Pagination: Decodable {
        struct Links: Decodable { var next: String? }
        var pagination: Links?
    }

    struct Feature: Decodable {
        var geometry: Geometry?
        var properties: Properties?
    }

    struct Geometry: Decodable {
        var coordinates: JSONValue?
    }

    /// The properties Klaxon reads, by name; the others (`rawMessage`, `cloudLayers`, …) are skipped
    /// without being decoded.
    struct Properties: Decodable {
        static let names =
            ["timestamp", "station", "stationId", "stationName", "stationIdentifier", "name", "timeZone", "elevation"]
            + NWSObservationsParser.metrics.map(\.property)

        var fields: [String: JSONValue] = [:]

        init(from decoder: any Decoder) throws { fields = try JSONValue.members(Self.names, of: decoder) }
    }
}
