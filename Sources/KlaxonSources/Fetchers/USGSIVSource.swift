import Foundation
import KlaxonCore

/// `kind: usgs-iv` — USGS NWIS Instantaneous Values (WaterServices JSON). The first fetch backfills
/// `period`; later fetches ask from the cursor (less an hour's overlap) on. WaterServices is to be
/// decommissioned in 2027: `usgs-ogc` is its replacement.
public struct USGSIVSource: Source {
    public static let kindName = "usgs-iv"
    public static let defaultBaseURL = "https://waterservices.usgs.gov/nwis/iv/"
    /// The host USGS decommissions in Q1 2027.
    public static let retiringHost = "waterservices.usgs.gov"
    /// What `klaxon check` and the daemon's start say of a source that reads it.
    public static let retirementNotice =
        "kind: usgs-iv reads USGS WaterServices, which USGS decommissions in Q1 2027; change it to "
        + "`kind: usgs-ogc` (the same sites, parameters and period; see docs/sources.md). Both are read until then."

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var sites: [String]
    /// Parameter codes (`00065`).
    public var parameters: [String]
    /// Seconds to backfill on the first fetch.
    public var period: Int64

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 900, sites: [String],
        parameters: [String] = ["00065", "00060"], period: Int64 = 7 * 86_400
    ) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.sites = sites
        self.parameters = parameters
        self.period = period
    }

    /// Its address for the lookup its kind answers.
    public func lookupURL(_ lookup: SourceLookup) -> String? { lookup == .instantaneousValues ? baseURL : nil }

    public var covers: [String] { sites }

    public func url(cursor: String?, now: Int64) -> String {
        var items = [
            ("format", "json"), ("sites", sites.joined(separator: ",")),
            ("parameterCd", parameters.joined(separator: ",")), ("siteStatus", "all"),
        ]
        if cursor == nil {
            items.append(("period", "P\(max(1, period / 86_400))D"))
        } else {
            // `Z` makes WaterServices read the time as UTC, not the site's local time.
            let start = startTime(cursor: cursor, now: now, period: period)
            items.append(("startDT", String(Timestamp.format(start).dropLast(4)) + "Z"))
        }
        return baseURL + (baseURL.contains("?") ? "&" : "?") + query(items)
    }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        let url = url(cursor: cursor, now: now)
        let batch = try await http.get(url, source: name, parse: USGSIVParser.parse)
        return FetchResult(batch: batch, cursor: nextCursor(batch.readings, previous: cursor), requests: 1)
    }
}
