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
    /// `/v3/sensors/{id}/measurements`, `/hours`, `/days` (results carry `parameter` and `period`) of a
    /// sensor the caller knows the location lists.
    ///
    /// The metric is the result's own parameter when it names one, else its sensor's parameter from
    /// `sensors`. A result whose sensor is unknown and that names no parameter is counted in `gaps`.
    /// When a location has two sensors of one parameter, the lowest sensor id keeps the plain metric
    /// and the others get `.<sensor id>` (`pm25.4272999`), the same on every fetch.
    ///
    /// A result that names a sensor `sensors` does not list, or a location other than `station`, is
    /// not stored: it is not this location's reading. It is counted in `gaps`, the fetch's count of
    /// results not stored (`measurements(_:sensorsByLocation:sensor:)` says why, for saved bodies).
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
        let attributed = try readings(body.results) { _, m in
            if let location = m.locationsId, stationID(location) != station {
                return .refused("names location \(location), not \(station)")
            }
            if let sensor = m.sensorsId, !sensors.isEmpty, sensors[sensor] == nil {
                return .refused("sensor \(sensor) is not listed by \(station)")
            }
            return .owned(station: station, sensors: sensors, sensor: nil)
        }
        var batch = attributed.batch
        batch.gaps += attributed.refusedCount
        return batch
    }

    /// What a saved body holds, told by its results: `locations` (`/v3/locations…`: results with
    /// `sensors`), `sensors` (`/v3/locations/{id}/sensors`: results with a `parameter` and no
    /// `value`) or `measurements` (`/latest`, `/v3/sensors/{id}/measurements…`: results with a
    /// `value`; a body without results counts as one).
    public enum BodyKind: Sendable, Equatable {
        case locations, sensors, measurements
        /// An OpenAQ v1 or v2 `/measurements` body (`legacyMeasurements(_:)`): results with a
        /// `parameter` name and a `date {utc, local}`.
        case legacyMeasurements
    }

    public static func bodyKind(_ data: Data) throws -> BodyKind {
        if isLegacy(data) { return .legacyMeasurements }
        let body = try JSONInput.decode(Body<Shape>.self, from: data, format: format)
        if body.results.contains(where: \.hasSensors) { return .locations }
        if body.results.contains(where: { $0.hasParameter && !$0.hasValue }) { return .sensors }
        return .measurements
    }

    /// The sensors of each location of a `/v3/locations…` body: location id → sensor id → parameter
    /// and unit (what `sensors(_:)` gives for a body of that one location).
    public static func sensorsByLocation(_ data: Data) throws -> [Int: [Int: (parameter: String, unit: String)]] {
        let body = try JSONInput.decode(Body<LocationSensors>.self, from: data, format: format)
        var out: [Int: [Int: (parameter: String, unit: String)]] = [:]
        for location in body.results {
            var sensors = out[location.id] ?? [:]
            for sensor in location.sensors ?? [] {
                guard let parameter = sensor.parameter?.name?.trimmingSpaces().lowercased(), !parameter.isEmpty
                else { continue }
                sensors[sensor.id] = (parameter, sensor.parameter?.units?.trimmingSpaces() ?? "")
            }
            out[location.id] = sensors
        }
        return out
    }

    /// Readings of a saved body, and the results refused with why.
    public struct Attributed: Sendable {
        public var batch = SourceBatch()
        /// Why results were not stored, each reason once with how many results it stands for, in the
        /// order first met.
        public var refused: [(reason: String, count: Int)] = []

        public var refusedCount: Int { refused.reduce(0) { $0 + $1.count } }
    }

    /// Readings of a saved measurements body, each result stored as the `openaq` source stores the
    /// `/latest` of its location: under `openaq:<location id>`, its metric named by the result's
    /// parameter or else by its sensor in `sensorsByLocation`, as
    /// `measurements(_:station:sensors:)` names it.
    ///
    /// A reading goes under a station only when that station's location (a `/v3/locations…` body
    /// of the load, in `sensorsByLocation`) lists the sensor it came from. The sensor is the result's
    /// `sensorsId` (`/latest`), else `sensor`: the one the body was asked for
    /// (`/v3/sensors/{id}/measurements…` results name neither sensor nor location; see
    /// `sensorID(fileName:)`). The location is the result's `locationsId`, else the one loaded
    /// location that lists the sensor. Any other result is refused, with why: no sensor known, a
    /// sensor no loaded location lists (or several do), a location not loaded or that does not
    /// list the sensor, a result naming another sensor than `sensor`, or another parameter than its
    /// sensor measures. The other results are kept.
    public static func measurements(
        _ data: Data, sensorsByLocation: [Int: [Int: (parameter: String, unit: String)]], sensor asked: Int?
    ) throws -> Attributed {
        let body = try JSONInput.decode(Body<Measurement>.self, from: data, format: format)
        var owners: [Int: [Int]] = [:]
        for (location, sensors) in sensorsByLocation {
            for sensor in sensors.keys { owners[sensor, default: []].append(location) }
        }
        return try readings(body.results) { _, m in
            if let named = m.sensorsId, let asked, named != asked {
                return .refused("the result names sensor \(named), the file name sensor \(asked)")
            }
            guard let sensor = m.sensorsId ?? asked else {
                return .refused(
                    "no sensor named: a /v3/sensors/{id}/measurements body does not say whose values it holds; "
                        + "name the file after the sensor it was asked for (sensors_<id>_measurements.json)")
            }
            let location: Int
            if let named = m.locationsId {
                location = named
            } else {
                let candidates = (owners[sensor] ?? []).sorted()
                guard candidates.count == 1 else {
                    if candidates.isEmpty {
                        return .refused(
                            "sensor \(sensor) is listed by no location loaded: give the /v3/locations/{id} body "
                                + "of the location that lists it")
                    }
                    return .refused(
                        "sensor \(sensor) is listed by several locations loaded ("
                            + candidates.prefix(5).map(stationID).joined(separator: ", ") + ")")
                }
                location = candidates[0]
            }
            guard let sensors = sensorsByLocation[location] else {
                return .refused(
                    "sensor \(sensor) of location \(location): that location is not loaded; its "
                        + "/v3/locations/\(location) body lists its sensors")
            }
            guard let own = sensors[sensor] else {
                return .refused("sensor \(sensor) is not listed by location \(location) (\(stationID(location)))")
            }
            if let named = nonEmpty(m.parameter?.name)?.lowercased(), named != own.parameter {
                return .refused(
                    "sensor \(sensor) of \(stationID(location)) measures \(own.parameter), the result '"
                        + ParseError.excerpt(named, limit: 40) + "'")
            }
            return .owned(station: stationID(location), sensors: sensors, sensor: sensor)
        }
    }

    /// The sensor a saved `/v3/sensors/{id}/measurements…` body was asked for, from its file's name:
    /// `sensors_<id>` or `sensor-<id>` (`_` or `-`, any case) in the last path component, as in
    /// `sensors_3920_measurements.json` or `v3_sensors_3920_hours.json`. Nil when the name holds none,
    /// or two different ones.
    public static func sensorID(fileName path: String) -> Int? {
        let name = Substring(path.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
            .lowercased()
        var found: Int? = nil
        var rest = Substring(name)
        while let range = rest.range(of: "sensor") {
            rest = rest[range.upperBound...]
            if rest.first == "s" { rest = rest.dropFirst() }
            guard let separator = rest.first, separator == "_" || separator == "-" else { continue }
            let digits = rest.dropFirst().prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 12, let id = Int(digits) else { continue }
            if let found, found != id { return nil }
            found = id
        }
        return found
    }

    /// Where `readings` puts one result: under a station, or nowhere and why.
    enum Place {
        /// `sensor`: the result's sensor when the result does not name it.
        case owned(station: String, sensors: [Int: (parameter: String, unit: String)], sensor: Int?)
        case refused(String)
    }

    /// Readings of measurement results; `place` gives each result's station and its location's
    /// sensors, or why it is refused.
    static func readings(
        _ results: [Measurement], place: (Int, Measurement) throws -> Place
    ) throws -> Attributed {
        // Per station, the parameters measured by more than one sensor: those sensors' ids.
        var byParameterOf: [String: [String: [Int]]] = [:]
        var out = Attributed()
        var refusedAt: [String: Int] = [:]
        for (index, m) in results.enumerated() {
            let station: String
            let sensors: [Int: (parameter: String, unit: String)]
            let sensorID: Int?
            switch try place(index, m) {
            case .refused(let reason):
                if let at = refusedAt[reason] {
                    out.refused[at].count += 1
                } else {
                    refusedAt[reason] = out.refused.count
                    out.refused.append((reason, 1))
                }
                continue
            case .owned(let s, let known, let sensor):
                station = s
                sensors = known
                sensorID = m.sensorsId ?? sensor
            }
            let byParameter: [String: [Int]]
            if let known = byParameterOf[station] {
                byParameter = known
            } else {
                var grouped: [String: [Int]] = [:]
                for (id, sensor) in sensors { grouped[sensor.parameter, default: []].append(id) }
                byParameterOf[station] = grouped
                byParameter = grouped
            }
            let parameter: String
            var unit: String?
            if let named = nonEmpty(m.parameter?.name)?.lowercased() {
                parameter = named
                unit = nonEmpty(m.parameter?.units)
                if unit == nil, let id = sensorID { unit = nonEmpty(sensors[id]?.unit) }
            } else if let id = sensorID, let sensor = sensors[id] {
                parameter = sensor.parameter
                unit = nonEmpty(sensor.unit)
            } else {
                out.batch.gaps += 1
                continue
            }
            var metric = parameter
            if let id = sensorID, let ids = byParameter[parameter], ids.count > 1, let lowest = ids.min(),
                id != lowest
            {
                metric += ".\(id)"
            }
            // -9999 is OpenAQ's "no value".
            guard let value = m.value, value.isFinite, value > -9999 else {
                out.batch.gaps += 1
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
            out.batch.readings.append(
                Reading(
                    station: station, metric: metric, time: time, value: value, unit: unit, source: source,
                    quality: m.flagInfo?.hasFlags == true ? "flagged" : nil))
        }
        return out
    }

    // MARK: - OpenAQ v1 and v2

    /// Whether a body is OpenAQ v1/v2 measurements: its first result has a `date` object and a
    /// `parameter` string (v3 results have `datetime`/`period` and a `parameter` object).
    static func isLegacy(_ data: Data) -> Bool {
        guard let first = JSONValue.parse(data)?["results"]?.array?.first?.object else { return false }
        return first["date"]?.object != nil && first["parameter"]?.string != nil
    }

    /// The readings of an OpenAQ v1 (`/v1/measurements`: `results[]{location, parameter, date{utc,
    /// local}, value, unit, coordinates, country, city}`) or v2 (`/v2/measurements`: the same with
    /// `locationId`) body. The station is `openaq:<locationId>` (v2: the id v3 gives the location
    /// too), else `openaq:<location name>` (v1); its name, coordinates, city and country come with
    /// it. The metric is the parameter (`pm25`, `pm10`, `o3`, …), the unit as given (`µg/m³`, `ppm`:
    /// the store converts to a series' unit as for v3), the time `date.utc`. `-9999` and null values
    /// are gaps; a result without a location, parameter or time, or with a time that is not one, is
    /// refused with why and the others are kept.
    public static func legacyMeasurements(_ data: Data) throws -> Attributed {
        let root = try JSONInput.decode(JSONValue.self, from: data, format: format)
        guard let results = root["results"]?.array else {
            throw ParseError(.missingField, format: format, "missing field 'results'")
        }
        var out = Attributed()
        var stations = StationList()
        func refuse(_ reason: String) {
            if let i = out.refused.firstIndex(where: { $0.reason == reason }) {
                out.refused[i].count += 1
            } else {
                out.refused.append((reason, 1))
            }
        }
        for item in results {
            guard let r = item.object else {
                refuse("a result that is not an object")
                continue
            }
            let name = nonEmpty(r["location"]?.string)
            let id: String
            if let n = r["locationId"]?.number, n.rounded() == n, n >= 0, n < 1e12 {
                id = stationID(Int(n))
            } else if let name, name.utf8.count <= 200 {
                id = "openaq:" + name
            } else {
                refuse("no location (locationId or location)")
                continue
            }
            guard let parameter = nonEmpty(r["parameter"]?.string)?.lowercased(), parameter.utf8.count <= 32 else {
                refuse("no parameter")
                continue
            }
            guard let timeText = r["date"]?["utc"]?.string else {
                refuse("no date.utc")
                continue
            }
            guard let time = Timestamp.parse(timeText) else {
                refuse("a date.utc that is not a time")
                continue
            }
            guard let value = r["value"]?.number, value.isFinite, value > -9999 else {
                out.batch.gaps += 1
                continue
            }
            if !stations.contains(id) {
                var attributes: [String: String] = [:]
                if let city = nonEmpty(r["city"]?.string) { attributes["locality"] = city }
                if let country = nonEmpty(r["country"]?.string) { attributes["country"] = country }
                let coordinates = r["coordinates"]
                stations.add(
                    StationInfo(
                        id: id, source: source, name: name, latitude: coordinates?["latitude"]?.number,
                        longitude: coordinates?["longitude"]?.number, attributes: attributes))
            }
            out.batch.readings.append(
                Reading(
                    station: id, metric: parameter, time: time, value: value, unit: nonEmpty(r["unit"]?.string),
                    source: source))
        }
        out.batch.stations = stations.stations
        return out
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
        var locationsId: Int?
        var flagInfo: FlagInfo?
    }

    struct FlagInfo: Decodable {
        var hasFlags: Bool?
    }

    struct LocationSensors: Decodable {
        var id: Int
        var sensors: [Sensor]?
    }

    /// Which fields a result has, to tell the kinds of body apart.
    struct Shape: Decodable {
        var hasSensors: Bool
        var hasParameter: Bool
        var hasValue: Bool

        enum CodingKeys: String, CodingKey {
            case sensors, parameter, value
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            hasSensors = c.contains(.sensors)
            hasParameter = c.contains(.parameter)
            hasValue = c.contains(.value)
        }
    }
}
