import Foundation
import KlaxonCore

/// `kind: waqi` — the World Air Quality Index feed (`/feed/{city}/`, `/feed/@{uid}/`,
/// `/feed/geo:{lat};{lon}/`). `token` in the query; a `status: error` body with HTTP 200 is an
/// error; times come from `s` + `tz`.
public struct WAQISource: Source {
    public static let kindName = "waqi"
    public static let defaultBaseURL = "https://api.waqi.info/"

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var token: String
    /// `utrecht`, `@372382`, `geo:52.1;5.1`.
    public var stations: [String]

    public init(name: String, baseURL: String = defaultBaseURL, every: Int64 = 3_600, token: String, stations: [String])
    {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.token = token
        self.stations = stations
    }

    public var covers: [String] { [] }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        for station in stations {
            let path = station.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? station
            let url = join(baseURL, "feed/\(path)/") + "?" + query([("token", token)])
            batch.append(try await http.get(url, source: name, parse: WAQIParser.parse))
        }
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: stations.count)
    }
}
