import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore: EvaluationBackend {
    /// The last `ingest_log` entry evaluated (in `meta`).
    static let cursorKey = "evaluated_log_seq"

    /// Evaluates what arrived since the last evaluation: `EvaluationBackend.runEvaluation`, over this
    /// backend's transactions. Each evaluation transaction first takes its turn (`evaluationTurn`).
    public func evaluate<P: TransitionPlanner, O: EvaluationObserver>(_ e: Evaluation<P>, observer: O) async throws
        -> EvaluationResult
    {
        try await runEvaluation(e, observer: observer)
    }

    /// The transaction-scoped advisory lock each evaluation transaction takes first. The daemon's
    /// evaluator is one instance's duty, but `klaxon evaluate` from cron, or an old holder that has not
    /// yet noticed it lost the duty, may evaluate at the same time: their transactions then take turns,
    /// and each reads the alert states the other committed (an alert's state knows the last reading it
    /// stepped), so no reading is stepped twice and no transition logged twice.
    static let evaluationLock: Int64 = 0x6b6c_786e_6576_6101

    func evaluationTurn(on c: PostgresConnection) async throws {
        try await execute("SELECT pg_advisory_xact_lock(\(Self.evaluationLock))", on: c)
    }

    public func resolveRemoved<P: TransitionPlanner>(rules: Set<String>, _ e: Evaluation<P>) async throws -> [Logged] {
        guard !rules.isEmpty else { return [] }
        var binds = PostgresBindings(capacity: 1)
        binds.append(rules.sorted())
        let query = PostgresQuery(
            unsafeSQL: RemovedRules.firingLatest(
                select: "to_jsonb(t)::text, a.state", ruleList: "SELECT unnest($1::text[])"),
            binds: binds)
        return try await transaction { c in
            try await self.evaluationTurn(on: c)
            var firing: [(latest: Transition, state: AlertState)] = []
            for row in try await self.rows(query, on: c) {
                let record = try Self.decoder.decode(
                    TransitionRecord.self, from: Data(try row[0].decode(String.self).utf8))
                firing.append((record.transition, Self.decodeState(try row[1].decode(String.self))))
            }
            let run = RemovedRules.resolves(firing, e)
            try await self.save(run.states, on: c)
            return try await self.log(run.transitions, e, on: c)
        }
    }

    public func evaluationRange() async throws -> (cursor: Int64, top: Int64) {
        (try await meta(Self.cursorKey), try await ingestMark())
    }

    public func changedSeries(after: Int64, through: Int64) async throws -> [(series: ChangedSeries, suspect: Int)] {
        try await rows(
            """
            SELECT l.series_id, s.station, s.metric, s.unit, sum(l.count)::bigint AS n, sum(l.suspect)::bigint AS x
            FROM ingest_log l JOIN series s ON s.id = l.series_id
            WHERE l.seq > \(after) AND l.seq <= \(through)
            GROUP BY l.series_id, s.station, s.metric, s.unit ORDER BY l.series_id
            """
        ).map { row in
            ChangedSeries.changed(
                id: try row[0].decode(Int64.self),
                key: SeriesKey(station: try row[1].decode(String.self), metric: try row[2].decode(String.self)),
                unit: try row[3].decode(String?.self), n: Int(try row[4].decode(Int64.self)),
                x: Int(try row[5].decode(Int64.self)))
        }
    }

    public func allSeries() async throws -> [ChangedSeries] {
        try await rows("SELECT id, station, metric, unit FROM series ORDER BY id").map { row in
            ChangedSeries(
                id: try row[0].decode(Int64.self),
                key: SeriesKey(station: try row[1].decode(String.self), metric: try row[2].decode(String.self)),
                unit: try row[3].decode(String?.self))
        }
    }

    /// A few statements for the whole slice, not a few per series: the series' alert states in one
    /// query, their new readings in another (in series order, each series' own after its last stepped
    /// reading, up to the budget), the states written back in one, and the transitions and outbox rows
    /// in two (`log`). A round trip costs about a millisecond, and a slice holds hundreds of series.
    public func evaluateReadings<P: TransitionPlanner>(
        _ series: [ChangedSeries], _ e: Evaluation<P>, cursor: Int64?, claim: QueueClaim?
    ) async throws -> ReadingsSlice {
        try await transaction { c in
            try await self.evaluationTurn(on: c)
            let step = ReadingsStep(series, e)
            let states = try await self.loadStates(series.map(\.key), on: c)
            let wanted = step.wanted { states[series[$0].key] ?? [:] }
            var history: [Int: ReadingsStep.Values] = [:]
            for want in wanted.history {
                history[want.index] = try await self.pairs(
                    """
                    SELECT time, value FROM readings
                    WHERE series_id = \(want.seriesID) AND time > \(want.from) AND time <= \(want.through)
                      AND NOT suspect ORDER BY time
                    """, on: c)
            }
            var readings: [Int: ReadingsStep.Values] = [:]
            if !wanted.readings.isEmpty {
                var binds = PostgresBindings(capacity: 4)
                binds.append(wanted.readings.map(\.seriesID))
                binds.append(wanted.readings.map(\.after))
                binds.append(wanted.readings.map { Int64($0.index) })
                binds.append(Int64(step.readLimit))
                for row in try await self.rows(
                    PostgresQuery(
                        unsafeSQL: """
                            SELECT u.n, r.time, r.value
                            FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS u(id, after, n)
                            CROSS JOIN LATERAL (
                              SELECT time, value FROM readings
                              WHERE series_id = u.id AND time > u.after AND NOT suspect ORDER BY time LIMIT $4) r
                            ORDER BY u.n, r.time LIMIT $4
                            """, binds: binds), on: c)
                {
                    readings[Int(try row[0].decode(Int64.self)), default: []].append(
                        (try row[1].decode(Int64.self), try row[2].decode(Double.self)))
                }
            }
            let (seeds, read) = (history, readings)
            let run = step.run(
                states: { states[series[$0].key] ?? [:] }, history: { i, _, _, _ in seeds[i] ?? [] },
                readings: { i, _, _, _ in read[i] ?? [] })
            try await self.save(run.states, on: c)
            var slice = run.slice
            slice.logged = try await self.log(run.transitions, e, claim: claim, on: c)
            if let cursor, slice.done == series.count {
                try await self.setMeta(Self.cursorKey, cursor, on: c)
            }
            return slice
        }
    }

    public func advanceQuiet<P: TransitionPlanner>(_ series: [ChangedSeries], _ e: Evaluation<P>) async throws
        -> [Logged]
    {
        try await transaction { c in
            try await self.evaluationTurn(on: c)
            let step = QuietStep(series, e, states: try await self.loadStates(series.map(\.key), on: c))
            var newest: [Int: (time: Int64, value: Double)] = [:]
            for want in step.newestWanted {
                newest[want.index] = try await self.pairs(
                    """
                    SELECT time, value FROM readings WHERE series_id = \(want.seriesID) AND NOT suspect
                    ORDER BY time DESC LIMIT 1
                    """, on: c
                ).first
            }
            let run = step.run(newest: newest)
            try await self.save(run.states, on: c)
            return try await self.log(run.transitions, e, on: c)
        }
    }

    public func evaluateQuakes<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> (logged: [Logged], more: Bool)
    {
        try await transaction { c in
            try await self.evaluationTurn(on: c)
            let cursor = try await self.meta(Self.quakeCursorKey, on: c)
            let rows = try await self.rows(
                "SELECT id, event, seq FROM quake_events WHERE seq > \(cursor) ORDER BY seq LIMIT \(EventRounds.quakeSlice)",
                on: c
            ).map {
                (
                    key: try $0[0].decode(String.self), event: try $0[1].decode(String.self),
                    seq: try $0[2].decode(Int64.self)
                )
            }
            let round = EventRounds.QuakeRound(rows: rows, after: cursor, runner: e.quakes)
            let announced = try await self.loadAnnouncements(table: EventRounds.quakeTable, round.wanted, on: c)
            let logged = try await self.executeRound(round.plan(announced: announced), e, on: c)
            try await self.setMeta(Self.quakeCursorKey, round.cursor, on: c)
            return (logged, round.more)
        }
    }

    public func evaluateTrips<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> [Logged] {
        try await transaction { c in
            try await self.evaluationTurn(on: c)
            let round = EventRounds.TripRound(
                trips: try await self.trips(owner: nil, on: c), runner: e.trips, now: e.now)
            var weather: [(weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay])] = []
            for trip in round.trips {
                weather.append(
                    (
                        weather: try await self.weather(for: trip, radiusKm: EventRounds.tripRadiusKm, on: c),
                        alerts: try await self.alerts(for: trip, radiusKm: EventRounds.tripRadiusKm, on: c),
                        air: try await self.airDays(for: trip, on: c)
                    ))
            }
            let announced = try await self.loadAnnouncements(table: EventRounds.tripTable, round.wanted, on: c)
            return try await self.executeRound(round.plan(weather, announced: announced), e, on: c)
        }
    }

    public func evaluateForecasts<P: TransitionPlanner>(_ e: Evaluation<P>) async throws -> [Logged] {
        try await transaction { c in
            try await self.evaluationTurn(on: c)
            let series = try await self.rows("SELECT DISTINCT station, metric FROM forecast_issuances", on: c).map {
                SeriesKey(station: try $0[0].decode(String.self), metric: try $0[1].decode(String.self))
            }
            let round = EventRounds.ForecastRound(series: series, runner: e.forecasts, now: e.now)
            var inputs: [EventRounds.ForecastRound.Input] = []
            for key in round.series {
                let forecast = try await self.rows(
                    """
                    SELECT station, metric, issued, unit, source, points FROM forecast_issuances
                    WHERE station = \(key.station) AND metric = \(key.metric) ORDER BY issued DESC LIMIT 1
                    """, on: c
                ).first.map(Self.forecast)
                let observed = try await self.rows(
                    """
                    SELECT r.value FROM series s JOIN readings r ON r.series_id = s.id
                    WHERE s.station = \(key.station) AND s.metric = \(key.metric) AND NOT r.suspect
                        AND r.time <= \(e.present)
                    ORDER BY r.time DESC LIMIT 1
                    """, on: c
                ).first.map { try $0[0].decode(Double.self) }
                inputs.append(.init(forecast: forecast, observed: observed))
            }
            let announced = try await self.loadAnnouncements(table: EventRounds.forecastTable, round.wanted, on: c)
            return try await self.executeRound(round.plan(inputs, announced: announced, engine: e.engine), e, on: c)
        }
    }

    /// Executes an event round's plan: saves the announcements that changed, logs the transitions.
    func executeRound<P: TransitionPlanner>(_ plan: EventPlan, _ e: Evaluation<P>, on c: PostgresConnection)
        async throws -> [Logged]
    {
        for s in plan.saves { try await saveAnnouncement(s.json, table: plan.table, key: s.key, on: c) }
        return try await log(plan.transitions, e, events: plan.events, on: c)
    }

    /// The alert states of several series, in one query.
    func loadStates(_ keys: [SeriesKey], on c: PostgresConnection) async throws -> [SeriesKey: [String: AlertState]] {
        guard !keys.isEmpty else { return [:] }
        var binds = PostgresBindings(capacity: 2)
        binds.append(keys.map(\.station))
        binds.append(keys.map(\.metric))
        var out: [SeriesKey: [String: AlertState]] = [:]
        for row in try await rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT a.station, a.metric, a.rule, a.state
                    FROM unnest($1::text[], $2::text[]) AS u(station, metric)
                    JOIN alert_states a ON a.station = u.station AND a.metric = u.metric
                    """, binds: binds), on: c)
        {
            let key = SeriesKey(station: try row[0].decode(String.self), metric: try row[1].decode(String.self))
            out[key, default: [:]][try row[2].decode(String.self)] = Self.decodeState(try row[3].decode(String.self))
        }
        return out
    }

    static func decodeState(_ json: String) -> AlertState { AlertStateRecord.decode(state: json) }

    /// Writes alert states back, in one statement.
    func save(_ records: [AlertStateRecord], on c: PostgresConnection) async throws {
        guard !records.isEmpty else { return }
        let json = String(decoding: try JSONEncoder().encode(records), as: UTF8.self)
        try await execute(
            """
            INSERT INTO alert_states (rule, station, metric, status, level, since, state, updated_at)
            SELECT rule, station, metric, status, level, since, state, updated_at
            FROM jsonb_populate_recordset(NULL::alert_states, \(json)::jsonb)
            ON CONFLICT (rule, station, metric) DO UPDATE SET status = excluded.status, level = excluded.level,
              since = excluded.since, state = excluded.state, updated_at = excluded.updated_at
            """, on: c)
    }

    func meta(_ key: String, on c: PostgresConnection? = nil) async throws -> Int64 {
        try await scalar("SELECT value::bigint FROM meta WHERE key = \(key)", as: Int64.self, on: c) ?? 0
    }

    func setMeta(_ key: String, _ value: Int64, on c: PostgresConnection) async throws {
        try await execute(
            """
            INSERT INTO meta (key, value) VALUES (\(key), \(String(value)))
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """, on: c)
    }

    /// Logs transitions (`TransitionLog`) with their episodes and queues their deliveries
    /// (`OutboxPlan`), inside the caller's transaction: the transitions in one statement (their ids
    /// taken from the sequence first, in order), their outbox rows in another. With `claim`, the
    /// rows it queues are claimed for this process's dispatcher as `claim` allows.
    func log<P: TransitionPlanner>(
        _ transitions: [Transition], _ e: Evaluation<P>, claim: QueueClaim? = nil, events: Bool = false,
        on c: PostgresConnection
    ) async throws -> [Logged] {
        var log = TransitionLog(transitions, e, events: events)
        guard !log.isEmpty else { return [] }
        let ids = try await takeTransitionIDs(log.records.count, on: c)
        var open: [AlertKey: OpenEpisode] = [:]
        for key in log.episodeLookups { open[key] = try await openEpisode(key, on: c) }
        log.assign(ids: ids, open: open)
        // JSON has no NaN or infinity: such a value (none is expected) goes in row by row.
        if log.records.allSatisfy({ $0.value?.isFinite ?? true }) {
            let json = String(decoding: try JSONEncoder().encode(log.records), as: UTF8.self)
            try await execute(
                """
                INSERT INTO transitions (id, rule, kind, station, metric, state, level, from_level, at, value, unit,
                  severity, labels, summary, explanation, message, recorded_at, episode, started_at, extra)
                SELECT id, rule, kind, station, metric, state, level, from_level, at, value, unit,
                  severity, labels, summary, explanation, message, recorded_at, episode, started_at, extra
                FROM jsonb_populate_recordset(NULL::transitions, \(json)::jsonb)
                """, on: c)
        } else {
            for r in log.records { try await insert(r, on: c) }
        }
        if e.planner.routes {
            let alerts = Array(Set(log.transitions.map(OutboxRecord.alertKey)))
            let queued = try await queuedRows(alerts: alerts, on: c)
            let heard = try await heard(
                alerts: claim != nil ? alerts : OutboxPlan.heardNeeded(log, queued: queued), on: c)
            log.routeResolves(heard: heard, e)
            let plan = OutboxPlan(log, queued: queued, now: e.now, heard: heard)
            if let claim {
                for q in plan.ahead { claim.noteOpen(alert: q.alert, receiver: q.receiver) }
                claim.heard = heard
            }
            if !plan.folded.isEmpty {
                try await execute(
                    """
                    UPDATE outbox SET state = 'superseded', last_error = 'folded into a newer notification of its alert'
                    WHERE id = ANY(\(plan.folded)::text[])
                    """, on: c)
                log.deltas.add("outbox", OutboxRecord.State.superseded.rawValue, n: plan.folded.count)
            }
            var queue = OutboxRows()
            for row in plan.rows {
                let p = row.delivery
                queue.add(
                    transitionID: ids[row.index], transition: log.transitions[row.index], receiver: p.receiver,
                    route: p.route, groupKey: p.groupKey,
                    dueAt: row.due(try await dueTime(p, now: e.queuedAt, on: c)), now: e.queuedAt,
                    claim: claim, record: log.records[row.index], path: row.path, held: row.held)
            }
            try await queue.insert(self, now: e.queuedAt, claimedBy: claim?.instance, on: c)
        }
        try await log.deltas.write(self, on: c)
        return log.logged(ids: ids)
    }

    /// `n` new transition ids from the sequence, in order.
    func takeTransitionIDs(_ n: Int, on c: PostgresConnection) async throws -> [Int64] {
        let ids = try await rows(
            "SELECT nextval(pg_get_serial_sequence('transitions', 'id')) FROM generate_series(1, \(Int64(n)))", on: c
        ).map { try $0[0].decode(Int64.self) }.sorted()
        guard ids.count == n else { throw PostgresStoreError.server(path: path, message: "no ids for new transitions") }
        return ids
    }

    /// An alert's open episode, from its newest transition.
    func openEpisode(_ key: AlertKey, on c: PostgresConnection) async throws -> OpenEpisode? {
        var binds = PostgresBindings(capacity: 3)
        binds.append(key.rule)
        binds.append(key.station)
        binds.append(key.metric)
        guard let row = try await rows(PostgresQuery(unsafeSQL: EpisodeSQL.newest, binds: binds), on: c).first
        else { return nil }
        return OpenEpisode.from(
            episode: try row[3].decode(Int64?.self), startedAt: try row[4].decode(Int64?.self),
            state: try row[2].decode(String.self), id: try row[0].decode(Int64.self), at: try row[1].decode(Int64.self),
            extra: try row[5].decode(String?.self))
    }

    /// The rows queued for `alerts` that have not gone out (pending, sending, held), each with its
    /// transition's state, locked so a claim does not take one this transaction folds.
    func queuedRows(alerts: [String], on c: PostgresConnection) async throws -> [QueuedRow] {
        guard !alerts.isEmpty else { return [] }
        var binds = PostgresBindings(capacity: 1)
        binds.append(alerts)
        return try await rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT o.id, o.alert, o.receiver, o.route, o.state, o.batch, o.path, t.state, t.level, t.at,
                      coalesce(t.episode, t.id), o.due_at, t.from_level
                    FROM outbox o JOIN transitions t ON t.id = o.transition_id
                    WHERE o.alert = ANY($1::text[]) AND o.state IN ('pending', 'sending', 'held')
                    ORDER BY o.seq
                    FOR UPDATE OF o
                    """, binds: binds), on: c
        ).map { row in
            QueuedRow(
                id: try row[0].decode(String.self), alert: try row[1].decode(String.self),
                receiver: try row[2].decode(String.self), route: try row[3].decode(Int64?.self).map { Int($0) },
                state: OutboxRecord.State(rawValue: try row[4].decode(String.self)) ?? .pending,
                batch: try row[5].decode(String?.self), path: try row[6].decode(String?.self),
                step: PathStep(
                    state: TransitionState(rawValue: try row[7].decode(String.self)) ?? .firing,
                    level: try row[8].decode(String?.self), from: try row[12].decode(String?.self),
                    at: try row[9].decode(Int64.self), episode: try row[10].decode(Int64.self)),
                dueAt: try row[11].decode(Int64.self))
        }
    }

    /// What each receiver last heard of `alerts`, by `alert|receiver`.
    func heard(alerts: [String], on c: PostgresConnection) async throws -> [String: Heard] {
        guard !alerts.isEmpty else { return [:] }
        var binds = PostgresBindings(capacity: 1)
        binds.append(alerts)
        var out: [String: Heard] = [:]
        for row in try await rows(
            PostgresQuery(
                unsafeSQL: EpisodeSQL.heard(list: "= ANY($1::text[])"),
                binds: binds), on: c)
        {
            if let h = Heard.from(
                episode: try row[2].decode(Int64?.self), state: try row[3].decode(String?.self),
                level: try row[4].decode(String?.self))
            {
                out[
                    QueueClaim.heardKey(alert: try row[0].decode(String.self), receiver: try row[1].decode(String.self))
                ] =
                    h
            }
        }
        return out
    }

    /// Decides every held row (`HeldRow.send`), in one transaction; reads only when none is held.
    public func settleHeld(now: Int64) async throws -> Int {
        guard try await scalar("SELECT EXISTS (SELECT 1 FROM outbox WHERE state = 'held')", as: Bool.self) == true
        else { return 0 }
        return try await transaction { c in
            var settle = HeldSettlement()
            for row in try await self.rows(PostgresQuery(unsafeSQL: EpisodeSQL.held + " FOR UPDATE OF o"), on: c) {
                settle.add(
                    id: try row[0].decode(String.self), state: try row[1].decode(String.self),
                    level: try row[2].decode(String?.self), episode: try row[3].decode(Int64.self),
                    latest: try row[4].decode(Bool.self),
                    heard: Heard.from(
                        episode: try row[5].decode(Int64?.self), state: try row[6].decode(String?.self),
                        level: try row[7].decode(String?.self)))
            }
            let sent = settle.send
            if !sent.isEmpty {
                try await self.execute(
                    "UPDATE outbox SET state = 'pending', due_at = greatest(due_at, \(now)) WHERE id = ANY(\(sent)::text[])",
                    on: c)
            }
            for (id, why) in settle.skip {
                try await self.execute(
                    "UPDATE outbox SET state = 'skipped', last_error = \(why) WHERE id = \(id)", on: c)
            }
            try await settle.deltas.write(self, on: c)
            return sent.count
        }
    }

    /// Inserts a transition-log row (its id taken first when it has none, and then its own
    /// episode when it has none); returns its id.
    @discardableResult
    func insert(_ record: TransitionRecord, on c: PostgresConnection) async throws -> Int64 {
        var r = record
        if r.id == nil { r.id = try await takeTransitionIDs(1, on: c)[0] }
        let id = r.id!
        try await execute(
            """
            INSERT INTO transitions (id, rule, kind, station, metric, state, level, from_level, at, value, unit,
              severity, labels, summary, explanation, message, recorded_at, episode, started_at, extra)
            VALUES (\(id), \(r.rule), \(r.kind), \(r.station), \(r.metric), \(r.state), \(r.level), \(r.fromLevel),
              \(r.at), \(r.value), \(r.unit), \(r.severity), \(r.labels), \(r.summary), \(r.explanation), \(r.message),
              \(r.recordedAt), \(r.episode ?? id), \(r.startedAt ?? r.at), \(r.extra))
            """, on: c)
        return id
    }

    // MARK: Reads of alerts

    public func alertStates() async throws -> [AlertKey: AlertState] {
        var out: [AlertKey: AlertState] = [:]
        for row in try await rows("SELECT rule, station, metric, state FROM alert_states") {
            let key = AlertKey(
                rule: try row[0].decode(String.self), station: try row[1].decode(String.self),
                metric: try row[2].decode(String.self))
            out[key] = Self.decodeState(try row[3].decode(String.self))
        }
        return out
    }

    public func transitions() async throws -> [TransitionRecord] {
        try await records("SELECT to_jsonb(t)::text FROM transitions t ORDER BY id", as: TransitionRecord.self)
    }

    public func episode(_ id: Int64) async throws -> EpisodeHistory? {
        var binds = PostgresBindings(capacity: 1)
        binds.append(id)
        guard
            let episode = try await rows(PostgresQuery(unsafeSQL: EpisodeHistory.episodeOf, binds: binds)).first.map({
                try $0[0].decode(Int64.self)
            })
        else { return nil }
        var e = PostgresBindings(capacity: 1)
        e.append(episode)
        let transitions = try await rows(
            PostgresQuery(unsafeSQL: EpisodeHistory.transitionsSQL(select: "to_jsonb(transitions)::text"), binds: e)
        ).map { try Self.decoder.decode(TransitionRecord.self, from: Data(try $0[0].decode(String.self).utf8)) }
        guard let first = transitions.first else { return nil }
        let ids = transitions.compactMap(\.id)
        let deliveries = try await records(
            """
            SELECT to_jsonb(o)::text FROM outbox o
            WHERE o.alert = \(OutboxRecord.alertKey(first.transition)) AND o.transition_id = ANY(\(ids)::bigint[])
            ORDER BY o.seq
            """, as: OutboxRecord.self)
        return EpisodeHistory(id: episode, transitions: transitions, deliveries: deliveries)
    }

    public func recentTransitions(limit: Int) async throws -> [TransitionRecord] {
        try await records(
            "SELECT to_jsonb(t)::text FROM transitions t ORDER BY id DESC LIMIT \(max(0, limit))",
            as: TransitionRecord.self)
    }
}

extension MetricDeltas {
    /// Writes the changes in the caller's transaction, one upsert per key.
    func write(_ store: PostgresStore, on c: PostgresConnection) async throws {
        for (key, n, total) in rows {
            try await store.execute(
                """
                INSERT INTO metric_counts (family, a, b, n, total)
                VALUES (\(key.family), \(key.a), \(key.b), \(Int64(n)), \(total))
                ON CONFLICT (family, a, b) DO UPDATE SET n = metric_counts.n + excluded.n,
                    total = metric_counts.total + excluded.total
                """, on: c)
        }
    }
}
