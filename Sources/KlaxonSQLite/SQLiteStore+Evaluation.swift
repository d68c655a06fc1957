import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore: EvaluationBackend {
    /// The last `ingest_log` entry evaluated.
    static let cursorKey = "evaluated_log_seq"

    /// Evaluates what arrived since the last evaluation: `EvaluationBackend.runEvaluation`, over this
    /// backend's transactions.
    public func evaluate<P: TransitionPlanner, O: EvaluationObserver>(_ e: Evaluation<P>, observer: O) async throws
        -> EvaluationResult
    {
        _ = try requireWriter()
        return try await runEvaluation(e, observer: observer)
    }

    public func resolveRemoved<P: TransitionPlanner>(rules: Set<String>, _ e: Evaluation<P>) async throws -> [Logged] {
        guard !rules.isEmpty else { return [] }
        let names = "[" + rules.sorted().map(JSONText.string).joined(separator: ",") + "]"
        return try await requireWriter().write { db in
            let firing = try Row.fetchAll(
                db,
                sql: RemovedRules.firingLatest(
                    select: "t.*, a.state AS alert_state", ruleList: "SELECT value FROM json_each(?)"),
                arguments: [names]
            ).map { row in
                (TransitionRecord(row: row).transition, AlertStateRecord.decode(state: row["alert_state"]))
            }
            let run = RemovedRules.resolves(firing, e)
            try Self.save(run.states, db)
            return try Self.log(run.transitions, db, e)
        }
    }

    public func evaluationRange() async throws -> (cursor: Int64, top: Int64) {
        try await reader.read { db in
            (
                try Self.meta(db, Self.cursorKey),
                try Int64.fetchOne(db, sql: "SELECT coalesce(max(seq), 0) FROM ingest_log") ?? 0
            )
        }
    }

    public func changedSeries(after: Int64, through: Int64) async throws -> [(series: ChangedSeries, suspect: Int)] {
        try await reader.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT l.series_id, s.station, s.metric, s.unit, sum(l.count) AS n, sum(l.suspect) AS x
                    FROM ingest_log l JOIN series s ON s.id = l.series_id
                    WHERE l.seq > ? AND l.seq <= ?
                    GROUP BY l.series_id ORDER BY l.series_id
                    """, arguments: [after, through]
            ).map { row in
                ChangedSeries.changed(
                    id: row["series_id"], key: SeriesKey(station: row["station"], metric: row["metric"]),
                    unit: row["unit"], n: row["n"], x: row["x"])
            }
        }
    }

    public func allSeries() async throws -> [ChangedSeries] {
        try await reader.read { db in
            try Row.fetchAll(db, sql: "SELECT id, station, metric, unit FROM series ORDER BY id").map { row in
                ChangedSeries(
                    id: row["id"], key: SeriesKey(station: row["station"], metric: row["metric"]), unit: row["unit"])
            }
        }
    }

    public func evaluateReadings<P: TransitionPlanner>(
        _ series: [ChangedSeries], _ e: Evaluation<P>, cursor: Int64?, claim: QueueClaim?
    ) async throws -> ReadingsSlice {
        try await requireWriter().write { db in
            let run = try ReadingsStep(series, e).run(
                states: { i in try Self.loadStates([series[i].key], db)[series[i].key] ?? [:] },
                history: { _, seriesID, from, through in
                    try Self.pairs(
                        db,
                        """
                        SELECT time, value FROM readings
                        WHERE series_id = ? AND time > ? AND time <= ? AND suspect = 0 ORDER BY time
                        """, [seriesID, from, through])
                },
                readings: { _, seriesID, after, limit in
                    try Self.pairs(
                        db,
                        """
                        SELECT time, value FROM readings
                        WHERE series_id = ? AND time > ? AND suspect = 0 ORDER BY time LIMIT ?
                        """, [seriesID, after, limit])
                })
            try Self.save(run.states, db)
            var slice = run.slice
            slice.logged = try Self.log(run.transitions, db, e, claim: claim)
            if let cursor, slice.done == series.count {
                try Self.setMeta(db, Self.cursorKey, cursor)
            }
            return slice
        }
    }

    public func advanceQuiet<P: TransitionPlanner>(_ series: [ChangedSeries], _ e: Evaluation<P>) async throws
        -> [Logged]
    {
        try await requireWriter().write { db in
            let step = QuietStep(series, e, states: try Self.loadStates(series.map(\.key), db))
            var newest: [Int: (time: Int64, value: Double)] = [:]
            for want in step.newestWanted {
                newest[want.index] =
                    try Self.pairs(
                        db,
                        "SELECT time, value FROM readings WHERE series_id = ? AND suspect = 0 ORDER BY time DESC LIMIT 1",
                        [want.seriesID]
                    ).first
            }
            let run = step.run(newest: newest)
            try Self.save(run.states, db)
            return try Self.log(run.transitions, db, e)
        }
    }

    /// (time, value) pairs a statement reads.
    static func pairs(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws -> [(
        time: Int64, value: Double
    )] {
        var out: [(time: Int64, value: Double)] = []
        let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: arguments)
        while let r = try rows.next() { out.append((r[0], r[1])) }
        return out
    }

    // The statements below run once per series or per transition: they are prepared once per
    // connection (`cachedStatement`), not compiled again each time, which was a quarter of the cost.

    static func loadStates(_ keys: [SeriesKey], _ db: Database) throws -> [SeriesKey: [String: AlertState]] {
        var states: [SeriesKey: [String: AlertState]] = [:]
        let select = try db.cachedStatement(
            sql: "SELECT rule, state FROM alert_states WHERE station = ? AND metric = ?")
        for key in keys {
            let rows = try Row.fetchCursor(select, arguments: [key.station, key.metric])
            while let row = try rows.next() {
                states[key, default: [:]][row[0]] = AlertStateRecord.decode(state: row[1])
            }
        }
        return states
    }

    static func save(_ records: [AlertStateRecord], _ db: Database) throws {
        guard !records.isEmpty else { return }
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO alert_states (rule, station, metric, status, level, since, state, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (rule, station, metric) DO UPDATE SET status = excluded.status, level = excluded.level,
                  since = excluded.since, state = excluded.state, updated_at = excluded.updated_at
                """)
        for r in records {
            upsert.setUncheckedArguments([
                r.rule, r.station, r.metric, r.status, r.level, r.since, r.state, r.updatedAt,
            ])
            try upsert.execute()
        }
    }

    static func meta(_ db: Database, _ key: String) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", arguments: [key]) ?? 0
    }

    static func setMeta(_ db: Database, _ key: String, _ value: Int64) throws {
        try db.execute(
            sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            arguments: [key, String(value)])
    }

    public func evaluateQuakes<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> (logged: [Logged], more: Bool)
    {
        try await requireWriter().write { db in
            let cursor = try Self.meta(db, Self.quakeCursorKey)
            let rows = try Row.fetchAll(
                db, sql: "SELECT id, event, seq FROM quake_events WHERE seq > ? ORDER BY seq LIMIT ?",
                arguments: [cursor, EventRounds.quakeSlice])
            let round = EventRounds.QuakeRound(
                rows: rows.map { (key: $0["id"], event: $0["event"], seq: $0["seq"]) }, after: cursor, runner: e.quakes)
            let plan = round.plan(announced: try Announcements.load(db, table: EventRounds.quakeTable, round.wanted))
            let logged = try Self.executeRound(plan, db, e)
            try Self.setMeta(db, Self.quakeCursorKey, round.cursor)
            return (logged, round.more)
        }
    }

    public func evaluateTrips<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> [Logged] {
        try await requireWriter().write { db in
            let round = EventRounds.TripRound(trips: try Self.trips(owner: nil, db), runner: e.trips, now: e.now)
            let weather = try round.trips.map { trip in
                (
                    weather: try Self.weather(for: trip, radiusKm: EventRounds.tripRadiusKm, db),
                    alerts: try Self.alerts(for: trip, radiusKm: EventRounds.tripRadiusKm, db),
                    air: try Self.airDays(for: trip, db)
                )
            }
            let announced = try Announcements.load(db, table: EventRounds.tripTable, round.wanted)
            return try Self.executeRound(round.plan(weather, announced: announced), db, e)
        }
    }

    public func evaluateForecasts<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> [Logged] {
        try await requireWriter().write { db in
            let series = try Row.fetchAll(db, sql: "SELECT DISTINCT station, metric FROM forecast_issuances").map {
                SeriesKey(station: $0[0], metric: $0[1])
            }
            let round = EventRounds.ForecastRound(series: series, runner: e.forecasts, now: e.now)
            let latest = try db.cachedStatement(
                sql: """
                    SELECT station, metric, issued, unit, source, points FROM forecast_issuances
                    WHERE station = ? AND metric = ? ORDER BY issued DESC LIMIT 1
                    """)
            let observed = try db.cachedStatement(
                sql: """
                    SELECT r.value FROM series s JOIN readings r ON r.series_id = s.id
                    WHERE s.station = ? AND s.metric = ? AND r.suspect = 0 AND r.time <= ? ORDER BY r.time DESC LIMIT 1
                    """)
            let inputs = try round.series.map { key in
                EventRounds.ForecastRound.Input(
                    forecast: try Row.fetchOne(latest, arguments: [key.station, key.metric]).map(Self.forecast),
                    observed: try Double.fetchOne(observed, arguments: [key.station, key.metric, e.present]))
            }
            let announced = try Announcements.load(db, table: EventRounds.forecastTable, round.wanted)
            return try Self.executeRound(round.plan(inputs, announced: announced, engine: e.engine), db, e)
        }
    }

    /// Executes an event round's plan: saves the announcements that changed, logs the transitions.
    static func executeRound<P: TransitionPlanner>(_ plan: EventPlan, _ db: Database, _ e: Evaluation<P>) throws
        -> [Logged]
    {
        for s in plan.saves { try Announcements.save(s.json, db, table: plan.table, key: s.key) }
        return try log(plan.transitions, db, e, events: plan.events)
    }

    /// Logs transitions (`TransitionLog`) with their episodes and queues their deliveries
    /// (`OutboxPlan`), inside the caller's transaction. With `claim`, the rows it queues are claimed
    /// for this process's dispatcher as `claim` allows.
    static func log<P: TransitionPlanner>(
        _ transitions: [Transition], _ db: Database, _ e: Evaluation<P>, claim: QueueClaim? = nil,
        events: Bool = false
    ) throws -> [Logged] {
        var log = TransitionLog(transitions, e, events: events)
        guard !log.isEmpty else { return [] }
        if e.planner.routes { try deferForeignKeys(db) }
        let ids = try takeTransitionIDs(log.records.count, db)
        var open: [AlertKey: OpenEpisode] = [:]
        for key in log.episodeLookups { open[key] = try openEpisode(key, db) }
        log.assign(ids: ids, open: open)
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO transitions (id, rule, kind, station, metric, state, level, from_level, at, value, unit,
                  severity, labels, summary, explanation, message, recorded_at, episode, started_at, extra)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for r in log.records {
            insert.setUncheckedArguments([
                r.id, r.rule, r.kind, r.station, r.metric, r.state, r.level, r.fromLevel, r.at, r.value, r.unit,
                r.severity, r.labels, r.summary, r.explanation, r.message, r.recordedAt, r.episode, r.startedAt,
                r.extra,
            ])
            try insert.execute()
        }
        if e.planner.routes {
            let alerts = Array(Set(log.transitions.map(OutboxRecord.alertKey)))
            let queued = try queuedRows(alerts: alerts, db)
            let heard = try heard(alerts: claim != nil ? alerts : OutboxPlan.heardNeeded(log, queued: queued), db)
            log.routeResolves(heard: heard, e)
            let plan = OutboxPlan(log, queued: queued, now: e.now, heard: heard)
            if let claim {
                for q in plan.ahead { claim.noteOpen(alert: q.alert, receiver: q.receiver) }
                claim.heard = heard
            }
            try supersede(plan.folded, db)
            log.deltas.add("outbox", OutboxRecord.State.superseded.rawValue, n: plan.folded.count)
            for row in plan.rows {
                let t = log.transitions[row.index]
                let due = row.due(try dueTime(db, row.delivery, now: e.queuedAt))
                try enqueue(
                    db, transitionID: ids[row.index], transition: t,
                    deliveries: [(row.delivery.receiver, row.delivery.route, row.delivery.groupKey, due)],
                    now: e.queuedAt, claim: row.held ? nil : claim, record: log.records[row.index], path: row.path,
                    held: row.held)
            }
        }
        try log.deltas.write(db)
        return log.logged(ids: ids)
    }

    /// `n` new transition ids, in order: after every id ever used (the table is `AUTOINCREMENT`, so
    /// pruned ids are never reused), taken before the rows are written so each knows its episode.
    static func takeTransitionIDs(_ n: Int, _ db: Database) throws -> [Int64] {
        let last =
            try Int64.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'transitions'), 0),
                                   coalesce((SELECT max(id) FROM transitions), 0))
                        """)) ?? 0
        return (0..<Int64(n)).map { last + 1 + $0 }
    }

    /// An alert's open episode, from its newest transition.
    static func openEpisode(_ key: AlertKey, _ db: Database) throws -> OpenEpisode? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: EpisodeSQL.newest), arguments: [key.rule, key.station, key.metric])
        else { return nil }
        return OpenEpisode.from(
            episode: row[3], startedAt: row[4], state: row[2], id: row[0], at: row[1], extra: row[5])
    }

    /// The rows queued for `alerts` that have not gone out (pending, sending, held), in queue order,
    /// each with its transition's state: what `OutboxPlan` folds and orders after.
    static func queuedRows(alerts: [String], _ db: Database) throws -> [QueuedRow] {
        guard !alerts.isEmpty else { return [] }
        let keys = "[" + alerts.map(JSONText.string).joined(separator: ",") + "]"
        var out: [QueuedRow] = []
        for sql in [
            """
            SELECT o.id, o.alert, o.receiver, o.route, o.state, o.batch, o.path, t.state, t.level, t.at,
              coalesce(t.episode, t.id), o.due_at, t.from_level
            FROM outbox o INDEXED BY outbox_open_by_alert JOIN transitions t ON t.id = o.transition_id
            WHERE o.alert IN (SELECT value FROM json_each(?)) AND o.state IN ('pending', 'sending')
            """,
            """
            SELECT o.id, o.alert, o.receiver, o.route, o.state, o.batch, o.path, t.state, t.level, t.at,
              coalesce(t.episode, t.id), o.due_at, t.from_level
            FROM outbox o INDEXED BY outbox_held JOIN transitions t ON t.id = o.transition_id
            WHERE o.alert IN (SELECT value FROM json_each(?)) AND o.state = 'held'
            """,
        ] {
            let rows = try Row.fetchCursor(db.cachedStatement(sql: sql), arguments: [keys])
            while let row = try rows.next() {
                out.append(
                    QueuedRow(
                        id: row[0], alert: row[1], receiver: row[2], route: row[3],
                        state: OutboxRecord.State(rawValue: row[4]) ?? .pending, batch: row[5], path: row[6],
                        step: PathStep(
                            state: TransitionState(rawValue: row[7]) ?? .firing, level: row[8], from: row[12],
                            at: row[9], episode: row[10]), dueAt: row[11]))
            }
        }
        return out
    }

    /// What each receiver last heard of `alerts`, by `alert|receiver`.
    static func heard(alerts: [String], _ db: Database) throws -> [String: Heard] {
        guard !alerts.isEmpty else { return [:] }
        let keys = "[" + alerts.map(JSONText.string).joined(separator: ",") + "]"
        var out: [String: Heard] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: EpisodeSQL.heard(list: "IN (SELECT value FROM json_each(?))")), arguments: [keys])
        while let row = try rows.next() {
            if let h = Heard.from(episode: row[2], state: row[3], level: row[4]) {
                out[QueueClaim.heardKey(alert: row[0], receiver: row[1])] = h
            }
        }
        return out
    }

    /// Marks queued rows as taken over by newer ones.
    static func supersede(_ ids: [String], _ db: Database) throws {
        guard !ids.isEmpty else { return }
        let update = try db.cachedStatement(
            sql:
                "UPDATE outbox SET state = 'superseded', last_error = 'folded into a newer notification of its alert' WHERE id = ?"
        )
        for id in ids { try update.execute(arguments: [id]) }
    }
}

extension SQLiteStore {
    /// Decides every held row (`HeldRow.send`), in one transaction; reads only when none is held.
    public func settleHeld(now: Int64) async throws -> Int {
        let any = try await reader.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM outbox WHERE state = 'held')") ?? false
        }
        guard any else { return 0 }
        return try await requireWriter().write { db in
            var settle = HeldSettlement()
            for row in try Row.fetchAll(db, sql: EpisodeSQL.held) {
                settle.add(
                    id: row[0], state: row[1], level: row[2], episode: row[3], latest: row[4],
                    heard: Heard.from(episode: row[5], state: row[6], level: row[7]))
            }
            // Due when its group's timing said when it was queued, or now if that has passed.
            let send = try db.cachedStatement(
                sql: "UPDATE outbox SET state = 'pending', due_at = max(due_at, ?) WHERE id = ?")
            for id in settle.send { try send.execute(arguments: [now, id]) }
            let skip = try db.cachedStatement(
                sql: "UPDATE outbox SET state = 'skipped', last_error = ?, sent_at = NULL WHERE id = ?")
            for (id, why) in settle.skip { try skip.execute(arguments: [why, id]) }
            try settle.deltas.write(db)
            return settle.send.count
        }
    }
}
