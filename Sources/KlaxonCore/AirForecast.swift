import Foundation

/// One day's air-quality forecast for one pollutant at one reporting area, as AirNow publishes it
/// (`/aq/forecast/latLong/`, `/aq/forecast/zipCode/`). A reporting area's forecast for a date and
/// pollutant is replaced by a later issuance, never by an earlier one (`supersedes`).
public struct AirForecast: Sendable, Hashable, Codable {
    /// The reporting area (`Denver-Boulder`), as AirNow names it.
    public var area: String
    public var state: String?
    public var latitude: Double?
    public var longitude: Double?
    /// The local date forecast, `YYYY-MM-DD`.
    public var date: String
    /// `O3`, `PM2.5`, `PM10` (AirNow's `OZONE` is written `O3`).
    public var parameter: String
    /// The forecast AQI; nil when AirNow forecasts the category only (`AQI: -1`).
    public var aqi: Int?
    /// The EPA category number, 1 (Good) to 6 (Hazardous).
    public var category: Int
    /// A day the local agency declared an Action Day (people asked to cut emissions, sensitive
    /// groups to stay in).
    public var actionDay: Bool
    /// The forecaster's discussion, when there is one.
    public var discussion: String?
    /// The local date the forecast was issued, `YYYY-MM-DD`.
    public var issued: String
    public var source: String

    public init(
        area: String, state: String? = nil, latitude: Double? = nil, longitude: Double? = nil, date: String,
        parameter: String, aqi: Int?, category: Int, actionDay: Bool = false, discussion: String? = nil,
        issued: String, source: String = "airnow"
    ) {
        self.area = area
        self.state = state
        self.latitude = latitude
        self.longitude = longitude
        self.date = date
        self.parameter = parameter
        self.aqi = aqi
        self.category = category
        self.actionDay = actionDay
        self.discussion = discussion
        self.issued = issued
        self.source = source
    }

    /// EPA's category names, by number (1–6).
    public static let categoryNames = [
        "Good", "Moderate", "Unhealthy for Sensitive Groups", "Unhealthy", "Very Unhealthy", "Hazardous",
    ]

    /// `Unhealthy for Sensitive Groups`.
    public var categoryName: String { Self.categoryName(category) }

    public static func categoryName(_ n: Int) -> String {
        (1...6).contains(n) ? categoryNames[n - 1] : "category \(n)"
    }

    /// The category an AQI value falls in (EPA: 0–50 Good … 301+ Hazardous); nil for a negative value.
    public static func category(aqi: Int) -> Int? {
        switch aqi {
        case ..<0: return nil
        case 0...50: return 1
        case 51...100: return 2
        case 101...150: return 3
        case 151...200: return 4
        case 201...300: return 5
        default: return 6
        }
    }

    /// A category named in a rule: its number (`3`), or its name in any case, with `-` or `_` for
    /// spaces (`unhealthy-for-sensitive-groups`), or `usg`.
    public static func category(named text: String) -> Int? {
        let t = text.lowercased().replacingOccurrences(of: "-", with: " ").replacingOccurrences(of: "_", with: " ")
            .trimmingCharacters(in: .whitespaces)
        if let n = Int(t), (1...6).contains(n) { return n }
        if t == "usg" { return 3 }
        return categoryNames.firstIndex { $0.lowercased() == t }.map { $0 + 1 }
    }

    /// The key a forecast is stored under: area (any case), date, pollutant.
    public var key: String { "\(area.lowercased())|\(date)|\(parameter)" }

    /// Whether this forecast replaces `other` (same key): issued later, or the same day (a
    /// re-issue). An earlier issuance never replaces a later one.
    public func supersedes(_ other: AirForecast) -> Bool { issued >= other.issued }

    /// `AQI 125, Unhealthy for Sensitive Groups` or `Unhealthy for Sensitive Groups` (category only).
    public var described: String {
        aqi.map { "AQI \($0), \(categoryName)" } ?? categoryName
    }
}

extension Trip {
    /// A place a rule watches without a trip (an AirNow reporting area): a one-stop trip of no owner,
    /// named `place:<name>`, from `today` for `days` days, so the trip family's evaluation reads its
    /// forecasts (matched to the area by name) and keeps what was announced like a trip's.
    public static func watchedPlace(_ name: String, today: String, days: Int = 6) -> Trip {
        Trip(name: "place:" + name, owner: "", stops: [Stop(place: name, arrive: today, nights: days)])
    }

    /// Whether this is a watched place (`watchedPlace`), not a traveller's trip.
    public var isWatchedPlace: Bool { owner.isEmpty && name.hasPrefix("place:") }
}

/// A day's forecast for a trip: the stop it belongs to and the day's worst pollutant forecast.
public struct TripAirDay: Sendable, Hashable, Codable {
    public var stop: Int
    /// The stop's place, as the trip names it.
    public var place: String
    public var forecast: AirForecast

    public init(stop: Int, place: String, forecast: AirForecast) {
        self.stop = stop
        self.place = place
        self.forecast = forecast
    }

    /// `Action Day forecast for Denver, Tue` or `Unhealthy (AQI 160) forecast for Denver, Tue`.
    public var reason: String {
        let day = Packer.weekday(of: forecast.date) ?? forecast.date
        if forecast.actionDay {
            return "Action Day forecast for \(place), \(day) (\(forecast.parameter) \(forecast.described))"
        }
        return "\(forecast.parameter) \(forecast.described) forecast for \(place), \(day)"
    }
}

extension AirForecast {
    /// Per trip day, the worst forecast (highest category, an Action Day first among equals) of
    /// the reporting area that serves the day's stop: the nearest within `radiusKm` with a forecast
    /// for that date, else an area named like the stop (`Denver` for `Denver, CO`). Pure: every
    /// backend reads the forecasts of the trip's dates and calls this.
    public static func tripDays(_ trip: Trip, forecasts: [AirForecast], radiusKm: Double) -> [TripAirDay] {
        var byDate: [String: [AirForecast]] = [:]
        for f in forecasts { byDate[f.date, default: []].append(f) }
        var out: [TripAirDay] = []
        for day in Packer.days(of: trip) {
            guard let candidates = byDate[day.date], !candidates.isEmpty else { continue }
            let stop = trip.stops[day.stopIndex]
            var chosen: String? = nil
            if let lat = stop.latitude, let lon = stop.longitude {
                var best = Double.infinity
                for f in candidates {
                    guard let flat = f.latitude, let flon = f.longitude else { continue }
                    let d = Geo.distanceKm(lat1: lat, lon1: lon, lat2: flat, lon2: flon)
                    if d <= radiusKm, d < best {
                        best = d
                        chosen = f.area.lowercased()
                    }
                }
            }
            if chosen == nil {
                let name = stop.place.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) }?
                    .lowercased()
                if let name, candidates.contains(where: { $0.area.lowercased() == name }) { chosen = name }
            }
            guard let chosen else { continue }
            let worst = candidates.filter { $0.area.lowercased() == chosen }.max { a, b in
                (a.category, a.actionDay ? 1 : 0, a.aqi ?? -1, b.parameter) < (
                    b.category, b.actionDay ? 1 : 0, b.aqi ?? -1, a.parameter
                )
            }
            if let worst { out.append(TripAirDay(stop: day.stopIndex, place: stop.place, forecast: worst)) }
        }
        return out
    }
}
