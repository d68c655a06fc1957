import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore

/// `/api/v1/silences` and `/api/v1/notifications` (the team token) and `/api/v1/trips` (owner tokens: each owner sees only
/// their own trips; another owner's trip is 404).
enum APIRoutes {
    static func add(to router: Router<BasicRequestContext>, store: any APIStore, settings: KlaxonHTTP.Settings) {
        let now: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
        // The team's token guards the silences and acks; each owner's token, that owner's trips.
        let team = router.group().add(middleware: TeamTokenMiddleware(token: settings.apiToken))
        let owners = router.group(context: OwnerRequestContext.self).add(
            middleware: OwnerTokenMiddleware(tokens: settings.ownerTokens))

        team.get("/api/v1/silences") { request, _ -> Response in
            // One page (`limit`, `after`), with `total` and `next`.
            try await APIPaging.silences(request, store: store, now: now())
        }
        team.get("/api/v1/notifications") { request, _ -> Response in
            // The notification history: one page (`limit`, `after`), with `total` and `next`.
            try await APIPaging.notifications(request, store: store)
        }
        team.get("/api/v1/watches") { request, _ -> Response in
            // People's watches (issue 43): one page (`limit`, `after`), with `total` and `next`.
            try await watches(request, store: store)
        }
        team.post("/api/v1/silences") { request, _ -> Response in
            let body = try await request.collectBody(upTo: 1 << 20)
            let posted: NewSilence
            do {
                posted = try JSONDecoder().decode(NewSilence.self, from: Data(body.readableBytesView))
            } catch let error as APIError {
                throw error
            } catch {
                throw APIError(.badRequest, "the body must be a JSON object")
            }
            let t = now()
            let silence: Silence
            do {
                silence = try Silence.make(
                    matchers: posted.matchers, starts: t, ends: t + posted.duration, now: t, comment: posted.comment,
                    createdBy: posted.createdBy)
            } catch let e as SilenceError {
                throw APIError(.badRequest, e.message)
            }
            try await store.addSilence(silence, now: t)
            return KlaxonHTTP.json(encoded: APISilence(silence), status: .created)
        }
        // Acknowledges a firing alert by its id (the one its messages show): `{"by": "alice"}`
        // optional. 404 when no firing alert has that id.
        team.post("/api/v1/alerts/:id/ack") { request, context -> Response in
            guard let text = context.parameters.get("id"), text.utf8.count <= 19, let id = Int64(text), id > 0 else {
                throw APIError(.badRequest, "the alert id is a positive number")
            }
            let body = try await request.collectBody(upTo: 16 << 10)
            var by = "api"
            if body.readableBytes > 0 {
                do {
                    by = try JSONDecoder().decode(AckRequest.self, from: Data(body.readableBytesView)).by ?? by
                } catch {
                    throw APIError(.badRequest, "the body must be a JSON object")
                }
            }
            if let problem = Silence.claimedAuthorProblem(by) { throw APIError(.badRequest, problem) }
            guard let acked = try await store.ackSayingWho(transitionID: id, by: by, at: now()) else {
                throw APIError(.notFound, "no firing alert has id \(id)")
            }
            // The first ack of an episode holds: `acked_by` names whose it is, `already` says this
            // one changed nothing.
            return KlaxonHTTP.json(
                encoded: AckAnswer(
                    ackedAt: acked.earlier.map { Timestamp.format($0.at) }, ackedBy: acked.earlier?.by ?? by,
                    already: acked.earlier != nil ? true : nil, id: id, metric: acked.key.metric,
                    rule: acked.key.rule, station: acked.key.station),
                status: .ok)
        }
        team.delete("/api/v1/silences/:id") { _, context -> Response in
            let id = context.parameters.get("id") ?? ""
            switch try await store.expireSilence(id: id, now: now()) {
            case .expired(let full):
                return KlaxonHTTP.json(encoded: ["expired": full], status: .ok)
            case .notFound:
                throw APIError(.notFound, "no active silence \(id)")
            case .ambiguous(let ids):
                throw APIError(.conflict, "\(id) names \(ids.count) silences; give more of the id", matches: ids)
            }
        }

        owners.get("/api/v1/trips") { _, context -> Response in
            // An owner's trips are few (the operator adds them), but the answer is bounded all the
            // same: the first `maxTrips` by name, and how many there are (`total`).
            let all = try await store.trips(owner: context.owner)
            let trips = all.sorted { $0.name < $1.name }.prefix(maxTrips).map { t in
                TripSummary(
                    firstDay: Packer.days(of: t).first?.date ?? "", lastDay: Packer.days(of: t).last?.date ?? "",
                    name: t.name, stops: t.stops.map(\.place))
            }
            return KlaxonHTTP.json(encoded: TripList(total: all.count, trips: Array(trips)), status: .ok)
        }
        owners.get("/api/v1/trips/:name") { _, context -> Response in
            guard let name = context.parameters.get("name"),
                let trip = try await store.trip(owner: context.owner, name: name)
            else {
                throw APIError(.notFound, "trip not found")
            }
            let weather = try await store.weather(for: trip)
            let list = Packer.pack(trip, weather: weather, air: try await store.airDays(for: trip))
            let items = list.items.map {
                PackedItem(
                    category: $0.category, item: $0.item, quantity: $0.quantity,
                    reason: $0.reasons.joined(separator: "; "))
            }
            return KlaxonHTTP.json(encoded: PackedTrip(items: items, name: trip.name, owner: trip.owner), status: .ok)
        }
        owners.delete("/api/v1/trips/:name") { _, context -> Response in
            guard let name = context.parameters.get("name"),
                try await store.removeTrip(owner: context.owner, name: name)
            else {
                throw APIError(.notFound, "trip not found")
            }
            return KlaxonHTTP.json(encoded: ["removed": name], status: .ok)
        }
    }

    /// The most trips `GET /api/v1/trips` lists.
    static let maxTrips = 1_000

    /// The owner an owner token belongs to.
    static func owner(_ request: Request, _ tokens: [String: String]) -> String? {
        for (owner, token) in tokens.sorted(by: { $0.key < $1.key }) where KlaxonHTTP.authorized(request, token: token)
        {
            return owner
        }
        return nil
    }
}
