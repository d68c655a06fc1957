import Foundation
import KlaxonCore
import KlaxonStore

// The requests and answers of `/api/v1` as Codable types, with the field names the API has always
// had. Encoded with `APIJSON` (keys sorted) through `KlaxonHTTP.json(encoded:status:)`.

/// `POST /api/v1/silences`: `{"matchers": ["rule=flood-stage"], "for": "2h", "comment": "…",
/// "created_by": "…"}`. A missing or mistyped `comment` is empty, `created_by` is `api`; what is
/// wrong with the rest is a 400 that says it.
struct NewSilence: Decodable {
    var matchers: [Matcher]
    var duration: Int64
    var comment: String
    var createdBy: String

    enum CodingKeys: String, CodingKey {
        case matchers
        case duration = "for"
        case comment
        case createdBy = "created_by"
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        guard let texts = try? c.decode([String].self, forKey: .matchers), !texts.isEmpty else {
            throw APIError(.badRequest, "matchers: a list like [\"rule=flood-stage\", \"station=14211720\"]")
        }
        guard let text = try? c.decode(String.self, forKey: .duration), let d = DurationText.parse(text), d > 0 else {
            throw APIError(.badRequest, "for: a duration like 2h")
        }
        do {
            matchers = try texts.map { try Matcher.parse($0) }
        } catch {
            throw APIError(.badRequest, "matchers: \(error)")
        }
        duration = d
        // The client names its author: not one only the server may write (`slack:…`), no control characters.
        comment = (try? c.decode(String.self, forKey: .comment)) ?? ""
        createdBy = (try? c.decode(String.self, forKey: .createdBy)) ?? "api"
        if let problem = Silence.commentProblem(comment) ?? Silence.claimedAuthorProblem(createdBy) {
            throw APIError(.badRequest, problem)
        }
    }
}

/// A silence as `/api/v1/silences` shows it.
struct APISilence: Encodable {
    var comment: String
    var createdBy: String
    var ends: String
    var id: String
    var matchers: [String]
    var starts: String

    enum CodingKeys: String, CodingKey {
        case comment, ends, id, matchers, starts
        case createdBy = "created_by"
    }

    init(_ s: Silence) {
        comment = s.comment
        createdBy = s.createdBy
        ends = Timestamp.format(s.ends)
        id = s.id
        matchers = s.matchers.map(\.description)
        starts = Timestamp.format(s.starts)
    }
}

/// `POST /api/v1/alerts/:id/ack`'s optional body: `{"by": "alice"}` (anything but a string is no name).
struct AckRequest: Decodable {
    var by: String?

    enum CodingKeys: String, CodingKey { case by }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        by = try? c.decode(String.self, forKey: .by)
    }
}

/// The answer to an ack: the alert, whose ack holds (`acked_by`), and, when it was acked already,
/// `already` and when (`acked_at`).
struct AckAnswer: Encodable {
    var ackedAt: String?
    var ackedBy: String
    var already: Bool?
    var id: Int64
    var metric: String
    var rule: String
    var station: String

    enum CodingKeys: String, CodingKey {
        case ackedAt = "acked_at"
        case ackedBy = "acked_by"
        case already, id, metric, rule, station
    }
}

/// `GET /api/v1/trips`: the owner's trips (at most `APIRoutes.maxTrips`) and how many there are.
struct TripList: Encodable {
    var total: Int
    var trips: [TripSummary]
}

/// A trip in `TripList`.
struct TripSummary: Encodable {
    var firstDay: String
    var lastDay: String
    var name: String
    var stops: [String]

    enum CodingKeys: String, CodingKey {
        case firstDay = "first_day"
        case lastDay = "last_day"
        case name, stops
    }
}

/// `GET /api/v1/trips/:name`: the trip's packing list.
struct PackedTrip: Encodable {
    var items: [PackedItem]
    var name: String
    var owner: String
}

/// A line of `PackedTrip`: the reasons joined by `; `.
struct PackedItem: Encodable {
    var category: String
    var item: String
    var quantity: Int
    var reason: String
}

/// The answer to `POST /api/v1/readings`: what was stored, and the rejected lines (at most
/// `KlaxonHTTP.Push.maxReported`; `rejected_count` when there were more). `suspect` when some were.
struct PushAnswer: Encodable {
    var inserted: Int
    var rejected: [String]
    var rejectedCount: Int?
    var revised: Int
    var suspect: Int?
    var unchanged: Int

    enum CodingKeys: String, CodingKey {
        case inserted, rejected, revised, suspect, unchanged
        case rejectedCount = "rejected_count"
    }
}

/// A firing alert as `/api/v1/alerts` shows it. `id` is the alert's for its whole episode (what
/// `ack` takes); `since` is when the episode began, `level_since` when its current level was reached.
struct APIAlert: Encodable {
    var ackedAt: String?
    var ackedBy: String?
    var id: Int64
    var level: String?
    var levelSince: String?
    var metric: String
    var rule: String
    var severity: String
    var since: String
    var station: String
    var summary: String
    var transitionID: Int64
    var value: Double?

    enum CodingKeys: String, CodingKey {
        case ackedAt = "acked_at"
        case ackedBy = "acked_by"
        case id, level
        case levelSince = "level_since"
        case metric, rule, severity, since, station, summary
        case transitionID = "transition_id"
        case value
    }

    init(_ a: FiringAlert) {
        let t = a.transition
        ackedAt = a.ack.map { Timestamp.format($0.at) }
        ackedBy = a.ack?.by
        id = a.episode
        level = t.level
        levelSince = t.level == nil ? nil : Timestamp.format(t.at)
        metric = a.key.metric
        rule = a.key.rule
        severity = t.severity.rawValue
        since = Timestamp.format(a.startedAt)
        station = a.key.station
        summary = t.summary
        transitionID = a.transitionID
        value = t.value
    }
}

/// One page of a `GET /api/v1/…` list: the items under their own name (`alerts`, `silences`), `next` (null on
/// the last page) and `total`.
struct APIPage<Item: Encodable>: Encodable {
    var name: String
    var items: [Item]
    var next: String?
    var total: Int

    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(items, forKey: Key(name))
        try c.encode(next, forKey: Key("next"))  // written as null, not left out
        try c.encode(total, forKey: Key("total"))
    }
}

typealias APISilencePage = APIPage<APISilence>
typealias APIAlertPage = APIPage<APIAlert>

extension APIPage where Item == APISilence {
    init(next: String?, silences: [APISilence], total: Int) {
        self.init(name: "silences", items: silences, next: next, total: total)
    }
}

extension APIPage where Item == APIAlert {
    init(alerts: [APIAlert], next: String?, total: Int) {
        self.init(name: "alerts", items: alerts, next: next, total: total)
    }
}

/// A notification as `/api/v1/notifications` shows it: one alert to one receiver (the rows sent
/// together as one message share `key`), what became of it (`state`: `delivered`, `failed`,
/// `pending`, `dropped`, `folded`: an open set; `outbox_state` is the outbox's own word) and why
/// (`reason`), when it was queued and sent, and the alert it carried.
struct APINotification: Encodable {
    var alert: Alert?
    var attempts: Int
    var dueAt: String?
    var id: String
    var key: String
    var outboxState: String
    var purpose: String
    var queuedAt: String
    var reason: String?
    var receiver: String
    var sentAt: String?
    var state: String

    /// The alert, as its transition was logged: its id for the episode (what `ack` takes).
    struct Alert: Encodable {
        var at: String
        var fromLevel: String?
        var id: Int64
        var level: String?
        var message: String
        var metric: String
        var rule: String
        var severity: String
        var state: String
        var station: String
        var transitionID: Int64

        enum CodingKeys: String, CodingKey {
            case at
            case fromLevel = "from_level"
            case id, level, message, metric, rule, severity, state, station
            case transitionID = "transition_id"
        }
    }

    enum CodingKeys: String, CodingKey {
        case alert, attempts
        case dueAt = "due_at"
        case id, key
        case outboxState = "outbox_state"
        case purpose
        case queuedAt = "queued_at"
        case reason, receiver
        case sentAt = "sent_at"
        case state
    }

    init(_ e: NotificationEntry) {
        let row = e.row
        alert = e.transition.map { t in
            Alert(
                at: Timestamp.format(t.at), fromLevel: t.fromLevel, id: t.episodeID, level: t.level, message: t.message,
                metric: t.metric, rule: t.rule, severity: t.severity, state: t.state, station: t.station,
                transitionID: t.id ?? row.transitionID)
        }
        attempts = row.attempts
        dueAt = e.state == "pending" ? Timestamp.format(row.dueAt / 1000) : nil
        id = row.id
        key = e.key
        outboxState = row.state.rawValue
        purpose = row.purpose
        queuedAt = Timestamp.format(row.createdAt / 1000)
        reason = e.reason
        receiver = row.receiver
        sentAt = row.sentAt.map { Timestamp.format($0 / 1000) }
        state = e.state
    }
}

typealias APINotificationPage = APIPage<APINotification>

extension APIPage where Item == APINotification {
    init(notifications: [APINotification], next: String?, total: Int) {
        self.init(name: "notifications", items: notifications, next: next, total: total)
    }
}
