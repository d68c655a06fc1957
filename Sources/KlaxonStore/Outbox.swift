import Foundation
import KlaxonCore
import Synchronization

/// A row of `outbox`: one notification owed to one receiver. Its `id` is stable for life and is the
/// idempotency key: a retry, or a resend after a crash, carries the same key.
public struct OutboxRecord: Codable, Sendable, Equatable {
    public enum State: String, Codable, Sendable, CaseIterable {
        case pending, sending, sent, dead, muted, dropped
        /// Its data was older than `notify_max_age`: decided once the evaluation has caught up.
        case held
        /// A newer row of its alert took its place before it went out (see `path`).
        case superseded
        /// Not sent by rule: a resolve for a receiver that never heard the alert firing, or held
        /// data that told nothing new (`last_error` says which).
        case skipped
    }

    public var id: String
    public var seq: Int64
    public var transitionID: Int64
    public var receiver: String
    /// Index of the route whose timing applies (nil: defaults).
    public var route: Int?
    /// `rule|station|metric`: deliveries of one alert to one receiver go out in order.
    public var alert: String
    public var groupKey: String
    public var purpose: String
    public var state: State
    /// The id of the batch (the idempotency key) a claimed row is sent in; kept across crashes.
    public var batch: String?
    public var attempts: Int
    /// Milliseconds since the epoch.
    public var dueAt: Int64
    public var leaseUntil: Int64?
    public var createdAt: Int64
    public var sentAt: Int64?
    public var lastError: String?
    /// The states of its alert folded into this row (`PathStep.encode`): rows it took the place of.
    public var path: String?
    /// What the receiver last heard of the alert when the row was claimed (not a column).
    public var heard: Heard? = nil

    enum CodingKeys: String, CodingKey {
        case id, seq
        case transitionID = "transition_id"
        case receiver, route, alert
        case groupKey = "group_key"
        case purpose, state, batch, attempts
        case dueAt = "due_at"
        case leaseUntil = "lease_until"
        case createdAt = "created_at"
        case sentAt = "sent_at"
        case lastError = "last_error"
        case path
    }

    public static func alertKey(_ t: Transition) -> String { "\(t.rule)|\(t.station)|\(t.metric)" }

    /// The batch of rows quiet hours hold for `receiver` until `end` (UTC seconds): one digest per
    /// receiver when the period ends, so a shared, stable key.
    public static func quietDigest(receiver: String, until end: Int64) -> String { "digest-\(receiver)-\(end)" }

    /// Until when (UTC seconds) quiet hours hold this row; nil when they do not.
    public var quietUntil: Int64? {
        guard state == .pending, let batch, batch.hasPrefix("digest-\(receiver)-") else { return nil }
        return dueAt / 1000
    }

    /// A new row id: a time-ordered (version 7, RFC 9562) UUID in lower case: the milliseconds since
    /// the epoch, then 74 random bits. Ids made one after another sort together, so the outbox's
    /// primary-key index grows at its end instead of taking each new row on a random page (with
    /// version 4 ids, a slice of 250 rows dirtied about as many index pages, each written to the WAL
    /// at commit). Written directly (`uuidString.lowercased()` cost as much as the row's insert) from
    /// a generator seeded once from the system's: `UUID()` asks the kernel for randomness every time.
    /// The ids are keys, not secrets.
    public static func newID(now: Int64 = Int64(Date().timeIntervalSince1970 * 1000)) -> String {
        let (a, b) = idGenerator.withLock { ($0.next(), $0.next()) }
        let ms = UInt64(clamping: max(0, now))
        var bytes = (0..<6).map { UInt8(truncatingIfNeeded: ms >> (8 * (5 - $0))) }
        bytes += (0..<2).map { UInt8(truncatingIfNeeded: a >> (8 * $0)) }
        bytes += (0..<8).map { UInt8(truncatingIfNeeded: b >> (8 * $0)) }
        bytes[6] = bytes[6] & 0x0f | 0x70  // version 7
        bytes[8] = bytes[8] & 0x3f | 0x80  // RFC 9562 variant
        var out: [UInt8] = []
        out.reserveCapacity(36)
        for (i, b) in bytes.enumerated() {
            if i == 4 || i == 6 || i == 8 || i == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hexDigits[Int(b >> 4)])
            out.append(hexDigits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
    private static let idGenerator = Mutex(Xoshiro256())

    public init(
        id: String, seq: Int64, transitionID: Int64, receiver: String, route: Int?, alert: String, groupKey: String,
        purpose: String, state: State, batch: String?, attempts: Int, dueAt: Int64, leaseUntil: Int64?,
        createdAt: Int64, sentAt: Int64?, lastError: String?, path: String? = nil
    ) {
        self.path = path
        self.id = id
        self.seq = seq
        self.transitionID = transitionID
        self.receiver = receiver
        self.route = route
        self.alert = alert
        self.groupKey = groupKey
        self.purpose = purpose
        self.state = state
        self.batch = batch
        self.attempts = attempts
        self.dueAt = dueAt
        self.leaseUntil = leaseUntil
        self.createdAt = createdAt
        self.sentAt = sentAt
        self.lastError = lastError
    }

}

/// xoshiro256** (Blackman and Vigna), seeded from the system's generator.
struct Xoshiro256: RandomNumberGenerator {
    private var s: (UInt64, UInt64, UInt64, UInt64)

    init() {
        var system = SystemRandomNumberGenerator()
        s = (system.next(), system.next(), system.next(), system.next())
        if s == (0, 0, 0, 0) { s.0 = 1 }
    }

    mutating func next() -> UInt64 {
        let result = (s.1 &* 5).rotatedLeft(7) &* 9
        let t = s.1 << 17
        s.2 ^= s.0
        s.3 ^= s.1
        s.1 ^= s.2
        s.0 ^= s.3
        s.2 ^= t
        s.3 = s.3.rotatedLeft(45)
        return result
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(_ k: UInt64) -> UInt64 { (self << k) | (self >> (64 - k)) }
}

/// A claimed notification: the rows sent together as one message, with their transitions.
public struct OutboxBatch: Sendable {
    /// The idempotency key: the id of the batch's first row, the same on every attempt.
    public var key: String
    public var receiver: String
    public var route: Int?
    public var rows: [OutboxRecord]
    public var transitions: [TransitionRecord]
    /// 1 on the first attempt.
    public var attempt: Int
    /// When the oldest row was created (ms), for give-up decisions.
    public var firstCreatedAt: Int64

    /// A batch another backend claimed (`KlaxonPostgres`).
    public init(
        key: String, receiver: String, route: Int?, rows: [OutboxRecord], transitions: [TransitionRecord],
        attempt: Int, firstCreatedAt: Int64
    ) {
        self.key = key
        self.receiver = receiver
        self.route = route
        self.rows = rows
        self.transitions = transitions
        self.attempt = attempt
        self.firstCreatedAt = firstCreatedAt
    }
}

extension OutboxBatch {
    /// What rows sent together share: receiver, route and group.
    package static func groupKey(_ row: OutboxRecord) -> String {
        "\(row.receiver)\u{1F}\(row.route.map(String.init) ?? "-")\u{1F}\(row.groupKey)"
    }

    /// Claimed rows (in queue order, each with its transition) gathered into batches: rows of one
    /// receiver, route and group go out together, and a row that was already in a batch keeps it (the
    /// same idempotency key after a crash). Each row is marked as this claim leaves it: sending,
    /// leased until `now + lease`, one attempt more. Every store's claim shares this.
    public static func group(_ claimed: [(OutboxRecord, TransitionRecord?)], now: Int64, lease: Int64)
        -> [OutboxBatch]
    {
        var batches: [OutboxBatch] = []
        var index: [String: Int] = [:]
        for (found, transition) in claimed {
            var row = found
            let key = row.batch ?? groupKey(row)
            row.state = .sending
            row.leaseUntil = now + lease
            row.attempts += 1
            if let i = index[key] {
                batches[i].rows.append(row)
                if let transition { batches[i].transitions.append(transition) }
                batches[i].attempt = max(batches[i].attempt, row.attempts)
                batches[i].firstCreatedAt = min(batches[i].firstCreatedAt, row.createdAt)
            } else {
                index[key] = batches.count
                batches.append(
                    OutboxBatch(
                        key: row.batch ?? row.id, receiver: row.receiver, route: row.route, rows: [row],
                        transitions: transition.map { [$0] } ?? [], attempt: row.attempts,
                        firstCreatedAt: row.createdAt))
            }
        }
        return batches
    }
}

public enum OutboxOutcome: Sendable {
    /// Sent, dead, muted or dropped; or back to pending at `retryAt` (ms).
    case finish(OutboxBatch, state: OutboxRecord.State, now: Int64, retryAt: Int64?, error: String?)
    /// Held for a quiet-hours digest under `batchKey`, due at `dueAt` (ms).
    case reschedule(OutboxBatch, batchKey: String, dueAt: Int64)
    /// A transition Klaxon raises about itself, queued for one receiver.
    case system(Transition, message: String, receiver: String, now: Int64)
}
