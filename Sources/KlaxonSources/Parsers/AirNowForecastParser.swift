import Foundation
import KlaxonCore

/// AirNow air-quality forecasts by reporting area (`/aq/forecast/latLong/`, `/aq/forecast/zipCode/`):
/// an array with one object per reporting area, forecast date and pollutant, in the legacy field
/// set or the current (camelCase) one, told apart per object:
/// - legacy: `DateIssue` and `DateForecast` (`2024-05-02`, usually with a trailing space, or
///   `05/02/2024`), `ReportingArea`, `StateCode`, `Latitude`, `Longitude`, `ParameterName` (`O3`,
///   `PM2.5`, `PM10`), `AQI` (`-1` when the forecast is a category only), `Category {Number, Name}`,
///   `ActionDay` (true/false), `Discussion`;
/// - current: `dateIssue`, `dateForecast`, `reportingAreaName` (or `reportingArea`), `stateCode`,
///   `latitude`, `longitude`, `parameterName` (`OZONE` is `O3`), `aqi`, `category {number, name}`
///   (or `categoryNumber`), `actionDay`, `discussion`.
///
/// A record that cannot be a forecast is skipped and counted by reason, never stored as something
/// it did not say: no reporting area, pollutant or valid dates; a forecast date before its issue
/// date or more than `maxLeadDays` after it; an AQI that is not a number or above 500; no AQI and
/// no category (`Category 7`, "unavailable", included); an AQI whose category contradicts the one
/// given. When an answer holds one area, date and pollutant twice (an answer with two issue
/// dates), the later issuance is kept and the other counted as superseded; of two records of the
/// same issuance, the worse (higher category) is kept.
public enum AirNowForecastParser {
    static let format = "airnow-forecast"
    static let source = "airnow"
    /// The furthest ahead of its issue date a forecast may be dated (AirNow forecasts up to ~5 days).
    public static let maxLeadDays: Int64 = 14
    /// The longest discussion kept (characters); a longer one is cut.
    public static let maxDiscussion = 2_000

    public struct Result: Sendable {
        public var forecasts: [AirForecast] = []
        /// Records not stored, each reason once with how many records it stands for, in the order met.
        public var skipped: [(reason: String, count: Int)] = []
        /// Records passed over for a later issuance of the same area, date and pollutant in the answer.
        public var superseded = 0
        /// Records of the same issuance, area, date and pollutant as another (the worse one is kept).
        public var duplicates = 0

        public var skippedCount: Int { skipped.reduce(0) { $0 + $1.count } }

        mutating func skip(_ reason: String) {
            if let i = skipped.firstIndex(where: { $0.reason == reason }) {
                skipped[i].count += 1
            } else {
                skipped.append((reason, 1))
            }
        }
    }

    public static func parse(_ data: Data) throws -> Result {
        let root = try JSONInput.decode(JSONValue.self, from: data, format: format)
        guard case .array(let items) = root else {
            if case .object(let object) = root, let error = AirNowParser.serverError(object, data: data) {
                throw ParseError(error.kind, format: format, error.message)
            }
            throw ParseError(.malformed, format: format, "the JSON is not an array of forecasts")
        }
        var result = Result()
        var kept: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            guard case .object(let object) = item else {
                throw ParseError(.malformed, format: format, "[\(index)] is not an object")
            }
            switch forecast(object) {
            case .failure(let skip):
                result.skip(skip.reason)
            case .success(let f):
                guard let at = kept[f.key] else {
                    kept[f.key] = result.forecasts.count
                    result.forecasts.append(f)
                    continue
                }
                let old = result.forecasts[at]
                if f.issued != old.issued {
                    result.superseded += 1
                    if f.issued > old.issued { result.forecasts[at] = f }
                } else {
                    result.duplicates += 1
                    if (f.category, f.aqi ?? -1) > (old.category, old.aqi ?? -1) { result.forecasts[at] = f }
                }
            }
        }
        return result
    }

    struct Skip: Error {
        var reason: String
    }

    /// One object of either field set, or why it is skipped.
    static func forecast(_ o: [String: JSONValue]) -> Swift.Result<AirForecast, Skip> {
        let legacy =
            o["DateForecast"] != nil || o["ReportingArea"] != nil || o["ParameterName"] != nil
            || o["DateIssue"] != nil
        func text(_ names: String...) -> String? {
            for name in names {
                if let s = o[name]?.string?.trimmingSpaces(), !s.isEmpty { return s }
            }
            return nil
        }
        func fail(_ reason: String) -> Swift.Result<AirForecast, Skip> { .failure(Skip(reason: reason)) }

        guard let area = legacy ? text("ReportingArea") : text("reportingAreaName", "reportingArea") else {
            return fail("no reporting area")
        }
        guard area.utf8.count <= 200,
            !area.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { return fail("a reporting area name that is not a short line of text") }
        guard let parameterText = legacy ? text("ParameterName") : text("parameterName"),
            let parameter = pollutant(parameterText)
        else { return fail("no pollutant named") }
        guard let forecastText = legacy ? text("DateForecast") : text("dateForecast") else {
            return fail("no forecast date")
        }
        guard let day = AirNowParser.calendarDay(forecastText) else {
            return fail("a forecast date that is not a date")
        }
        guard let issueText = legacy ? text("DateIssue") : text("dateIssue") else { return fail("no issue date") }
        guard let issueDay = AirNowParser.calendarDay(issueText) else {
            return fail("an issue date that is not a date")
        }
        guard day >= issueDay else { return fail("a forecast for a day before its issue date") }
        guard day - issueDay <= maxLeadDays * 86_400 else {
            return fail("a forecast more than \(maxLeadDays) days after its issue date")
        }

        // AQI: a number 0–500; -1 or null means the forecast is a category only.
        let aqi: Int?
        switch o[legacy ? "AQI" : "aqi"] ?? o["AQI"] {
        case .number(let v)?:
            guard v.isFinite, v.rounded() == v, v >= -1, v <= 500 else {
                return fail("an AQI that is not -1 or a whole number 0–500")
            }
            aqi = v < 0 ? nil : Int(v)
        case .string(let s)?:
            guard let v = ParserSupport.number(s), v.rounded() == v, v >= -1, v <= 500 else {
                return fail("an AQI that is not -1 or a whole number 0–500")
            }
            aqi = v < 0 ? nil : Int(v)
        case .null?, nil:
            aqi = nil
        default:
            return fail("an AQI that is not -1 or a whole number 0–500")
        }
        // Category: `{Number, Name}` / `{number, name}`, or `categoryNumber`.
        let categoryValue =
            o["Category"]?["Number"] ?? o["category"]?["number"] ?? o["category"]?["Number"] ?? o["categoryNumber"]
            ?? o["CategoryNumber"]
        var category: Int? = nil
        switch categoryValue {
        case .number(let v)?:
            guard v.isFinite, v.rounded() == v, (1...7).contains(v) else {
                return fail("a category number that is not 1–6")
            }
            category = Int(v)
        case .string(let s)?:
            guard let v = ParserSupport.number(s), v.rounded() == v, (1...7).contains(v) else {
                return fail("a category number that is not 1–6")
            }
            category = Int(v)
        case .null?, nil:
            category = nil
        default:
            return fail("a category number that is not 1–6")
        }
        if category == 7 { category = nil }  // 7: "Unavailable"
        if let aqi, let category, AirForecast.category(aqi: aqi) != category {
            return fail("an AQI whose category is not the category given")
        }
        guard let number = category ?? aqi.flatMap(AirForecast.category(aqi:)) else {
            return fail("neither an AQI nor a category (unavailable)")
        }
        let actionDay: Bool
        switch o[legacy ? "ActionDay" : "actionDay"] ?? o["ActionDay"] {
        case .bool(let b)?: actionDay = b
        case .string(let s)?: actionDay = s.trimmingSpaces().lowercased() == "true"
        case .number(let v)?: actionDay = v == 1
        default: actionDay = false
        }
        var discussion = (legacy ? text("Discussion") : text("discussion")).map(clean)
        if discussion?.isEmpty == true { discussion = nil }
        return .success(
            AirForecast(
                area: area, state: legacy ? text("StateCode") : text("stateCode"),
                latitude: coordinate(o[legacy ? "Latitude" : "latitude"], limit: 90),
                longitude: coordinate(o[legacy ? "Longitude" : "longitude"], limit: 180),
                date: String(Timestamp.format(day).prefix(10)), parameter: parameter, aqi: aqi, category: number,
                actionDay: actionDay, discussion: discussion, issued: String(Timestamp.format(issueDay).prefix(10)),
                source: source))
    }

    /// `O3` (`OZONE`), `PM2.5`, `PM10`, or another name uppercased; nil for an empty or odd name.
    static func pollutant(_ name: String) -> String? {
        switch AirNowParser.pollutant(name) {
        case "o3": return "O3"
        case "pm25": return "PM2.5"
        case "pm10": return "PM10"
        default:
            let upper = name.uppercased()
            guard upper.utf8.count <= 16, upper.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == ".") })
            else { return nil }
            return upper
        }
    }

    static func coordinate(_ value: JSONValue?, limit: Double) -> Double? {
        guard let v = value?.number, v.isFinite, abs(v) <= limit else { return nil }
        return v
    }

    /// Control characters (line ends included) as spaces, at most `maxDiscussion` characters.
    static func clean(_ text: String) -> String {
        var out = ""
        for ch in text.prefix(maxDiscussion) {
            out.append(ch.unicodeScalars.contains { $0.properties.generalCategory == .control } ? " " : ch)
        }
        return out.trimmingSpaces()
    }
}
