import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// Every firing alert with the transition that last announced it (for reminders).
    public func firingAlerts() async throws -> [(key: AlertKey, transitionID: Int64, transition: Transition)] {
        try await records(
            """
            SELECT to_jsonb(t)::text FROM transitions t JOIN (
                SELECT max(t.id) AS tid
                FROM alert_states a JOIN transitions t
                  ON t.rule = a.rule AND t.station = a.station AND t.metric = a.metric
                WHERE a.status = 'firing'
                GROUP BY a.rule, a.station, a.metric
            ) f ON t.id = f.tid
            ORDER BY t.id
            """, as: TransitionRecord.self
        ).map { r in (AlertKey(rule: r.rule, station: r.station, metric: r.metric), r.id ?? 0, r.transition) }
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

    public func activeSilences(now: Int64) async throws -> [Silence] {
        try await silences(now: now, includeExpired: false)
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
            let target: String
            if ids.contains(id) {
                target = id
            } else if ids.count == 1 {
                target = ids[0]
            } else {
                return ids.isEmpty ? .notFound : .ambiguous(ids)
            }
            try await self.execute(
                "UPDATE silences SET starts_at = least(starts_at, \(now) - 1), ends_at = \(now) WHERE id = \(target)",
                on: c)
            return .expired(target)
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
