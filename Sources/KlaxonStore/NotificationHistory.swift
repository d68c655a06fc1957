import Foundation
import KlaxonCore

/// The notification history (`GET /api/v1/notifications`, the site's `/notifications` and the
/// section of an alert's page): the durable outbox read as what was sent, or not, to whom and when.
/// One read, newest first, paged by the outbox's `seq` (keyset paging: following `next` visits each
/// row once, however the outbox grows meanwhile).
public protocol NotificationHistory: Sendable {
    /// A page of notifications matching `filter`, newest first, after `after`, at most `limit`
    /// (clamped to 1…`FiringQueries.maximumPage`), each with the transition it carried, and how many
    /// match in all.
    func notifications(_ filter: NotificationFilter, limit: Int, after: NotificationCursor?) async throws
        -> NotificationPage
}

/// Which notifications a history page lists: all, an alert's (its episode: the id messages show, or
/// any of its transitions' ids), a receiver's, or both.
public struct NotificationFilter: Sendable, Equatable {
    public var episode: Int64?
    public var receiver: String?

    public init(episode: Int64? = nil, receiver: String? = nil) {
        self.episode = episode
        self.receiver = receiver
    }

    /// The longest receiver name a filter takes (longer names match nothing and are refused early).
    public static let maxReceiver = 256
}

/// A position in the notification history: the outbox `seq` of the last row shown. As text, its
/// decimal digits.
public struct NotificationCursor: Sendable, Hashable, LosslessStringConvertible {
    public var seq: Int64

    public init(seq: Int64) { self.seq = seq }

    /// Reads the text form; nil for anything else (it comes from a request: hostile).
    public init?(_ text: String) {
        guard (1...19).contains(text.utf8.count), text.utf8.allSatisfy({ (48...57).contains($0) }),
            let seq = Int64(text)
        else { return nil }
        self.seq = seq
    }

    public var description: String { String(seq) }
}

/// One notification of the history: an outbox row (one alert to one receiver; the rows sent together
/// as one message share `row.batch`, the message's idempotency key) and the transition it carried.
public struct NotificationEntry: Sendable {
    public var row: OutboxRecord
    /// Nil only if the transition is gone (a store restored in part).
    public var transition: TransitionRecord?

    public init(row: OutboxRecord, transition: TransitionRecord?) {
        self.row = row
        self.transition = transition
    }

    /// What became of it, in the history's words: `delivered`, `failed` (given up), `pending` (queued,
    /// being sent, retrying, held), `dropped` (muted by a silence, dropped in quiet hours, not sent by
    /// rule), `folded` (a later message of the alert carried it, or the receiver's storm summary did:
    /// it was over its `budget`). An open set: readers should show a
    /// word they do not know as it is.
    public var state: String {
        switch row.state {
        case .sent: "delivered"
        case .dead: "failed"
        case .pending, .sending, .held: "pending"
        case .skipped where row.lastError?.hasPrefix(Budget.foldedPrefix) == true: "folded"
        case .muted, .dropped, .skipped: "dropped"
        case .superseded: "folded"
        }
    }

    /// Why it is in that state, in words (nil for a plain delivery): the last error of a failure or a
    /// retry, the silence, quiet hours, the rule that did not send it.
    public var reason: String? {
        if let until = row.quietUntil { return "held by quiet hours until \(Timestamp.format(until))" }
        switch row.state {
        case .sent: return nil
        case .dead: return row.lastError ?? "given up"
        case .pending, .sending: return row.lastError.map { "retrying: \($0)" }
        case .held: return "held: data older than notify_max_age, decided once the evaluation has caught up"
        case .muted: return "muted by a silence"
        case .dropped: return row.lastError ?? "dropped during quiet hours"
        case .skipped: return row.lastError ?? "not sent"
        case .superseded: return "folded into a later message of the alert"
        }
    }

    /// The message it went out in: the batch's idempotency key (the row's own id until it is claimed).
    public var key: String { row.batch ?? row.id }
}

/// One page of the notification history, how many match in all, and where the next page starts.
public struct NotificationPage: Sendable {
    public var entries: [NotificationEntry]
    public var total: Int
    public var next: NotificationCursor?

    public init(entries: [NotificationEntry], total: Int, next: NotificationCursor?) {
        self.entries = entries
        self.total = total
        self.next = next
    }
}

/// SQL both backends share for the history. `$n` placeholders are bound by each backend in the order
/// `where(_:)` lists them.
public enum NotificationSQL {
    /// The conditions of `filter` on `outbox o`, after a first one (`seq < $1`, or true), as SQL with
    /// `?` placeholders, and what to bind, in order: the receiver, then the episode's alert key and
    /// id (twice). The episode's rows are those of its alert whose transition belongs to it (the
    /// alert's rows are one index range, `outbox_by_alert`).
    public static func conditions(_ filter: NotificationFilter, alert: String?) -> (sql: String, binds: [Binding]) {
        var sql = ""
        var binds: [Binding] = []
        if let receiver = filter.receiver {
            sql += " AND o.receiver = ?"
            binds.append(.text(receiver))
        }
        if let episode = filter.episode {
            sql += """
                 AND o.alert = ? AND o.transition_id IN (
                  SELECT id FROM transitions WHERE episode = ? OR (episode IS NULL AND id = ?))
                """
            binds += [.text(alert ?? ""), .integer(episode), .integer(episode)]
        }
        return (sql, binds)
    }

    public enum Binding: Sendable, Equatable {
        case text(String)
        case integer(Int64)
    }

    /// `?` placeholders as PostgreSQL's `$n`, numbered from `first`.
    public static func numbered(_ sql: String, from first: Int) -> String {
        var out = ""
        var n = first
        for c in sql {
            if c == "?" {
                out += "$\(n)"
                n += 1
            } else {
                out.append(c)
            }
        }
        return out
    }
}
