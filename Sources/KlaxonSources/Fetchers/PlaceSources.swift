import Foundation
import KlaxonCore

/// What a weather source is asked for: a point and the local dates wanted there.
public struct PlaceRequest: Sendable, Hashable {
    public var point: PlacePoint
    /// `YYYY-MM-DD`, ascending.
    public var dates: [String]

    public init(point: PlacePoint, dates: [String]) {
        self.point = point
        self.dates = dates
    }

    public var key: String { point.key }
}

/// A source of daily weather (or alerts) for trip places. The places come from the stored trips,
/// not from the configuration, so `fetch(cursor:now:http:)` alone has nothing to ask for.
public protocol PlaceSource: Source {
    func fetch(places: [PlaceRequest], now: Int64, http: HTTPFetcher) async throws -> FetchResult
}

extension PlaceSource {
    public var covers: [String] { [] }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        FetchResult(batch: SourceBatch(), cursor: nil, requests: 0)
    }
}

/// `kind: open-meteo` — daily forecasts up to 16 days ahead, and beyond that horizon climatology
/// from the archive (per trip day, the mean of the same calendar day over the last 10 years). Also
/// the geocoder for trip stops given by name.
public struct OpenMeteoSource: PlaceSource {
    public static let kindName = "open-meteo"
    public static let defaultBaseURL = "https://api.open-meteo.com/v1/"
    public static let defaultArchiveURL = "https://archive-api.open-meteo.com/v1/"
    public static let defaultGeocodingURL = "https://geocoding-api.open-meteo.com/v1/"
    public static let daily = [
        "temperature_2m_max", "temperature_2m_min", "precipitation_sum", "precipitation_probability_max",
        "snowfall_sum", "wind_speed_10m_max", "weather_code",
    ]

    public var name: String
    public var baseURL: String
    public var archiveURL: String
    public var geocodingURL: String
    public var every: Int64
    /// Days of forecast asked for (1–16).
    public var forecastDays: Int
    /// Years of archive averaged for climatology.
    public var climatologyYears: Int

    public init(
        name: String, baseURL: String = defaultBaseURL, archiveURL: String = defaultArchiveURL,
        geocodingURL: String = defaultGeocodingURL, every: Int64 = 3 * 3_600, forecastDays: Int = 16,
        climatologyYears: Int = 10
    ) {
        self.name = name
        self.baseURL = baseURL
        self.archiveURL = archiveURL
        self.geocodingURL = geocodingURL
        self.every = every
        self.forecastDays = forecastDays
        self.climatologyYears = climatologyYears
    }

    /// Its address for the lookup its kind answers.
    public func lookupURL(_ lookup: SourceLookup) -> String? { lookup == .geocoding ? geocodingURL : nil }

    public func fetch(places: [PlaceRequest], now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        let today = String(Timestamp.format(now).prefix(10))
        let horizon = String(Timestamp.format(now + Int64(forecastDays - 1) * 86_400).prefix(10))
        for place in places {
            let wanted = place.dates.filter { $0 >= today }
            guard !wanted.isEmpty else { continue }
            let coords = [
                ("latitude", formatValue(place.point.latitude)), ("longitude", formatValue(place.point.longitude)),
            ]
            if wanted.contains(where: { $0 <= horizon }) {
                let url =
                    join(baseURL, "forecast") + "?"
                    + query(
                        coords + [
                            ("daily", Self.daily.joined(separator: ",")), ("timezone", "auto"),
                            ("forecast_days", String(forecastDays)),
                        ])
                batch.weather += try await http.get(url, source: name) {
                    try OpenMeteoParser.forecast($0, place: place.key, issued: now).days
                }
                requests += 1
            }
            let beyond = wanted.filter { $0 > horizon }
            if let first = beyond.first, let last = beyond.last, let y = Int(first.prefix(4)),
                let ly = Int(last.prefix(4))
            {
                // The same calendar days in each of the last `climatologyYears` years (29 February
                // widened to the days around it, which every year has).
                let firstDay = first.hasSuffix("-02-29") ? "-02-28" : String(first.dropFirst(4))
                let lastDay = last.hasSuffix("-02-29") ? "-03-01" : String(last.dropFirst(4))
                let start = "\(y - climatologyYears)\(firstDay)"
                let end = "\(ly - 1)\(lastDay)"
                let url =
                    join(archiveURL, "archive") + "?"
                    + query(
                        coords + [
                            ("start_date", start), ("end_date", end),
                            (
                                "daily",
                                Self.daily.filter { $0 != "precipitation_probability_max" }.joined(separator: ",")
                            ),
                            ("timezone", "auto"),
                        ])
                batch.weather += try await http.get(url, source: name) {
                    try OpenMeteoParser.climatology($0, place: place.key, dates: beyond, issued: now)
                }
                requests += 1
            }
        }
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: requests)
    }

    /// Candidates for a place name (`Denver`, `Denver, Colorado`): the name before the first comma is
    /// searched; the rest must appear in a candidate's region or country.
    public func geocode(_ text: String, http: HTTPFetcher) async throws -> [OpenMeteoParser.Place] {
        let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let head = parts.first, !head.isEmpty else { return [] }
        let url =
            join(geocodingURL, "search") + "?"
            + query([("name", head), ("count", "10"), ("language", "en"), ("format", "json")])
        let all = try await http.get(url, source: name, parse: OpenMeteoParser.geocode)
        let qualifiers = parts.dropFirst().map { $0.lowercased() }
        return all.filter { p in
            qualifiers.allSatisfy { q in
                [p.admin1, p.country].compactMap { $0?.lowercased() }.contains { $0 == q || $0.hasPrefix(q) }
            }
        }
    }
}

/// `kind: owm` — OpenWeatherMap: the 5-day/3-hour forecast aggregated to local days, or One Call's
/// daily forecast (with its alerts). `appid` in the query, never shown in errors.
public struct OWMSource: PlaceSource {
    public static let kindName = "owm"
    public static let defaultBaseURL = "https://api.openweathermap.org/"

    public enum Endpoint: String, Sendable, CaseIterable {
        case forecast, onecall
    }

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var apiKey: String
    public var endpoint: Endpoint

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 3 * 3_600, apiKey: String,
        endpoint: Endpoint = .forecast
    ) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.apiKey = apiKey
        self.endpoint = endpoint
    }

    public func fetch(places: [PlaceRequest], now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        for place in places {
            let coords = [
                ("lat", formatValue(place.point.latitude)), ("lon", formatValue(place.point.longitude)),
                ("units", "metric"), ("appid", apiKey),
            ]
            let path = endpoint == .forecast ? "data/2.5/forecast" : "data/3.0/onecall"
            let url =
                join(baseURL, path) + "?"
                + query(coords + (endpoint == .onecall ? [("exclude", "minutely,hourly")] : []))
            let (days, alerts) = try await http.get(url, source: name) { data in
                endpoint == .forecast
                    ? (days: try OWMParser.fiveDay(data, place: place.key, units: "metric", issued: now), alerts: [])
                    : try OWMParser.daily(data, place: place.key, units: "metric", issued: now)
            }
            batch.weather += days
            batch.weatherAlerts += alerts.map { PlaceAlert(place: place.key, alert: $0) }
        }
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: places.count)
    }
}

/// `kind: nws-alerts` — active NWS alerts at each (US) trip place, from api.weather.gov.
public struct NWSAlertsSource: PlaceSource {
    public static let kindName = "nws-alerts"
    public static let defaultBaseURL = "https://api.weather.gov/"

    public var name: String
    public var baseURL: String
    public var every: Int64

    public init(name: String, baseURL: String = defaultBaseURL, every: Int64 = 900) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
    }

    public func fetch(places: [PlaceRequest], now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        // api.weather.gov covers the United States and its territories only.
        for place in places where Self.isUS(place.point) {
            requests += 1
            let point = "\(formatValue(place.point.latitude)),\(formatValue(place.point.longitude))"
            let url = join(baseURL, "alerts/active") + "?" + query([("point", point)])
            let alerts = try await http.get(
                url, headers: [("Accept", "application/geo+json")], source: name, parse: NWSAlertsParser.parse)
            batch.weatherAlerts += alerts.map { PlaceAlert(place: place.key, alert: $0) }
        }
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: requests)
    }

    /// Roughly the US, Alaska, Hawaii, Puerto Rico and the Pacific territories.
    static func isUS(_ p: PlacePoint) -> Bool {
        let conus = (24...50).contains(p.latitude) && (-125 ... -66).contains(p.longitude)
        let alaska = (51...72).contains(p.latitude) && (-180 ... -129).contains(p.longitude)
        let hawaii = (18...23).contains(p.latitude) && (-161 ... -154).contains(p.longitude)
        let caribbean = (17...19).contains(p.latitude) && (-68 ... -64).contains(p.longitude)
        let pacific = (13...21).contains(p.latitude) && (144...146).contains(p.longitude)
        return conus || alaska || hawaii || caribbean || pacific
    }
}
