import AsyncHTTPClient
import Foundation
import KlaxonCore
import KlaxonSources
import KlaxonStore

/// What a fetch reads and writes: the sources' states, their batches, and the trips whose places
/// need forecasts.
public typealias FetchStore = ReadingIngest & SourceStates & TripStore

/// `klaxon fetch` (and, later, the daemon's fetch loop): runs configured sources once each.
public enum Fetch {
    /// How one source's fetch went.
    public struct Outcome: Sendable {
        public var source: String
        public var kind: String
        public var stats = IngestStats()
        public var gaps = 0
        public var stations = 0
        public var gauges = 0
        public var requests = 0
        /// Set when the fetch failed: nothing of it was stored and the cursor stayed.
        public var error: String?
        /// Set when the source was not asked (the server's Retry-After has not passed).
        public var skipped: String?
        /// Failures in a row, and the last error, before this fetch.
        public var failuresBefore = 0
        public var errorBefore: String?
        /// Readings fetched but not stored: dated too far ahead (`readings.max_future`), or in a unit
        /// their series cannot take (`SeriesUnitRule`); the first few worded for people.
        public var refused: [String] = []
        public var refusedCount = 0
        /// Items of a forecast answer not stored (a place without a forecast, records that cannot
        /// be forecasts), the first few worded for people (`PLACE: reason`), and how many in all.
        public var forecastSkips: [String] = []
        public var forecastSkipCount = 0

        /// One line for people.
        public var line: String {
            let head = "\(source) (\(kind))"
            if let skipped { return "\(head): skipped: \(skipped)" }
            if let error { return "\(head): FAILED: \(error); nothing stored, the next fetch asks again" }
            var parts = ["\(stats.newTotal) new", "\(stats.revisedTotal) revised", "\(stats.unchangedTotal) unchanged"]
            if gaps > 0 { parts.append("\(gaps) missing values skipped") }
            if stats.suspect > 0 { parts.append("\(stats.suspect) marked suspect") }
            if refusedCount > 0 {
                parts.append("\(refusedCount) refused (\(refused.first ?? "")\(refused.count > 1 ? "; …" : ""))")
            }
            if forecastSkipCount > 0 {
                parts.append(
                    "\(forecastSkipCount) forecast item\(forecastSkipCount == 1 ? "" : "s") skipped "
                        + "(\(forecastSkips.first ?? "")\(forecastSkipCount > 1 ? "; …" : ""))")
            }
            if stations > 0 { parts.append("\(stations) stations") }
            if gauges > 0 { parts.append("\(gauges) NWS gauges") }
            if !stats.quakeConflicts.isEmpty {
                let n = stats.quakeConflicts.count
                parts.append("\(n) quake\(n == 1 ? "" : "s") sharing an id with another event kept apart")
            }
            parts.append("\(requests) request\(requests == 1 ? "" : "s")")
            return "\(head): " + parts.joined(separator: ", ")
        }
    }

    /// Fetches each source once and writes what it got (one transaction per source). A source that
    /// fails records its error and keeps its cursor; the others go on.
    ///
    /// Readings dated more than `future`'s margin after `now` are not stored (the rest are): a source
    /// with a broken clock must not date a series' newest reading years ahead.
    ///
    /// With a `deadline` (`klaxon fetch --timeout`), the whole run ends by then: a WebSocket source
    /// listens no longer than the time left, a source still fetching when it comes fails with "timed
    /// out" (its request is cancelled and left to end on its own), and sources not reached are skipped.
    public static func run(
        sources: [ConfiguredSource], store: any FetchStore, client: HTTPClient = .shared, now: Int64,
        force: Bool = false,
        future: FutureBound = .standard, deadline: ContinuousClock.Instant? = nil
    ) async -> [Outcome] {
        var out: [Outcome] = []
        for configured in sources {
            var source = configured.source
            var o = Outcome(source: source.name, kind: source.kindName)
            let left = deadline.map { ContinuousClock.now.duration(to: $0) }
            if let left, left <= .zero {
                o.skipped = "--timeout ran out before it was asked"
                out.append(o)
                continue
            }
            if let left, var ws = source.streaming {
                ws.listen = min(ws.listen, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
                source = ws
            }
            let state = try? await store.sourceState(source.name)
            o.failuresBefore = state?.failures ?? 0
            o.errorBefore = state?.lastError
            if !force, let nb = state?.notBefore, nb > now {
                o.skipped = "the server asked to wait until \(Timestamp.format(nb)) (HTTP 429)"
                out.append(o)
                continue
            }
            let http = HTTPFetcher(client: client, timeout: configured.timeout)
            do {
                let asked = source
                let fetch: @Sendable () async throws -> FetchResult = {
                    switch asked.shape {
                    case .perPlace(let weather):
                        // Weather sources are asked for the places of the trips still ahead.
                        return try await weather.fetch(
                            places: try TripPlaces.requests(store: store, now: now), now: now, http: http)
                    case .polled, .streaming:
                        return try await asked.fetch(cursor: state?.cursor, now: now, http: http)
                    }
                }
                let result: FetchResult
                if let left {
                    // The source's own timeouts may be longer (or, for a WebSocket upgrade, absent).
                    let task = Task { try await fetch() }
                    guard let r = await Bounded.result(of: task, within: left, orUntilCancelled: true) else {
                        task.cancel()
                        throw SourceError(
                            kind: .timeout, source: source.name,
                            message: "timed out: no answer before the --timeout ran out")
                    }
                    result = try r.get()
                } else {
                    result = try await fetch()
                }
                if let problem = result.batch.problem() { throw UserError("\(source.name): \(problem)") }
                var batch = result.batch
                let ahead = batch.refuseFuture(future, now: now)
                // The source's cursor was worked out from every reading, the refused ones too: one
                // from 2199 would make it ask from 2199 for ever. The stored cursor stays instead
                // (nil keeps it), and the next fetch asks again from there.
                let cursor = ahead.isEmpty ? result.cursor : nil
                o.stats = try await store.write(batch, source: source.name, cursor: cursor, at: now)
                o.refusedCount = ahead.count + o.stats.unitRefusedCount
                o.refused = Array((ahead + o.stats.unitRefused.map(\.description)).prefix(Self.listedRefusals))
                o.gaps = batch.gaps
                o.forecastSkipCount = batch.forecastSkips.count
                o.forecastSkips = batch.forecastSkips.prefix(Self.listedRefusals).map { "\($0.site): \($0.reason)" }
                o.stations = Set(batch.stations.map(\.id)).count
                o.gauges = batch.gauges.count
                o.requests = result.requests
            } catch  where Task.isCancelled {
                // Cut short by a stop: not the source's failure, and nothing to record against it.
                o.skipped = "cancelled: stopping"
            } catch {
                o.error = ErrorWords.describe(error)
                let wait = (error as? SourceError)?.retryAfter.map { now + Int64($0.rounded(.up)) }
                try? await store.recordFailure(source: source.name, error: o.error ?? "", at: now, notBefore: wait)
            }
            out.append(o)
        }
        return out
    }

    /// Refused readings worded in an outcome, at most.
    static let listedRefusals = 10

    /// Sources for a gauge nobody configured (`klaxon gauge ID --fetch`): NWPS metadata for the id,
    /// then USGS instantaneous values for its USGS site. Base URLs come from the config's sources of
    /// the same kind, when it has any.
    public static func adHoc(id: String, config: Config?, days: Int64) -> (
        nwps: NWPSSource, usgs: (String) -> USGSIVSource
    ) {
        let configured = config?.sources.map(\.source) ?? []
        let nwpsBase = configured.compactMap { $0.lookupURL(.gaugeMetadata) }.first ?? NWPSSource.defaultBaseURL
        let ivBase = configured.compactMap { $0.lookupURL(.instantaneousValues) }.first ?? USGSIVSource.defaultBaseURL
        let nwps = NWPSSource(name: "nwps:\(id)", baseURL: nwpsBase, gauges: [id])
        return (
            nwps,
            { site in
                USGSIVSource(
                    name: "usgs-iv:\(site)", baseURL: ivBase, sites: [site], parameters: ["00065", "00060", "00045"],
                    period: max(1, days) * 86_400)
            }
        )
    }
}

/// The places and dates that trips still ahead need weather for.
public enum TripPlaces {
    public static func requests(store: any TripStore, now: Int64) async throws -> [PlaceRequest] {
        let today = String(Timestamp.format(now).prefix(10))
        var dates: [String: (PlacePoint, Set<String>)] = [:]
        for trip in try await store.trips(owner: nil) {
            for day in Packer.days(of: trip) where day.date >= today {
                let stop = trip.stops[day.stopIndex]
                guard let lat = stop.latitude, let lon = stop.longitude else { continue }
                let point = PlacePoint(latitude: lat, longitude: lon)
                dates[point.key, default: (point, [])].1.insert(day.date)
            }
        }
        return dates.keys.sorted().map { key in
            let (point, ds) = dates[key]!
            return PlaceRequest(point: point, dates: ds.sorted())
        }
    }
}
