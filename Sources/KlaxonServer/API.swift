import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore

/// `/api/v1/silences` (the team token) and `/api/v1/trips` (owner tokens: each owner sees only
/// their own trips; another owner's trip is 404).
enum APIRoutes {
    static func add(to router: Router<BasicRequestContext>, store: any APIStore, settings: KlaxonHTTP.Settings) {
        let now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

        router.get("/api/v1/silences") { request, _ -> Response in
            guard KlaxonHTTP.authorized(request, token: settings.apiToken) else {
                return KlaxonHTTP.unauthorized(settings.apiToken)
            }
            // One page (`limit`, `after`), with `total` and `next`.
            return try await APIPaging.silences(request, store: store, now: now())
        }
        router.post("/api/v1/silences") { request, _ -> Response in
            guard KlaxonHTTP.authorized(request, token: settings.apiToken) else {
                return KlaxonHTTP.unauthorized(settings.apiToken)
            }
            let body = try await request.collectBody(upTo: 1 << 20)
            guard let o = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
            else {
                return KlaxonHTTP.json(["error": "the body must be a JSON object"], status: .badRequest)
            }
            guard let texts = o["matchers"] as? [String], !texts.isEmpty else {
                return KlaxonHTTP.json(
                    ["error": "matchers: a list like [\"rule=flood-stage\", \"station=14211720\"]"], status: .badRequest
                )
            }
            guard let forText = o["for"] as? String, let d = DurationText.parse(forText), d > 0 else {
                return KlaxonHTTP.json(["error": "for: a duration like 2h"], status: .badRequest)
            }
            let matchers: [Matcher]
            do {
                matchers = try texts.map { try Matcher.parse($0) }
            } catch {
                return KlaxonHTTP.json(["error": "matchers: \(error)"], status: .badRequest)
            }
            // The client names its author: not one only the server may write (`slack:…`), no control characters.
            let comment = o["comment"] as? String ?? ""
            let author = o["created_by"] as? String ?? "api"
            if let problem = Silence.commentProblem(comment) ?? Silence.claimedAuthorProblem(author) {
                return KlaxonHTTP.json(["error": problem], status: .badRequest)
            }
            let t = now()
            let silence: Silence
            do {
                silence = try Silence.make(
                    matchers: matchers, starts: t, ends: t + d, now: t, comment: comment, createdBy: author)
            } catch let e as SilenceError {
                return KlaxonHTTP.json(["error": e.message], status: .badRequest)
            }
            try await store.addSilence(silence, now: t)
            return KlaxonHTTP.json(silenceJSON(silence), status: .created)
        }
        // Acknowledges a firing alert by its id (the one its messages show): `{"by": "alice"}`
        // optional. 404 when no firing alert has that id.
        router.post("/api/v1/alerts/:id/ack") { request, context -> Response in
            guard KlaxonHTTP.authorized(request, token: settings.apiToken) else {
                return KlaxonHTTP.unauthorized(settings.apiToken)
            }
            guard let text = context.parameters.get("id"), text.utf8.count <= 19, let id = Int64(text), id > 0 else {
                return KlaxonHTTP.json(["error": "the alert id is a positive number"], status: .badRequest)
            }
            let body = try await request.collectBody(upTo: 16 << 10)
            var by = "api"
            if body.readableBytes > 0 {
                guard let o = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
                else {
                    return KlaxonHTTP.json(["error": "the body must be a JSON object"], status: .badRequest)
                }
                if let named = o["by"] as? String { by = named }
            }
            if let problem = Silence.claimedAuthorProblem(by) {
                return KlaxonHTTP.json(["error": problem], status: .badRequest)
            }
            guard let acked = try await store.ackSayingWho(transitionID: id, by: by, at: now()) else {
                return KlaxonHTTP.json(["error": "no firing alert has id \(id)"], status: .notFound)
            }
            // The first ack of an episode holds: `acked_by` names whose it is, `already` says this
            // one changed nothing.
            var answer: [String: Any] = [
                "id": id, "rule": acked.key.rule, "station": acked.key.station, "metric": acked.key.metric,
                "acked_by": acked.earlier?.by ?? by,
            ]
            if let first = acked.earlier {
                answer["already"] = true
                answer["acked_at"] = Timestamp.format(first.at)
            }
            return KlaxonHTTP.json(answer, status: .ok)
        }
        router.delete("/api/v1/silences/:id") { request, context -> Response in
            guard KlaxonHTTP.authorized(request, token: settings.apiToken) else {
                return KlaxonHTTP.unauthorized(settings.apiToken)
            }
            let id = context.parameters.get("id") ?? ""
            switch try await store.expireSilence(id: id, now: now()) {
            case .expired(let full):
                return KlaxonHTTP.json(["expired": full], status: .ok)
            case .notFound:
                return KlaxonHTTP.json(["error": "no active silence \(id)"], status: .notFound)
            case .ambiguous(let ids):
                return KlaxonHTTP.json(
                    ["error": "\(id) names \(ids.count) silences; give more of the id", "matches": ids],
                    status: .conflict)
            }
        }

        router.get("/api/v1/trips") { request, _ -> Response in
            guard let owner = owner(request, settings) else { return KlaxonHTTP.unauthorized("") }
            // An owner's trips are few (the operator adds them), but the answer is bounded all the
            // same: the first `maxTrips` by name, and how many there are (`total`).
            let all = try await store.trips(owner: owner)
            let trips = all.sorted { $0.name < $1.name }.prefix(maxTrips).map { t -> [String: Any] in
                [
                    "name": t.name, "stops": t.stops.map(\.place), "first_day": Packer.days(of: t).first?.date ?? "",
                    "last_day": Packer.days(of: t).last?.date ?? "",
                ]
            }
            return KlaxonHTTP.json(["trips": Array(trips), "total": all.count], status: .ok)
        }
        router.get("/api/v1/trips/:name") { request, context -> Response in
            guard let owner = owner(request, settings) else { return KlaxonHTTP.unauthorized("") }
            guard let name = context.parameters.get("name"), let trip = try await store.trip(owner: owner, name: name)
            else {
                return KlaxonHTTP.json(["error": "trip not found"], status: .notFound)
            }
            let weather = try await store.weather(for: trip)
            let list = Packer.pack(trip, weather: weather)
            let items: [[String: Any]] = list.items.map {
                [
                    "item": $0.item, "quantity": $0.quantity, "category": $0.category,
                    "reason": $0.reasons.joined(separator: "; "),
                ]
            }
            return KlaxonHTTP.json(["name": trip.name, "owner": trip.owner, "items": items], status: .ok)
        }
        router.delete("/api/v1/trips/:name") { request, context -> Response in
            guard let owner = owner(request, settings) else { return KlaxonHTTP.unauthorized("") }
            guard let name = context.parameters.get("name"), try await store.removeTrip(owner: owner, name: name) else {
                return KlaxonHTTP.json(["error": "trip not found"], status: .notFound)
            }
            return KlaxonHTTP.json(["removed": name], status: .ok)
        }
    }

    /// The most trips `GET /api/v1/trips` lists.
    static let maxTrips = 1_000

    /// The owner an owner token belongs to.
    static func owner(_ request: Request, _ settings: KlaxonHTTP.Settings) -> String? {
        for (owner, token) in settings.ownerTokens.sorted(by: { $0.key < $1.key })
        where KlaxonHTTP.authorized(request, token: token) {
            return owner
        }
        return nil
    }

    static func silenceJSON(_ s: Silence) -> [String: Any] {
        [
            "id": s.id, "matchers": s.matchers.map(\.description), "starts": Timestamp.format(s.starts),
            "ends": Timestamp.format(s.ends), "comment": s.comment, "created_by": s.createdBy,
        ]
    }
}
