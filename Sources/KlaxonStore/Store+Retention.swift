import Foundation
import GRDB
import KlaxonCore

/// A kind of history that retention prunes.
public enum HistoryKind: String, CaseIterable, Sendable, Hashable {
    /// Outbox rows sent, muted or dropped.
    case delivered
    /// Outbox rows given up on.
    case dead
    case transitions
    case readings
    /// Evaluated ingest-log entries, folded into one per series and source (their sums are kept).
    /// Pruned with readings.
    case ingestLog = "ingest_log"
    case forecasts
    /// Older versions of quake events (the newest version of each event is kept).
    case quakeRevisions = "quake_revisions"

    /// The order a pass works in: outbox rows first, so the transitions they held can go after them.
    static let passOrder: [HistoryKind] = [
        .delivered, .dead, .transitions, .readings, .ingestLog, .forecasts, .quakeRevisions,
    ]
}

/// What to prune: how long each kind of history is kept, as of when.
public struct RetentionPlan: Sendable, Equatable {
    /// Seconds since the epoch.
    public var now: Int64
    /// Seconds each kind is kept; a kind absent is kept forever. `ingestLog` follows `readings`.
    public var keep: [HistoryKind: Int64]
    /// Seconds of readings the rules look back over (rate windows, flood trends): a series keeps at
    /// least this much before its newest reading, whatever its age, so pruning never changes an
    /// evaluation. A series' newest reading is always kept.
    public var lookBack: Int64
    /// The most rows one write transaction removes.
    public var batch: Int

    public init(now: Int64, keep: [HistoryKind: Int64], lookBack: Int64 = 0, batch: Int = 5_000) {
        self.now = now
        self.keep = keep
        self.lookBack = max(0, lookBack)
        self.batch = max(1, batch)
    }

    /// Rows of `kind` older than this (seconds) may go; nil: the kind is kept forever.
    public func cutoff(_ kind: HistoryKind) -> Int64? {
        guard let k = keep[kind == .ingestLog ? .readings : kind] else { return nil }
        return now.subtractingClamped(max(0, k))
    }
}

/// Rows removed (or that would be), per kind.
public struct PruneCounts: Sendable, Equatable {
    public var removed: [HistoryKind: Int] = [:]

    public init(_ removed: [HistoryKind: Int] = [:]) { self.removed = removed }

    public subscript(_ kind: HistoryKind) -> Int {
        get { removed[kind] ?? 0 }
        set { removed[kind] = newValue }
    }

    public var total: Int { removed.values.reduce(0, +) }

    public mutating func add(_ other: PruneCounts) {
        for (k, v) in other.removed { self[k] += v }
    }
}

/// Where a prune pass stands between its transactions. Start from `.start`; done when `isDone`.
public struct PruneCursor: Sendable, Equatable {
    /// The index in `steps`; `a`, `b` and `c` are the backend's place within the step.
    public var step: Int
    public var a: Int64
    public var b: Int64
    public var c: Int64

    /// A place within a step (another backend's).
    public init(step: Int, a: Int64, b: Int64, c: Int64) {
        self.step = step
        self.a = a
        self.b = b
        self.c = c
    }

    public static let start = PruneCursor(step: 0, a: .min, b: .min, c: 0)
    public var isDone: Bool { step >= PruneCursor.steps.count }

    /// The pass's steps: outbox states one by one, then the other kinds.
    public static let steps: [(kind: HistoryKind, state: String?)] = [
        (.delivered, "sent"), (.delivered, "muted"), (.delivered, "dropped"), (.dead, "dead"),
        (.transitions, nil), (.readings, nil), (.ingestLog, nil), (.forecasts, nil), (.quakeRevisions, nil),
    ]

    /// The start of the next step.
    public func next() -> PruneCursor { PruneCursor(step: step + 1, a: .min, b: .min, c: 0) }
}

extension Store {
    /// Prunes everything the plan lets go, one bounded transaction at a time, running `between`
    /// after each (yield, check for cancellation, log). Returns what was removed.
    @discardableResult
    public func prune(_ plan: RetentionPlan, between: () async throws -> Void = { await Task.yield() }) async throws
        -> PruneCounts
    {
        var total = PruneCounts()
        var cursor = PruneCursor.start
        while !cursor.isDone {
            let (removed, next) = try await prune(plan, from: cursor)
            total.add(removed)
            cursor = next
            try await between()
        }
        return total
    }
}

extension SQLiteStore {
    /// The latest transition of every firing alert: reminders, escalations and acks refer to it.
    static let firingCTE = """
        WITH firing(tid) AS (
            SELECT max(t.id) FROM alert_states a JOIN transitions t
              ON t.rule = a.rule AND t.station = a.station AND t.metric = a.metric
            WHERE a.status = 'firing' GROUP BY a.rule, a.station, a.metric),
        firing_keys(k) AS (
            SELECT rule || '|' || station || '|' || metric FROM alert_states WHERE status = 'firing')
        """

    /// Outbox rows (alias `o`) of a finished state that may go: old, not of a firing alert's current
    /// transition (escalations and reminders read those), and not the last notification of a firing
    /// alert to a receiver (reminders time themselves from it).
    static func outboxPrunable(cut: String) -> String {
        """
        o.due_at < \(cut) AND coalesce(o.sent_at, 0) < \(cut)
          AND o.transition_id NOT IN (SELECT tid FROM firing WHERE tid IS NOT NULL)
          AND NOT (o.state = 'sent' AND o.alert IN (SELECT k FROM firing_keys)
            AND o.seq = (SELECT p.seq FROM outbox p WHERE p.alert = o.alert AND p.receiver = o.receiver
                           AND p.state = 'sent' ORDER BY p.sent_at DESC, p.seq DESC LIMIT 1))
        """
    }

    /// Transitions that may go: old, not a firing alert's latest, and no outbox row refers to them
    /// (undelivered rows are never pruned, so neither are their transitions).
    static let transitionsPrunable = """
        t.recorded_at < :cut
          AND t.id NOT IN (SELECT tid FROM firing WHERE tid IS NOT NULL)
          AND NOT EXISTS (SELECT 1 FROM outbox o
                          WHERE o.alert = t.rule || '|' || t.station || '|' || t.metric AND o.transition_id = t.id
        """

    /// In a dry run the outbox rows the same pass would remove first do not hold their transitions.
    static let outboxGoingFirst = """
         AND NOT ((o.state IN ('sent', 'muted', 'dropped') AND \(outboxPrunable(cut: ":dcut")))
                  OR (o.state = 'dead' AND \(outboxPrunable(cut: ":xcut"))))
        """

    /// Older versions of quake events: never the event's current version.
    static let revisionsPrunable = """
        r.recorded_at < :cut
          AND r.updated < coalesce((SELECT e.updated FROM quake_events e WHERE e.id = r.event_id), 9223372036854775807)
        """

    /// Ingest-log entries evaluation is done with (at or below the cursor), never the newest one
    /// (`ingestMark` and the cursor read it).
    static func ingestLogLimit(_ db: Database) throws -> Int64 {
        let top = try Int64.fetchOne(db, sql: "SELECT coalesce(max(seq), 0) FROM ingest_log") ?? 0
        return min(try meta(db, cursorKey), top - 1)
    }

    /// Series with readings not evaluated yet: their readings stay until evaluation has seen them.
    static func unevaluatedSeries(_ db: Database) throws -> Set<Int64> {
        Set(
            try Int64.fetchAll(
                db, sql: "SELECT DISTINCT series_id FROM ingest_log WHERE seq > ?", arguments: [try meta(db, cursorKey)]
            ))
    }

    /// Readings of one series older than this may go (nil: none).
    static func readingsCutoff(series: Int64, _ plan: RetentionPlan, cut: Int64, _ db: Database) throws -> Int64? {
        guard
            let newest = try Int64.fetchOne(
                db, sql: "SELECT max(time) FROM readings WHERE series_id = ?", arguments: [series])
        else { return nil }
        return min(cut, newest.subtractingClamped(plan.lookBack))
    }

    /// How many rows a prune with this plan would remove now (a dry run: removes nothing).
    public func prunable(_ plan: RetentionPlan) async throws -> PruneCounts {
        try await reader.read { db in
            var out = PruneCounts()
            for (kind, state) in PruneCursor.steps {
                guard let cut = plan.cutoff(kind) else { continue }
                out[kind] += try Self.count(kind, state: state, cut: cut, plan, db)
            }
            return out
        }
    }

    static func count(_ kind: HistoryKind, state: String?, cut: Int64, _ plan: RetentionPlan, _ db: Database) throws
        -> Int
    {
        switch kind {
        case .delivered, .dead:
            return try Int.fetchOne(
                db,
                sql:
                    "\(firingCTE) SELECT count(*) FROM outbox o WHERE o.state = :state AND \(outboxPrunable(cut: ":cut"))",
                arguments: ["state": state, "cut": cut.multipliedClamped(by: 1000)]) ?? 0
        case .transitions:
            return try Int.fetchOne(
                db,
                sql:
                    "\(firingCTE) SELECT count(*) FROM transitions t WHERE \(transitionsPrunable) \(outboxGoingFirst))",
                arguments: [
                    "cut": cut,
                    "dcut": plan.cutoff(.delivered).map { $0.multipliedClamped(by: 1000) } ?? Int64.min,
                    "xcut": plan.cutoff(.dead).map { $0.multipliedClamped(by: 1000) } ?? Int64.min,
                ]) ?? 0
        case .readings:
            let skip = try unevaluatedSeries(db)
            var n = 0
            for id in try Int64.fetchAll(db, sql: "SELECT id FROM series ORDER BY id") where !skip.contains(id) {
                guard let c = try readingsCutoff(series: id, plan, cut: cut, db) else { continue }
                n +=
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM readings WHERE series_id = ? AND time < ?", arguments: [id, c])
                    ?? 0
            }
            return n
        case .ingestLog:
            return try Int.fetchOne(
                db,
                sql: """
                    SELECT count(*) FROM ingest_log l WHERE l.seq <= ? AND EXISTS (
                        SELECT 1 FROM ingest_log k WHERE k.series_id = l.series_id AND k.source IS l.source AND k.seq < l.seq)
                    """, arguments: [try ingestLogLimit(db)]) ?? 0
        case .forecasts:
            return try Int.fetchOne(
                db, sql: "SELECT count(*) FROM forecasts WHERE date < ?", arguments: [Self.day(cut)]) ?? 0
        case .quakeRevisions:
            return try Int.fetchOne(
                db, sql: "SELECT count(*) FROM quake_revisions r WHERE \(revisionsPrunable)", arguments: ["cut": cut])
                ?? 0
        }
    }

    /// `YYYY-MM-DD` (UTC) of a time: forecasts are kept by the day they are for.
    public static func day(_ time: Int64) -> String {
        // Years 0000 to 9999 (and no overflow below).
        let seconds = min(max(time, -62_167_219_200), 253_402_300_799)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        return String(format: "%04d-%02d-%02d", Int(y), Int(m), Int(d))
    }

    /// One step of a prune pass: one write transaction removing at most `plan.batch` rows of the
    /// kind at `cursor`. Returns what it removed and where the pass goes on.
    public func prune(_ plan: RetentionPlan, from cursor: PruneCursor) async throws -> (
        removed: PruneCounts, next: PruneCursor
    ) {
        guard !cursor.isDone else { return (PruneCounts(), cursor) }
        let (kind, state) = PruneCursor.steps[cursor.step]
        guard let cut = plan.cutoff(kind) else { return (PruneCounts(), cursor.next()) }
        return try await requireWriter().write { db in
            let (n, next) = try Self.pruneStep(kind, state: state, cut: cut, plan, cursor, db)
            return (PruneCounts([kind: n]), next)
        }
    }

    static func pruneStep(
        _ kind: HistoryKind, state: String?, cut: Int64, _ plan: RetentionPlan, _ cursor: PruneCursor, _ db: Database
    ) throws -> (Int, PruneCursor) {
        let limit = plan.batch
        switch kind {
        case .delivered, .dead:
            // Walk the (state, due_at) index from where the last step stopped: rows kept for a firing
            // alert are passed over once, not read again by every step.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    \(firingCTE)
                    SELECT o.rowid AS r, o.due_at AS d FROM outbox o
                    WHERE o.state = :state AND \(outboxPrunable(cut: ":cut")) AND o.due_at >= :pd AND (o.due_at > :pd OR o.rowid > :pr)
                    ORDER BY o.due_at, o.rowid LIMIT :n
                    """,
                arguments: [
                    "state": state, "cut": cut.multipliedClamped(by: 1000), "pd": cursor.a, "pr": cursor.b, "n": limit,
                ])
            try deleteRowids(rows.map { $0["r"] }, table: "outbox", db)
            guard rows.count == limit, let last = rows.last else { return (rows.count, cursor.next()) }
            return (rows.count, PruneCursor(step: cursor.step, a: last["d"], b: last["r"], c: 0))
        case .transitions:
            let rows = try Row.fetchAll(
                db,
                sql: """
                    \(firingCTE)
                    SELECT t.id AS r, t.recorded_at AS d FROM transitions t INDEXED BY transitions_by_recorded
                    WHERE \(transitionsPrunable)) AND t.recorded_at >= :pd AND (t.recorded_at > :pd OR t.id > :pr)
                    ORDER BY t.recorded_at, t.id LIMIT :n
                    """, arguments: ["cut": cut, "pd": cursor.a, "pr": cursor.b, "n": limit])
            try deleteRowids(rows.map { $0["r"] }, table: "transitions", db)
            guard rows.count == limit, let last = rows.last else { return (rows.count, cursor.next()) }
            return (rows.count, PruneCursor(step: cursor.step, a: last["d"], b: last["r"], c: 0))
        case .readings:
            // Series by id from the cursor; a series cut short by the batch limit is resumed.
            let skip = try unevaluatedSeries(db)
            let ids = try Int64.fetchAll(
                db, sql: "SELECT id FROM series WHERE id >= ? ORDER BY id LIMIT 1000", arguments: [cursor.a])
            var removed = 0
            for id in ids where !skip.contains(id) {
                guard let c = try readingsCutoff(series: id, plan, cut: cut, db) else { continue }
                let budget = limit - removed
                if let bound = try Int64.fetchOne(
                    db,
                    sql: "SELECT time FROM readings WHERE series_id = ? AND time < ? ORDER BY time LIMIT 1 OFFSET ?",
                    arguments: [id, c, budget - 1])
                {
                    try db.execute(
                        sql: "DELETE FROM readings WHERE series_id = ? AND time <= ?", arguments: [id, bound])
                    removed += db.changesCount
                    return (removed, PruneCursor(step: cursor.step, a: id, b: .min, c: 0))
                }
                try db.execute(sql: "DELETE FROM readings WHERE series_id = ? AND time < ?", arguments: [id, c])
                removed += db.changesCount
            }
            guard ids.count == 1000, let last = ids.last else { return (removed, cursor.next()) }
            return (removed, PruneCursor(step: cursor.step, a: last + 1, b: .min, c: 0))
        case .ingestLog:
            // Each evaluated entry is folded into the oldest entry of its series and source: the
            // counts per source (`/metrics`) stay whole and the log stops growing with time.
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT seq, series_id, source, min_time, count FROM ingest_log
                    WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?
                    """, arguments: [cursor.a, try ingestLogLimit(db), limit])
            var removed = 0
            for row in rows {
                let seq: Int64 = row["seq"]
                let source: String? = row["source"]
                guard
                    let keeper = try Int64.fetchOne(
                        db,
                        sql: "SELECT seq FROM ingest_log WHERE series_id = ? AND source IS ? ORDER BY seq LIMIT 1",
                        arguments: [row["series_id"], source]), keeper < seq
                else { continue }
                try db.execute(
                    sql: "UPDATE ingest_log SET count = count + ?, min_time = min(min_time, ?) WHERE seq = ?",
                    arguments: [row["count"], row["min_time"], keeper])
                try db.execute(sql: "DELETE FROM ingest_log WHERE seq = ?", arguments: [seq])
                removed += 1
            }
            guard rows.count == limit, let last = rows.last else { return (removed, cursor.next()) }
            return (removed, PruneCursor(step: cursor.step, a: last["seq"], b: .min, c: 0))
        case .forecasts:
            try db.execute(
                sql: "DELETE FROM forecasts WHERE rowid IN (SELECT rowid FROM forecasts WHERE date < ? LIMIT ?)",
                arguments: [Self.day(cut), limit])
            let n = db.changesCount
            return (n, n == limit ? cursor : cursor.next())
        case .quakeRevisions:
            let rows = try Int64.fetchAll(
                db,
                sql: """
                    SELECT r.rowid FROM quake_revisions r WHERE \(revisionsPrunable) AND r.rowid > :pr
                    ORDER BY r.rowid LIMIT :n
                    """, arguments: ["cut": cut, "pr": cursor.a, "n": limit])
            try deleteRowids(rows, table: "quake_revisions", db)
            guard rows.count == limit, let last = rows.last else { return (rows.count, cursor.next()) }
            return (rows.count, PruneCursor(step: cursor.step, a: last, b: .min, c: 0))
        }
    }

    static func deleteRowids(_ ids: [Int64], table: String, _ db: Database) throws {
        let delete = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE rowid = ?")
        for id in ids { try delete.execute(arguments: [id]) }
    }
}
