import Foundation
import KlaxonCore
import KlaxonStore

/// `klaxon outbox list|retry` once the command line is read: the command opens the store and calls
/// these, which write through `output`.
public enum OutboxCommands {
    /// The states `--state` accepts, in the words of its help and of its error.
    public static let states = OutboxRecord.State.allCases.map(\.rawValue).joined(separator: ", ")

    /// `--limit` and `--state`, checked before the store is opened: a wrong word is the error to report.
    public static func filter(state: String?, limit: Int) throws -> OutboxRecord.State? {
        guard (1...1_000_000).contains(limit) else { throw UserError("--limit must be from 1 to 1000000") }
        return try state.map { (word: String) throws -> OutboxRecord.State in
            guard let s = OutboxRecord.State(rawValue: word) else {
                throw UserError("--state must be one of \(Self.states) (not \"\(word)\")")
            }
            return s
        }
    }

    /// One row in `outbox list --format json` (times ISO 8601).
    struct Row: Encodable {
        var id: String
        var state: String
        var receiver: String
        var alert: String
        var attempts: Int
        var due: String
        var created: String
        var sent: String?
        var last_error: String?
    }

    /// `outbox list`: the newest `limit` rows (in `state`, when given), as text or JSON.
    public static func list(
        store db: any OutboxAdmin, state: OutboxRecord.State?, limit: Int, json: Bool,
        output: CommandOutput = .standard
    ) async throws -> Int32 {
        let rows = try await db.outbox(state: state, limit: limit)
        if rows.count == limit {
            output.error("outbox list: the newest \(limit) rows; --limit shows more")
        }
        if json {
            try output.json(
                rows.map {
                    Row(
                        id: $0.id, state: $0.state.rawValue, receiver: $0.receiver, alert: $0.alert,
                        attempts: Int($0.attempts), due: Timestamp.format($0.dueAt / 1000),
                        created: Timestamp.format($0.createdAt / 1000),
                        sent: $0.sentAt.map { Timestamp.format($0 / 1000) }, last_error: $0.lastError)
                })
            return 0
        }
        if rows.isEmpty { output.line("(empty)") }
        for r in rows {
            let due = Timestamp.format(r.dueAt / 1000)
            // last_error quotes what a receiver answered: hostile text, escaped.
            output.line(
                TerminalText.safe(
                    "\(r.id)  \(r.state.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0))  \(r.receiver)  \(r.alert)  attempts=\(r.attempts)  due=\(due)\(r.lastError.map { "  error=\($0)" } ?? "")"
                ))
        }
        return 0
    }

    /// `outbox retry`: queues a dead, dropped or muted row again (same id).
    public static func retry(
        id: String, store db: any OutboxAdmin, now: Int64, output: CommandOutput = .standard
    ) async throws -> Int32 {
        guard try await db.retryOutbox(id: id, now: now) else {
            throw UserError("no dead, dropped or muted outbox row \(id)")
        }
        output.line("queued \(id) again")
        return 0
    }
}
