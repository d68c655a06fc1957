import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
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
         AND NOT ((o.state IN ('sent', 'muted', 'dropped', 'superseded', 'skipped') AND \(RetentionSQL.outboxPrunable(cut: ":dcut")))
                  OR (o.state = 'dead' AND \(RetentionSQL.outboxPrunable(cut: ":xcut"))))
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
                    "\(RetentionSQL.firingCTE) SELECT count(*) FROM outbox o WHERE o.state = :state AND \(RetentionSQL.outboxPrunable(cut: ":cut"))",
                arguments: ["state": state, "cut": cut.multipliedClamped(by: 1000)]) ?? 0
        case .transitions:
            return try Int.fetchOne(
                db,
                sql:
                    "\(RetentionSQL.firingCTE) SELECT count(*) FROM transitions t WHERE \(transitionsPrunable) \(outboxGoingFirst))",
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
                db, sql: "SELECT count(*) FROM forecasts WHERE date < ?", arguments: [RetentionPlan.day(cut)]) ?? 0
        case .quakeRevisions:
            return try Int.fetchOne(
                db, sql: "SELECT count(*) FROM quake_revisions r WHERE \(revisionsPrunable)", arguments: ["cut": cut])
                ?? 0
        case .forecastIssuances:
            return try Int.fetchOne(
                db,
                sql: "SELECT count(*) FROM forecast_issuances f WHERE \(RetentionSQL.issuancesPrunable(cut: "?"))",
                arguments: [cut]) ?? 0
        case .airForecasts:
            return try Int.fetchOne(
                db, sql: "SELECT count(*) FROM air_forecasts WHERE date < ?", arguments: [RetentionPlan.day(cut)]) ?? 0
        }
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
                    \(RetentionSQL.firingCTE)
                    SELECT o.rowid AS r, o.due_at AS d FROM outbox o
                    WHERE o.state = :state AND \(RetentionSQL.outboxPrunable(cut: ":cut")) AND o.due_at >= :pd AND (o.due_at > :pd OR o.rowid > :pr)
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
                    \(RetentionSQL.firingCTE)
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
                arguments: [RetentionPlan.day(cut), limit])
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
        case .forecastIssuances:
            try db.execute(
                sql: """
                    DELETE FROM forecast_issuances WHERE rowid IN (
                      SELECT f.rowid FROM forecast_issuances f WHERE \(RetentionSQL.issuancesPrunable(cut: "?")) LIMIT ?)
                    """, arguments: [cut, limit])
            let n = db.changesCount
            return (n, n == limit ? cursor : cursor.next())
        case .airForecasts:
            try db.execute(
                sql:
                    "DELETE FROM air_forecasts WHERE rowid IN (SELECT rowid FROM air_forecasts WHERE date < ? LIMIT ?)",
                arguments: [RetentionPlan.day(cut), limit])
            let n = db.changesCount
            return (n, n == limit ? cursor : cursor.next())
        }
    }

    static func deleteRowids(_ ids: [Int64], table: String, _ db: Database) throws {
        let delete = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE rowid = ?")
        for id in ids { try delete.execute(arguments: [id]) }
    }
}
