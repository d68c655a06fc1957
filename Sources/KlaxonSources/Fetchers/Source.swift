import AsyncHTTPClient
import Foundation
import KlaxonCore
import NIOCore
import NIOHTTP1

/// A configured data source (`usgs-iv`, `usgs-ogc`, `nwps`, `cwms`). One file per kind.
///
/// A fetch gathers everything new (every page) before returning, so its batch is written in one
/// transaction or not at all: a failure on page three writes nothing, keeps the cursor, and the
/// next cycle asks again.
public protocol Source: Sendable {
    /// The kind's name in `klaxon.yaml` (`kind: usgs-iv`).
    static var kindName: String { get }
    /// The source's name (unique in the configuration).
    var name: String { get }
    /// Seconds between fetches.
    var every: Int64 { get }
    /// Station ids (as readings store them) or gauge ids this source covers.
    var covers: [String] { get }
    /// Fetches what is new since `cursor` (nil: the first fetch, which backfills).
    func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult
    /// How the source is run (`SourceShape`). Conforming to `StreamingSource` or `PlaceSource` provides
    /// it; any other source is polled.
    var shape: SourceShape { get }
    /// The units its station observations come in, when the kind lets the config choose
    /// (`nws-observations`' `units:`); `klaxon ingest` reads saved observations in them.
    var observationUnits: StationUnits? { get }
    /// Where the source answers `lookup`, when it is of the kind that does (nil otherwise).
    func lookupURL(_ lookup: SourceLookup) -> String?
    /// The metric names its configured series take, by the upstream's series id, in the config's order
    /// (`cwms`' `timeseries`): `klaxon ingest --format cwms-json` names a saved series as the source would.
    var seriesMetrics: [(id: String, metric: String)] { get }
}

extension Source {
    public var kindName: String { Self.kindName }
}

/// What one fetch produced.
public struct FetchResult: Sendable {
    public var batch: SourceBatch
    /// Where the next fetch starts (stored with the batch).
    public var cursor: String?
    /// Requests made (pages included).
    public var requests: Int

    public init(batch: SourceBatch, cursor: String?, requests: Int) {
        self.batch = batch
        self.cursor = cursor
        self.requests = requests
    }
}

/// Why a fetch failed, worded for people and free of secrets.
public struct SourceError: Error, CustomStringConvertible, Sendable {
    public enum Kind: String, Sendable {
        case http, rateLimited, timeout, connection, payload
    }

    public let kind: Kind
    public let source: String
    public let message: String
    /// Seconds the server asked us to wait (429/503 `Retry-After`).
    public let retryAfter: Double?

    public init(kind: Kind, source: String, message: String, retryAfter: Double? = nil) {
        self.kind = kind
        self.source = source
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String { "source \(source): \(message)" }
}

/// GETs for sources over one shared `HTTPClient`: bounded bodies, a deadline per request, and
/// errors classified into `SourceError`.
public struct HTTPFetcher: Sendable {
    public let client: HTTPClient
    /// Seconds per request.
    public var timeout: Double
    /// The largest body accepted.
    public var maxBody: Int

    public init(client: HTTPClient, timeout: Double = 30, maxBody: Int = 64 << 20) {
        self.client = client
        self.timeout = timeout
        self.maxBody = maxBody
    }

    /// GETs `url`; returns the body of a 2xx answer, or throws a `SourceError` naming `source`.
    /// Header values (API keys) never appear in errors.
    public func get(_ url: String, headers: [(String, String)] = [], source: String) async throws -> Data {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "User-Agent", value: "klaxon (+https://github.com/klaxon)")
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        let shown = Self.redactQuery(url)
        let response: HTTPClientResponse
        let body: ByteBuffer
        do {
            response = try await client.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
            body = try await response.body.collect(upTo: maxBody)
        } catch let e as HTTPClientError
            where e == .deadlineExceeded || e == .readTimeout || e == .connectTimeout
        {
            throw SourceError(
                kind: .timeout, source: source, message: "GET \(shown) timed out after \(formatValue(timeout)) s")
        } catch is NIOTooManyBytesError {
            throw SourceError(
                kind: .payload, source: source, message: "GET \(shown): body larger than \(maxBody) bytes")
        } catch {
            throw SourceError(
                kind: .connection, source: source, message: "GET \(shown) failed: \(ErrorWords.describe(error))")
        }
        let status = Int(response.status.code)
        guard (200...299).contains(status) else {
            let retryAfter = response.headers.first(name: "retry-after").flatMap {
                Backoff().retryAfter($0, now: Int64(Date().timeIntervalSince1970))
            }
            let snippet = Self.snippet(Data(body.readableBytesView))
            if status == 429 {
                let wait = retryAfter.map { ", retry after \(formatValue($0.rounded())) s" } ?? ""
                throw SourceError(
                    kind: .rateLimited, source: source, message: "GET \(shown): HTTP 429 rate limited\(wait)\(snippet)",
                    retryAfter: retryAfter)
            }
            throw SourceError(
                kind: .http, source: source, message: "GET \(shown): HTTP \(status)\(snippet)",
                retryAfter: status == 503 ? retryAfter : nil)
        }
        return Data(body.readableBytesView)
    }

    /// GETs `url` and parses the body; a parse failure becomes a `.payload` SourceError naming the
    /// source and the (redacted) URL.
    public func get<T>(
        _ url: String, headers: [(String, String)] = [], source: String, parse: (Data) throws -> T
    ) async throws -> T {
        let data = try await get(url, headers: headers, source: source)
        do {
            return try parse(data)
        } catch {
            throw SourceError(kind: .payload, source: source, message: "GET \(Self.redactQuery(url)): \(error)")
        }
    }

    /// ` — "first line of the body"`, trimmed to a short excerpt; empty for an empty body.
    static func snippet(_ data: Data) -> String {
        var text = String(decoding: data.prefix(400), as: UTF8.self)
        if let title = text.range(of: "<title>", options: .caseInsensitive),
            let end = text.range(of: "</title>", options: .caseInsensitive, range: title.upperBound..<text.endIndex)
        {
            text = String(text[title.upperBound..<end.lowerBound])
        }
        let line =
            text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .first { !$0.isEmpty } ?? ""
        guard !line.isEmpty else { return "" }
        return " — \"\(line.prefix(80))\""
    }

    /// The URL with `api_key`/`token`-like query values hidden.
    static func redactQuery(_ url: String) -> String {
        guard var c = URLComponents(string: url), let items = c.queryItems else { return url }
        c.queryItems = items.map { item in
            let k = item.name.lowercased()
            return k.contains("key") || k.contains("token") ? URLQueryItem(name: item.name, value: "<secret>") : item
        }
        return c.string ?? url
    }
}

/// `https://host/path/` joined with `collections/x`: exactly one slash between them.
func join(_ base: String, _ path: String) -> String {
    let b = base.hasSuffix("/") ? String(base.dropLast()) : base
    let p = path.hasPrefix("/") ? String(path.dropFirst()) : path
    return p.isEmpty ? b : "\(b)/\(p)"
}

/// A query string from ordered items, percent-encoding values (commas and colons kept readable).
func query(_ items: [(String, String)]) -> String {
    var allowed = CharacterSet.urlQueryAllowed
    allowed.remove(charactersIn: "&=+?#")
    return items.map { k, v in "\(k)=\(v.addingPercentEncoding(withAllowedCharacters: allowed) ?? v)" }
        .joined(separator: "&")
}

/// Where an incremental fetch starts: the cursor less an overlap (late values at other sites),
/// never before the backfill period.
func startTime(cursor: String?, now: Int64, period: Int64, overlap: Int64 = 3_600) -> Int64 {
    guard let c = cursor, let t = Timestamp.parse(c) else { return now - period }
    return max(now - period, t - overlap)
}

/// The cursor after a batch: the oldest of each series' newest reading (so a lagging site is asked
/// again), or the previous cursor when nothing came.
func nextCursor(_ readings: [Reading], previous: String?) -> String? {
    var newest: [SeriesKey: Int64] = [:]
    for r in readings { newest[r.series] = max(newest[r.series] ?? .min, r.time) }
    guard let t = newest.values.min() else { return previous }
    if let p = previous.flatMap(Timestamp.parse), p > t { return previous }
    return Timestamp.format(t)
}
