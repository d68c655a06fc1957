import Foundation
import GRDB
import GRDBSQLite
import KlaxonCore
import KlaxonStore
import Synchronization

extension QueueClaim {
    /// Reads which of `alerts` (outbox alert keys) have rows unsent, in one query: `takes` must know
    /// of every such row queued before the transaction. Rows queued in it are counted by `queued`.
    func loadOpen(alerts: [String], _ db: Database) throws {
        guard !alerts.isEmpty else { return }
        let keys = "[" + Set(alerts).map(JSONText.string).joined(separator: ",") + "]"
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT alert, receiver FROM outbox INDEXED BY outbox_open_by_alert
                    WHERE alert IN (SELECT value FROM json_each(?)) AND state IN ('pending', 'sending')
                    """), arguments: [keys])
        while let row = try rows.next() {
            noteOpen(alert: row[0], receiver: row[1])
        }
    }

    /// Inserts `row` claimed, in its batch.
    func insert(_ found: OutboxRecord, transition: TransitionRecord?, _ db: Database) throws {
        let row = take(found, transition: transition)
        try db.cachedStatement(
            sql: """
                INSERT INTO outbox (id, seq, transition_id, receiver, route, alert, group_key, purpose, state, attempts,
                  batch, due_at, lease_until, created_at, claimed_by, path)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'sending', ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            row.id, row.seq, row.transitionID, row.receiver, row.route, row.alert, row.groupKey, row.purpose,
            row.attempts, row.batch, row.dueAt, row.leaseUntil, row.createdAt, instance, row.path,
        ])
    }
}

extension SQLiteStore {
    /// Adds one outbox row per delivery, inside the caller's transaction (the transition's own):
    /// pending (or claimed for `claim`), or `held` with `held`; `path` is what it folded in.
    static func enqueue(
        _ db: Database, transitionID: Int64, transition: Transition,
        deliveries: [(receiver: String, route: Int?, groupKey: String, dueAt: Int64)],
        purpose: String = "transition", now: Int64, claim: QueueClaim? = nil, record: TransitionRecord? = nil,
        path: String? = nil, held: Bool = false
    ) throws {
        guard !deliveries.isEmpty else { return }
        var seq =
            try claim?.seq
            ?? Int64.fetchOne(db.cachedStatement(sql: "SELECT coalesce(max(seq), 0) FROM outbox")) ?? 0
        defer { claim?.seq = seq }
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO outbox (id, seq, transition_id, receiver, route, alert, group_key, purpose, state, attempts,
                  due_at, created_at, path)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)
                """)
        let alert = OutboxRecord.alertKey(transition)
        for d in deliveries {
            seq += 1
            let id = OutboxRecord.newID()
            if !held, let claim, claim.takes(d.receiver, alert: alert, dueAt: d.dueAt) {
                let row = OutboxRecord(
                    id: id, seq: seq, transitionID: transitionID, receiver: d.receiver, route: d.route, alert: alert,
                    groupKey: d.groupKey, purpose: purpose, state: .sending, batch: nil, attempts: 1, dueAt: d.dueAt,
                    leaseUntil: nil, createdAt: now, sentAt: nil, lastError: nil, path: path)
                try claim.insert(row, transition: record, db)
                continue
            }
            insert.setUncheckedArguments([
                id, seq, transitionID, d.receiver, d.route, alert, d.groupKey, purpose, held ? "held" : "pending",
                d.dueAt, now, path,
            ])
            try insert.execute()
            claim?.queued(alert: alert, receiver: d.receiver)
        }
    }

    /// Checks foreign keys at commit instead of after each statement, for the rest of the caller's
    /// transaction: a statement that may fail a foreign key otherwise keeps a statement journal so it
    /// can be undone alone, and opening one per row cost as much as the row. A violation still fails
    /// the whole transaction.
    ///
    /// Run through SQLite directly: GRDB empties its statement cache after any `PRAGMA` it runs, and
    /// every statement of the transaction would then be compiled again.
    static func deferForeignKeys(_ db: Database) throws {
        let rc = sqlite3_exec(db.sqliteConnection, "PRAGMA defer_foreign_keys = ON", nil, nil, nil)
        guard rc == SQLITE_OK else {
            throw DatabaseError(resultCode: ResultCode(rawValue: rc), message: "PRAGMA defer_foreign_keys failed")
        }
    }

    /// Queues planned deliveries, each due when its group's timing says.
    static func enqueue(
        _ db: Database, transitionID: Int64, transition: Transition, planned: [PlannedDelivery], now: Int64,
        claim: QueueClaim? = nil, record: TransitionRecord? = nil
    )
        throws
    {
        guard !planned.isEmpty else { return }
        let rows = try planned.map { p in
            (p.receiver, p.route, p.groupKey, try dueTime(db, p, now: now))
        }
        try enqueue(
            db, transitionID: transitionID, transition: transition, deliveries: rows, now: now, claim: claim,
            record: record)
    }

    /// When a delivery is due (`GroupTiming`), from the group's rows.
    static func dueTime(_ db: Database, _ p: PlannedDelivery, now: Int64) throws -> Int64 {
        if GroupTiming.isImmediate(p) { return now }
        let routeKey = p.route.map { Int64($0) } ?? -1
        let waiting = try Int64.fetchOne(
            db.cachedStatement(
                sql:
                    "SELECT min(due_at) FROM outbox WHERE receiver = ? AND coalesce(route, -1) = ? AND group_key = ? AND state = 'pending' AND batch IS NULL AND due_at >= ?"
            ),
            arguments: [p.receiver, routeKey, p.groupKey, now])
        let lastSent =
            waiting != nil
            ? nil
            : try Int64.fetchOne(
                db.cachedStatement(
                    sql:
                        "SELECT max(sent_at) FROM outbox WHERE receiver = ? AND coalesce(route, -1) = ? AND group_key = ? AND state = 'sent'"
                ),
                arguments: [p.receiver, routeKey, p.groupKey])
        return GroupTiming.due(p, now: now, waiting: waiting, lastSent: lastSent)
    }

    /// Logs transitions made outside evaluation (tests, benchmarks, tools) with their messages and
    /// queues their deliveries, in one transaction. `now` is in milliseconds.
    public func record(
        _ transitions: [(transition: Transition, message: String, deliveries: [PlannedDelivery])], now: Int64
    )
        async throws
    {
        try await requireWriter().write { db in
            try Self.deferForeignKeys(db)
            var deltas = MetricDeltas()
            var episodes = Episodes()
            // The ids in one read, in order, as an evaluation takes them.
            var ids = try Self.takeTransitionIDs(transitions.count, db).makeIterator()
            for (t, message, deliveries) in transitions {
                if episodes.needsLookup(t) { episodes.found(t.alertKey, try Self.openEpisode(t.alertKey, db)) }
                var record = TransitionRecord(t, message: message, recordedAt: now / 1000)
                record.id = ids.next()
                let episode = episodes.next(t, id: record.id!)
                record.episode = episode.id
                record.startedAt = episode.startedAt
                try record.insert(db)
                deltas.transition(rule: t.rule, state: t.state.rawValue)
                try Self.enqueue(db, transitionID: record.id ?? 0, transition: t, planned: deliveries, now: now)
            }
            try deltas.write(db)
        }
    }

    /// Claims due notifications for sending: pending rows whose time has come and `sending` rows whose
    /// lease ran out (their sender died). Per alert and receiver only the oldest unsent row is taken,
    /// so a firing is always delivered before its resolve. Rows of one receiver and group that are due
    /// together form one batch. Claimed rows are leased until `now + lease`.
    ///
    /// `instance` (an `InstanceRecord` id) is written on each claimed row, so a restarted process can
    /// tell that the claim's holder is dead and take it back at once instead of waiting out the lease.
    ///
    /// Rows for the receivers in `excluding` are left for a later claim.
    public func claim(now: Int64, lease: Int64, limit: Int, instance: String?, excluding: [String]) async throws
        -> [OutboxBatch]
    {
        let skip = "[" + excluding.map(JSONText.string).joined(separator: ",") + "]"
        return try await requireWriter().write { db in
            // Each row with its transition, in one query, walking the unsent rows in queue order
            // (`outbox_open_by_seq`) so a claim reads about `limit` rows however long the queue.
            let found = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT \(Self.claimColumns), \(EpisodeSQL.heardColumns)
                        FROM outbox o INDEXED BY outbox_open_by_seq LEFT JOIN transitions t ON t.id = o.transition_id
                        \(EpisodeSQL.heardJoinForResolves)
                        WHERE o.state IN ('pending', 'sending')
                          AND ((o.state = 'pending' AND o.due_at <= :now) OR (o.state = 'sending' AND o.lease_until <= :now))
                          AND NOT EXISTS (
                            SELECT 1 FROM outbox p
                            WHERE p.alert = o.alert AND p.receiver = o.receiver AND p.seq < o.seq
                              AND p.state IN ('pending', 'sending'))
                          AND o.receiver NOT IN (SELECT value FROM json_each(:skip))
                        ORDER BY o.seq LIMIT :limit
                        """), arguments: ["now": now, "limit": limit, "skip": skip])
            let t = OutboxRecord.columns.count
            let n = t + TransitionRecord.columns.count
            var batches = OutboxBatch.group(
                found.map { row in
                    var record = OutboxRecord(row: row, at: 0)
                    record.heard = Heard.from(episode: row[n], state: row[n + 1], level: row[n + 2])
                    return (record, (row[t] as Int64?).map { _ in TransitionRecord(row: row, at: t) })
                }, now: now, lease: lease)
            // Rows whose batch key is their own id (or the batch they already had) are claimed by one
            // statement; the others of a new multi-row batch take its first row's id one by one.
            var together: [String] = []
            let single = try db.cachedStatement(
                sql:
                    "UPDATE outbox SET state = 'sending', lease_until = ?, attempts = ?, batch = ?, claimed_by = ? WHERE id = ?"
            )
            for i in batches.indices {
                for j in batches[i].rows.indices {
                    let own = batches[i].rows[j].batch ?? batches[i].rows[j].id
                    batches[i].rows[j].batch = batches[i].key
                    let row = batches[i].rows[j]
                    if own == batches[i].key {
                        together.append(row.id)
                    } else {
                        single.setUncheckedArguments([row.leaseUntil, row.attempts, row.batch, instance, row.id])
                        try single.execute()
                    }
                }
            }
            if !together.isEmpty {
                let ids = "[" + together.map(JSONText.string).joined(separator: ",") + "]"
                try db.cachedStatement(
                    sql: """
                        UPDATE outbox SET state = 'sending', lease_until = ?, attempts = attempts + 1,
                          batch = coalesce(batch, id), claimed_by = ?
                        WHERE id IN (SELECT value FROM json_each(?))
                        """
                ).execute(arguments: [now + lease, instance, ids])
            }
            return batches
        }
    }

    /// The claim's columns: the outbox row's, then its transition's, read by index.
    static let claimColumns =
        (OutboxRecord.columns.map { "o.\($0)" } + TransitionRecord.columns.map { "t.\($0)" }).joined(separator: ", ")

    /// Outbox rows, newest first, optionally only those in one state.
    public func outbox(state: OutboxRecord.State?, limit: Int) async throws -> [OutboxRecord] {
        try await reader.read { db in
            var request = OutboxRecord.order(Column("seq").desc).limit(limit)
            if let state { request = request.filter(Column("state") == state.rawValue) }
            return try request.fetchAll(db)
        }
    }

    /// Counts by state.
    public func outboxCounts() async throws -> [OutboxRecord.State: Int] {
        try await reader.read { db in
            var out: [OutboxRecord.State: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, count(*) AS n FROM outbox GROUP BY state") {
                if let s = OutboxRecord.State(rawValue: row["state"]) { out[s] = row["n"] }
            }
            return out
        }
    }

    /// Puts a dead (or dropped) row back in the queue, due now, keeping its id. Returns false if no such row.
    public func retryOutbox(id: String, now: Int64) async throws -> Bool {
        try await requireWriter().write { db in
            guard
                let old = try String.fetchOne(
                    db, sql: "SELECT state FROM outbox WHERE id = ? AND state IN ('dead', 'dropped', 'muted')",
                    arguments: [id])
            else { return false }
            try db.execute(
                sql: """
                    UPDATE outbox SET state = 'pending', due_at = ?, lease_until = NULL, attempts = 0, created_at = ?
                    WHERE id = ?
                    """, arguments: [now, now, id])
            var deltas = MetricDeltas()
            deltas.add("outbox", old, n: -1)
            try deltas.write(db)
            return true
        }
    }

    /// The earliest time (ms) a pending row becomes due, if any.
    public func nextDue() async throws -> Int64? {
        try await reader.read { db in
            try Int64.fetchOne(
                db,
                sql:
                    "SELECT min(coalesce(CASE state WHEN 'sending' THEN lease_until END, due_at)) FROM outbox WHERE state IN ('pending', 'sending')"
            )
        }
    }
}

extension SQLiteStore {
    /// Every firing alert with the transition that last announced it (for reminders).
    public func firingAlerts() async throws -> [(key: AlertKey, transitionID: Int64, transition: Transition)] {
        try await reader.read { db in
            // One query: each firing alert's newest transition (not one query per alert).
            try TransitionRecord.fetchAll(
                db,
                sql: AlertSQL.firingLatest(select: "t.*")
            ).map { record in
                (
                    AlertKey(rule: record.rule, station: record.station, metric: record.metric), record.id ?? 0,
                    record.transition
                )
            }
        }
    }

    /// When an alert was last notified to a receiver (ms), and whether a notification is still queued.
    public func lastNotified(alert: String, receiver: String) async throws -> (sentAt: Int64?, queued: Bool) {
        try await reader.read { db in
            let sent = try Int64.fetchOne(
                db, sql: "SELECT max(sent_at) FROM outbox WHERE alert = ? AND receiver = ? AND state = 'sent'",
                arguments: [alert, receiver])
            let queued =
                try Bool.fetchOne(
                    db,
                    sql:
                        "SELECT EXISTS (SELECT 1 FROM outbox WHERE alert = ? AND receiver = ? AND state IN ('pending', 'sending'))",
                    arguments: [alert, receiver]) ?? false
            return (sent, queued)
        }
    }

    /// Queues a reminder of an alert's last transition for one receiver.
    /// When the first notification of an alert's current transition was queued (ms), if it was.
    public func firstQueued(alert: String, transitionID: Int64) async throws -> Int64? {
        try await reader.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT min(created_at) FROM outbox WHERE alert = ? AND transition_id = ?",
                arguments: [alert, transitionID])
        }
    }

    /// Whether a receiver already has (or had) a notification of this transition of the alert.
    public func hasNotification(alert: String, receiver: String, transitionID: Int64) async throws -> Bool {
        try await reader.read { db in
            try Bool.fetchOne(
                db,
                sql: "SELECT EXISTS (SELECT 1 FROM outbox WHERE alert = ? AND receiver = ? AND transition_id = ?)",
                arguments: [alert, receiver, transitionID]) ?? false
        }
    }

    public func enqueueRepeat(
        transitionID: Int64, transition: Transition, receiver: String, route: Int?, groupKey: String, now: Int64
    )
        async throws
    {
        try await requireWriter().write { db in
            try Self.deferForeignKeys(db)
            try SQLiteStore.enqueue(
                db, transitionID: transitionID, transition: transition, deliveries: [(receiver, route, groupKey, now)],
                purpose: "repeat", now: now)
        }
    }
}

extension SQLiteStore {
    public func missed(alerts: [String]) async throws -> [MissedNews] {
        guard !alerts.isEmpty else { return [] }
        let keys = "[" + alerts.map(JSONText.string).joined(separator: ",") + "]"
        return try await reader.read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: EpisodeSQL.missed(list: "IN (SELECT value FROM json_each(?))")),
                arguments: [keys]
            ).compactMap { row in
                guard let missed = Heard.from(episode: row[3], state: row[4], level: row[5]) else { return nil }
                return MissedNews(
                    alert: row[0], receiver: row[1], route: row[2], missed: missed,
                    heard: Heard.from(episode: row[6], state: row[7], level: row[8]), lastSentAt: row[9])
            }
        }
    }
}

/// What the dispatcher decided for a batch; applied together, one transaction per dispatch pass.
extension SQLiteStore {
    /// Gives claimed rows back (pending, no lease) that are still `sending`: used when a dispatcher
    /// stops mid-pass, so the rows go out at once after a restart instead of after their lease.
    public func release(_ batches: [OutboxBatch]) async throws {
        let ids = batches.flatMap { $0.rows.map(\.id) }
        guard !ids.isEmpty else { return }
        try await requireWriter().write { db in
            let release = try db.cachedStatement(
                sql:
                    "UPDATE outbox SET state = 'pending', lease_until = NULL, claimed_by = NULL WHERE id = ? AND state = 'sending'"
            )
            for id in ids { try release.execute(arguments: [id]) }
        }
    }
}

extension SQLiteStore {
    /// Records a dispatch pass's outcomes in one transaction (one commit instead of one per message).
    public func apply(_ outcomes: [OutboxOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        try await requireWriter().write { db in
            let retry = try db.cachedStatement(
                sql:
                    "UPDATE outbox SET state = 'pending', due_at = ?, lease_until = NULL, claimed_by = NULL, last_error = ? WHERE id = ?"
            )
            let finish = try db.cachedStatement(
                sql:
                    "UPDATE outbox SET state = ?, lease_until = NULL, claimed_by = NULL, last_error = ?, sent_at = ? WHERE id = ?"
            )
            try Self.deferForeignKeys(db)
            var deltas = MetricDeltas()
            for outcome in outcomes {
                switch outcome {
                case .finish(let batch, let state, let now, let retryAt, let error):
                    for row in batch.rows {
                        if let retryAt {
                            retry.setUncheckedArguments([retryAt, error, row.id])
                            try retry.execute()
                        } else {
                            finish.setUncheckedArguments([state.rawValue, error, state == .sent ? now : nil, row.id])
                            try finish.execute()
                            if db.changesCount > 0 {
                                deltas.outcome(
                                    receiver: row.receiver, state: state.rawValue,
                                    latency: state == .sent ? Double(now - row.createdAt) / 1000 : nil)
                            }
                        }
                    }
                case .reschedule(let batch, let key, let dueAt):
                    for row in batch.rows {
                        try db.execute(
                            sql: """
                                UPDATE outbox SET state = 'pending', due_at = ?, batch = ?, lease_until = NULL, claimed_by = NULL,
                                  attempts = attempts - 1
                                WHERE id = ?
                                """, arguments: [dueAt, key, row.id])
                    }
                case .system(let t, let message, let receiver, let now):
                    var record = TransitionRecord(t, message: message, recordedAt: now / 1000)
                    try record.insert(db)
                    deltas.transition(rule: t.rule, state: t.state.rawValue)
                    try SQLiteStore.enqueue(
                        db, transitionID: record.id ?? 0, transition: t, deliveries: [(receiver, nil, "system", now)],
                        purpose: "system", now: now)
                }
            }
            try deltas.write(db)
        }
    }
}
