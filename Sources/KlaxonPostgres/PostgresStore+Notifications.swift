import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

/// The notification history (`NotificationHistory`), as `SQLiteStore` reads it: one page of outbox
/// rows, newest first, by an index range, each with its transition.
extension PostgresStore {
    public func notifications(_ filter: NotificationFilter, limit: Int, after: NotificationCursor?) async throws
        -> NotificationPage
    {
        let limit = FiringQueries.clamp(limit)
        var filter = filter
        var alert: String? = nil
        if let id = filter.episode {
            // The episode an id names (its own, or a transition's of it), and its alert.
            guard
                let row = try await rows(
                    "SELECT coalesce(episode, id), rule, station, metric FROM transitions WHERE id = \(id)"
                ).first
            else { return NotificationPage(entries: [], total: 0, next: nil) }
            filter.episode = try row[0].decode(Int64.self)
            alert =
                "\(try row[1].decode(String.self))|\(try row[2].decode(String.self))|\(try row[3].decode(String.self))"
        }
        let (conditions, binds) = NotificationSQL.conditions(filter, alert: alert)
        func bindings(first: Int64?) -> PostgresBindings {
            var b = PostgresBindings(capacity: binds.count + 1)
            if let first { b.append(first) }
            for bind in binds {
                switch bind {
                case .text(let s): b.append(s)
                case .integer(let i): b.append(i)
                }
            }
            return b
        }
        let total =
            try await scalar(
                PostgresQuery(
                    unsafeSQL: "SELECT count(*) FROM outbox o WHERE true"
                        + NotificationSQL.numbered(conditions, from: 1),
                    binds: bindings(first: nil)), as: Int64.self) ?? 0
        let found = try await rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT to_jsonb(o)::text, (SELECT to_jsonb(t)::text FROM transitions t WHERE t.id = o.transition_id)
                    FROM outbox o WHERE o.seq < $1\(NotificationSQL.numbered(conditions, from: 2))
                    ORDER BY o.seq DESC LIMIT \(limit + 1)
                    """, binds: bindings(first: after?.seq ?? Int64.max)))
        var entries: [NotificationEntry] = []
        for row in found.prefix(limit) {
            let record = try Self.decoder.decode(OutboxRecord.self, from: Data(try row[0].decode(String.self).utf8))
            let transition = try row[1].decode(String?.self).map {
                try Self.decoder.decode(TransitionRecord.self, from: Data($0.utf8))
            }
            entries.append(NotificationEntry(row: record, transition: transition))
        }
        return NotificationPage(
            entries: entries, total: Int(total),
            next: found.count > limit ? entries.last.map { NotificationCursor(seq: $0.row.seq) } : nil)
    }
}
