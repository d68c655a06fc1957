import Foundation
import KlaxonCore

/// Open-Meteo's forecast, archive and geocoding responses (format name `open-meteo-json`).
///
/// Forecast and archive bodies hold parallel arrays under `daily` (`time[]` with one array per
/// variable) and their units under `daily_units`. Every value returned is metric (°C, mm, cm, km/h),
/// rounded to 0.01; a `null` stays nil. Multi-model responses (keys suffixed with a model name,
/// `temperature_2m_icon_d2`) are not merged: only the plain keys are read.
public enum OpenMeteoParser {
    static let format = "open-meteo-json"

    /// A geocoding candidate.
    public struct Place: Sendable, Hashable {
        public var name: String
        public var latitude: Double
        public var longitude: Double
        /// IANA zone, `America/Denver`.
        public var timeZone: String?
        public var country: String?
        /// The first-level region: a state, a province.
        public var admin1: String?
        public var population: Int?
        /// `Denver, Colorado, United States`: name, region and country, each once.
        public var label: String

        /// `label` defaults to name, region and country, skipping empty and repeated parts.
        public init(
            name: String, latitude: Double, longitude: Double, timeZone: String? = nil, country: String? = nil,
            admin1: String? = nil, population: Int? = nil, label: String? = nil
        ) {
            self.name = name
            self.latitude = latitude
            self.longitude = longitude
            self.timeZone = timeZone
            self.country = country
            self.admin1 = admin1
            self.population = population
            self.label = label ?? Place.label(name: name, admin1: admin1, country: country)
        }

        static func label(name: String, admin1: String?, country: String?) -> String {
            var parts: [String] = []
            for part in [name, admin1, country] {
                guard let text = part?.trimmingSpaces(), !text.isEmpty,
                    !parts.contains(where: { $0.caseInsensitiveCompare(text) == .orderedSame })
                else { continue }
                parts.append(text)
            }
            return parts.joined(separator: ", ")
        }
    }

    /// A forecast response with `daily` (`temperature_2m_max`/`min`, `precipitation_sum`,
    /// `precipitation_probability_max`, `snowfall_sum`, `wind_speed_10m_max` or `windspeed_10m_max`,
    /// `weather_code` or `weathercode`); any subset may be present, and nulls become nil. Dates are the
    /// local days of the response's `timezone` (with `timeformat=unixtime`, local midnights are turned
    /// into dates with `utc_offset_seconds`). Units come from `daily_units` (°F, inch, mp/h, m/s, kn…).
    /// `place` is the caller's label and `issued` the fetch time. Source `open-meteo`.
    /// Also returns the response's IANA zone and UTC offset.
    public static func forecast(
        _ data: Data, place: String, issued: Int64
    ) throws -> (days: [DayWeather], timeZone: String?, utcOffsetSeconds: Int?) {
        let response = try decodeForecast(data)
        let table = try DailyTable(response)
        return (days(table, place: place, issued: issued), response.timezone, response.utcOffsetSeconds)
    }

    private static func days(_ table: DailyTable, place: String, issued: Int64) -> [DayWeather] {
        var days: [DayWeather] = []
        days.reserveCapacity(table.dates.count)
        for (i, date) in table.dates.enumerated() {
            days.append(
                DayWeather(
                    place: place, date: date, tempMaxC: table.value(.tempMax, i), tempMinC: table.value(.tempMin, i),
                    precipitationMm: table.value(.precipitation, i),
                    precipitationProbability: table.value(.precipitationProbability, i),
                    snowfallCm: table.value(.snowfall, i), windMaxKmh: table.value(.windMax, i),
                    weatherCode: table.value(.weatherCode, i).flatMap { $0 >= 0 && $0 < 1000 ? Int($0) : nil },
                    source: "open-meteo", issued: issued))
        }
        return days
    }

    /// Everything the `daily` block of a forecast, archive or flood API response holds, for storing
    /// a saved response whole (`klaxon ingest --format open-meteo-json`).
    public struct DailyContents: Sendable {
        /// A daily variable that was not stored, and why.
        public struct Ignored: Sendable, Hashable {
            public var variable: String
            public var reason: String

            public init(variable: String, reason: String) {
                self.variable = variable
                self.reason = reason
            }
        }

        /// One per date, as `forecast` gives them; none when the response holds none of the
        /// variables a `DayWeather` has.
        public var days: [DayWeather]
        /// Every other numeric daily variable (the flood API's `river_discharge`, `uv_index_max`):
        /// a reading per day with a value, at station `place`, metric the variable's name, time
        /// 00:00Z of the day, the unit from `daily_units` as written (`m³/s`), source `open-meteo`.
        public var readings: [Reading]
        /// Variable names in the order read (those read into `days`, then those of `readings`).
        public var stored: [String]
        public var ignored: [Ignored]
        /// Nulls among the readings' variables.
        public var gaps: Int
        public var timeZone: String?
        public var utcOffsetSeconds: Int?
    }

    /// The days and readings of a response (see `DailyContents`). Besides the variables `DayWeather`
    /// has, the other numeric daily variables become readings; a variable that is a model's copy of
    /// one of those (`temperature_2m_max_icon_d2`), holds times (`sunrise`), holds no data (unit
    /// `undefined`) or is not numbers is left out and named in `ignored`. A response from which
    /// nothing can be stored is an error that says why.
    public static func contents(_ data: Data, place: String, issued: Int64) throws -> DailyContents {
        let response = try decodeForecast(data)
        let table = try DailyTable(response)
        var contents = DailyContents(
            days: [], readings: [], stored: table.read, ignored: [], gaps: 0, timeZone: response.timezone,
            utcOffsetSeconds: response.utcOffsetSeconds)
        if !table.read.isEmpty { contents.days = days(table, place: place, issued: issued) }
        for key in table.undefined {
            contents.ignored.append(.init(variable: key, reason: "no data: unit 'undefined'"))
        }
        let units = response.dailyUnits ?? [:]
        let daily = response.daily
        let others = ((daily.map { Array($0.others.keys) }) ?? []) + (daily?.notNumbers ?? [])
        let starts = table.dates.map { ParserSupport.calendarDay($0) ?? 0 }
        let plainKeys = Variable.allKeys.sorted()
        for key in others.sorted() {
            func ignore(_ reason: String) {
                contents.ignored.append(.init(variable: ParseError.excerpt(key), reason: reason))
            }
            let unit = units[key]?.trimmingSpaces()
            if let plain = plainKeys.first(where: { key.hasPrefix($0 + "_") }) {
                ignore("a model's copy of \(plain): only the plain variable is read")
            } else if key.utf8.count > 128 || !key.utf8.allSatisfy({ isVariableByte($0) }) {
                ignore("not a variable name")
            } else if unit == "undefined" {
                ignore("no data: unit 'undefined'")
            } else if unit == "iso8601" || unit == "unixtime" {
                ignore("times, not values")
            } else if let values = daily?.others[key] {
                guard values.count == table.dates.count else {
                    throw ParseError(
                        .badValue, format: format,
                        "'daily.\(key)' has \(values.count) values for \(table.dates.count) days")
                }
                let before = contents.readings.count
                for (i, value) in values.enumerated() {
                    guard let value, value.isFinite else {
                        contents.gaps += 1
                        continue
                    }
                    contents.readings.append(
                        Reading(
                            station: place, metric: key, time: starts[i], value: value,
                            unit: ParserSupport.normalizeUnit(unit), source: "open-meteo"))
                }
                if contents.readings.count > before {
                    contents.stored.append(key)
                } else {
                    ignore("no values, only nulls")
                }
            } else {
                ignore("not numbers")
            }
        }
        guard contents.days.isEmpty && contents.readings.isEmpty else { return contents }
        var why = table.dates.isEmpty ? "'daily.time' holds no days" : "no daily variable with values"
        if !contents.ignored.isEmpty {
            why +=
                "; left out: "
                + contents.ignored.prefix(10).map { "\($0.variable) (\($0.reason))" }
                .joined(separator: ", ")
            if contents.ignored.count > 10 { why += " and \(contents.ignored.count - 10) more" }
        }
        throw ParseError(.missingField, format: format, "nothing to store: \(why)")
    }

    /// Letters, digits and `_`, as Open-Meteo names its variables.
    private static func isVariableByte(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == 0x5F
    }

    /// Climatology from an archive response (the same `daily` shape, years of days). For each wanted
    /// date (`YYYY-MM-DD`, in the order given), each variable is the mean over the same month and day
    /// in every year present (nulls skipped), and the precipitation probability is the share of those
    /// years with `precipitation_sum` ≥ 1 mm, in percent. The weather code is left nil: a mean of codes
    /// means nothing. A wanted 29 February uses each year's 29 February, or its 28 February in a
    /// common year; a wanted 28 February uses 28 February only. A wanted date whose month and day the
    /// archive never holds is left out. Source `climatology`, `climatology: true`.
    public static func climatology(_ data: Data, place: String, dates: [String], issued: Int64) throws -> [DayWeather] {
        let response = try decodeForecast(data)
        let table = try DailyTable(response)
        // Rows by month-day (`02-29`), each with its year.
        var byMonthDay: [Substring: [(year: Substring, row: Int)]] = [:]
        for (row, date) in table.dates.enumerated() {
            byMonthDay[date.dropFirst(5), default: []].append((date.prefix(4), row))
        }
        var out: [DayWeather] = []
        for wanted in dates {
            guard let day = ParserSupport.calendarDay(wanted), wanted.utf8.count == 10 else {
                throw ParseError(.badValue, format: format, "bad wanted date '\(ParseError.excerpt(wanted))'")
            }
            let monthDay = Substring(Timestamp.format(day).dropFirst(5).prefix(5))
            var samples = byMonthDay[monthDay] ?? []
            if monthDay == "02-29" {
                let leapYears = Set(samples.map(\.year))
                samples += (byMonthDay["02-28"] ?? []).filter { !leapYears.contains($0.year) }
            }
            guard !samples.isEmpty else { continue }
            let rows = samples.map(\.row)
            func mean(_ variable: Variable) -> Double? {
                let values = rows.compactMap { table.value(variable, $0) }
                guard !values.isEmpty else { return nil }
                return WeatherUnits.rounded(values.reduce(0, +) / Double(values.count))
            }
            var probability: Double?
            let precipitation = rows.compactMap { table.value(.precipitation, $0) }
            if !precipitation.isEmpty {
                let wet = precipitation.filter { $0 >= 1 }.count
                probability = WeatherUnits.rounded(100 * Double(wet) / Double(precipitation.count))
            }
            out.append(
                DayWeather(
                    place: place, date: wanted, tempMaxC: mean(.tempMax), tempMinC: mean(.tempMin),
                    precipitationMm: mean(.precipitation), precipitationProbability: probability,
                    snowfallCm: mean(.snowfall), windMaxKmh: mean(.windMax), weatherCode: nil, source: "climatology",
                    issued: issued, climatology: true))
        }
        return out
    }

    /// The geocoding API's answer (`https://geocoding-api.open-meteo.com/v1/search?name=…`): its
    /// `results` as candidates, in the API's order (most relevant first). No `results` (the API
    /// answers `{}` or only `generationtime_ms` when nothing matches) gives no candidates.
    public static func geocode(_ data: Data) throws -> [Place] {
        let response = try JSONInput.decode(GeocodingResponse.self, from: data, format: format)
        try checkServerError(error: response.error, reason: response.reason)
        return (response.results ?? []).map {
            Place(
                name: $0.name, latitude: $0.latitude, longitude: $0.longitude, timeZone: $0.timezone,
                country: $0.country, admin1: $0.admin1, population: $0.population)
        }
    }

    // MARK: - Decoding

    private static func decodeForecast(_ data: Data) throws -> ForecastResponse {
        let response = try JSONInput.decode(ForecastResponse.self, from: data, format: format)
        try checkServerError(error: response.error, reason: response.reason)
        return response
    }

    /// `{"error":true,"reason":"…"}`.
    private static func checkServerError(error: Bool?, reason: String?) throws {
        guard error == true else { return }
        let what = reason.map { ParseError.excerpt($0) } ?? "no reason given"
        throw ParseError(.serverError, format: format, "the server sent an error, not data: \(what)")
    }

    /// The daily variables read, each under its current name and any older one.
    enum Variable: CaseIterable {
        case tempMax, tempMin, precipitation, precipitationProbability, snowfall, windMax, weatherCode

        var keys: [String] {
            switch self {
            case .tempMax: ["temperature_2m_max"]
            case .tempMin: ["temperature_2m_min"]
            case .precipitation: ["precipitation_sum"]
            case .precipitationProbability: ["precipitation_probability_max"]
            case .snowfall: ["snowfall_sum"]
            case .windMax: ["wind_speed_10m_max", "windspeed_10m_max"]
            case .weatherCode: ["weather_code", "weathercode"]
            }
        }

        var quantity: WeatherUnits.Quantity {
            switch self {
            case .tempMax, .tempMin: .temperature
            case .precipitation: .precipitation
            case .precipitationProbability: .percent
            case .snowfall: .snowfall
            case .windMax: .speed
            case .weatherCode: .code
            }
        }

        static let allKeys = Set(allCases.flatMap(\.keys))
    }

    struct ForecastResponse: Decodable {
        var error: Bool?
        var reason: String?
        var timezone: String?
        var utcOffsetSeconds: Int?
        var dailyUnits: [String: String]?
        var daily: Daily?

        enum CodingKeys: String, CodingKey {
            case error, reason, timezone, daily
            case utcOffsetSeconds = "utc_offset_seconds"
            case dailyUnits = "daily_units"
        }
    }

    /// `daily`: `time` (ISO dates, or UTC seconds with `timeformat=unixtime`) and the variables read.
    struct Daily: Decodable {
        var isoTimes: [String]?
        var unixTimes: [Int64]?
        var columns: [String: [Double?]] = [:]
        /// Numeric daily variables `DayWeather` does not have, by name.
        var others: [String: [Double?]] = [:]
        /// Daily variables that are not arrays of numbers (`sunrise` as ISO times).
        var notNumbers: [String] = []

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: AnyKey.self)
            let time = AnyKey("time")
            if let unix = try? c.decode([Int64].self, forKey: time) {
                unixTimes = unix
            } else {
                isoTimes = try c.decode([String].self, forKey: time)
            }
            for key in c.allKeys where key.stringValue != "time" {
                if Variable.allKeys.contains(key.stringValue) {
                    columns[key.stringValue] = try c.decode([Double?].self, forKey: key)
                } else if let values = try? c.decode([Double?].self, forKey: key) {
                    others[key.stringValue] = values
                } else {
                    notNumbers.append(key.stringValue)
                }
            }
        }
    }

    struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The dates and the metric values of a `daily` block.
    struct DailyTable {
        var dates: [String]
        /// The keys read, in `Variable` order, and those skipped for a unit of `undefined`.
        var read: [String] = []
        var undefined: [String] = []
        private var columns: [Variable: [Double?]] = [:]

        init(_ response: ForecastResponse) throws {
            guard let daily = response.daily else {
                throw ParseError(.missingField, format: format, "missing field 'daily'")
            }
            if let unix = daily.unixTimes {
                guard let offset = ParserSupport.utcOffset(response.utcOffsetSeconds) else {
                    throw ParseError(.badValue, format: format, "bad 'utc_offset_seconds'")
                }
                dates = try unix.enumerated().map { i, time in
                    guard let date = ParserSupport.localDate(time, offset: offset) else {
                        throw ParseError(.badValue, format: format, "bad time \(time) in 'daily.time[\(i)]'")
                    }
                    return date
                }
            } else {
                dates = try (daily.isoTimes ?? []).enumerated().map { i, text in
                    guard let day = ParserSupport.calendarDay(text) else {
                        throw ParseError(
                            .badValue, format: format, "bad date '\(ParseError.excerpt(text))' in 'daily.time[\(i)]'")
                    }
                    return String(Timestamp.format(day).prefix(10))
                }
            }
            let units = response.dailyUnits ?? [:]
            for variable in Variable.allCases {
                guard let key = variable.keys.first(where: { daily.columns[$0] != nil }),
                    let raw = daily.columns[key]
                else { continue }
                guard raw.count == dates.count else {
                    throw ParseError(
                        .badValue, format: format, "'daily.\(key)' has \(raw.count) values for \(dates.count) days")
                }
                let unit = units[key]
                // Open-Meteo writes `undefined` for a variable it has no data for.
                if unit == "undefined" {
                    undefined.append(key)
                    continue
                }
                guard let convert = WeatherUnits.converter(variable.quantity, unit: unit) else {
                    throw ParseError(
                        .badValue, format: format,
                        "unknown unit '\(ParseError.excerpt(unit ?? ""))' for 'daily.\(key)'")
                }
                columns[variable] = raw.map { $0.map(convert) }
                read.append(key)
            }
        }

        func value(_ variable: Variable, _ row: Int) -> Double? {
            columns[variable]?[row] ?? nil
        }
    }

    struct GeocodingResponse: Decodable {
        var error: Bool?
        var reason: String?
        var results: [Result]?

        struct Result: Decodable {
            var name: String
            var latitude: Double
            var longitude: Double
            var timezone: String?
            var country: String?
            var admin1: String?
            var population: Int?
        }
    }
}

/// Weather units into the metric ones `DayWeather` holds, shared by the weather parsers.
enum WeatherUnits {
    enum Quantity {
        /// To °C.
        case temperature
        /// To mm.
        case precipitation
        /// To cm.
        case snowfall
        /// To km/h.
        case speed
        /// Percent and codes: unchanged.
        case percent, code
    }

    /// The conversion to metric for a unit as a response writes it; nil for a unit not known. A
    /// missing unit means the metric one (Open-Meteo's defaults).
    static func converter(_ quantity: Quantity, unit: String?) -> (@Sendable (Double) -> Double)? {
        let u = unit?.trimmingSpaces().lowercased() ?? ""
        switch quantity {
        case .temperature:
            switch u {
            case "", "°c", "c", "celsius", "degc", "deg c": return { rounded($0) }
            case "°f", "f", "fahrenheit", "degf", "deg f": return fahrenheit
            case "k", "kelvin": return kelvin
            default: return nil
            }
        case .precipitation:
            switch u {
            case "", "mm": return { rounded($0) }
            case "inch", "in", "inches": return { rounded($0 * 25.4) }
            case "cm": return { rounded($0 * 10) }
            default: return nil
            }
        case .snowfall:
            switch u {
            case "", "cm": return { rounded($0) }
            case "inch", "in", "inches": return { rounded($0 * 2.54) }
            case "mm": return { rounded($0 / 10) }
            default: return nil
            }
        case .speed:
            switch u {
            case "", "km/h", "kmh", "kph": return { rounded($0) }
            case "m/s", "ms": return metersPerSecond
            case "mp/h", "mph": return milesPerHour
            case "kn", "kt", "kts", "knots": return { rounded($0 * 1.852) }
            default: return nil
            }
        case .percent, .code:
            return { $0 }
        }
    }

    static let fahrenheit: @Sendable (Double) -> Double = { rounded(($0 - 32) * 5 / 9) }
    static let kelvin: @Sendable (Double) -> Double = { rounded($0 - 273.15) }
    static let metersPerSecond: @Sendable (Double) -> Double = { rounded($0 * 3.6) }
    static let milesPerHour: @Sendable (Double) -> Double = { rounded($0 * 1.609344) }

    /// To 0.01, without a negative zero.
    static func rounded(_ value: Double) -> Double {
        let r = (value * 100).rounded() / 100
        return r == 0 ? 0 : r
    }
}
