import Foundation
import KlaxonCore

/// `kind: usgs-ogc` — the USGS Water Data OGC API (`continuous` collection), WaterServices'
/// replacement. UTC times, pages followed through `links[rel=next]`, the API key (when configured)
/// sent as `X-Api-Key`. The first fetch also reads each site's `monitoring-locations` entry for its
/// name, coordinates and time zone.
public struct USGSOGCSource: Source {
    public static let kindName = "usgs-ogc"
    public static let defaultBaseURL = "https://api.waterdata.usgs.gov/ogcapi/v0/"

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var sites: [String]
    public var parameters: [String]
    public var period: Int64
    public var apiKey: String?
    /// Items per page.
    public var limit: Int
    /// Pages per series per fetch, a guard against a server that never stops paging.
    public var maxPages: Int

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 900, sites: [String],
        parameters: [String] = ["00065", "00060"], period: Int64 = 7 * 86_400, apiKey: String? = nil,
        limit: Int = 10_000, maxPages: Int = 100
    ) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.sites = sites
        self.parameters = parameters
        self.period = period
        self.apiKey = apiKey
        self.limit = limit
        self.maxPages = maxPages
    }

    public var covers: [String] { sites }

    var headers: [(String, String)] {
        var h = [("Accept", "application/geo+json, application/json")]
        if let apiKey, !apiKey.isEmpty { h.append(("X-Api-Key", apiKey)) }
        return h
    }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        let start = startTime(cursor: cursor, now: now, period: period)
        for site in sites {
            if cursor == nil {
                let url = join(baseURL, "collections/monitoring-locations/items/USGS-\(site)") + "?f=json"
                let station = try await http.get(
                    url, headers: headers, source: name, parse: OGCParser.monitoringLocation)
                requests += 1
                if let station { batch.stations.append(station) }
            }
            for parameter in parameters {
                var next: String? =
                    join(baseURL, "collections/continuous/items") + "?"
                    + query([
                        ("f", "json"), ("monitoring_location_id", "USGS-\(site)"), ("parameter_code", parameter),
                        ("time", "\(Timestamp.format(start))/.."), ("limit", String(limit)),
                    ])
                var pages = 0
                while let url = next {
                    pages += 1
                    guard pages <= maxPages else {
                        throw SourceError(
                            kind: .payload, source: name,
                            message: "more than \(maxPages) pages for USGS-\(site) \(parameter); nothing stored")
                    }
                    let page = try await http.get(url, headers: headers, source: name, parse: OGCParser.parse)
                    requests += 1
                    batch.append(page.batch)
                    next = page.next?.absoluteString
                }
            }
        }
        return FetchResult(batch: batch, cursor: nextCursor(batch.readings, previous: cursor), requests: requests)
    }
}
