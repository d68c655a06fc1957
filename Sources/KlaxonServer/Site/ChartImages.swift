import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore
import Plot

/// The status site's charts as PNG pictures: what `GET /gauges/ID/chart.png`, `/air/CITY/chart.png`
/// and `/stations/ID/chart.png?metric=M` answer, and what a message about an alert can carry (email
/// embeds it inline as `cid:`; Slack and Teams show the route's URL under `external_url`).
///
/// A picture is the very SVG its page shows, drawn by librsvg over white at twice the page's size
/// (a gauge's chart is 1440 × 520 pixels), and kept in a bounded in-memory cache keyed by the
/// chart and the store's data version: a repeated request is served from memory, a new reading
/// draws anew, and requests for one picture while it is drawn wait for that one drawing. Every
/// `ChartImages` made from the same `StatusSite.Settings` (and the site itself) shares that cache
/// and the process's render threads.
///
/// The daemon (`KlaxonApp`) makes one beside its HTTP server and hands `png(station:metric:range:)`
/// to the email notifier as a closure, since `KlaxonDelivery` does not import `KlaxonServer`:
///
///     let charts = ChartImages(store: store, settings: httpSettings.site, now: clock)
///     let chart: @Sendable (String, String) async -> Data? = { station, metric in
///         try? await charts.png(station: station, metric: metric)
///     }
///
/// `SubjectPage.chartPath(station:metric:range:)` is the route of the same picture.
public struct ChartImages: Sendable {
    /// Why no picture was made.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        enum Code: Sendable {
            case badRange, busy, failed
        }

        let code: Code
        /// What went wrong, in words.
        public let message: String
        /// Whether the same call may work shortly (every renderer was busy).
        public var retryable: Bool { code == .busy }
        public var description: String { message }
    }

    /// Pictures are drawn at twice the SVG's size: sharp on high-density screens and in mail.
    static let scale = 2

    let site: StatusSite.Context

    /// Pictures from `store`, with the site's settings (time zones, AQI scales) and cache.
    public init(
        store: any SiteStore, settings: StatusSite.Settings,
        now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    ) {
        site = StatusSite.Context(store: store, settings: settings, now: now)
    }

    init(site: StatusSite.Context) { self.site = site }

    /// The PNG of the chart on the page of `station`'s `metric` (the gauge's stage chart for water
    /// metrics, the city's AQI chart, a weather station's chart of that metric) over `range`
    /// (`48h`, `7d`, `30d` or `365d`; a city's chart always shows its last 25 samples, as its page
    /// does).
    ///
    /// - Returns: the PNG's bytes; nil when there is nothing to chart: the metric's page has no chart
    ///   (quakes, trips), the station is not known, or no reading falls in the range.
    /// - Throws: `Failure`: a range that is none of those (not retryable), every renderer busy
    ///   (retryable), or a picture librsvg could not draw.
    public func png(station: String, metric: String, range: String = "48h") async throws -> Data? {
        let kind = SubjectPage.of(metric: metric)
        guard kind == .gauge || kind == .air || kind == .station, !station.isEmpty, station != "*" else { return nil }
        do {
            // Delivery's own lane: a flood of anonymous chart requests does not cost an alert its chart.
            let picture = try await picture(
                kind: kind, typed: station, metric: kind == .station ? metric : nil,
                range: (since: nil, until: nil, key: range), for: .delivery)
            return picture.empty ? nil : Data(picture.png)
        } catch let e as SiteError where e.status == .notFound {
            return nil
        } catch let e as SiteError {
            throw Failure(code: .badRange, message: e.message)
        } catch let e as SVGRaster.Failure {
            throw Failure(code: e.kind == .busy ? .busy : .failed, message: e.message)
        }
    }

    /// The picture of a page's chart: the station resolved as its page resolves it (a 404
    /// `SiteError` if unknown), the range read as the gauge page reads it (a 400 if bad), then from
    /// the cache or drawn.
    func picture(
        kind: SubjectPage, typed: String, metric: String?, range: (since: String?, until: String?, key: String?),
        for lane: SVGRaster.Lane = .visitor
    ) async throws -> ChartCache.Picture {
        let site = self.site
        let store = site.store
        let now = site.now()
        let station: String
        switch kind {
        case .air:
            station = try await AirPages.resolve(typed, site: site).station
        case .gauge:
            guard let s = try await store.resolveStation(typed) else {
                throw SiteError.notFound("No gauge \"\(typed)\" is known (a USGS site number or an NWS id).")
            }
            station = s
        default:
            guard let s = try await store.resolveStation(typed) else {
                throw SiteError.notFound("No station \"\(typed)\" is known.")
            }
            station = s
        }
        // Only a date needs the station's zone; a range key does not.
        let zone =
            range.since == nil ? site.settings.timeZone : SiteHTML.zone(try await store.stationInfos()[station], site)
        let (from, to, key) = try GaugePages.range(
            since: range.since, until: range.until, key: range.key, now: now, zone: zone)
        var drawn: String
        if kind == .air {
            // A city's chart is its last samples, whatever the range.
            drawn = "last \(AirPages.samples)"
        } else if let key {
            // A range that ends now moves on by itself: by one time bucket (a pixel column of the
            // chart, 1 to 15 minutes) it is drawn anew even without a new reading.
            let bucket = min(900, max(60, (to - from) / 720))
            drawn = "\(key)@\(now / bucket)"
            if kind == .gauge {
                // A gauge's chart draws its latest forecast issuance after now: a new one draws it anew.
                let issued = try await store.forecastSeries().filter { $0.key.station == station }.values.max()
                drawn += issued.map { " forecast \($0)" } ?? ""
            }
        } else {
            drawn = "\(from)-\(to)"
        }
        let cacheKey = ChartCache.Key(
            kind: kind, station: station, metric: metric, range: drawn, version: try await store.ingestMark(),
            scale: Self.scale)
        let cache = site.settings.charts
        return try await cache.picture(cacheKey, join: lane == .visitor) {
            let chart: (svg: String, empty: Bool)
            switch kind {
            case .air:
                let infos = try await store.stationInfos()
                let city = try await AirPages.city(station, infos: infos, site: site)
                chart = (try await offPool { AirPages.chart(city) }, city.samples.isEmpty)
            case .gauge:
                chart = try await GaugePages.chart(
                    station: station, from: from, to: to, site: site, forecastAfter: key == nil ? nil : to)
            default:
                chart = try await StationPage.chart(station: station, metric: metric, from: from, to: to, site: site)
            }
            let picture = try await cache.raster.png(chart.svg, size: .scale(Double(Self.scale)), for: lane)
            return ChartCache.Picture(
                png: picture.png, width: picture.width, height: picture.height, etag: ChartCache.etag(picture.png),
                empty: chart.empty)
        }
    }
}

extension StatusSite.Context {
    /// Answers a `chart.png` route: the picture (`image/png`, a short `max-age`, an `ETag`; 304 for a
    /// matching `If-None-Match`), or the site's error page: 400 (bad id or range), 404 (unknown id or
    /// metric), 503 with `Retry-After` (every renderer busy), 503 (librsvg is not installed), 500
    /// (librsvg could not draw it).
    func respondChart(_ request: Request, context: BasicRequestContext, kind: SubjectPage) async throws -> Response {
        let picture: ChartCache.Picture
        do {
            let typed =
                kind == .air
                ? try SiteHTML.pathID(context, "city", what: "city")
                : try SiteHTML.pathID(context, "id", what: kind == .gauge ? "gauge" : "station")
            var metric: String? = nil
            if kind == .station, let m = SiteHTML.query(request, "metric") {
                if let problem = ReadingsParser.textProblem("the metric", m, limit: ReadingsParser.Limits.metricBytes) {
                    throw SiteError.badRequest("That is not a metric: \(problem).")
                }
                metric = m
            }
            picture = try await ChartImages(site: self).picture(
                kind: kind, typed: typed, metric: metric,
                range: (
                    since: SiteHTML.query(request, "since"), until: SiteHTML.query(request, "until"),
                    key: SiteHTML.query(request, "range")
                ))
        } catch let e as SiteError {
            return errorPage(e, request: request).response(for: request, refreshSeconds: 0)
        } catch let e as SVGRaster.Failure {
            let unavailable = e.kind == .busy || e.kind == .unavailable
            var page = errorPage(
                SiteError(status: unavailable ? .serviceUnavailable : .internalServerError, message: e.message),
                request: request)
            if e.kind == .busy { page.headers[.retryAfter] = "2" }
            return page.response(for: request, refreshSeconds: 0)
        }
        var headers = HTTPFields()
        headers[.cacheControl] = "public, max-age=60"
        headers[.eTag] = picture.etag
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = "default-src 'none'"
        if let match = request.headers[.ifNoneMatch],
            match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == picture.etag })
        {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = "image/png"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: picture.png)))
    }
}
