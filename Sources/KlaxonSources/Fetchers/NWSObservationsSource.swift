import Foundation
import KlaxonCore

/// `kind: nws-observations` — NWS station observations (`api.weather.gov`): temperature, dew point,
/// humidity, wind speed, gust and direction, pressure, visibility, precipitation, in `units`.
///
/// The first fetch reads each station's document (`/stations/{id}`: name, position, zone,
/// elevation) and backfills `period` of observations (`/stations/{id}/observations?start=…`).
/// Later fetches ask from the cursor (the newest observation of the station that lags most) less
/// an hour of overlap, or, with `latest`, only `/stations/{id}/observations/latest`.
public struct NWSObservationsSource: Source {
    public static let kindName = "nws-observations"
    public static let defaultBaseURL = "https://api.weather.gov/"

    public var name: String
    public var baseURL: String
    public var every: Int64
    /// Station ids (`KMWN`, `KDEN`), as readings are stored.
    public var stations: [String]
    public var units: StationUnits
    /// How far back the first fetch reaches (NWS keeps about seven days).
    public var period: Int64
    /// After the backfill, ask only for each station's latest observation.
    public var latest: Bool
    /// Observations per page (the API's `limit`, at most 500).
    public var limit: Int
    /// Pages per station per fetch, a guard against a server that never stops paging.
    public var maxPages: Int

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 600, stations: [String],
        units: StationUnits = .metric, period: Int64 = 2 * 86_400, latest: Bool = false, limit: Int = 500,
        maxPages: Int = 20
    ) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.stations = stations
        self.units = units
        self.period = period
        self.latest = latest
        self.limit = limit
        self.maxPages = maxPages
    }

    public var covers: [String] { stations }

    static let headers = [("Accept", "application/geo+json, application/json")]

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        let start = startTime(cursor: cursor, now: now, period: period)
        let units = self.units
        for station in stations {
            let base = join(baseURL, "stations/\(station)")
            if cursor == nil {
                let info = try await http.getOffPool(base, headers: Self.headers, source: name) {
                    try NWSObservationsParser.station($0)
                }
                requests += 1
                if let info { batch.stations.append(info) }
            }
            if latest && cursor != nil {
                batch.append(
                    try await http.get(base + "/observations/latest", headers: Self.headers, source: name) {
                        try NWSObservationsParser.parse($0, units: units, station: station)
                    })
                requests += 1
                continue
            }
            var next: String? =
                base + "/observations?"
                + query([("start", Timestamp.format(start)), ("limit", String(limit))])
            var pages = 0
            while let url = next {
                pages += 1
                guard pages <= maxPages else {
                    throw SourceError(
                        kind: .payload, source: name,
                        message: "more than \(maxPages) pages of observations for \(station); nothing stored")
                }
                let page = try await http.getOffPool(url, headers: Self.headers, source: name) { data in
                    (
                        try NWSObservationsParser.parse(data, units: units, station: station),
                        NWSObservationsParser.nextPage(data)
                    )
                }
                requests += 1
                batch.append(page.0)
                // A page that adds nothing ends the paging, whatever `next` says.
                let count = page.0.readings.count + page.0.gaps
                next = count > 0 && page.1 != url ? page.1 : nil
            }
        }
        return FetchResult(
            batch: batch, cursor: Self.cursor(batch.readings, stations: stations, previous: cursor), requests: requests)
    }

    /// The newest observation of the station that lags most (a metric a station reports only now and
    /// then, like gusts, does not hold the cursor back), or the previous cursor when nothing came.
    static func cursor(_ readings: [Reading], stations: [String], previous: String?) -> String? {
        var newest: [String: Int64] = [:]
        for r in readings { newest[r.station] = max(newest[r.station] ?? .min, r.time) }
        guard let t = newest.values.min() else { return previous }
        if let p = previous.flatMap(Timestamp.parse), p > t { return previous }
        return Timestamp.format(t)
    }
}

extension HTTPFetcher {
    /// GETs `url` and parses the body on a thread of its own, off the cooperative pool (a large body
    /// would hold one of its threads); a parse failure becomes a `.payload` SourceError naming the
    /// source and the (redacted) URL.
    public func getOffPool<T: Sendable>(
        _ url: String, headers: [(String, String)] = [], source: String,
        parse: @escaping @Sendable (Data) throws -> T
    ) async throws -> T {
        let data = try await get(url, headers: headers, source: source)
        do {
            return try await KlaxonCore.offPool { try parse(data) }
        } catch {
            throw SourceError(kind: .payload, source: source, message: "GET \(Self.redactQuery(url)): \(error)")
        }
    }
}
