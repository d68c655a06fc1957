import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

/// Retention as the conformance suite specifies it (`RetentionConformanceTests`): the same kinds, cut-offs and exceptions (a firing alert's
/// latest transition and its last notification per receiver, undelivered rows and their
/// transitions, unevaluated readings, a series' look-back and newest reading, the current version of
/// each quake event), one bounded transaction per step.
extension PostgresStore {
    /// Transitions (alias `t`) that may go (`cut` in seconds); the caller closes the parenthesis,
    /// after adding `outboxGoingFirst` for a dry run.
    static func transitionsPrunable(cut: String) -> String {
        """
        t.recorded_at < \(cut)
          AND t.id NOT IN (SELECT tid FROM firing WHERE tid IS NOT NULL)
          AND NOT EXISTS (SELECT 1 FROM outbox o
                          WHERE o.alert = t.rule || '|' || t.station || '|' || t.metric AND o.transition_id = t.id
        """
    }

    static func outboxGoingFirst(delivered: String, dead: String) -> String {
        """
         AND NOT ((o.state IN ('sent', 'muted', 'dropped', 'superseded', 'skipped') AND \(RetentionSQL.outboxPrunable(cut: delivered)))
                  OR (o.state = 'dead' AND \(RetentionSQL.outboxPrunable(cut: dead))))
        """
    }

    static func revisionsPrunable(cut: String) -> String {
        """
        r.recorded_at < \(cut)
          AND r.updated < coalesce((SELECT e.updated FROM quake_events e WHERE e.id = r.event_id), 9223372036854775807)
        """
    }

    func ingestLogLimit(on c: PostgresConnection) async throws -> Int64 {
        let top = try await scalar("SELECT coalesce(max(seq), 0)::bigint FROM ingest_log", as: Int64.self, on: c) ?? 0
        return min(try await meta(Self.cursorKey, on: c), top - 1)
    }

    func unevaluatedSeries(on c: PostgresConnection) async throws -> Set<Int64> {
        let cursor = try await meta(Self.cursorKey, on: c)
        return Set(
            try await rows("SELECT DISTINCT series_id FROM ingest_log WHERE seq > \(cursor)", on: c).map {
                try $0[0].decode(Int64.self)
            })
    }

    func readingsCutoff(series: Int64, _ plan: RetentionPlan, cut: Int64, on c: PostgresConnection) async throws
        -> Int64?
    {
        guard
            let newest = try await scalar(
                "SELECT max(time) FROM readings WHERE series_id = \(series)", as: Int64.self, on: c)
        else { return nil }
        return min(cut, newest.subtractingClamped(plan.lookBack))
    }

    public func prunable(_ plan: RetentionPlan) async throws -> PruneCounts {
        try await transaction { c in
            var out = PruneCounts()
            for (kind, state) in PruneCursor.steps {
                guard let cut = plan.cutoff(kind) else { continue }
                out[kind] += try await self.count(kind, state: state, cut: cut, plan, on: c)
            }
            return out
        }
    }

    func count(_ kind: HistoryKind, state: String?, cut: Int64, _ plan: RetentionPlan, on c: PostgresConnection)
        async throws -> Int
    {
        func n(_ query: PostgresQuery) async throws -> Int {
            Int(try await scalar(query, as: Int64.self, on: c) ?? 0)
        }
        switch kind {
        case .delivered, .dead:
            return try await n(
                """
                \(RetentionSQL.firingCTE) SELECT count(*) FROM outbox o
                WHERE o.state = $1 AND \(RetentionSQL.outboxPrunable(cut: "$2::bigint"))
                """.with(state ?? "", cut.multipliedClamped(by: 1000)))
        case .transitions:
            let delivered = plan.cutoff(.delivered).map { $0.multipliedClamped(by: 1000) } ?? Int64.min
            let dead = plan.cutoff(.dead).map { $0.multipliedClamped(by: 1000) } ?? Int64.min
            return try await n(
                """
                \(RetentionSQL.firingCTE) SELECT count(*) FROM transitions t
                WHERE \(Self.transitionsPrunable(cut: "$1::bigint"))
                  \(Self.outboxGoingFirst(delivered: "$2::bigint", dead: "$3::bigint")))
                """.with(cut, delivered, dead))
        case .readings:
            let skip = try await unevaluatedSeries(on: c)
            var total = 0
            for id in try await rows("SELECT id FROM series ORDER BY id", on: c).map({ try $0[0].decode(Int64.self) })
            where !skip.contains(id) {
                guard let cutoff = try await readingsCutoff(series: id, plan, cut: cut, on: c) else { continue }
                total += try await n("SELECT count(*) FROM readings WHERE series_id = \(id) AND time < \(cutoff)")
            }
            return total
        case .ingestLog:
            return try await n(
                """
                SELECT count(*) FROM ingest_log l WHERE l.seq <= \(try await ingestLogLimit(on: c)) AND EXISTS (
                    SELECT 1 FROM ingest_log k WHERE k.series_id = l.series_id
                      AND k.source IS NOT DISTINCT FROM l.source AND k.seq < l.seq)
                """)
        case .forecasts:
            return try await n("SELECT count(*) FROM forecasts WHERE date < \(RetentionPlan.day(cut))")
        case .quakeRevisions:
            return try await n(
                "SELECT count(*) FROM quake_revisions r WHERE \(Self.revisionsPrunable(cut: "$1::bigint"))"
                    .with(cut))
        case .forecastIssuances:
            return try await n(
                "SELECT count(*) FROM forecast_issuances f WHERE \(RetentionSQL.issuancesPrunable(cut: "$1::bigint"))"
                    .with(cut))
        case .airForecasts:
            return try await n("SELECT count(*) FROM air_forecasts WHERE date < \(RetentionPlan.day(cut))")
        }
    }

    public func prune(_ plan: RetentionPlan, from cursor: PruneCursor) async throws -> (
        removed: PruneCounts, next: PruneCursor
    ) {
        guard !cursor.isDone else { return (PruneCounts(), cursor) }
        let (kind, state) = PruneCursor.steps[cursor.step]
        guard let cut = plan.cutoff(kind) else { return (PruneCounts(), cursor.next()) }
        return try await transaction { c in
            let (n, next) = try await self.pruneStep(kind, state: state, cut: cut, plan, cursor, on: c)
            return (PruneCounts([kind: n]), next)
        }
    }

    func pruneStep(
        _ kind: HistoryKind, state: String?, cut: Int64, _ plan: RetentionPlan, _ cursor: PruneCursor,
        on c: PostgresConnection
    ) async throws -> (Int, PruneCursor) {
        let limit = plan.batch
        switch kind {
        case .delivered, .dead:
            // Walk (due_at, seq) from where the last step stopped; a deleted row's delivery outcome
            // stays counted (`metric_outbox_delete`).
            let found = try await rows(
                """
                \(RetentionSQL.firingCTE), gone AS (
                  DELETE FROM outbox WHERE seq IN (
                    SELECT o.seq FROM outbox o
                    WHERE o.state = $1 AND \(RetentionSQL.outboxPrunable(cut: "$2::bigint"))
                      AND (o.due_at, o.seq) > ($3::bigint, $4::bigint)
                    ORDER BY o.due_at, o.seq LIMIT $5)
                  RETURNING due_at, seq)
                SELECT due_at, seq FROM gone ORDER BY due_at DESC, seq DESC
                """.with(state ?? "", cut.multipliedClamped(by: 1000), cursor.a, cursor.b, Int64(limit)), on: c)
            guard found.count == limit, let last = found.first else { return (found.count, cursor.next()) }
            return (
                found.count,
                PruneCursor(
                    step: cursor.step, a: try last[0].decode(Int64.self), b: try last[1].decode(Int64.self), c: 0)
            )
        case .transitions:
            let found = try await rows(
                """
                \(RetentionSQL.firingCTE), gone AS (
                  DELETE FROM transitions WHERE id IN (
                    SELECT t.id FROM transitions t
                    WHERE \(Self.transitionsPrunable(cut: "$1::bigint")))
                      AND (t.recorded_at, t.id) > ($2::bigint, $3::bigint)
                    ORDER BY t.recorded_at, t.id LIMIT $4)
                  RETURNING recorded_at, id)
                SELECT recorded_at, id FROM gone ORDER BY recorded_at DESC, id DESC
                """.with(cut, cursor.a, cursor.b, Int64(limit)), on: c)
            guard found.count == limit, let last = found.first else { return (found.count, cursor.next()) }
            return (
                found.count,
                PruneCursor(
                    step: cursor.step, a: try last[0].decode(Int64.self), b: try last[1].decode(Int64.self), c: 0)
            )
        case .readings:
            let skip = try await unevaluatedSeries(on: c)
            let ids = try await rows(
                "SELECT id FROM series WHERE id >= \(cursor.a) ORDER BY id LIMIT 1000", on: c
            ).map { try $0[0].decode(Int64.self) }
            var removed = 0
            for id in ids where !skip.contains(id) {
                guard let cutoff = try await readingsCutoff(series: id, plan, cut: cut, on: c) else { continue }
                let budget = limit - removed
                if let bound = try await scalar(
                    """
                    SELECT time FROM readings WHERE series_id = \(id) AND time < \(cutoff)
                    ORDER BY time LIMIT 1 OFFSET \(budget - 1)
                    """, as: Int64.self, on: c)
                {
                    removed += try await execute(
                        "DELETE FROM readings WHERE series_id = \(id) AND time <= \(bound) RETURNING 1", on: c)
                    return (removed, PruneCursor(step: cursor.step, a: id, b: .min, c: 0))
                }
                removed += try await execute(
                    "DELETE FROM readings WHERE series_id = \(id) AND time < \(cutoff) RETURNING 1", on: c)
            }
            guard ids.count == 1000, let last = ids.last else { return (removed, cursor.next()) }
            return (removed, PruneCursor(step: cursor.step, a: last + 1, b: .min, c: 0))
        case .ingestLog:
            // Each evaluated entry folds into the oldest entry of its series and source.
            let found = try await rows(
                """
                SELECT seq, series_id, source, min_time, count FROM ingest_log
                WHERE seq > \(cursor.a) AND seq <= \(try await ingestLogLimit(on: c)) ORDER BY seq LIMIT \(limit)
                """, on: c)
            var removed = 0
            for row in found {
                let seq = try row[0].decode(Int64.self)
                let series = try row[1].decode(Int64.self)
                let source = try row[2].decode(String?.self)
                guard
                    let keeper = try await scalar(
                        """
                        SELECT seq FROM ingest_log WHERE series_id = \(series)
                          AND source IS NOT DISTINCT FROM \(source)::text ORDER BY seq LIMIT 1
                        """, as: Int64.self, on: c), keeper < seq
                else { continue }
                try await execute(
                    """
                    UPDATE ingest_log SET count = count + \(try row[4].decode(Int64.self)),
                      min_time = least(min_time, \(try row[3].decode(Int64.self)))
                    WHERE seq = \(keeper)
                    """, on: c)
                try await execute("DELETE FROM ingest_log WHERE seq = \(seq)", on: c)
                removed += 1
            }
            guard found.count == limit, let last = found.last else { return (removed, cursor.next()) }
            return (removed, PruneCursor(step: cursor.step, a: try last[0].decode(Int64.self), b: .min, c: 0))
        case .forecasts:
            let n = try await execute(
                """
                DELETE FROM forecasts WHERE ctid IN (
                  SELECT ctid FROM forecasts WHERE date < \(RetentionPlan.day(cut)) LIMIT \(limit))
                RETURNING 1
                """, on: c)
            return (n, n == limit ? cursor : cursor.next())
        case .quakeRevisions:
            let n = try await execute(
                """
                DELETE FROM quake_revisions WHERE ctid IN (
                  SELECT r.ctid FROM quake_revisions r WHERE \(Self.revisionsPrunable(cut: "$1::bigint"))
                  LIMIT $2)
                RETURNING 1
                """.with(cut, Int64(limit)), on: c)
            return (n, n == limit ? cursor : cursor.next())
        case .forecastIssuances:
            let n = try await execute(
                """
                DELETE FROM forecast_issuances WHERE ctid IN (
                  SELECT f.ctid FROM forecast_issuances f WHERE \(RetentionSQL.issuancesPrunable(cut: "$1::bigint"))
                  LIMIT $2)
                RETURNING 1
                """.with(cut, Int64(limit)), on: c)
            return (n, n == limit ? cursor : cursor.next())
        case .airForecasts:
            let n = try await execute(
                """
                DELETE FROM air_forecasts WHERE ctid IN (
                  SELECT ctid FROM air_forecasts WHERE date < \(RetentionPlan.day(cut)) LIMIT \(limit))
                RETURNING 1
                """, on: c)
            return (n, n == limit ? cursor : cursor.next())
        }
    }
}

extension String {
    /// A query of this text whose `$1`, `$2`… are the given values, in order.
    fileprivate func with(_ values: any PostgresNonThrowingEncodable...) -> PostgresQuery {
        var binds = PostgresBindings()
        for v in values { binds.append(v) }
        return PostgresQuery(unsafeSQL: self, binds: binds)
    }
}
