import Foundation
import KlaxonCore

/// `kind: nws-observations` — NWS station observations (`api.weather.gov`): temperature, dew point,
/// humidity, wind speed, gust and direction, pressure, visibility, precipitation, in `units`.
///
/// The first fetch for a station (the source's first, or the first after the station was added to
/// the config) reads its document (`/stations/{id}`: name, position, zone, elevation) and backfills
/// `period` of observations (`/stations/{id}/observations?start=…`). Later fetches ask from the
/// cursor (the newest observation of the station that lags most) less an hour of overlap, or, with
/// `latest`, only `/stations/{id}/observations/latest`. The cursor also lists the stations whose
/// documents were read.
public struct NWSObservationsSource: Source {
    public static let kindName = "nws-observations"
    public static let defaultBaseURL = "https://api.weather.gov/"

    public var name: String
    public var baseURL: String
    public var every: Int64
    /// Station ids (`KMWN`, `KDEN`), as readings are stored.
    public var stations: [String]
    public var units: StationUnits
    public var observationUnits: StationUnits? { units }
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
        let previous = Cursor(cursor)
        let units = self.units
        var described = previous.described
        for station in stations {
            let base = join(baseURL, "stations/\(station)")
            // A station new to the source (the first fetch, or one added to the config since) is
            // described and backfilled; the others go on from the cursor.
            let isNew = !previous.described.contains(station) || previous.time == nil
            if isNew {
                let info = try await http.getOffPool(base, headers: Self.headers, source: name) {
                    try NWSObservationsParser.station($0)
                }
                requests += 1
                if let info { batch.stations.append(info) }
                described.insert(station)
            }
            if latest && !isNew {
                batch.append(
                    try await http.get(base + "/observations/latest", headers: Self.headers, source: name) {
                        try NWSObservationsParser.parse($0, units: units, station: station)
                    })
                requests += 1
                continue
            }
            let start = startTime(cursor: isNew ? nil : previous.time, now: now, period: period)
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
        let time = Self.cursorTime(batch.readings, previous: previous.time)
        let next = Cursor(time: time, described: described.intersection(stations))
        return FetchResult(batch: batch, cursor: next.text, requests: requests)
    }

    /// Where the next fetch starts, and the stations whose documents were read: `2024-01-15T12:00:00Z
    /// KMWN,KBTV`.
    struct Cursor: Equatable {
        var time: String?
        var described: Set<String>

        init(time: String?, described: Set<String>) {
            self.time = time
            self.described = described
        }

        init(_ text: String?) {
            let parts = (text ?? "").split(separator: " ", maxSplits: 1)
            time = parts.first.map(String.init).flatMap { Timestamp.parse($0) != nil ? $0 : nil }
            described = Set(parts.dropFirst().first?.split(separator: ",").map(String.init) ?? [])
        }

        var text: String? {
            guard let time else { return nil }
            return described.isEmpty ? time : time + " " + described.sorted().joined(separator: ",")
        }
    }

    /// The newest observation of the station that lags most (a metric a station reports only now and
    /// then, like gusts, does not hold the cursor back), or the previous time when nothing came.
    static func cursorTime(_ readings: [Reading], previous: String?) -> String? {
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
