import Foundation
import KlaxonCore

/// `kind: cwms` — USACE CWMS Data API time series (v2 JSON): `[epoch_ms, value, quality]` rows,
/// `null` = missing, pages followed through `next-page`.
public struct CWMSSource: Source {
    public static let kindName = "cwms"
    public static let defaultBaseURL = "https://cwms-data.usace.army.mil/cwms-data/"

    public struct Series: Sendable, Hashable {
        /// `ARBU.Elev.Inst.1Hour.0.Ccp-Rev`.
        public var name: String
        /// The metric to store it as (nil: derived from the parameter and sub-parameter, `Elev` →
        /// `elevation`, `Flow-Res Out` → `discharge.res_out`; see `CWMSParser.MetricNames`).
        public var metric: String?

        public init(name: String, metric: String? = nil) {
            self.name = name
            self.metric = metric
        }
    }

    public var name: String
    public var baseURL: String
    public var every: Int64
    public var office: String
    public var timeseries: [Series]
    /// `EN` (feet, cfs) or `SI`.
    public var unitSystem: String
    public var period: Int64
    public var pageSize: Int
    public var maxPages: Int

    public init(
        name: String, baseURL: String = defaultBaseURL, every: Int64 = 3_600, office: String, timeseries: [Series],
        unitSystem: String = "EN", period: Int64 = 7 * 86_400, pageSize: Int = 500, maxPages: Int = 100
    ) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.office = office
        self.timeseries = timeseries
        self.unitSystem = unitSystem
        self.period = period
        self.pageSize = pageSize
        self.maxPages = maxPages
    }

    public var covers: [String] { timeseries.map { String($0.name.split(separator: ".").first ?? "") } }

    /// The metric each configured time series is stored as: its own `metric`, else the name derived
    /// from its id, lengthened where two series of one location would share it.
    public var metrics: CWMSParser.MetricNames { CWMSParser.MetricNames(timeseries.map { ($0.name, $0.metric) }) }
    public var seriesMetrics: [(id: String, metric: String)] {
        let names = metrics
        return timeseries.compactMap { ts in names[ts.name].map { (id: ts.name, metric: $0) } }
    }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        var batch = SourceBatch()
        var requests = 0
        let begin = Timestamp.format(startTime(cursor: cursor, now: now, period: period))
        let end = Timestamp.format(now)
        let headers = [("Accept", "application/json;version=2")]
        let metrics = self.metrics
        for ts in timeseries {
            var page: String? = nil
            var pages = 0
            repeat {
                pages += 1
                guard pages <= maxPages else {
                    throw SourceError(
                        kind: .payload, source: name,
                        message: "more than \(maxPages) pages for \(ts.name); nothing stored")
                }
                var items = [
                    ("name", ts.name), ("office", office), ("unit", unitSystem), ("begin", begin), ("end", end),
                    ("page-size", String(pageSize)),
                ]
                if let page { items.append(("page", page)) }
                let url = join(baseURL, "timeseries") + "?" + query(items)
                let parsed = try await http.get(url, headers: headers, source: name) {
                    try CWMSParser.parse($0, metric: metrics[ts.name])
                }
                requests += 1
                batch.append(parsed.batch)
                page = parsed.nextPage
            } while page != nil
        }
        return FetchResult(batch: batch, cursor: nextCursor(batch.readings, previous: cursor), requests: requests)
    }
}
