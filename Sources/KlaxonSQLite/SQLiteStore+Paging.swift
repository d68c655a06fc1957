import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

/// Bounded reads for lists (the status site, the API, chat): each returns at most one page.
extension SQLiteStore {
    /// Firing alerts after `after`, at most `limit` (1…10,000), with their acks: one query that
    /// reads one page (the store sorts the firing set by an index probe per alert; nothing else is
    /// loaded into memory).
    public func firingAlerts(limit: Int, after: FiringCursor?) async throws -> FiringPage {
        let limit = FiringQueries.clamp(limit)
        let b = FiringQueries.bounds(after)
        return try await reader.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT t.*, k.acked_by AS ack_by, k.acked_at AS ack_at FROM alert_states a
                    JOIN transitions t ON t.id = (
                        SELECT max(x.id) FROM transitions x
                        WHERE x.rule = a.rule AND x.station = a.station AND x.metric = a.metric)
                    LEFT JOIN acks k ON k.rule = a.rule AND k.station = a.station AND k.metric = a.metric
                        AND k.transition_id = coalesce(t.episode, t.id)
                    WHERE a.status = 'firing' AND (\(FiringQueries.rank), t.at, t.id) < (?, ?, ?)
                    ORDER BY \(FiringQueries.rank) DESC, t.at DESC, t.id DESC
                    LIMIT ?
                    """, arguments: [b.rank, b.at, b.id, limit + 1])
            let alerts = rows.prefix(limit).map { row -> FiringAlert in
                let record = TransitionRecord(row: row)
                let by: String? = row["ack_by"]
                let ack = by.map { Ack(transitionID: record.episodeID, by: $0, at: row["ack_at"]) }
                return FiringAlert(record: record, ack: ack)
            }
            return FiringPage(alerts: Array(alerts), next: rows.count > limit ? alerts.last?.cursor : nil)
        }
    }

    /// How many alerts are firing, by severity (an aggregate: no row is loaded).
    public func firingAlertCounts() async throws -> FiringCounts {
        try await reader.read { db in
            var out = FiringCounts()
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT t.severity, count(*) FROM alert_states a
                    JOIN transitions t ON t.id = (
                        SELECT max(x.id) FROM transitions x
                        WHERE x.rule = a.rule AND x.station = a.station AND x.metric = a.metric)
                    WHERE a.status = 'firing' GROUP BY t.severity
                    """)
            {
                let severity = Severity(rawValue: row[0]) ?? .warning
                out.bySeverity[severity, default: 0] += row[1] as Int
            }
            return out
        }
    }

    /// The firing alert an id names (`AckSQL.firing`), with its episode: one probe (for `ack`).
    func firingAlert(transitionID: Int64) async throws -> (key: AlertKey, transition: Transition, episode: Int64)? {
        try await reader.read { db in
            try TransitionRecord.fetchOne(db, sql: AckSQL.firing(select: "t.*"), arguments: [transitionID]).map { r in
                (AlertKey(rule: r.rule, station: r.station, metric: r.metric), r.transition, r.episodeID)
            }
        }
    }

    /// Silences ordered by start then id, after `after`, at most `limit` (1…10,000), and how many
    /// there are in all: those not ended by `now`, or all with `includeExpired`.
    public func silences(now: Int64, includeExpired: Bool, limit: Int, after: SilenceCursor?) async throws
        -> SilencePage
    {
        let limit = FiringQueries.clamp(limit)
        return try await reader.read { db in
            let total =
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM silences WHERE ? OR ends_at > ?", arguments: [includeExpired, now])
                ?? 0
            let records = try SilenceRecord.fetchAll(
                db,
                sql: """
                    SELECT * FROM silences WHERE (? OR ends_at > ?) AND (? OR (starts_at, id) > (?, ?))
                    ORDER BY starts_at, id LIMIT ?
                    """,
                arguments: [
                    includeExpired, now, after == nil, after?.starts ?? 0, after?.id ?? "", limit + 1,
                ])
            let shown = records.prefix(limit)
            let next = records.count > limit ? shown.last.map { SilenceCursor(starts: $0.startsAt, id: $0.id) } : nil
            return SilencePage(silences: shown.compactMap(\.silence), total: total, next: next)
        }
    }
}

extension SQLiteStore {
    /// Events with origin time in `[from, to]` (ms) and at least `minMagnitude` (when given), newest
    /// first, at most `limit` (1…10,000), their count, and the revision counts of those listed.
    public func quakes(from: Int64, to: Int64, minMagnitude: Double?, limit: Int) async throws -> QuakePage {
        let limit = FiringQueries.clamp(limit)
        return try await reader.read { db in
            let filter = "time >= ? AND time <= ? AND (? IS NULL OR magnitude >= ?)"
            let args: StatementArguments = [from, to, minMagnitude, minMagnitude]
            let total = try Int.fetchOne(db, sql: "SELECT count(*) FROM quake_events WHERE \(filter)", arguments: args)
            let quakes = try Row.fetchAll(
                db, sql: "SELECT id, event, seq FROM quake_events WHERE \(filter) ORDER BY time DESC, id LIMIT ?",
                arguments: args + [limit]
            ).compactMap { row -> StoredQuake? in
                guard let e = try? JSONDecoder().decode(QuakeEvent.self, from: Data((row["event"] as String).utf8))
                else { return nil }
                return StoredQuake(key: row["id"], event: e, seq: row["seq"])
            }
            var revisions: [String: Int] = [:]
            if !quakes.isEmpty {
                let marks = Array(repeating: "?", count: quakes.count).joined(separator: ",")
                for row in try Row.fetchAll(
                    db, sql: "SELECT event_id, count(*) FROM quake_revisions WHERE event_id IN (\(marks)) GROUP BY 1",
                    arguments: StatementArguments(quakes.map(\.key)))
                {
                    revisions[row[0]] = row[1]
                }
            }
            return QuakePage(quakes: quakes, total: total ?? 0, revisions: revisions)
        }
    }
}
