import KlaxonCore

/// Rows claimed as they are queued, for this process's dispatcher (`EvaluationObserver`): the claim
/// the dispatcher would make right after the commit, made by the queueing itself. A row is taken
/// when it is due, the receiver's lane has room, and its alert has no earlier row unsent to that
/// receiver (the claim's own order rule); it is inserted `sending`, leased and marked with the
/// instance, in one batch with the others of its receiver, route and group taken in this
/// transaction. Anything else is queued `pending`, for a claim. A backend tells it which rows were
/// unsent before the transaction (`noteOpen`) and inserts the rows `take` returns.
///
/// Unchecked `Sendable`: a claim is made for one transaction, used by it alone (on whatever thread
/// the backend runs it), and read by the evaluation only after that transaction has returned.
public final class QueueClaim: @unchecked Sendable {
    public let instance: String
    public let lease: Int64
    public let now: Int64
    public private(set) var room: Int
    let excluding: Set<String>
    public private(set) var batches: [OutboxBatch] = []
    private var index: [String: Int] = [:]
    /// The outbox's last `seq`, where a backend counts it itself (read once per transaction).
    public var seq: Int64?
    /// `alert|receiver` of the rows unsent (pending or sending) among the transaction's alerts.
    private var open: Set<String> = []
    /// What each receiver last heard of the transaction's alerts (`heardKey`), for the rows taken.
    public var heard: [String: Heard] = [:]

    public static func heardKey(alert: String, receiver: String) -> String { alert + "\u{1F}" + receiver }

    public init(instance: String, lease: Int64, now: Int64, room: Int, excluding: [String]) {
        self.instance = instance
        self.lease = lease
        self.now = now
        self.room = room
        self.excluding = Set(excluding)
    }

    /// The claim a slice makes for the room a dispatcher offers (`EvaluationObserver.handoffRoom`).
    public convenience init(_ room: HandoffRoom) {
        self.init(
            instance: room.instance, lease: room.lease, now: room.now, room: room.limit, excluding: room.excluding)
    }

    /// A row of `alert` to `receiver` was unsent before the transaction.
    public func noteOpen(alert: String, receiver: String) {
        open.insert(alert + "\u{1F}" + receiver)
    }

    /// Whether a row queued now for `receiver` is taken: not while an earlier row of the alert is
    /// still unsent to the receiver (pending or in flight), which goes first.
    public func takes(_ receiver: String, alert: String, dueAt: Int64) -> Bool {
        room > 0 && dueAt <= now && !excluding.contains(receiver) && !open.contains(alert + "\u{1F}" + receiver)
    }

    /// A row queued (pending or claimed): it goes before any later row of its alert and receiver.
    public func queued(alert: String, receiver: String) {
        open.insert(alert + "\u{1F}" + receiver)
    }

    /// Takes `found` (a row `takes` allowed) into its batch: returns it as it is to be inserted
    /// (sending, leased, in its batch).
    public func take(_ found: OutboxRecord, transition: TransitionRecord?) -> OutboxRecord {
        var row = found
        let key = OutboxBatch.groupKey(row)
        let i = index[key]
        row.batch = i.map { batches[$0].key } ?? row.id
        row.leaseUntil = now + lease
        row.state = .sending
        row.heard = heard[Self.heardKey(alert: row.alert, receiver: row.receiver)]
        room -= 1
        queued(alert: row.alert, receiver: row.receiver)
        if let i {
            batches[i].rows.append(row)
            if let transition { batches[i].transitions.append(transition) }
        } else {
            index[key] = batches.count
            batches.append(
                OutboxBatch(
                    key: row.id, receiver: row.receiver, route: row.route, rows: [row],
                    transitions: transition.map { [$0] } ?? [], attempt: row.attempts, firstCreatedAt: row.createdAt))
        }
        return row
    }
}
