import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Acknowledges the firing alert this id names (its episode's id, or any transition of the
    /// episode): it stops repeating and escalating until it resolves. Returns the alert, or nil when
    /// no firing alert has that id.
    @discardableResult
    public func ack(transitionID: Int64, by: String, at now: Int64) async throws -> (
        key: AlertKey, transition: Transition
    )? {
        // One probe for that alert, not the whole firing set (an HTTP or chat request asks).
        guard let alert = try await firingAlert(transitionID: transitionID) else { return nil }
        let episode = alert.episode
        try await requireWriter().write { db in
            try db.execute(
                sql: """
                    INSERT INTO acks (rule, station, metric, transition_id, acked_by, acked_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (rule, station, metric) DO UPDATE SET transition_id = excluded.transition_id,
                        acked_by = excluded.acked_by, acked_at = excluded.acked_at
                    WHERE acks.transition_id <> excluded.transition_id
                    """,
                arguments: [alert.key.rule, alert.key.station, alert.key.metric, episode, by, now])
        }
        return (alert.key, alert.transition)
    }

    /// Acks that still hold: the alert is firing with the transition that was acknowledged. A join
    /// in the store: the firing set is never loaded to be matched in memory.
    public func acks() async throws -> [AlertKey: Ack] {
        try await reader.read { db in
            var out: [AlertKey: Ack] = [:]
            for row in try Row.fetchAll(
                db,
                sql: AckSQL.holding)
            {
                let key = AlertKey(rule: row["rule"], station: row["station"], metric: row["metric"])
                out[key] = Ack(transitionID: row["transition_id"], by: row["acked_by"], at: row["acked_at"])
            }
            return out
        }
    }

    /// Takes `key` for its first use until `expires`; false while an earlier use is remembered.
    public func claimOnce(key: String, expires: Int64, now: Int64) async throws -> Bool {
        try await requireWriter().write { db in
            try db.execute(
                sql: """
                    DELETE FROM chat_seen WHERE key IN (
                        SELECT key FROM chat_seen WHERE expires < ? AND key <> ? LIMIT \(ChatSeenSQL.pruneBatch))
                    """, arguments: [now, key])
            try db.execute(
                sql: """
                    INSERT INTO chat_seen (key, expires) VALUES (?, ?)
                    ON CONFLICT (key) DO UPDATE SET expires = excluded.expires WHERE chat_seen.expires < ?
                    """, arguments: [key, expires, now])
            return db.changesCount > 0
        }
    }

    /// Forgets `key`, so that it may be used again.
    public func releaseOnce(key: String) async throws {
        try await requireWriter().write { db in
            try db.execute(sql: "DELETE FROM chat_seen WHERE key = ?", arguments: [key])
        }
    }
}
