import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// The advisory lock held from a transaction's first outbox insert to its commit.
    static let outboxLock: Int64 = 0x6b6c_786e_6f75_7401

    /// Adds one outbox row per delivery, inside the caller's transaction (the transition's own).
    /// `seq` comes from the column's identity, taken under a transaction-scoped advisory lock
    /// (`outboxLock`): rows are numbered in commit order, so a claim that sees a row never meets an
    /// older row of the same alert and receiver committed after it (a reminder of a firing queued
    /// while its resolve is logged goes out first, as it does on SQLite).
    func enqueue(
        transitionID: Int64, transition: Transition,
        deliveries: [(receiver: String, route: Int?, groupKey: String, dueAt: Int64)], purpose: String = "transition",
        now: Int64, on c: PostgresConnection
    ) async throws {
        guard !deliveries.isEmpty else { return }
        try await execute("SELECT pg_advisory_xact_lock(\(Self.outboxLock))", on: c)
        let alert = OutboxRecord.alertKey(transition)
        for d in deliveries {
            let route = d.route.map { Int64($0) }
            try await execute(
                """
                INSERT INTO outbox (id, transition_id, receiver, route, alert, group_key, purpose, state, attempts,
                  due_at, created_at)
                VALUES (\(OutboxRecord.newID()), \(transitionID), \(d.receiver), \(route), \(alert),
                  \(d.groupKey), \(purpose), 'pending', 0, \(d.dueAt), \(now))
                """, on: c)
        }
    }

    /// Outbox rows of new transitions, inserted together in queue order (`seq` follows the order
    /// they were added) under the outbox lock.
    struct OutboxRows {
        var ids: [String] = []
        var transitions: [Int64] = []
        var receivers: [String] = []
        var routes: [Int64] = []
        var routed: [Bool] = []
        var alerts: [String] = []
        var groups: [String] = []
        var due: [Int64] = []
        /// For rows claimed as they are queued (`QueueClaim`): their batch and lease (else "" and 0).
        var batches: [String] = []
        var leases: [Int64] = []
        /// What each row folded in ("" for nothing), and whether it is held.
        var paths: [String] = []
        var held: [Bool] = []

        /// Adds a row; with `claim`, the row is claimed for this process's dispatcher if it takes it.
        mutating func add(
            transitionID: Int64, transition: Transition, receiver: String, route: Int?, groupKey: String, dueAt: Int64,
            now: Int64, claim: QueueClaim? = nil, record: TransitionRecord? = nil, path: String? = nil,
            held: Bool = false
        ) {
            paths.append(path ?? "")
            self.held.append(held)
            let id = OutboxRecord.newID()
            let alert = OutboxRecord.alertKey(transition)
            ids.append(id)
            transitions.append(transitionID)
            receivers.append(receiver)
            routes.append(Int64(route ?? 0))
            routed.append(route != nil)
            alerts.append(alert)
            groups.append(groupKey)
            due.append(dueAt)
            if !held, let claim, claim.takes(receiver, alert: alert, dueAt: dueAt) {
                let row = claim.take(
                    OutboxRecord(
                        id: id, seq: 0, transitionID: transitionID, receiver: receiver, route: route, alert: alert,
                        groupKey: groupKey, purpose: "transition", state: .sending, batch: nil, attempts: 1,
                        dueAt: dueAt, leaseUntil: nil, createdAt: now, sentAt: nil, lastError: nil, path: path),
                    transition: record)
                batches.append(row.batch ?? id)
                leases.append(row.leaseUntil ?? 0)
            } else {
                claim?.queued(alert: alert, receiver: receiver)
                batches.append("")
                leases.append(0)
            }
        }

        func insert(_ store: PostgresStore, now: Int64, claimedBy: String?, on c: PostgresConnection) async throws {
            guard !ids.isEmpty else { return }
            try await store.execute("SELECT pg_advisory_xact_lock(\(PostgresStore.outboxLock))", on: c)
            var binds = PostgresBindings(capacity: 14)
            binds.append(ids)
            binds.append(transitions)
            binds.append(receivers)
            binds.append(routes)
            binds.append(routed)
            binds.append(alerts)
            binds.append(groups)
            binds.append(due)
            binds.append(now)
            binds.append(batches)
            binds.append(leases)
            binds.append(claimedBy ?? "")
            binds.append(paths)
            binds.append(held)
            try await store.execute(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO outbox (id, transition_id, receiver, route, alert, group_key, purpose, state,
                          attempts, due_at, created_at, batch, lease_until, claimed_by, path)
                        SELECT id, t, r, CASE WHEN has_route THEN route END, a, g, 'transition',
                          CASE WHEN h THEN 'held' WHEN b = '' THEN 'pending' ELSE 'sending' END,
                          CASE WHEN b = '' THEN 0 ELSE 1 END,
                          d, $9, NULLIF(b, ''), CASE WHEN b = '' THEN NULL ELSE l END,
                          CASE WHEN b = '' THEN NULL ELSE $12::text END, NULLIF(p, '')
                        FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::bool[], $6::text[],
                          $7::text[], $8::bigint[], $10::text[], $11::bigint[], $13::text[], $14::bool[])
                          WITH ORDINALITY AS u(id, t, r, route, has_route, a, g, d, b, l, p, h, n)
                        ORDER BY n
                        """, binds: binds), on: c)
        }
    }

    func enqueue(
        transitionID: Int64, transition: Transition, planned: [PlannedDelivery], now: Int64, on c: PostgresConnection
    ) async throws {
        guard !planned.isEmpty else { return }
        var rows: [(receiver: String, route: Int?, groupKey: String, dueAt: Int64)] = []
        for p in planned { rows.append((p.receiver, p.route, p.groupKey, try await dueTime(p, now: now, on: c))) }
        try await enqueue(transitionID: transitionID, transition: transition, deliveries: rows, now: now, on: c)
    }

    /// When a delivery is due (`GroupTiming`), from the group's rows.
    func dueTime(_ p: PlannedDelivery, now: Int64, on c: PostgresConnection) async throws -> Int64 {
        if GroupTiming.isImmediate(p) { return now }
        let routeKey = p.route.map { Int64($0) } ?? -1
        let waiting = try await scalar(
            """
            SELECT min(due_at) FROM outbox WHERE receiver = \(p.receiver) AND coalesce(route, -1) = \(routeKey)
              AND group_key = \(p.groupKey) AND state = 'pending' AND batch IS NULL AND due_at >= \(now)
            """, as: Int64.self, on: c)
        let lastSent =
            waiting != nil
            ? nil
            : try await scalar(
                """
                SELECT max(sent_at) FROM outbox WHERE receiver = \(p.receiver) AND coalesce(route, -1) = \(routeKey)
                  AND group_key = \(p.groupKey) AND state = 'sent'
                """, as: Int64.self, on: c)
        return GroupTiming.due(p, now: now, waiting: waiting, lastSent: lastSent)
    }

    public func record(
        _ transitions: [(transition: Transition, message: String, deliveries: [PlannedDelivery])], now: Int64
    ) async throws {
        try await transaction { c in
            var deltas = MetricDeltas()
            var episodes = Episodes()
            // The ids in one statement, in order, as an evaluation takes them.
            var ids = try await self.takeTransitionIDs(transitions.count, on: c).makeIterator()
            for (t, message, deliveries) in transitions {
                if episodes.needsLookup(t) { episodes.found(t.alertKey, try await self.openEpisode(t.alertKey, on: c)) }
                guard let id = ids.next() else { break }
                let episode = episodes.next(t, id: id)
                var record = TransitionRecord(t, message: message, recordedAt: now / 1000)
                record.id = id
                record.episode = episode.id
                record.startedAt = episode.startedAt
                try await self.insert(record, on: c)
                deltas.transition(rule: t.rule, state: t.state.rawValue)
                try await self.enqueue(transitionID: id, transition: t, planned: deliveries, now: now, on: c)
            }
            try await deltas.write(self, on: c)
        }
    }

    static let outboxColumns = [
        "id", "seq", "transition_id", "receiver", "route", "alert", "group_key", "purpose", "state", "batch",
        "attempts", "due_at", "lease_until", "created_at", "sent_at", "last_error", "path",
    ]

    /// Claims due notifications, as `SQLiteStore.claim` does, for several claimers at once: rows are
    /// locked `FOR UPDATE SKIP LOCKED`, so a row another transaction is claiming is passed over,
    /// never handed out twice; a `sending` row whose lease ran out (its sender died) is claimed again.
    /// Per alert and receiver only the oldest unsent row is taken (a firing before its resolve):
    /// while another claimer holds an older row locked, the newer one still sees it unsent.
    ///
    /// Rows for the receivers in `excluding` are left for a later claim.
    public func claim(now: Int64, lease: Int64, limit: Int, instance: String?, excluding: [String]) async throws
        -> [OutboxBatch]
    {
        try await transaction { c in
            let columns = Self.outboxColumns.map { "o.\($0)" }.joined(separator: ", ")
            let found = try await self.rows(
                """
                SELECT json_build_object(\(unescaped: Self.outboxColumns.map { "'\($0)', o.\($0)" }.joined(separator: ", ")))::text,
                  (SELECT to_jsonb(t)::text FROM transitions t WHERE t.id = o.transition_id),
                  \(unescaped: EpisodeSQL.heardColumns)
                FROM (
                  SELECT \(unescaped: columns) FROM outbox o
                  WHERE ((o.state = 'pending' AND o.due_at <= \(now)) OR (o.state = 'sending' AND o.lease_until <= \(now)))
                    AND NOT EXISTS (
                      SELECT 1 FROM outbox p
                      WHERE p.alert = o.alert AND p.receiver = o.receiver AND p.seq < o.seq
                        AND p.state IN ('pending', 'sending'))
                    AND o.receiver <> ALL(\(excluding))
                  ORDER BY o.seq LIMIT \(limit)
                  FOR UPDATE OF o SKIP LOCKED
                ) o \(unescaped: Self.heardJoin)
                ORDER BY o.seq
                """, on: c)
            var batches = OutboxBatch.group(
                try found.map { found in
                    var row = try Self.decoder.decode(
                        OutboxRecord.self, from: Data(try found[0].decode(String.self).utf8))
                    row.heard = Heard.from(
                        episode: try found[2].decode(Int64?.self), state: try found[3].decode(String?.self),
                        level: try found[4].decode(String?.self))
                    return (
                        row,
                        try found[1].decode(String?.self).map {
                            try Self.decoder.decode(TransitionRecord.self, from: Data($0.utf8))
                        }
                    )
                }, now: now, lease: lease)
            var ids: [String] = []
            var keys: [String] = []
            for i in batches.indices {
                for j in batches[i].rows.indices {
                    batches[i].rows[j].batch = batches[i].key
                    ids.append(batches[i].rows[j].id)
                    keys.append(batches[i].key)
                }
            }
            if !ids.isEmpty {
                try await self.execute(
                    """
                    UPDATE outbox o SET state = 'sending', lease_until = \(now + lease), attempts = o.attempts + 1,
                      batch = c.batch, claimed_by = \(instance)
                    FROM unnest(\(ids)::text[], \(keys)::text[]) AS c(id, batch)
                    WHERE o.id = c.id
                    """, on: c)
            }
            return batches
        }
    }

    /// What the receiver heard, read only for resolves (`EpisodeSQL.heardJoinForResolves`; here the
    /// claimed row's transition is not joined, so it is looked up).
    static let heardJoin = EpisodeSQL.heardJoin(
        when: "EXISTS (SELECT 1 FROM transitions r WHERE r.id = o.transition_id AND r.state = 'resolved')")

    public func release(_ batches: [OutboxBatch]) async throws {
        let ids = batches.flatMap { $0.rows.map(\.id) }
        guard !ids.isEmpty else { return }
        try await execute(
            """
            UPDATE outbox SET state = 'pending', lease_until = NULL, claimed_by = NULL
            WHERE id = ANY(\(ids)::text[]) AND state = 'sending'
            """)
    }

    public func apply(_ outcomes: [OutboxOutcome]) async throws {
        guard !outcomes.isEmpty else { return }
        try await transaction { c in
            var deltas = MetricDeltas()
            // Final outcomes (sent, dead, muted, dropped) of every batch go in one statement: a round
            // trip per row cost a millisecond each, and the dispatcher records thousands at once.
            var finals = FinalOutcomes()
            for outcome in outcomes {
                switch outcome {
                case .finish(let batch, let state, let now, let retryAt, let error):
                    for row in batch.rows {
                        if let retryAt {
                            try await self.execute(
                                """
                                UPDATE outbox SET state = 'pending', due_at = \(retryAt), lease_until = NULL,
                                  claimed_by = NULL, last_error = \(error)
                                WHERE id = \(row.id)
                                """, on: c)
                        } else {
                            finals.add(row, state: state, now: now, error: error)
                        }
                    }
                case .reschedule(let batch, let key, let dueAt):
                    for row in batch.rows {
                        try await self.execute(
                            """
                            UPDATE outbox SET state = 'pending', due_at = \(dueAt), batch = \(key), lease_until = NULL,
                              claimed_by = NULL, attempts = attempts - 1
                            WHERE id = \(row.id)
                            """, on: c)
                    }
                case .system(let t, let message, let receiver, let now):
                    let id = try await self.insert(
                        TransitionRecord(t, message: message, recordedAt: now / 1000), on: c)
                    deltas.add("transitions", t.rule, t.state.rawValue)
                    try await self.enqueue(
                        transitionID: id, transition: t, deliveries: [(receiver, nil, "system", now)],
                        purpose: "system", now: now, on: c)
                }
            }
            if !finals.ids.isEmpty {
                var changed = Set<String>()
                for row in try await self.rows(
                    """
                    UPDATE outbox o SET state = u.state, lease_until = NULL, claimed_by = NULL,
                      last_error = CASE WHEN u.has_error THEN u.error END,
                      sent_at = CASE WHEN u.state = 'sent' THEN u.at END
                    FROM unnest(\(finals.ids)::text[], \(finals.states)::text[], \(finals.errors)::text[],
                      \(finals.hasError)::bool[], \(finals.at)::bigint[]) AS u(id, state, error, has_error, at)
                    WHERE o.id = u.id RETURNING o.id
                    """, on: c)
                {
                    changed.insert(try row[0].decode(String.self))
                }
                for (row, state, now) in finals.rows where changed.contains(row.id) {
                    deltas.outcome(
                        receiver: row.receiver, state: state.rawValue,
                        latency: state == .sent ? Double(now - row.createdAt) / 1000 : nil)
                }
            }
            try await deltas.write(self, on: c)
        }
    }

    /// Rows that reach a final state, as the columns of one `UPDATE … FROM unnest(…)`.
    struct FinalOutcomes {
        var ids: [String] = []
        var states: [String] = []
        var errors: [String] = []
        var hasError: [Bool] = []
        var at: [Int64] = []
        var rows: [(OutboxRecord, OutboxRecord.State, Int64)] = []

        mutating func add(_ row: OutboxRecord, state: OutboxRecord.State, now: Int64, error: String?) {
            ids.append(row.id)
            states.append(state.rawValue)
            errors.append(error ?? "")
            hasError.append(error != nil)
            at.append(now)
            rows.append((row, state, now))
        }
    }

    public func nextDue() async throws -> Int64? {
        try await scalar(
            """
            SELECT min(coalesce(CASE state WHEN 'sending' THEN lease_until END, due_at)) FROM outbox
            WHERE state IN ('pending', 'sending')
            """, as: Int64.self)
    }

    public func outbox(state: OutboxRecord.State?, limit: Int) async throws -> [OutboxRecord] {
        try await records(
            """
            SELECT to_jsonb(o)::text FROM outbox o WHERE \(state?.rawValue)::text IS NULL OR state = \(state?.rawValue)
            ORDER BY seq DESC LIMIT \(max(0, limit))
            """, as: OutboxRecord.self)
    }

    public func outboxCounts() async throws -> [OutboxRecord.State: Int] {
        var out: [OutboxRecord.State: Int] = [:]
        for row in try await rows("SELECT state, count(*) FROM outbox GROUP BY state") {
            if let s = OutboxRecord.State(rawValue: try row[0].decode(String.self)) {
                out[s] = Int(try row[1].decode(Int64.self))
            }
        }
        return out
    }

    // MARK: Instances

    public func register(_ instance: InstanceRecord) async throws {
        try await transaction { c in
            try await self.execute(
                """
                INSERT INTO instances (id, host, pid, process_start, registered_at, heartbeat_at)
                VALUES (\(instance.id), \(instance.host), \(Int64(instance.pid)), \(instance.processStart),
                  \(instance.registeredAt), \(instance.heartbeatAt))
                ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
                  process_start = excluded.process_start, registered_at = excluded.registered_at,
                  heartbeat_at = excluded.heartbeat_at
                """, on: c)
            try await self.execute(
                """
                DELETE FROM instances WHERE heartbeat_at < \(instance.heartbeatAt - 86_400_000) AND id <> \(instance.id)
                  AND NOT EXISTS (SELECT 1 FROM outbox WHERE claimed_by = instances.id AND state = 'sending')
                """, on: c)
        }
    }

    @discardableResult
    public func renewLeases(instance: String, ids: [String], until: Int64, now: Int64) async throws -> Int {
        try await transaction { c in
            let renewed =
                ids.isEmpty
                ? 0
                : try await self.execute(
                    """
                    UPDATE outbox SET lease_until = \(until)
                    WHERE id = ANY(\(ids)::text[]) AND claimed_by = \(instance) AND state = 'sending'
                    RETURNING 1
                    """, on: c)
            try await self.execute("UPDATE instances SET heartbeat_at = \(now) WHERE id = \(instance)", on: c)
            return renewed
        }
    }

    public func claimHolders(excluding instance: String) async throws -> [InstanceRecord] {
        try await records(
            """
            SELECT to_jsonb(i)::text FROM instances i WHERE i.id <> \(instance)
              AND EXISTS (SELECT 1 FROM outbox o WHERE o.claimed_by = i.id AND o.state = 'sending')
            """, as: InstanceRecord.self)
    }

    @discardableResult
    public func releaseClaims(of instances: [String]) async throws -> Int {
        guard !instances.isEmpty else { return 0 }
        return try await transaction { c in
            let released = try await self.execute(
                """
                UPDATE outbox SET state = 'pending', lease_until = NULL, claimed_by = NULL
                WHERE claimed_by = ANY(\(instances)::text[]) AND state = 'sending' RETURNING 1
                """, on: c)
            try await self.execute("DELETE FROM instances WHERE id = ANY(\(instances)::text[])", on: c)
            return released
        }
    }
}
