import Foundation
import KlaxonCore

/// AirNow current observations by reporting area: the legacy services (`/aq/observation/latLong/current`,
/// `/aq/observation/zipCode/current`, retiring 2026-09-30) and their 2026 replacement
/// (`/aq/observation/current/ziplatlong`). The format is detected per object.
///
/// Each object is one pollutant's AQI at one reporting area for one local hour:
/// - legacy: `DateObserved` (`2020-12-05`, often with a trailing space), `HourObserved` (an integer),
///   `LocalTimeZone` (an abbreviation such as `PST`), `ReportingArea`, `StateCode`, `Latitude`,
///   `Longitude`, `ParameterName` (`O3`, `PM2.5`, `PM10`), `AQI` (an integer, `-1` when missing);
/// - 2026: the same in camelCase, with `hourObserved` a string (`15:00`), `reportingAreaName`,
///   `parameterName` (`OZONE`, `PM2.5`, `PM10`), `nowcastAQI` (or `aqi`), `siteID` and `siteName`.
///
/// The station is the reporting area's name (`Central LA CO`); its state, and in the 2026 format the
/// first site named, are attributes. Readings: `aqi.o3`, `aqi.pm25`, `aqi.pm10` (any other pollutant
/// `aqi.<name>` lowercased without punctuation, `NO2` → `aqi.no2`), and `aqi`, the highest of them
/// for that area and hour (the reporting area's AQI), also over the pollutants stored before
/// (`SourceBatch.overallAQI`). All are index values without a unit. A
/// missing AQI (`-1`, null) is a gap; it does not lower `aqi`. When one area, pollutant and hour
/// appear twice (two sites of one area), the higher value is kept. Forecast records (`DateForecast`
/// without `DateObserved`) are not observations and are ignored.
public enum AirNowParser {
    static let format = "airnow-json"
    static let source = "airnow"

    public static func parse(_ data: Data) throws -> SourceBatch {
        let root = try JSONInput.decode(JSONValue.self, from: data, format: format)
        guard case .array(let items) = root else {
            if case .object(let object) = root, let error = serverError(object, data: data) { throw error }
            throw ParseError(.malformed, format: format, "the JSON is not an array of observations")
        }
        var batch = SourceBatch()
        var stations = StationList()
        // Pollutant readings, then each area's `aqi`; a repeated series and time keeps the higher value.
        var pollutants = HighestPerKey()
        var areas = HighestPerKey()
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item else {
                throw ParseError(.malformed, format: format, "[\(index)] is not an object")
            }
            guard let observation = try observation(object, index: index) else { continue }
            if !stations.contains(observation.station.id) { stations.add(observation.station) }
            guard let aqi = observation.aqi else {
                batch.gaps += 1
                continue
            }
            let id = observation.station.id
            pollutants.offer(Key(station: id, metric: observation.metric, time: observation.time), aqi)
            areas.offer(Key(station: id, metric: "aqi", time: observation.time), aqi)
        }
        for (key, value) in pollutants.entries + areas.entries {
            batch.readings.append(
                Reading(station: key.station, metric: key.metric, time: key.time, value: value, source: source))
        }
        batch.stations = stations.stations
        // Each area's `aqi` is the highest of its pollutants', with those stored (another file, the
        // other field set, an earlier fetch of the hour): the store works it out.
        batch.overallAQI = true
        return batch
    }

    /// The highest value offered for each key, in the order keys were first offered.
    struct HighestPerKey {
        private(set) var entries: [(key: Key, value: Double)] = []
        private var position: [Key: Int] = [:]

        mutating func offer(_ key: Key, _ value: Double) {
            if let at = position[key] {
                entries[at].value = max(entries[at].value, value)
            } else {
                position[key] = entries.count
                entries.append((key, value))
            }
        }
    }

    struct Key: Hashable {
        var station: String
        var metric: String
        var time: Int64
    }

    struct Observation {
        var station: StationInfo
        var metric: String
        var time: Int64
        /// Nil when missing (`-1`, null).
        var aqi: Double?
    }

    /// One object of either format; nil for a forecast record.
    static func observation(_ o: [String: JSONValue], index: Int) throws -> Observation? {
        if o["DateObserved"] == nil && o["dateObserved"] == nil
            && (o["DateForecast"] != nil || o["dateForecast"] != nil)
        {
            return nil
        }
        let legacy = o["DateObserved"] != nil || o["ParameterName"] != nil || o["ReportingArea"] != nil
        func field(_ name: String) -> String { "[\(index)].\(name)" }
        func text(_ name: String) throws -> String {
            guard let value = o[name] else {
                throw ParseError(.missingField, format: format, "missing field '\(field(name))'")
            }
            guard case .string(let s) = value, !s.trimmingSpaces().isEmpty else {
                throw ParseError(.badValue, format: format, "field '\(field(name))' is not a non-empty string")
            }
            return s.trimmingSpaces()
        }
        func optionalText(_ name: String) -> String? {
            guard let s = o[name]?.string?.trimmingSpaces(), !s.isEmpty else { return nil }
            return s
        }
        let keys =
            legacy
            ? (
                date: "DateObserved", hour: "HourObserved", zone: "LocalTimeZone", area: "ReportingArea",
                state: "StateCode", latitude: "Latitude", longitude: "Longitude", parameter: "ParameterName"
            )
            : (
                date: "dateObserved", hour: "hourObserved", zone: "localTimeZone", area: "reportingAreaName",
                state: "stateCode", latitude: "latitude", longitude: "longitude", parameter: "parameterName"
            )

        let area = try text(keys.area)
        let date = try text(keys.date)
        guard let day = calendarDay(date) else {
            throw ParseError(
                .badValue, format: format, "bad date '\(ParseError.excerpt(date, limit: 40))' in \(field(keys.date))")
        }
        guard let hourValue = o[keys.hour] else {
            throw ParseError(.missingField, format: format, "missing field '\(field(keys.hour))'")
        }
        guard let hour = hour(hourValue) else {
            throw ParseError(.badValue, format: format, "bad hour in \(field(keys.hour))")
        }
        let zone = try text(keys.zone)
        guard let offset = TimeZones.offsetSeconds(abbreviation: zone) else {
            throw ParseError(
                .badValue, format: format,
                "unknown time zone '\(ParseError.excerpt(zone, limit: 20))' in \(field(keys.zone))")
        }
        let parameter = try text(keys.parameter)

        let aqiValue: JSONValue?
        if legacy {
            aqiValue = o["AQI"]
        } else {
            aqiValue = o["nowcastAQI"] ?? o["aqi"] ?? o["AQI"]
        }
        let aqi: Double?
        switch aqiValue {
        case .number(let v)?:
            aqi = v.isFinite && v >= 0 ? v : nil
        case .null?:
            aqi = nil
        case .string(let s)?:
            aqi = ParserSupport.number(s).flatMap { $0 >= 0 ? $0 : nil }
        case nil:
            throw ParseError(
                .missingField, format: format, "missing field '\(field(legacy ? "AQI" : "nowcastAQI"))'")
        default:
            throw ParseError(
                .badValue, format: format, "field '\(field(legacy ? "AQI" : "nowcastAQI"))' is not a number")
        }

        let state = optionalText(keys.state)
        var attributes: [String: String] = [:]
        if let state { attributes["state"] = state }
        if !legacy {
            if let site = o["siteID"].flatMap(scalarText) { attributes["site_id"] = site }
            if let name = optionalText("siteName") { attributes["site_name"] = name }
            if let agency = optionalText("reportingAgency") { attributes["agency"] = agency }
        }
        let station = StationInfo(
            id: area, source: source, name: area, latitude: o[keys.latitude]?.number,
            longitude: o[keys.longitude]?.number,
            // `MST` is Denver or Phoenix by the state: without one it is not guessed.
            timeZone: state.map { TimeZones.iana(abbreviation: zone, usesDST: $0.uppercased() != "AZ") }
                ?? (zone.trimmingSpaces().uppercased() == "MST"
                    ? nil : TimeZones.iana(abbreviation: zone, usesDST: true)),
            attributes: attributes)
        return Observation(
            station: station, metric: "aqi." + pollutant(parameter), time: day + Int64(hour * 3600 - offset), aqi: aqi)
    }

    /// `O3`, `OZONE` → `o3`; `PM2.5` → `pm25`; `PM10` → `pm10`; others lowercased without punctuation.
    static func pollutant(_ name: String) -> String {
        let plain = String(
            name.lowercased().unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) })
        switch plain {
        case "ozone", "o3": return "o3"
        case "pm25": return "pm25"
        default: return plain.isEmpty ? "unknown" : plain
        }
    }

    /// 00:00Z of a local date written `2020-12-05` (trailing space allowed) or `12/05/2020`.
    static func calendarDay(_ text: String) -> Int64? {
        let s = text.trimmingSpaces()
        let parts = s.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 3 {
            guard (1...2).contains(parts[0].count), (1...2).contains(parts[1].count), parts[2].count == 4 else {
                return nil
            }
            func two(_ p: Substring) -> String { p.count == 1 ? "0" + p : String(p) }
            return ParserSupport.calendarDay("\(parts[2])-\(two(parts[0]))-\(two(parts[1]))")
        }
        guard s.utf8.count == 10 else { return nil }
        return ParserSupport.calendarDay(s)
    }

    /// An hour 0–23: an integer, or a string `15`, `15:00`.
    static func hour(_ value: JSONValue) -> Int? {
        let h: Int?
        switch value {
        case .number(let v):
            h = v.rounded() == v && v >= 0 && v < 24 ? Int(v) : nil
        case .string(let s):
            let trimmed = s.trimmingSpaces()
            let head = trimmed.split(separator: ":", omittingEmptySubsequences: false)
            guard head.count <= 2, let first = head.first, !first.isEmpty, first.count <= 2,
                first.allSatisfy(\.isASCII), let value = Int(first)
            else { return nil }
            if head.count == 2 && Int(head[1]) != 0 { return nil }
            h = value
        default:
            h = nil
        }
        guard let h, (0...23).contains(h) else { return nil }
        return h
    }

    static func scalarText(_ value: JSONValue) -> String? {
        switch value {
        case .string(let s): return s.trimmingSpaces().isEmpty ? nil : s.trimmingSpaces()
        case .number(let d): return d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        default: return nil
        }
    }

    /// `{"WebServiceError":[{"Message":"Invalid API key"}]}` and the common error shapes.
    static func serverError(_ object: [String: JSONValue], data: Data) -> ParseError? {
        if case .array(let errors)? = object["WebServiceError"] {
            let messages = errors.compactMap { error -> String? in
                guard case .object(let e) = error else { return nil }
                return e["Message"]?.string ?? e["message"]?.string
            }
            return ParseError(
                .serverError, format: format,
                "the server sent an error, not data: \(ParseError.excerpt(messages.isEmpty ? "WebServiceError" : messages.joined(separator: "; ")))"
            )
        }
        return JSONInput.serverError(data, format: format)
    }
}
