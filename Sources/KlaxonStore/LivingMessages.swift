import Foundation
import KlaxonCore

// Living messages (issue 41): one message per receiver and episode (or group), posted at the first
// notification and then edited in place on every later one, with the episode's timeline in it. The
// platform's reference to the message is stored here, beside the deliveries, so an edit after a
// restart, or on the other daemon of an HA pair, edits the same message.

/// A receiver's living message: the platform's id of the one message it keeps for a thread (an
/// episode, or a group where its route groups), and the timeline that message shows.
public struct LivingMessage: Sendable, Equatable {
    public var receiver: String
    /// What the message is about (`LivingMessage.thread(episode:)`, `LivingMessage.thread(group:)`).
    public var thread: String
    /// The platform's id of the message (Discord: the message's snowflake).
    public var messageID: String
    /// What the message shows so far, oldest first (at most `timelineLimit` entries).
    public var timeline: [TimelineEntry]
    /// The batch (idempotency key) that last posted or edited it: a resend of that batch (a crash
    /// before its outcome was recorded) edits the message again, never posts another.
    public var batch: String
    /// The thread ended in it (everything in it resolved): a later firing of a group posts a new one.
    public var closed: Bool
    /// Milliseconds since the epoch.
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        receiver: String, thread: String, messageID: String, timeline: [TimelineEntry], batch: String,
        closed: Bool = false, createdAt: Int64, updatedAt: Int64
    ) {
        self.receiver = receiver
        self.thread = thread
        self.messageID = messageID
        self.timeline = timeline
        self.batch = batch
        self.closed = closed
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The most entries a timeline keeps: the first (how it began) and the newest. A flapping alert's
    /// message stays within its platform's limits, and its row stays small.
    public static let timelineLimit = 40

    /// The thread of one alert's episode.
    public static func thread(episode: Int64) -> String { "episode:\(episode)" }
    /// The thread of a group (its `groupKey`).
    public static func thread(group: String) -> String { "group:\(group)" }

    /// The column's text: a JSON array of `{"at": seconds, "t": text, "a": alert, "s": state}`.
    public static func encode(_ timeline: [TimelineEntry]) -> String {
        "["
            + timeline.map { e in
                "{\"at\":\(e.at),\"t\":\(JSONText.string(e.text))"
                    + (e.alert.map { ",\"a\":" + JSONText.string($0) } ?? "")
                    + (e.state.map { ",\"s\":" + JSONText.string($0.rawValue) } ?? "") + "}"
            }.joined(separator: ",") + "]"
    }

    /// The entries of a column's text (none if it does not decode: a damaged row shows no past).
    public static func decode(_ text: String?) -> [TimelineEntry] {
        guard let text, !text.isEmpty else { return [] }
        return ((try? JSONDecoder().decode([TimelineEntry].self, from: Data(text.utf8))) ?? [])
            .prefix(timelineLimit).map { $0 }
    }
}

/// One line of a living message's timeline: what happened (`rose to moderate`, `acked by ana`,
/// `resolved`) and when (UTC seconds); for an alert's change, which alert (`OutboxRecord.alertKey`)
/// and its state, so a group's message knows when everything in it has resolved.
public struct TimelineEntry: Codable, Sendable, Equatable, Hashable {
    public var at: Int64
    public var text: String
    public var alert: String?
    public var state: TransitionState?

    public init(at: Int64, text: String, alert: String? = nil, state: TransitionState? = nil) {
        self.at = at
        self.text = text
        self.alert = alert
        self.state = state
    }

    enum CodingKeys: String, CodingKey {
        case at
        case text = "t"
        case alert = "a"
        case state = "s"
    }

    /// Whether every alert the timeline tells of has resolved (its last change is a resolve): the
    /// thread has ended.
    public static func ended(_ timeline: [TimelineEntry]) -> Bool {
        var last: [String: TransitionState] = [:]
        for e in timeline { if let a = e.alert, let s = e.state { last[a] = s } }
        return !last.isEmpty && last.values.allSatisfy { $0 == .resolved }
    }

    /// `earlier` with `new` added: in time order (stable), each entry once, at most `limit` (the
    /// first and the newest kept).
    public static func merge(
        _ earlier: [TimelineEntry], _ new: [TimelineEntry], limit: Int = LivingMessage.timelineLimit
    )
        -> [TimelineEntry]
    {
        var seen = Set(earlier)
        var out = earlier
        for e in new where seen.insert(e).inserted { out.append(e) }
        out = out.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
        guard out.count > limit, limit > 1 else { return out }
        return [out[0]] + out.suffix(limit - 1)
    }
}

/// The living messages of the receivers that edit (the dispatcher's send stage).
public protocol LivingMessageStore: Sendable {
    /// The receiver's message for `thread`, nil when it has none.
    func livingMessage(receiver: String, thread: String) async throws -> LivingMessage?
    /// Records the receiver's message for its thread, replacing the one recorded before.
    func saveLivingMessage(_ message: LivingMessage) async throws
    /// Who acknowledged the episode `episode` of `alert`, and when: kept after the episode resolves
    /// (until the alert's next episode is acked), so a resolve's timeline still shows it.
    func episodeAck(alert: AlertKey, episode: Int64) async throws -> Ack?
}

/// The living messages' table and statements, the same text in both dialects.
public enum LivingMessageSQL {
    /// Binds receiver, thread, message id, timeline, batch, closed, created, updated.
    public static let save = """
        INSERT INTO living_messages (receiver, thread, message_id, timeline, batch, closed, created_at, updated_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
        ON CONFLICT (receiver, thread) DO UPDATE SET message_id = excluded.message_id,
            timeline = excluded.timeline, batch = excluded.batch, closed = excluded.closed,
            created_at = excluded.created_at, updated_at = excluded.updated_at
        """

    /// Binds receiver, thread.
    public static let find = """
        SELECT message_id, timeline, batch, closed, created_at, updated_at FROM living_messages
        WHERE receiver = $1 AND thread = $2
        """

    /// Binds rule, station, metric, episode.
    public static let ack = """
        SELECT acked_by, acked_at FROM acks WHERE rule = $1 AND station = $2 AND metric = $3 AND transition_id = $4
        """
}
