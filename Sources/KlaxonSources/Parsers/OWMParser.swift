import Foundation
import KlaxonCore

/// OpenWeatherMap's forecasts (format name `owm-json`): the 5 day / 3 hour forecast, One Call's daily
/// forecast and alerts, and the legacy 16-day `forecast/daily`.
///
/// `units` is the `units` query parameter the request used: `standard` (Kelvin, m/s; also the
/// default when empty), `metric` (°C, m/s) or `imperial` (°F, mph). Every value returned is metric
/// (°C, mm, cm, km/h), rounded to 0.01. Rain and snow are in mm whatever the units, and absent when
/// zero: an absent key counts as 0. Precipitation is rain plus snow (as mm of water, like Open-Meteo's
/// `precipitation_sum`); snowfall is the snow's mm ÷ 10, in cm. OpenWeatherMap's condition ids
/// (`weather[0].id`, 500 = light rain) are turned into WMO weather codes (61) so that both sources
/// speak the same codes.
public enum OWMParser {
    static let format = "owm-json"

    /// The 5 day / 3 hour forecast (`/data/2.5/forecast`), aggregated to local days with
    /// `city.timezone` (the UTC offset in seconds; UTC when absent): the highest `temp_max` and lowest
    /// `temp_min`, the sum of rain and snow, the highest `pop` (× 100), the highest wind speed, and the
    /// most significant weather code of the day's slots. Days in date order. The first and last days
    /// usually cover only part of the day.
    public static func fiveDay(_ data: Data, place: String, units: String, issued: Int64) throws -> [DayWeather] {
        let system = try UnitSystem(units)
        let response = try JSONInput.decode(FiveDayResponse.self, from: data, format: format)
        try checkServerError(cod: response.cod, message: response.message)
        guard let list = response.list else {
            throw ParseError(.missingField, format: format, "missing field 'list'")
        }
        let offset = try utcOffset(response.city?.timezone, "city.timezone")
        var days: [String: Day] = [:]
        for (i, slot) in list.enumerated() {
            days[try localDate(slot.dt, offset: offset, "list[\(i)].dt"), default: Day()].add(slot)
        }
        return days.sorted { $0.key < $1.key }.map { date, day in
            DayWeather(
                place: place, date: date, tempMaxC: day.tempMax.map(system.temperature),
                tempMinC: day.tempMin.map(system.temperature),
                precipitationMm: WeatherUnits.rounded(day.rain + day.snow),
                precipitationProbability: day.pop.map { WeatherUnits.rounded($0 * 100) },
                snowfallCm: WeatherUnits.rounded(day.snow / 10), windMaxKmh: day.wind.map(system.speed),
                weatherCode: day.code, source: "owm", issued: issued)
        }
    }

    /// One Call (2.5 or 3.0) `daily[]` (dated with `timezone_offset`), or the legacy 16-day
    /// `forecast/daily` `list[]` (dated with `city.timezone`, UTC when absent); the shape tells which.
    /// Each entry's `dt` is a time within its local day. One Call's `alerts[]` come back as
    /// `WeatherAlert`s: the id is `event@start`; the severity is read from the event's name where it
    /// says it (`Severe thunderstorm warning` → Severe, `Extreme Cold Warning` → Extreme, any other
    /// `… Warning` → Severe), else `Unknown`; the headline is the NWS-style `...TEXT...` lead of the
    /// description, when it has one.
    public static func daily(
        _ data: Data, place: String, units: String, issued: Int64
    ) throws -> (days: [DayWeather], alerts: [WeatherAlert]) {
        let system = try UnitSystem(units)
        let response: DailyResponse
        do {
            response = try JSONInput.decode(DailyResponse.self, from: data, format: format)
        } catch let error as ParseError {
            // A 5 day / 3 hour body fails on its `rain: {"3h": …}` objects: name the mix-up instead.
            if let fiveDay = try? JSONDecoder().decode(FiveDayResponse.self, from: data), fiveDay.list?.isEmpty == false
            {
                throw fiveDayMixUp("list[0].main")
            }
            throw error
        }
        try checkServerError(cod: response.cod, message: response.message)
        let entries: [DailyEntry]
        let offset: Int64
        let path: String
        if let daily = response.daily {
            entries = daily
            offset = try utcOffset(response.timezoneOffset, "timezone_offset")
            path = "daily"
        } else if let list = response.list {
            entries = list
            offset = try utcOffset(response.city?.timezone, "city.timezone")
            path = "list"
        } else {
            throw ParseError(
                .missingField, format: format, "missing field 'daily' (One Call) or 'list' (forecast/daily)")
        }
        var days: [DayWeather] = []
        for (i, entry) in entries.enumerated() {
            guard let temp = entry.temp else {
                if entry.main != nil { throw fiveDayMixUp("\(path)[\(i)].main") }
                throw ParseError(.missingField, format: format, "missing field '\(path)[\(i)].temp'")
            }
            let rain = entry.rain ?? 0
            let snow = entry.snow ?? 0
            days.append(
                DayWeather(
                    place: place, date: try localDate(entry.dt, offset: offset, "\(path)[\(i)].dt"),
                    tempMaxC: temp.max.map(system.temperature),
                    tempMinC: temp.min.map(system.temperature), precipitationMm: WeatherUnits.rounded(rain + snow),
                    precipitationProbability: entry.pop.map { WeatherUnits.rounded($0 * 100) },
                    snowfallCm: WeatherUnits.rounded(snow / 10),
                    windMaxKmh: (entry.windSpeed ?? entry.speed).map(system.speed),
                    weatherCode: entry.weather?.first.flatMap { wmoCode(owm: $0.id) }, source: "owm", issued: issued))
        }
        let alerts = (response.alerts ?? []).map { alert in
            WeatherAlert(
                id: "\(alert.event)@\(alert.start.map(String.init) ?? "")", event: alert.event,
                severity: severity(event: alert.event), headline: alert.description.flatMap(headline(description:)),
                onset: alert.start, ends: alert.end)
        }
        return (days, alerts)
    }

    // MARK: - Units, codes, errors

    /// The `units` a request used.
    enum UnitSystem {
        case standard, metric, imperial

        init(_ text: String) throws {
            switch text.trimmingSpaces().lowercased() {
            case "", "standard": self = .standard
            case "metric": self = .metric
            case "imperial": self = .imperial
            default:
                throw ParseError(
                    .badValue, format: OWMParser.format,
                    "unknown units '\(ParseError.excerpt(text))' (standard, metric or imperial)")
            }
        }

        var temperature: @Sendable (Double) -> Double {
            switch self {
            case .standard: WeatherUnits.kelvin
            case .metric: { WeatherUnits.rounded($0) }
            case .imperial: WeatherUnits.fahrenheit
            }
        }

        var speed: @Sendable (Double) -> Double {
            self == .imperial ? WeatherUnits.milesPerHour : WeatherUnits.metersPerSecond
        }
    }

    /// `{"cod":401,"message":"Invalid API key…"}` or `{"cod":"404","message":"city not found"}`;
    /// forecasts carry `cod` `"200"` (One Call none).
    private static func checkServerError(cod: FlexibleString?, message: JSONValue?) throws {
        guard let cod, cod.value != "200" else { return }
        let text = message?.string.map { "\(cod.value): \($0)" } ?? cod.value
        throw ParseError(
            .serverError, format: format, "the server sent an error, not data: \(ParseError.excerpt(text))")
    }

    private static func fiveDayMixUp(_ field: String) -> ParseError {
        ParseError(
            .notTheFormat, format: format,
            "got the 5 day / 3 hour forecast, not a daily one ('\(field)'): read it with fiveDay")
    }

    static func localDate(_ dt: Int64, offset: Int64, _ field: String) throws -> String {
        guard let date = ParserSupport.localDate(dt, offset: offset) else {
            throw ParseError(.badValue, format: format, "bad time \(dt) in '\(field)'")
        }
        return date
    }

    static func utcOffset(_ seconds: Int?, _ field: String) throws -> Int64 {
        guard let offset = ParserSupport.utcOffset(seconds) else {
            throw ParseError(.badValue, format: format, "bad UTC offset in '\(field)'")
        }
        return offset
    }

    /// An OpenWeatherMap condition id as a WMO present-weather code (the 0–99 `ww` table that
    /// Open-Meteo's `weather_code` uses). Higher codes are more significant, so a day's code is the
    /// highest of its slots'. Nil for an id OpenWeatherMap does not define.
    static func wmoCode(owm id: Int) -> Int? {
        switch id {
        case 200..<300: return 95  // thunderstorm
        case 300, 310: return 51  // light drizzle
        case 301, 311: return 53
        case 302, 312: return 55
        case 313, 321: return 80  // drizzle showers
        case 314: return 81
        case 500: return 61  // light rain
        case 501: return 63
        case 502, 503, 504: return 65
        case 511: return 66  // freezing rain
        case 520: return 80  // rain showers
        case 521, 531: return 81
        case 522: return 82
        case 600: return 71  // light snow
        case 601: return 73
        case 602: return 75
        case 611, 612, 613: return 77  // sleet: ice grains
        case 615: return 68  // rain and snow, light
        case 616: return 69
        case 620, 621: return 85  // snow showers
        case 622: return 86
        case 701: return 10  // mist
        case 711, 762: return 4  // smoke, volcanic ash
        case 721: return 5  // haze
        case 731: return 8  // sand or dust whirls
        case 741: return 45  // fog
        case 751: return 7  // sand
        case 761: return 6  // dust
        case 771: return 18  // squalls
        case 781: return 19  // tornado (funnel cloud)
        case 800: return 0  // clear
        case 801: return 1
        case 802: return 2
        case 803, 804: return 3
        default: return nil
        }
    }

    /// `Extreme`, `Severe`, `Moderate` or `Minor` when the event's name starts with it (MeteoAlarm
    /// names such as `Moderate wind warning`, NWS ones such as `Extreme Cold Warning`); `Severe` for
    /// another name ending in `Warning` (NWS warnings); else `Unknown`.
    static func severity(event: String) -> String {
        let words = event.lowercased().split(whereSeparator: { !$0.isLetter })
        switch words.first {
        case "extreme": return "Extreme"
        case "severe": return "Severe"
        case "moderate": return "Moderate"
        case "minor": return "Minor"
        default: return words.last == "warning" ? "Severe" : "Unknown"
        }
    }

    /// The `...SMALL CRAFT ADVISORY REMAINS IN EFFECT...` lead of an NWS description, on one line.
    static func headline(description: String) -> String? {
        let text = description.replacingOccurrences(of: "\\n", with: "\n").trimmingSpaces()
        guard text.hasPrefix("..."), let close = text.dropFirst(3).range(of: "...") else { return nil }
        let lead = text[text.index(text.startIndex, offsetBy: 3)..<close.lowerBound]
        let words = lead.split(whereSeparator: { $0.isWhitespace })
        return words.isEmpty ? nil : words.joined(separator: " ")
    }

    // MARK: - Decoding

    /// One local day of 3-hour slots.
    struct Day {
        var tempMax: Double?
        var tempMin: Double?
        var rain = 0.0
        var snow = 0.0
        var pop: Double?
        var wind: Double?
        var code: Int?

        mutating func add(_ slot: FiveDayResponse.Slot) {
            if let v = slot.main.tempMax ?? slot.main.temp { tempMax = Swift.max(tempMax ?? v, v) }
            if let v = slot.main.tempMin ?? slot.main.temp { tempMin = Swift.min(tempMin ?? v, v) }
            rain += slot.rain?.threeHours ?? 0
            snow += slot.snow?.threeHours ?? 0
            if let v = slot.pop { pop = Swift.max(pop ?? v, v) }
            if let v = slot.wind?.speed { wind = Swift.max(wind ?? v, v) }
            if let id = slot.weather?.first?.id, let c = wmoCode(owm: id) { code = Swift.max(code ?? c, c) }
        }
    }

    struct Condition: Decodable {
        var id: Int
    }

    struct City: Decodable {
        var timezone: Int?
    }

    struct FiveDayResponse: Decodable {
        var cod: FlexibleString?
        var message: JSONValue?
        var list: [Slot]?
        var city: City?

        struct Slot: Decodable {
            var dt: Int64
            var main: Main
            var pop: Double?
            var rain: Volume?
            var snow: Volume?
            var wind: Wind?
            var weather: [Condition]?
        }

        struct Main: Decodable {
            var temp: Double?
            var tempMin: Double?
            var tempMax: Double?

            enum CodingKeys: String, CodingKey {
                case temp
                case tempMin = "temp_min"
                case tempMax = "temp_max"
            }
        }

        struct Volume: Decodable {
            var threeHours: Double?

            enum CodingKeys: String, CodingKey {
                case threeHours = "3h"
            }
        }

        struct Wind: Decodable {
            var speed: Double?
        }
    }

    struct DailyResponse: Decodable {
        var cod: FlexibleString?
        var message: JSONValue?
        var timezoneOffset: Int?
        var daily: [DailyEntry]?
        var list: [DailyEntry]?
        var city: City?
        var alerts: [Alert]?

        enum CodingKeys: String, CodingKey {
            case cod, message, daily, list, city, alerts
            case timezoneOffset = "timezone_offset"
        }

        struct Alert: Decodable {
            var event: String
            var start: Int64?
            var end: Int64?
            var description: String?
        }
    }

    /// One Call's `daily[]` item, or a legacy `forecast/daily` `list[]` item.
    struct DailyEntry: Decodable {
        var dt: Int64
        var temp: Temp?
        /// Present only in a 5 day / 3 hour item, to name that mistake.
        var main: JSONValue?
        var pop: Double?
        var rain: Double?
        var snow: Double?
        /// One Call.
        var windSpeed: Double?
        /// Legacy daily.
        var speed: Double?
        var weather: [Condition]?

        enum CodingKeys: String, CodingKey {
            case dt, temp, main, pop, rain, snow, speed, weather
            case windSpeed = "wind_speed"
        }

        struct Temp: Decodable {
            var min: Double?
            var max: Double?
        }
    }
}
