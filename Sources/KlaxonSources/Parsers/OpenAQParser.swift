import Foundation
import KlaxonCore

/// The OpenAQ v3 API (`https://api.openaq.org/v3`): `{meta, results: […]}` bodies.
///
/// Readings are concentrations, named by OpenAQ's parameter (`pm25`, `pm10`, `o3`, `no2`, …) with
/// its unit (`µg/m³`, `ppm`). OpenAQ computes no AQI: a rule on an index converts with `EPAAQI`
/// (and minds the averaging time the breakpoints assume). `-9999` and `null` values are gaps.
public enum OpenAQParser {
    static let format = "openaq-json"
    static let source = "openaq"

    /// Sensor id → parameter and unit, from `/v3/locations/{id}/sensors` (each result a sensor) or
    /// from `/v3/locations…` (each result a location with its `sensors`): `3920 → ("pm25", "µg/m³")`.
    public static func sensors(_ data: Data) throws -> [Int: (parameter: String, unit: String)] {
        let body = try JSONInput.decode(Body<SensorOrLocation>.self, from: data, format: format)
        var out: [Int: (parameter: String, unit: String)] = [:]
        func add(_ sensor: Sensor) {
            guard let parameter = sensor.parameter?.name?.trimmingSpaces().lowercased(), !parameter.isEmpty
            else { return }
            out[sensor.id] = (parameter, sensor.parameter?.units?.trimmingSpaces() ?? "")
        }
        for result in body.results {
            if let id = result.id, result.parameter != nil {
                add(Sensor(id: id, parameter: result.parameter))
            }
            for sensor in result.sensors ?? [] { add(sensor) }
        }
        return out
    }

    /// The locations of `/v3/locations` or `/v3/locations/{id}`: id `openaq:<id>`, name, coordinates,
    /// IANA time zone; `locality`, `country` (ISO code) and `provider` as attributes.
    public static func locations(_ data: Data) throws -> [StationInfo] {
        let body = try JSONInput.decode(Body<Location>.self, from: data, format: format)
        var stations = StationList()
        for location in body.results {
            var attributes: [String: String] = [:]
            if let locality = nonEmpty(location.locality) { attributes["locality"] = locality }
            if let country = nonEmpty(location.country?.code) { attributes["country"] = country }
            if let provider = nonEmpty(location.provider?.name) { attributes["provider"] = provider }
            stations.add(
                StationInfo(
                    id: stationID(location.id), source: source, name: nonEmpty(location.name),
                    latitude: location.coordinates?.latitude, longitude: location.coordinates?.longitude,
                    timeZone: nonEmpty(location.timezone), attributes: attributes))
        }
        return stations.stations
    }

    /// `openaq:2178`.
    public static func stationID(_ location: Int) -> String { "openaq:\(location)" }

    /// Readings of one location, stored under `station` (`openaq:<location id>`), from
    /// `/v3/locations/{id}/latest` (results carry `sensorsId` and `datetime`) or from
    /// `/v3/sensors/{id}/measurements`, `/hours`, `/days` (results carry `parameter` and `period`).
    ///
    /// The metric is the result's own parameter when it names one, else its sensor's parameter from
    /// `sensors`. A result whose sensor is unknown and that names no parameter is counted in `gaps`.
    /// When a location has two sensors of one parameter, the lowest sensor id keeps the plain metric
    /// and the others get `.<sensor id>` (`pm25.4272999`), the same on every fetch.
    ///
    /// Time: `datetime.utc` for `latest`; the end of the period (`period.datetimeTo.utc`) for
    /// measurements, the time OpenAQ stamps the raw value with (an hour 12:00–13:00 is stored at 13:00,
    /// where `latest` puts it too).
    ///
    /// A measurement whose `flagInfo.hasFlags` is true keeps quality `flagged` (OpenAQ lists the flags
    /// themselves at `/flags`; the flag alone does not make a reading suspect).
    public static func measurements(
        _ data: Data, station: String, sensors: [Int: (parameter: String, unit: String)]
    ) throws -> SourceBatch {
        let body = try JSONInput.decode(Body<Measurement>.self, from: data, format: format)
        // Parameters measured by more than one sensor: those sensors' ids, ascending.
        var byParameter: [String: [Int]] = [:]
        for (id, sensor) in sensors { byParameter[sensor.parameter, default: []].append(id) }
        var batch = SourceBatch()
        for (index, m) in body.results.enumerated() {
            let parameter: String
            var unit: String?
            if let named = nonEmpty(m.parameter?.name)?.lowercased() {
                parameter = named
                unit = nonEmpty(m.parameter?.units)
                if unit == nil, let id = m.sensorsId { unit = nonEmpty(sensors[id]?.unit) }
            } else if let id = m.sensorsId, let sensor = sensors[id] {
                parameter = sensor.parameter
                unit = nonEmpty(sensor.unit)
            } else {
                batch.gaps += 1
                continue
            }
            var metric = parameter
            if let id = m.sensorsId, let ids = byParameter[parameter], ids.count > 1, let lowest = ids.min(),
                id != lowest
            {
                metric += ".\(id)"
            }
            // -9999 is OpenAQ's "no value".
            guard let value = m.value, value.isFinite, value > -9999 else {
                batch.gaps += 1
                continue
            }
            let timeText = m.datetime?.utc ?? m.period?.datetimeTo?.utc
            guard let timeText else {
                throw ParseError(.missingField, format: format, "missing field 'results[\(index)].datetime'")
            }
            guard let time = Timestamp.parse(timeText) else {
                throw ParseError(
                    .badValue, format: format,
                    "bad time '\(ParseError.excerpt(timeText, limit: 40))' in results[\(index)]")
            }
            batch.readings.append(
                Reading(
                    station: station, metric: metric, time: time, value: value, unit: unit, source: source,
                    quality: m.flagInfo?.hasFlags == true ? "flagged" : nil))
        }
        return batch
    }

    static func nonEmpty(_ s: String?) -> String? {
        guard let s = s?.trimmingSpaces(), !s.isEmpty else { return nil }
        return s
    }

    // MARK: - OpenAQ v3 JSON, the parts Klaxon reads

    struct Body<Result: Decodable>: Decodable {
        var results: [Result]
    }

    struct Parameter: Decodable {
        var name: String?
        var units: String?
    }

    struct Sensor: Decodable {
        var id: Int
        var parameter: Parameter?
    }

    /// A result of `/sensors` (a sensor) or of `/locations` (a location with sensors).
    struct SensorOrLocation: Decodable {
        var id: Int?
        var parameter: Parameter?
        var sensors: [Sensor]?
    }

    struct Location: Decodable {
        struct Named: Decodable {
            var code: String?
            var name: String?
        }
        struct Coordinates: Decodable {
            var latitude: Double?
            var longitude: Double?
        }
        var id: Int
        var name: String?
        var locality: String?
        var timezone: String?
        var country: Named?
        var provider: Named?
        var coordinates: Coordinates?
    }

    struct Instant: Decodable {
        var utc: String?
    }

    struct Measurement: Decodable {
        struct Period: Decodable {
            var datetimeFrom: Instant?
            var datetimeTo: Instant?
        }
        var value: Double?
        var datetime: Instant?
        var period: Period?
        var parameter: Parameter?
        var sensorsId: Int?
        var flagInfo: FlagInfo?
    }

    struct FlagInfo: Decodable {
        var hasFlags: Bool?
    }
}
