import Foundation
import KlaxonCore

/// `kind: http-json` — any station that publishes JSON over HTTP (a summit observatory's feed, a
/// home weather station): one URL, read by an `HTTPJSONLayout`.
///
/// Every fetch reads the whole body; records older than the cursor (the newest record stored) are
/// skipped, the newest itself is read again (a station may revise its last record). The station's
/// configured name, position and zone are stored with each fetch.
public struct HTTPJSONSource: Source {
    public static let kindName = "http-json"

    public var name: String
    public var url: String
    public var every: Int64
    public var layout: HTTPJSONLayout
    /// Request headers; their values (API keys) never appear in messages.
    public var headers: [(String, String)]
    /// The URL holds a secret (it came from `${ENV}` or `url_file`): messages show only its host.
    public var urlIsSecret: Bool

    public init(
        name: String, url: String, every: Int64 = 600, layout: HTTPJSONLayout, headers: [(String, String)] = [],
        urlIsSecret: Bool = false
    ) {
        self.name = name
        self.url = url
        self.every = every
        self.layout = layout
        self.headers = headers
        self.urlIsSecret = urlIsSecret
    }

    public var covers: [String] { [layout.station.id] }

    /// The URL as messages show it.
    public var shownURL: String {
        guard urlIsSecret else { return HTTPFetcher.redactQuery(url) }
        guard let c = URLComponents(string: url), let scheme = c.scheme, let host = c.host else { return "<secret>" }
        return "\(scheme)://\(host)/…"
    }

    public func fetch(cursor: String?, now: Int64, http: HTTPFetcher) async throws -> FetchResult {
        let layout = self.layout
        var headers = [("Accept", "application/json")]
        headers += self.headers
        var batch: SourceBatch
        do {
            batch = try await http.getOffPool(url, headers: headers, source: name) {
                try HTTPJSONParser.parse($0, layout: layout)
            }
        } catch let error as SourceError where urlIsSecret {
            // HTTPFetcher names the URL; this one holds a secret.
            throw SourceError(
                kind: error.kind, source: error.source,
                message: error.message.replacingOccurrences(of: HTTPFetcher.redactQuery(url), with: shownURL)
                    .replacingOccurrences(of: url, with: shownURL),
                retryAfter: error.retryAfter)
        }
        if let since = cursor.flatMap(Timestamp.parse) {
            batch.readings.removeAll { $0.time < since }
        }
        let newest = batch.readings.map(\.time).max()
        let next = newest.map { t in cursor.flatMap(Timestamp.parse).map { max($0, t) } ?? t }.map(Timestamp.format)
        return FetchResult(batch: batch, cursor: next ?? cursor, requests: 1)
    }
}
