import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore

/// One watch as `GET /api/v1/watches` and `klaxon watches -o json` show it (issue 43).
public struct APIWatch: Codable, Sendable, Equatable {
    public var id: Int64
    /// The owner's own number for it (`unwatch N`).
    public var number: Int
    /// `slack:T1:U024BE7LH`: who made it.
    public var owner: String
    public var owner_name: String
    public var kind: String
    /// What it watches, in words (`gauge 01646500 (…) reaching minor flood stage`).
    public var what: String
    /// The gauge's id, the air place or the quake place.
    public var subject: String
    /// `slack:C0123`, `email:a@example.org`.
    public var destination: String
    /// `watch-12`: the rule its alerts carry.
    public var rule: String
    public var created: String

    public init(_ w: Watch) {
        id = w.id
        number = w.number
        owner = w.owner.key
        owner_name = w.owner.name
        kind = w.target.kindName.rawValue
        what = w.target.words
        switch w.target {
        case .gauge(let station, _, _): subject = station
        case .air(let place, _, _, _, _): subject = place
        case .quakes(let place, _): subject = place.name
        }
        destination = w.destination.key
        rule = w.ruleName
        created = Timestamp.format(w.createdAt)
    }
}

/// `GET /api/v1/watches?limit=&after=`: a page of every watch, by id, with the total and where the
/// next page starts.
struct APIWatchPage: Encodable {
    var next: String?
    var total: Int
    var watches: [APIWatch]
}

extension APIRoutes {
    /// The most watches one page holds.
    static let maxWatchPage = 10_000

    static func watches(_ request: Request, store: any WatchStore) async throws -> Response {
        let query = request.uri.queryParameters
        var limit = 1_000
        var after: Int64 = 0
        if let text = query.get("limit") {
            guard let v = ChatEndpoints.strictInteger(text, in: 1...Int64(maxWatchPage)) else {
                throw APIError(.badRequest, "limit: a whole number from 1 to \(maxWatchPage)")
            }
            limit = Int(v)
        }
        if let text = query.get("after") {
            guard let v = ChatEndpoints.strictInteger(text, in: 0...Int64.max) else {
                throw APIError(.badRequest, "after: a watch id (the `next` of the page before)")
            }
            after = v
        }
        let rows = try await store.watches(after: after, limit: limit)
        let total = try await store.watchCounts().values.reduce(0, +)
        let page = APIWatchPage(
            next: rows.count == limit ? rows.last.map { String($0.id) } : nil, total: total,
            watches: rows.map(APIWatch.init))
        return KlaxonHTTP.json(encoded: page, status: .ok)
    }
}
