import Foundation
import KlaxonCore

/// `kind: airnow` — EPA AirNow current observations by latitude/longitude (legacy and 2026
/// formats; the parser tells them apart). The API key goes in the query (`API_KEY`), which error
/// messages never show.
public struct AirNowSource: Source {
    public static let kindName = "airnow"
    public static let defaultBaseURL = "https://www.airnowapi.org/"

    public struct Location: Sendable, Hashable {
        public var latitude: Double
        public var longitude: Double
        /// Miles (legacy service).
        public var distance: Double

        public init(latitude: Double, longitude: Double, distance: Double = 25) {
            self.latitude = latitude
            self.longitude = longitude
            self.distance = distance
        }
    }

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var apiKey: String
    public var locations: [Location]

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 3_600, apiKey: String, locations: [Location]
    ) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.apiKey = apiKey
        self.locations = locations
    }

    public var covers: [String] { [] }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        for l in locations {
            let url =
                join(baseURL, "aq/observation/latLong/current/") + "?"
                + query([
                    ("format", "application/json"), ("latitude", formatValue(l.latitude)),
                    ("longitude", formatValue(l.longitude)), ("distance", formatValue(l.distance)),
                    ("API_KEY", apiKey),
                ])
            batch.append(try await http.get(url, source: name, parse: AirNowParser.parse))
        }
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: locations.count)
    }
}
