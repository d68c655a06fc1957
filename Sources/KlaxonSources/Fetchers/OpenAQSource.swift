import Foundation
import KlaxonCore

/// `kind: openaq` — OpenAQ v3 locations: each cycle the location (metadata and its sensors) and
/// its latest values. `X-API-Key` header; `-9999` values are missing.
public struct OpenAQSource: Source {
    public static let kindName = "openaq"
    public static let defaultBaseURL = "https://api.openaq.org/v3/"

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var apiKey: String
    /// OpenAQ location ids.
    public var locations: [Int]

    public init(name: String, baseURL: String = defaultBaseURL, every: Int64 = 3_600, apiKey: String, locations: [Int])
    {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.apiKey = apiKey
        self.locations = locations
    }

    public var covers: [String] { locations.map { "openaq:\($0)" } }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        let headers = [("X-API-Key", apiKey), ("Accept", "application/json")]
        for id in locations {
            // The location lists its sensors (id → parameter and unit), which name the latest values.
            let url = join(baseURL, "locations/\(id)")
            let (stations, sensors) = try await http.get(url, headers: headers, source: name) {
                (try OpenAQParser.locations($0), try OpenAQParser.sensors($0))
            }
            requests += 1
            let station = stations.first?.id ?? "openaq:\(id)"
            let latest = try await http.get(url + "/latest", headers: headers, source: name) {
                try OpenAQParser.measurements($0, station: station, sensors: sensors)
            }
            requests += 1
            batch.stations += stations
            batch.append(latest)
        }
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: requests)
    }
}
