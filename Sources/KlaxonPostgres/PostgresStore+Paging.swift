import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

/// Bounded reads for lists (the status site, the API, chat), as `SQLiteStore` answers them.
extension PostgresStore {
    public func firingAlerts(limit: Int, after: FiringCursor?) async throws -> FiringPage {
        let limit = FiringQueries.clamp(limit)
        let b = FiringQueries.bounds(after)
        let rows = try await rows(
            """
            SELECT to_jsonb(t)::text, k.acked_by, k.acked_at FROM alert_states a
            CROSS JOIN LATERAL (
                SELECT * FROM transitions x WHERE x.rule = a.rule AND x.station = a.station AND x.metric = a.metric
                ORDER BY x.id DESC LIMIT 1) t
            LEFT JOIN acks k ON k.rule = a.rule AND k.station = a.station AND k.metric = a.metric
                AND k.transition_id = coalesce(t.episode, t.id)
            WHERE a.status = 'firing'
              AND (\(unescaped: FiringQueries.rank), t.at, t.id) < (\(Int64(b.rank)), \(b.at), \(b.id))
            ORDER BY \(unescaped: FiringQueries.rank) DESC, t.at DESC, t.id DESC
            LIMIT \(Int64(limit + 1))
            """)
        var alerts: [FiringAlert] = []
        for row in rows.prefix(limit) {
            let r = try Self.decoder.decode(TransitionRecord.self, from: Data(try row[0].decode(String.self).utf8))
            let ack = try row[1].decode(String?.self).map {
                Ack(transitionID: r.episodeID, by: $0, at: try row[2].decode(Int64.self))
            }
            alerts.append(FiringAlert(record: r, ack: ack))
        }
        return FiringPage(alerts: alerts, next: rows.count > limit ? alerts.last?.cursor : nil)
    }

    public func firingAlertCounts() async throws -> FiringCounts {
        var out = FiringCounts()
        for row in try await rows(
            """
            SELECT t.severity, count(*) FROM alert_states a
            CROSS JOIN LATERAL (
                SELECT severity FROM transitions x
                WHERE x.rule = a.rule AND x.station = a.station AND x.metric = a.metric
                ORDER BY x.id DESC LIMIT 1) t
            WHERE a.status = 'firing' GROUP BY t.severity
            """)
        {
            let severity = Severity(rawValue: try row[0].decode(String.self)) ?? .warning
            out.bySeverity[severity, default: 0] += Int(try row[1].decode(Int64.self))
        }
        return out
    }

    /// The firing alert an id names (`AckSQL.firing`), with its episode: one probe (for `ack`).
    func firingAlert(transitionID: Int64) async throws -> (key: AlertKey, transition: Transition, episode: Int64)? {
        var binds = PostgresBindings(capacity: 1)
        binds.append(transitionID)
        return try await rows(PostgresQuery(unsafeSQL: AckSQL.firing(select: "to_jsonb(t)::text"), binds: binds)).first
            .map { row in
                let r = try Self.decoder.decode(TransitionRecord.self, from: Data(try row[0].decode(String.self).utf8))
                return (AlertKey(rule: r.rule, station: r.station, metric: r.metric), r.transition, r.episodeID)
            }
    }

    public func silences(now: Int64, includeExpired: Bool, limit: Int, after: SilenceCursor?) async throws
        -> SilencePage
    {
        let limit = FiringQueries.clamp(limit)
        let total =
            try await scalar(
                "SELECT count(*) FROM silences WHERE \(includeExpired) OR ends_at > \(now)", as: Int64.self) ?? 0
        let records = try await records(
            """
            SELECT to_jsonb(s)::text FROM silences s
            WHERE (\(includeExpired) OR ends_at > \(now))
              AND (\(after == nil) OR (starts_at, id) > (\(after?.starts ?? 0), \(after?.id ?? "")))
            ORDER BY starts_at, id LIMIT \(Int64(limit + 1))
            """, as: SilenceRecord.self)
        let shown = records.prefix(limit)
        let next = records.count > limit ? shown.last.map { SilenceCursor(starts: $0.startsAt, id: $0.id) } : nil
        return SilencePage(silences: shown.compactMap(\.silence), total: Int(total), next: next)
    }
}

extension PostgresStore {
    public func quakes(from: Int64, to: Int64, minMagnitude: Double?, limit: Int) async throws -> QuakePage {
        let limit = FiringQueries.clamp(limit)
        let total =
            try await scalar(
                """
                SELECT count(*) FROM quake_events WHERE time >= \(from) AND time <= \(to)
                  AND (\(minMagnitude)::float8 IS NULL OR magnitude >= \(minMagnitude))
                """, as: Int64.self) ?? 0
        let quakes = try await rows(
            """
            SELECT id, event, seq FROM quake_events WHERE time >= \(from) AND time <= \(to)
              AND (\(minMagnitude)::float8 IS NULL OR magnitude >= \(minMagnitude))
            ORDER BY time DESC, id LIMIT \(Int64(limit))
            """
        ).compactMap { row -> StoredQuake? in
            guard let e = try? JSONDecoder().decode(QuakeEvent.self, from: Data(try row[1].decode(String.self).utf8))
            else { return nil }
            return StoredQuake(key: try row[0].decode(String.self), event: e, seq: try row[2].decode(Int64.self))
        }
        var revisions: [String: Int] = [:]
        if !quakes.isEmpty {
            for row in try await rows(
                "SELECT event_id, count(*) FROM quake_revisions WHERE event_id = ANY(\(quakes.map(\.key))) GROUP BY 1")
            {
                revisions[try row[0].decode(String.self)] = Int(try row[1].decode(Int64.self))
            }
        }
        return QuakePage(quakes: quakes, total: Int(total), revisions: revisions)
    }
}
