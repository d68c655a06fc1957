import Foundation
import KlaxonCore

/// The World Air Quality Index project's feed (`https://api.waqi.info/feed/{city}/`, `/feed/@{uid}/`,
/// `/feed/geo:{lat};{lng}/`): `{"status": "ok", "data": {aqi, idx, city, time, iaqi, …}}`.
///
/// The station is `waqi:<idx>` (`waqi:6332`; WAQI gives some stations a negative `idx`, so
/// `/feed/@372382/` answers with `waqi:-372382`), named by `city.name`, at `city.geo`. Readings:
/// `aqi` (a gap when WAQI writes `"-"`) and `aqi.<pollutant>` from `iaqi` for `pm25`, `pm10`, `o3`,
/// `no2`, `so2` and `co`: WAQI's per-pollutant sub-indices on the US EPA scale, not concentrations.
/// The weather entries of `iaqi` (`t`, `h`, `p`, `w`, `wg`, `dew`, `r`) are not read.
///
/// The time is `time.s` (local wall time) at offset `time.tz`. `time.v` and `time.iso` are not used:
/// some stations (Utrecht) put the local wall time there as if it were UTC.
///
/// WAQI reports errors with HTTP 200: `{"status": "error", "data": "Unknown station"}`, or for an
/// unknown `@uid` `{"status": "ok", "data": {"status": "error", "msg": "Unknown ID"}}`. Both are
/// `ParseError` `.serverError` carrying WAQI's message.
public enum WAQIParser {
    static let format = "waqi-json"
    static let source = "waqi"
    /// The `iaqi` keys that are pollutant sub-indices.
    static let pollutants = ["pm25", "pm10", "o3", "no2", "so2", "co"]

    public static func parse(_ data: Data) throws -> SourceBatch {
        let root = try JSONInput.decode(JSONValue.self, from: data, format: format)
        guard case .object(let body) = root else {
            throw ParseError(.malformed, format: format, "the JSON is not an object with the expected fields")
        }
        guard let status = body["status"] else {
            throw ParseError(.missingField, format: format, "missing field 'status'")
        }
        guard status.string == "ok" else { throw serverError(body, status: status) }
        guard let payload = body["data"] else {
            throw ParseError(.missingField, format: format, "missing field 'data'")
        }
        guard case .object(let d) = payload else {
            if case .array = payload {
                throw ParseError(
                    .notTheFormat, format: format, "got a list of stations (a /search answer), not a /feed body")
            }
            throw ParseError(.badValue, format: format, "field 'data' is not an object")
        }
        if let inner = d["status"], inner.string != "ok" { throw serverError(d, status: inner) }

        guard let idxValue = d["idx"] else {
            throw ParseError(.missingField, format: format, "missing field 'data.idx'")
        }
        guard let idx = integer(idxValue) else {
            throw ParseError(.badValue, format: format, "field 'data.idx' is not an integer")
        }
        let station = "waqi:\(idx)"
        let time = try self.time(d["time"])

        var info = StationInfo(id: station, source: source)
        if case .object(let city)? = d["city"] {
            info.name = city["name"]?.string.flatMap(nonEmpty)
            if case .array(let geo)? = city["geo"], geo.count == 2, let lat = geo[0].number, let lon = geo[1].number {
                info.latitude = lat
                info.longitude = lon
            }
            if let url = city["url"]?.string.flatMap(nonEmpty) { info.attributes["url"] = url }
            if let location = city["location"]?.string.flatMap(nonEmpty) { info.attributes["location"] = location }
        }
        if case .array(let attributions)? = d["attributions"] {
            let names = attributions.compactMap { a -> String? in
                guard case .object(let o) = a else { return nil }
                return o["name"]?.string.flatMap(nonEmpty)
            }
            if !names.isEmpty { info.attributes["attribution"] = names.joined(separator: "; ") }
        }

        var batch = SourceBatch(stations: [info])
        guard let aqiValue = d["aqi"] else {
            throw ParseError(.missingField, format: format, "missing field 'data.aqi'")
        }
        if let aqi = indexValue(aqiValue) {
            batch.readings.append(Reading(station: station, metric: "aqi", time: time, value: aqi, source: source))
        } else {
            batch.gaps += 1
        }
        if case .object(let iaqi)? = d["iaqi"] {
            for pollutant in pollutants {
                guard case .object(let entry)? = iaqi[pollutant] else { continue }
                if let v = entry["v"].flatMap(indexValue) {
                    batch.readings.append(
                        Reading(station: station, metric: "aqi." + pollutant, time: time, value: v, source: source))
                } else {
                    batch.gaps += 1
                }
            }
        }
        return batch
    }

    /// `time.s` (`2023-08-07 17:00:00`) at `time.tz` (`+02:00`), as UTC seconds.
    static func time(_ value: JSONValue?) throws -> Int64 {
        guard case .object(let t)? = value else {
            throw ParseError(.missingField, format: format, "missing field 'data.time'")
        }
        guard let s = t["s"]?.string?.trimmingSpaces(), !s.isEmpty else {
            throw ParseError(.missingField, format: format, "missing field 'data.time.s'")
        }
        guard let tz = t["tz"]?.string?.trimmingSpaces(), !tz.isEmpty else {
            throw ParseError(.missingField, format: format, "missing field 'data.time.tz'")
        }
        guard let time = Timestamp.parse(s.replacingOccurrences(of: " ", with: "T") + tz) else {
            throw ParseError(
                .badValue, format: format,
                "bad time '\(ParseError.excerpt(s, limit: 30))' '\(ParseError.excerpt(tz, limit: 10))' in data.time")
        }
        return time
    }

    /// A finite, non-negative index value; nil for `"-"`, `""`, null and anything else.
    static func indexValue(_ value: JSONValue) -> Double? {
        let v: Double?
        switch value {
        case .number(let d): v = d
        case .string(let s): v = ParserSupport.number(s)
        default: v = nil
        }
        guard let v, v.isFinite, v >= 0 else { return nil }
        return v
    }

    static func integer(_ value: JSONValue) -> Int64? {
        switch value {
        case .number(let d):
            guard d.rounded() == d, abs(d) < 1e15 else { return nil }
            return Int64(d)
        case .string(let s):
            return Int64(s.trimmingSpaces())
        default:
            return nil
        }
    }

    /// `{"status": "error", "data": "Invalid key"}`, `{"status": "error", "msg": "Unknown ID"}`.
    static func serverError(_ object: [String: JSONValue], status: JSONValue) -> ParseError {
        let message =
            object["data"]?.string ?? object["msg"]?.string ?? object["message"]?.string
            ?? "status '\(status.string ?? "?")'"
        return ParseError(
            .serverError, format: format, "the server sent an error, not data: \(ParseError.excerpt(message))")
    }

    static func nonEmpty(_ s: String) -> String? {
        let t = s.trimmingSpaces()
        return t.isEmpty ? nil : t
    }
}
