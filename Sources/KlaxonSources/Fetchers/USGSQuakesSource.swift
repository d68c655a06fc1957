import Foundation
import KlaxonCore

/// `kind: usgs-quakes` — USGS earthquakes: a GeoJSON summary feed polled every `every`
/// (`feed: significant_hour` … `all_month`), or, for a date range, the FDSN event service
/// (`starttime`, `endtime`, `minmagnitude`, an optional circle or box), asked in windows small enough
/// to stay under its 20,000-event cap: a window that comes back full is split in two and asked again.
public struct USGSQuakesSource: Source {
    public static let kindName = "usgs-quakes"
    public static let defaultFeedBaseURL = "https://earthquake.usgs.gov/earthquakes/feed/v1.0/summary/"
    public static let defaultFDSNBaseURL = "https://earthquake.usgs.gov/fdsnws/event/1/"
    public static let feeds: [String] = ["significant", "4.5", "2.5", "1.0", "all"].flatMap { size in
        ["hour", "day", "week", "month"].map { "\(size)_\($0)" }
    }
    /// FDSN's per-query cap.
    public static let fdsnCap = 20_000

    public enum Area: Sendable, Hashable {
        case circle(latitude: Double, longitude: Double, radiusKm: Double)
        case box(minLatitude: Double, maxLatitude: Double, minLongitude: Double, maxLongitude: Double)
    }

    public enum Mode: Sendable, Hashable {
        /// A summary feed (`significant_hour`, …, `all_month`).
        case feed(String)
        /// FDSN event queries over `[start, end]` (seconds; nil end = now).
        case fdsn(start: Int64, end: Int64?, minMagnitude: Double?, area: Area?, window: Int64)
    }

    public var name: String
    public var baseURL: String?
    public var every: Int64
    public var mode: Mode
    /// Events per FDSN query at most (the service's cap; tests lower it).
    public var cap: Int

    public init(name: String, baseURL: String? = nil, every: Int64 = 60, mode: Mode, cap: Int = fdsnCap) {
        self.name = name
        self.baseURL = baseURL
        self.every = every
        self.mode = mode
        self.cap = cap
    }

    public var covers: [String] { [] }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        let (events, requests) = try await events(now: now, http: http)
        var batch = SourceBatch()
        batch.quakes = events
        return FetchResult(batch: batch, cursor: Timestamp.format(now), requests: requests)
    }

    /// The events the source reports now (all pages, all windows), or throws.
    public func events(now: Int64, http: HTTPFetcher) async throws -> (events: [QuakeEvent], requests: Int) {
        switch mode {
        case .feed(let feed):
            let url = join(baseURL ?? Self.defaultFeedBaseURL, "\(feed).geojson")
            return (try await http.get(url, source: name, parse: QuakeParser.parse), 1)
        case .fdsn(let start, let end, let minMagnitude, let area, let window):
            var events: [QuakeEvent] = []
            var requests = 0
            var pending: [(Int64, Int64)] = []
            let stop = end ?? now
            var t = start
            while t < stop {
                pending.append((t, min(stop, t + window)))
                t += window
            }
            while !pending.isEmpty {
                let (from, to) = pending.removeFirst()
                var items: [(String, String)] = [
                    ("format", "geojson"), ("starttime", Timestamp.format(from)), ("endtime", Timestamp.format(to)),
                    ("orderby", "time-asc"), ("limit", String(cap)),
                ]
                if let minMagnitude { items.append(("minmagnitude", formatValue(minMagnitude))) }
                switch area {
                case .circle(let lat, let lon, let r)?:
                    items += [
                        ("latitude", formatValue(lat)), ("longitude", formatValue(lon)),
                        ("maxradiuskm", formatValue(r)),
                    ]
                case .box(let a, let b, let c, let d)?:
                    items += [
                        ("minlatitude", formatValue(a)), ("maxlatitude", formatValue(b)),
                        ("minlongitude", formatValue(c)), ("maxlongitude", formatValue(d)),
                    ]
                case nil: break
                }
                let url = join(baseURL ?? Self.defaultFDSNBaseURL, "query") + "?" + query(items)
                // FDSN answers a query without events with HTTP 204 and no body.
                let page = try await http.get(url, source: name) { data in
                    data.isEmpty ? [] : try QuakeParser.parse(data)
                }
                requests += 1
                if page.count >= cap {
                    // Full: the window may hold more than the cap. Split it and ask again.
                    guard to - from > 1 else {
                        throw SourceError(
                            kind: .payload, source: name,
                            message:
                                "more than \(cap) events in one second at \(Timestamp.format(from)); nothing stored")
                    }
                    let mid = from + (to - from) / 2
                    pending.insert(contentsOf: [(from, mid), (mid, to)], at: 0)
                    continue
                }
                events += page
            }
            return (events, requests)
        }
    }
}
