import Foundation
import KlaxonCore

/// Who acknowledged an alert, and which of its episodes: an ack holds until the episode resolves.
public struct Ack: Sendable, Equatable {
    /// The episode acknowledged (its id: the firing transition that opened it).
    public var transitionID: Int64
    public var by: String
    /// UTC seconds.
    public var at: Int64

    public init(transitionID: Int64, by: String, at: Int64) {
        self.transitionID = transitionID
        self.by = by
        self.at = at
    }
}

/// What an ack did: the alert it names and, when the episode was acked before by someone else,
/// that first ack (which holds: this one replaced nothing).
public struct AckResult: Sendable {
    public var key: AlertKey
    public var transition: Transition
    /// The first ack of the episode when it is not this caller's; nil when this ack took.
    public var earlier: Ack?
}

extension AckStore {
    /// Acks as `ack(transitionID:by:at:)` does, and says whether an earlier ack by someone else
    /// holds, so every door (CLI, chat command, chat button, API) can say "already acked by X"
    /// rather than "acked". Nil when no firing alert has that id.
    public func ackSayingWho(transitionID: Int64, by: String, at now: Int64) async throws -> AckResult? {
        guard let acked = try await ack(transitionID: transitionID, by: by, at: now) else { return nil }
        let holding = try await acks()[acked.key]
        return AckResult(
            key: acked.key, transition: acked.transition, earlier: holding.flatMap { $0.by != by ? $0 : nil })
    }
}

/// Ack queries both backends run, the same text in both dialects.
public enum AckSQL {
    /// The firing alert an id names (`$1`): the id of its open episode, or of any transition of that
    /// episode (an older message's), selecting `select` of its newest transition `t`.
    public static func firing(select: String) -> String {
        """
        SELECT \(select) FROM transitions t
        JOIN alert_states a ON a.rule = t.rule AND a.station = t.station AND a.metric = t.metric
        WHERE a.status = 'firing'
          AND t.id = (SELECT max(x.id) FROM transitions x
                      WHERE x.rule = t.rule AND x.station = t.station AND x.metric = t.metric)
          AND coalesce(t.episode, t.id) = (SELECT coalesce(g.episode, g.id) FROM transitions g WHERE g.id = $1)
        """
    }

    /// Acks that still hold: the alert is firing in the episode that was acknowledged.
    public static let holding = """
        SELECT k.rule, k.station, k.metric, k.transition_id, k.acked_by, k.acked_at FROM acks k
        JOIN alert_states a ON a.rule = k.rule AND a.station = k.station AND a.metric = k.metric
        WHERE a.status = 'firing' AND k.transition_id = (
            SELECT coalesce(x.episode, x.id) FROM transitions x
            WHERE x.rule = k.rule AND x.station = k.station AND x.metric = k.metric ORDER BY x.id DESC LIMIT 1)
        """
}

/// The chat replay guard's table (`claimOnce`), the same text in both dialects.
public enum ChatSeenSQL {
    /// Expired keys pruned per claim, at most: a claim's work stays small.
    public static let pruneBatch = 100
}
