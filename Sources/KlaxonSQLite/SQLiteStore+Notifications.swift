import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

/// The notification history (`NotificationHistory`): one page of outbox rows, newest first, read by
/// an index range (`seq`; a receiver's `outbox_by_receiver`; an alert's `outbox_by_alert`), then the
/// page's transitions by their ids.
extension SQLiteStore {
    public func notifications(_ filter: NotificationFilter, limit: Int, after: NotificationCursor?) async throws
        -> NotificationPage
    {
        let limit = FiringQueries.clamp(limit)
        return try await reader.read { db in
            guard let id = filter.episode else {
                return try Self.notifications(db, filter, alert: nil, limit: limit, after: after)
            }
            // The episode an id names (its own, or a transition's of it), and its alert.
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT coalesce(episode, id) AS e, rule, station, metric FROM transitions WHERE id = ?",
                    arguments: [id])
            else { return NotificationPage(entries: [], total: 0, next: nil) }
            let rule: String = row["rule"]
            let station: String = row["station"]
            let metric: String = row["metric"]
            var resolved = filter
            resolved.episode = row["e"]
            return try Self.notifications(
                db, resolved, alert: "\(rule)|\(station)|\(metric)", limit: limit, after: after)
        }
    }

    static func notifications(
        _ db: Database, _ filter: NotificationFilter, alert: String?, limit: Int, after: NotificationCursor?
    ) throws -> NotificationPage {
        let (conditions, binds) = NotificationSQL.conditions(filter, alert: alert)
        let values: [(any DatabaseValueConvertible)?] = binds.map { b -> (any DatabaseValueConvertible)? in
            switch b {
            case .text(let s): return s
            case .integer(let i): return i
            }
        }
        let total =
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM outbox o WHERE 1\(conditions)", arguments: StatementArguments(values))
            ?? 0
        let rows = try OutboxRecord.fetchAll(
            db, sql: "SELECT o.* FROM outbox o WHERE o.seq < ?\(conditions) ORDER BY o.seq DESC LIMIT ?",
            arguments: StatementArguments(
                [after?.seq ?? Int64.max] as [(any DatabaseValueConvertible)?] + values + [limit + 1]))
        let shown = Array(rows.prefix(limit))
        let ids = "[" + Set(shown.map(\.transitionID)).map(String.init).joined(separator: ",") + "]"
        let transitions = try TransitionRecord.fetchAll(
            db, sql: "SELECT * FROM transitions WHERE id IN (SELECT value FROM json_each(?))", arguments: [ids])
        let byID = Dictionary(transitions.compactMap { t in t.id.map { ($0, t) } }, uniquingKeysWith: { a, _ in a })
        return NotificationPage(
            entries: shown.map { NotificationEntry(row: $0, transition: byID[$0.transitionID]) }, total: total,
            next: rows.count > limit ? shown.last.map { NotificationCursor(seq: $0.seq) } : nil)
    }
}
