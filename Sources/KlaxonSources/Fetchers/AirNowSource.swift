import Foundation
import KlaxonCore

/// `kind: airnow` — EPA AirNow current observations by latitude/longitude or ZIP code (legacy and
/// 2026 formats; the parser tells them apart), and with `forecast: true` each location's reporting
/// area forecasts (`/aq/forecast/latLong/`, `/aq/forecast/zipCode/`, `AirNowForecastParser`). The
/// API key goes in the query (`API_KEY`), which error messages never show.
public struct AirNowSource: Source {
    public static let kindName = "airnow"
    public static let defaultBaseURL = "https://www.airnowapi.org/"
    /// The largest forecast answer read (a real one is a few kilobytes: a few areas × days ×
    /// pollutants); a larger one is a skip of that location.
    public static let maxForecastBody = 1 << 20

    public struct Location: Sendable, Hashable {
        public var latitude: Double
        public var longitude: Double
        /// Miles (legacy service).
        public var distance: Double
        /// A US ZIP code (5 digits): the location is asked for by ZIP (`…/zipCode/…`), and
        /// `latitude`/`longitude` are not used.
        public var zipCode: String?

        public init(latitude: Double, longitude: Double, distance: Double = 25) {
            self.latitude = latitude
            self.longitude = longitude
            self.distance = distance
        }

        public init(zipCode: String, distance: Double = 25) {
            self.init(latitude: 0, longitude: 0, distance: distance)
            self.zipCode = zipCode
        }

        /// How skips name it: the ZIP code, or `lat,lon` (2 decimals).
        public var shown: String {
            zipCode ?? PlacePoint(latitude: latitude, longitude: longitude).key
        }

        /// `latLong/` or `zipCode/`, and the query that names the place.
        var place: (path: String, query: [(String, String)]) {
            if let zipCode {
                return ("zipCode/", [("zipCode", zipCode), ("distance", formatValue(distance))])
            }
            return (
                "latLong/",
                [
                    ("latitude", formatValue(latitude)), ("longitude", formatValue(longitude)),
                    ("distance", formatValue(distance)),
                ]
            )
        }
    }

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var apiKey: String
    public var locations: [Location]
    /// Also ask each location's forecasts and store them (`SourceBatch.airForecasts`).
    public var forecast: Bool

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 3_600, apiKey: String, locations: [Location],
        forecast: Bool = false
    ) {
        self.forecast = forecast
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.apiKey = apiKey
        self.locations = locations
    }

    public var covers: [String] { [] }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        var forecasts = AirForecastsKept()
        for l in locations {
            let place = l.place
            let url =
                join(baseURL, "aq/observation/\(place.path)current/") + "?"
                + query([("format", "application/json")] + place.query + [("API_KEY", apiKey)])
            batch.append(try await http.get(url, source: name, parse: AirNowParser.parse))
            requests += 1
            if forecast {
                let url =
                    join(baseURL, "aq/forecast/\(place.path)") + "?"
                    + query([("format", "application/json")] + place.query + [("API_KEY", apiKey)])
                batch.forecastSkips += try await fetchForecast(url, at: l, http: http, into: &forecasts)
                requests += 1
            }
        }
        batch.airForecasts = forecasts.forecasts
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: requests)
    }

    /// One location's forecast answer into `kept`; what was not stored, each with why. A place
    /// AirNow has no forecast for (404), an answer that is not one (an error document, malformed,
    /// larger than `maxForecastBody`) is a skip of that place, not a failure of the source: the
    /// observations stand. Other HTTP failures (401, 429, 5xx, timeouts) fail the fetch as an
    /// observation's would.
    func fetchForecast(
        _ url: String, at l: Location, http: HTTPFetcher, into kept: inout AirForecastsKept
    ) async throws -> [ForecastSkip] {
        var small = http
        small.maxBody = min(http.maxBody, Self.maxForecastBody)
        let result: AirNowForecastParser.Result
        do {
            let data = try await small.get(url, source: name)
            result = try AirNowForecastParser.parse(data)
        } catch let e as SourceError where e.kind == .payload || e.message.contains("HTTP 404") {
            return [ForecastSkip(site: l.shown, reason: "no forecast: \(e.message)")]
        } catch let e as ParseError {
            return [ForecastSkip(site: l.shown, reason: "no forecast: GET \(HTTPFetcher.redactQuery(url)): \(e)")]
        }
        var skips = result.skipped.map {
            ForecastSkip(
                site: l.shown, reason: "\($0.count) \($0.count == 1 ? "record" : "records") not stored: \($0.reason)")
        }
        if result.superseded > 0 {
            skips.append(
                ForecastSkip(
                    site: l.shown,
                    reason: "the answer holds two issue dates: \(result.superseded) "
                        + "\(result.superseded == 1 ? "record" : "records") of the earlier issuance passed over"))
        }
        for f in result.forecasts { kept.offer(f) }
        return skips
    }
}

/// The forecasts of several answers, one per reporting area, date and pollutant: two locations
/// served by one area give its forecasts twice, and the later issuance is kept.
struct AirForecastsKept {
    private(set) var forecasts: [AirForecast] = []
    private var index: [String: Int] = [:]

    mutating func offer(_ f: AirForecast) {
        guard let at = index[f.key] else {
            index[f.key] = forecasts.count
            forecasts.append(f)
            return
        }
        if f.issued > forecasts[at].issued { forecasts[at] = f }
    }
}
