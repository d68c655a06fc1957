import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// Every firing alert with the transition that last announced it (for reminders).
    public func firingAlerts() async throws -> [(key: AlertKey, transitionID: Int64, transition: Transition)] {
        try await records(
            PostgresQuery(unsafeSQL: AlertSQL.firingLatest(select: "to_jsonb(t)::text")), as: TransitionRecord.self
        ).map { r in
            (AlertKey(rule: r.rule, station: r.station, metric: r.metric), r.id ?? 0, r.transition)
        }
    }

    public func addSilence(_ s: Silence, now: Int64) async throws {
        let r = SilenceRecord(s, createdAt: now)
        try await execute(
            """
            INSERT INTO silences (id, matchers, starts_at, ends_at, comment, created_by, created_at)
            VALUES (\(r.id), \(r.matchers), \(r.startsAt), \(r.endsAt), \(r.comment), \(r.createdBy), \(r.createdAt))
            """)
    }

    public func silences(now: Int64, includeExpired: Bool) async throws -> [Silence] {
        try await records(
            """
            SELECT to_jsonb(s)::text FROM silences s WHERE \(includeExpired) OR ends_at > \(now)
            ORDER BY starts_at, id
            """, as: SilenceRecord.self
        ).compactMap(\.silence)
    }

    /// Ends a silence now: a full id, or a literal prefix naming exactly one silence not ended.
    public func expireSilence(id: String, now: Int64) async throws -> ExpireOutcome {
        guard !id.isEmpty else { return .notFound }
        return try await transaction { c in
            let ids = try await self.rows(
                """
                SELECT id FROM silences WHERE ends_at > \(now) AND starts_with(id, \(id)) ORDER BY id FOR UPDATE
                """, on: c
            ).map { try $0[0].decode(String.self) }
            let found = ExpireOutcome.target(id, among: ids)
            guard let target = found.id else { return found.otherwise }
            try await self.execute(
                "UPDATE silences SET starts_at = least(starts_at, \(now) - 1), ends_at = \(now) WHERE id = \(target)",
                on: c)
            return .expired(target)
        }
    }

    public func replaceSilence(id: String, with new: Silence, now: Int64) async throws -> ReplaceOutcome {
        let r = SilenceRecord(new, createdAt: now)
        return try await transaction { c in
            // The row lock makes a second replacement wait, then find the silence ended.
            guard
                let ends = try await self.scalar(
                    "SELECT ends_at FROM silences WHERE id = \(id) FOR UPDATE", as: Int64.self, on: c)
            else { return .notFound }
            guard ends > now else { return .ended }
            try await self.execute(
                "UPDATE silences SET starts_at = least(starts_at, \(now) - 1), ends_at = \(now) WHERE id = \(id)",
                on: c)
            try await self.execute(
                """
                INSERT INTO silences (id, matchers, starts_at, ends_at, comment, created_by, created_at)
                VALUES (\(r.id), \(r.matchers), \(r.startsAt), \(r.endsAt), \(r.comment), \(r.createdBy), \(r.createdAt))
                """, on: c)
            return .replaced
        }
    }

    public func retryOutbox(id: String, now: Int64) async throws -> Bool {
        try await transaction { c in
            guard
                let old = try await self.scalar(
                    """
                    SELECT state FROM outbox WHERE id = \(id) AND state IN ('dead', 'dropped', 'muted') FOR UPDATE
                    """, as: String.self, on: c)
            else { return false }
            try await self.execute(
                """
                UPDATE outbox SET state = 'pending', due_at = \(now), lease_until = NULL, attempts = 0,
                  created_at = \(now)
                WHERE id = \(id)
                """, on: c)
            var deltas = MetricDeltas()
            deltas.add("outbox", old, n: -1)
            try await deltas.write(self, on: c)
            return true
        }
    }

    public func lastNotified(alert: String, receiver: String) async throws -> (sentAt: Int64?, queued: Bool) {
        let row = try await rows(
            """
            SELECT (SELECT max(sent_at) FROM outbox WHERE alert = \(alert) AND receiver = \(receiver) AND state = 'sent'),
              EXISTS (SELECT 1 FROM outbox WHERE alert = \(alert) AND receiver = \(receiver)
                AND state IN ('pending', 'sending'))
            """)[0]
        return (try row[0].decode(Int64?.self), try row[1].decode(Bool.self))
    }

    public func missed(alerts: [String]) async throws -> [MissedNews] {
        guard !alerts.isEmpty else { return [] }
        var binds = PostgresBindings(capacity: 1)
        binds.append(alerts)
        return try await rows(PostgresQuery(unsafeSQL: EpisodeSQL.missed(list: "= ANY($1::text[])"), binds: binds))
            .compactMap { row in
                guard
                    let missed = Heard.from(
                        episode: try row[3].decode(Int64?.self), state: try row[4].decode(String?.self),
                        level: try row[5].decode(String?.self))
                else { return nil }
                return MissedNews(
                    alert: try row[0].decode(String.self), receiver: try row[1].decode(String.self),
                    route: try row[2].decode(Int64?.self).map { Int($0) }, missed: missed,
                    heard: Heard.from(
                        episode: try row[6].decode(Int64?.self), state: try row[7].decode(String?.self),
                        level: try row[8].decode(String?.self)), lastSentAt: try row[9].decode(Int64?.self))
            }
    }

    public func firstQueued(alert: String, transitionID: Int64) async throws -> Int64? {
        try await scalar(
            "SELECT min(created_at) FROM outbox WHERE alert = \(alert) AND transition_id = \(transitionID)",
            as: Int64.self)
    }

    public func hasNotification(alert: String, receiver: String, transitionID: Int64) async throws -> Bool {
        try await scalar(
            """
            SELECT EXISTS (SELECT 1 FROM outbox WHERE alert = \(alert) AND receiver = \(receiver)
              AND transition_id = \(transitionID))
            """, as: Bool.self) ?? false
    }

    public func enqueueRepeat(
        transitionID: Int64, transition: Transition, receiver: String, route: Int?, groupKey: String, now: Int64
    ) async throws {
        try await transaction { c in
            try await self.enqueue(
                transitionID: transitionID, transition: transition, deliveries: [(receiver, route, groupKey, now)],
                purpose: "repeat", now: now, on: c)
        }
    }

    /// The suspect readings of a series for `from < time <= to`, newest first, and their count.
    public func suspectReadings(station: String, metric: String, from: Int64, to: Int64, limit: Int) async throws
        -> (count: Int, newest: [StoredReading])
    {
        let count =
            try await scalar(
                """
                SELECT count(*) FROM readings r JOIN series s ON s.id = r.series_id
                WHERE s.station = \(station) AND s.metric = \(metric) AND r.time > \(from) AND r.time <= \(to)
                  AND r.suspect
                """, as: Int64.self) ?? 0
        guard count > 0 else { return (0, []) }
        let newest = try await storedReadings(
            """
            SELECT \(unescaped: Self.readingColumns) FROM readings r JOIN series s ON s.id = r.series_id
            WHERE s.station = \(station) AND s.metric = \(metric) AND r.time > \(from) AND r.time <= \(to) AND r.suspect
            ORDER BY r.time DESC LIMIT \(max(0, limit))
            """)
        return (Int(count), newest)
    }
}

extension PostgresStore {
    /// Acknowledges the firing alert this id names (its episode's, or any transition's of the
    /// episode) until it resolves; nil when no firing alert has that id.
    @discardableResult
    public func ack(transitionID: Int64, by: String, at now: Int64) async throws -> (
        key: AlertKey, transition: Transition
    )? {
        // One probe for that alert, not the whole firing set (an HTTP or chat request asks).
        guard let alert = try await firingAlert(transitionID: transitionID) else { return nil }
        try await execute(
            """
            INSERT INTO acks (rule, station, metric, transition_id, acked_by, acked_at)
            VALUES (\(alert.key.rule), \(alert.key.station), \(alert.key.metric), \(alert.episode), \(by), \(now))
            ON CONFLICT (rule, station, metric) DO UPDATE SET transition_id = excluded.transition_id,
                acked_by = excluded.acked_by, acked_at = excluded.acked_at
            WHERE acks.transition_id <> excluded.transition_id
            """)
        return (alert.key, alert.transition)
    }

    /// Takes `key` for its first use until `expires`; false while an earlier use is remembered
    /// (by this daemon or another on the database). One statement: a few expired keys pruned, the
    /// key inserted unless a live one is there.
    public func claimOnce(key: String, expires: Int64, now: Int64) async throws -> Bool {
        let batch = ChatSeenSQL.pruneBatch
        let taken = try await rows(
            """
            WITH pruned AS (
                DELETE FROM chat_seen WHERE key IN (
                    SELECT key FROM chat_seen WHERE expires < \(now) AND key <> \(key) LIMIT \(batch)))
            INSERT INTO chat_seen (key, expires) VALUES (\(key), \(expires))
            ON CONFLICT (key) DO UPDATE SET expires = excluded.expires WHERE chat_seen.expires < \(now)
            RETURNING key
            """)
        return !taken.isEmpty
    }

    /// Forgets `key`, so that it may be used again.
    public func releaseOnce(key: String) async throws {
        try await execute("DELETE FROM chat_seen WHERE key = \(key)")
    }

    /// Acks that still hold: the alert is firing with the transition that was acknowledged.
    public func acks() async throws -> [AlertKey: Ack] {
        // A join in the store: the firing set is never loaded to be matched in memory.
        var out: [AlertKey: Ack] = [:]
        for row in try await rows(
            PostgresQuery(unsafeSQL: AckSQL.holding))
        {
            let key = AlertKey(
                rule: try row[0].decode(String.self), station: try row[1].decode(String.self),
                metric: try row[2].decode(String.self))
            let id = try row[3].decode(Int64.self)
            out[key] = Ack(transitionID: id, by: try row[4].decode(String.self), at: try row[5].decode(Int64.self))
        }
        return out
    }

    /// Count, min, mean, max and sum of a series for `from < time <= to` (not suspect), and how many
    /// suspect readings were left out; nil with no reading there that is not suspect.
    public func summary(station: String, metric: String, from: Int64, to: Int64) async throws -> SeriesSummary? {
        guard
            let row = try await rows(
                """
                SELECT count(*) FILTER (WHERE NOT r.suspect), min(r.value) FILTER (WHERE NOT r.suspect),
                  avg(r.value) FILTER (WHERE NOT r.suspect), max(r.value) FILTER (WHERE NOT r.suspect),
                  sum(r.value) FILTER (WHERE NOT r.suspect), min(r.time) FILTER (WHERE NOT r.suspect),
                  max(r.time) FILTER (WHERE NOT r.suspect), count(*) FILTER (WHERE r.suspect)
                FROM readings r JOIN series s ON s.id = r.series_id
                WHERE s.station = \(station) AND s.metric = \(metric) AND r.time > \(from) AND r.time <= \(to)
                """
            ).first
        else { return nil }
        let n = try row[0].decode(Int64.self)
        guard n > 0 else { return nil }
        return SeriesSummary(
            count: Int(n), min: try row[1].decode(Double.self), mean: try row[2].decode(Double.self),
            max: try row[3].decode(Double.self), sum: try row[4].decode(Double.self),
            first: try row[5].decode(Int64.self), last: try row[6].decode(Int64.self),
            suspect: Int(try row[7].decode(Int64.self)))
    }

    /// The counts behind `/metrics`, from `metric_counts` and the live waiting rows, as
    /// `SQLiteStore.metrics()` reads them.
    public func metrics() async throws -> StoreMetrics {
        let counts = try await rows("SELECT family, a, b, n, total FROM metric_counts").map { row in
            MetricDeltas.Row(
                family: try row[0].decode(String.self), a: try row[1].decode(String.self),
                b: try row[2].decode(String.self), n: Int(try row[3].decode(Int64.self)),
                total: try row[4].decode(Double.self))
        }
        var waiting: [String: Int] = [:]
        for row in try await rows(
            "SELECT state, count(*) FROM outbox WHERE state IN ('pending', 'sending', 'held') GROUP BY state")
        {
            waiting[try row[0].decode(String.self)] = Int(try row[1].decode(Int64.self))
        }
        let oldestDue = try await rows(PostgresQuery(unsafeSQL: AlertCountSQL.oldestDue)).first
            .flatMap { try $0[0].decode(Int64?.self) }
        return StoreMetrics(
            counts: counts, waiting: waiting, sources: try await sourceStates(), alerts: try await alertCounts(),
            oldestDue: oldestDue)
    }

    /// Active alerts by rule, severity and state (`AlertCountSQL`).
    public func alertCounts() async throws -> [AlertCount] {
        let active = try await rows(PostgresQuery(unsafeSQL: AlertCountSQL.active)).map { row in
            (
                rule: try row[0].decode(String.self), status: try row[1].decode(String.self),
                count: Int(try row[2].decode(Int64.self))
            )
        }
        var acked: [String: Int] = [:]
        for row in try await rows(PostgresQuery(unsafeSQL: AlertCountSQL.acked)) {
            acked[try row[0].decode(String.self)] = Int(try row[1].decode(Int64.self))
        }
        return AlertCount.make(active: active, acked: acked)
    }
}
