import Foundation
import KlaxonCore

/// `kind: nws` gauges from the National Water Prediction Service: each gauge's flood categories,
/// the USGS id ↔ NWS LID mapping, name and zone (`/gauges/{id}`, by LID or USGS id; refreshed
/// every `every`, daily by default). With `observed: true` it also stores the observed stage (and
/// flow) as readings, for gauges without a USGS streamgage.
public struct NWPSSource: Source {
    public static let kindName = "nwps"
    public static let defaultBaseURL = "https://api.water.noaa.gov/nwps/v1/"

    public var name: String
    public var baseURL: String
    public var every: Int64
    /// NWS LIDs or USGS site numbers.
    public var gauges: [String]
    public var observed: Bool
    /// Also store each forecast issuance (`/stageflow/forecast`, `FloodForecastParser.nwps`).
    public var forecast: Bool

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 86_400, gauges: [String],
        observed: Bool = false, forecast: Bool = false
    ) {
        self.forecast = forecast
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.gauges = gauges
        self.observed = observed
    }

    /// Its address for the lookup its kind answers.
    public func lookupURL(_ lookup: SourceLookup) -> String? { lookup == .gaugeMetadata ? baseURL : nil }

    public var covers: [String] { gauges }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        let headers = [("Accept", "application/json")]
        for id in gauges {
            let url = join(baseURL, "gauges/\(id)")
            let gauge = try await http.get(url, headers: headers, source: name, parse: NWPSParser.gauge)
            requests += 1
            batch.gauges.append(gauge)
            batch.stations.append(
                StationInfo(
                    id: gauge.stationID, source: Self.kindName, name: gauge.description ?? gauge.name,
                    latitude: gauge.latitude, longitude: gauge.longitude, timeZone: gauge.timeZone,
                    usgsID: gauge.usgsID, nwsLID: gauge.lid))
            if observed {
                let obsURL = join(baseURL, "gauges/\(gauge.lid)/stageflow/observed")
                batch.append(
                    try await http.get(obsURL, headers: headers, source: name) {
                        try NWPSParser.stageflow($0, station: gauge.stationID)
                    })
                requests += 1
            }
            if forecast {
                let url = join(baseURL, "gauges/\(gauge.lid)/stageflow/forecast")
                // A gauge the RFC does not forecast answers without one (or with an error): a skip
                // of that gauge, not a failure of the source.
                do {
                    batch.append(
                        try await http.get(url, headers: headers, source: name) {
                            try FloodForecastParser.nwps($0, station: gauge.stationID, site: gauge.lid)
                        })
                } catch let e as SourceError where e.kind == .payload || e.message.contains("HTTP 404") {
                    batch.forecastSkips.append(ForecastSkip(site: gauge.lid, reason: "no forecast: \(e.message)"))
                }
                requests += 1
            }
        }
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: requests)
    }
}
