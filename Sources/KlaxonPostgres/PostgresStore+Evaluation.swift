import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// The last `ingest_log` entry evaluated (in `meta`).
    static let cursorKey = "evaluated_log_seq"

    /// Evaluates what arrived since the last evaluation, then lets time pass to `now` (stale checks),
    /// exactly as `SQLiteStore.evaluate` does: slices of at most `sliceReadings` readings (or
    /// `sliceSeries` series), each one transaction holding the alert states it moved, the
    /// transitions it logged, their outbox rows and — in the last slice — the cursor.
    ///
    /// Then quake versions stored since the last evaluation (1,000 per transaction) and trips that
    /// have not ended.
    public func evaluate(_ e: Evaluation) async throws -> EvaluationResult {
        var result = EvaluationResult()
        let cursor = try await meta(Self.cursorKey)
        let top = try await ingestMark()
        var touched: Set<Int64> = []
        if top > cursor {
            let rows = try await rows(
                """
                SELECT l.series_id, s.station, s.metric, s.unit, sum(l.count)::bigint AS n, sum(l.suspect)::bigint AS x
                FROM ingest_log l JOIN series s ON s.id = l.series_id
                WHERE l.seq > \(cursor) AND l.seq <= \(top)
                GROUP BY l.series_id, s.station, s.metric, s.unit ORDER BY l.series_id
                """
            ).map { row -> (ChangedSeries, suspect: Int) in
                let n = Int(try row[4].decode(Int64.self))
                let x = Int(try row[5].decode(Int64.self))
                let changed = ChangedSeries(
                    id: try row[0].decode(Int64.self),
                    key: SeriesKey(station: try row[1].decode(String.self), metric: try row[2].decode(String.self)),
                    unit: try row[3].decode(String?.self), count: max(0, n - x), stepped: 0)
                return (changed, x)
            }
            var queue = rows.map(\.0)
            touched = Set(queue.map(\.id))
            result.newReadings = queue.reduce(0) { $0 + $1.count }
            result.suspectReadings = rows.reduce(0) { $0 + $1.suspect }
            var index = 0
            repeat {
                let part = Array(queue[index..<min(queue.count, index + e.sliceSeries)])
                let tail = index + part.count == queue.count
                let slice = try await transaction { c in
                    try await self.evaluationTurn(on: c)
                    return try await self.evaluateReadings(part, e, on: c, cursor: tail ? top : nil)
                }
                result.lateReadings += slice.late
                if slice.done < part.count { queue[index + slice.done].stepped += slice.partial }
                Self.add(slice.logged, to: &result, route: e.route, keep: e.keepTransitions)
                if !slice.logged.isEmpty { e.committed?(slice.logged.count) }
                index += slice.done
            } while index < queue.count
        }

        let timeRules = e.engine.rules.filter { $0.kind.reactsToTime }
        if !timeRules.isEmpty {
            let quiet = try await rows("SELECT id, station, metric, unit FROM series ORDER BY id").compactMap {
                row -> ChangedSeries? in
                let key = SeriesKey(station: try row[1].decode(String.self), metric: try row[2].decode(String.self))
                let id = try row[0].decode(Int64.self)
                guard !touched.contains(id), timeRules.contains(where: { $0.kind.watches(key) }) else { return nil }
                return ChangedSeries(id: id, key: key, unit: try row[3].decode(String?.self), count: 0, stepped: 0)
            }
            var index = 0
            while index < quiet.count {
                let part = Array(quiet[index..<min(quiet.count, index + e.sliceSeries)])
                let logged = try await transaction { c in
                    try await self.evaluationTurn(on: c)
                    return try await self.advanceQuiet(part, e, on: c)
                }
                Self.add(logged, to: &result, route: e.route, keep: e.keepTransitions)
                if !logged.isEmpty { e.committed?(logged.count) }
                index += part.count
            }
        }
        if !e.quakes.isEmpty {
            while true {
                let (logged, more) = try await transaction { c in
                    try await self.evaluationTurn(on: c)
                    return try await self.evaluateQuakes(e, on: c)
                }
                Self.add(logged, to: &result, route: e.route, keep: e.keepTransitions)
                if !logged.isEmpty { e.committed?(logged.count) }
                guard more else { break }
            }
        }
        if !e.trips.isEmpty {
            let logged = try await transaction { c in
                try await self.evaluationTurn(on: c)
                return try await self.evaluateTrips(e, on: c)
            }
            Self.add(logged, to: &result, route: e.route, keep: e.keepTransitions)
            if !logged.isEmpty { e.committed?(logged.count) }
        }
        result.transitions.sort { Transition.outputOrder($0.transition, $1.transition) }
        return result
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

    /// Quake rules over the event versions stored since the last evaluation, up to 1,000 per
    /// transaction; returns whether more wait.
    func evaluateQuakes(_ e: Evaluation, on c: PostgresConnection) async throws -> (logged: [Logged], more: Bool) {
        let limit = 1_000
        let cursor = try await meta(Self.quakeCursorKey, on: c)
        let rows = try await rows(
            "SELECT id, event, seq FROM quake_events WHERE seq > \(cursor) ORDER BY seq LIMIT \(limit)", on: c)
        var top = cursor
        var out: [Transition] = []
        let names = e.quakes.rules.map(\.rule.name)
        for row in rows {
            let key = try row[0].decode(String.self)
            top = max(top, try row[2].decode(Int64.self))
            guard
                let event = try? JSONDecoder().decode(QuakeEvent.self, from: Data(try row[1].decode(String.self).utf8))
            else { continue }
            var announced: [String: QuakeRule.Announced] = [:]
            for name in names {
                announced[name] = try await loadAnnouncement(
                    QuakeRule.Announced.self, table: "quake_announcements", key: [("rule", name), ("event_id", key)],
                    on: c)
            }
            for name in e.quakes.assess(key: key, event: event, announced: &announced, into: &out) {
                guard let next = announced[name] else { continue }
                try await saveAnnouncement(
                    next, table: "quake_announcements", key: [("rule", name), ("event_id", key)], on: c)
            }
        }
        let logged = try await log(out, e, on: c)
        try await setMeta(Self.quakeCursorKey, top, on: c)
        return (logged, rows.count == limit)
    }

    /// Trip-packing rules over every trip that has not ended, with its stored weather.
    func evaluateTrips(_ e: Evaluation, on c: PostgresConnection) async throws -> [Logged] {
        let today = TripRunner.today(e.now)
        var out: [Transition] = []
        let names = e.trips.rules.map(\.rule.name)
        for trip in try await trips(owner: nil, on: c) where TripRunner.isAhead(trip, today: today) {
            let weather = try await weather(for: trip, radiusKm: 30, on: c)
            let alerts = try await alerts(for: trip, radiusKm: 30, on: c)
            var announced: [String: TripPackingRule.Announced] = [:]
            let key = { (name: String) in [("rule", name), ("owner", trip.owner), ("name", trip.name)] }
            for name in names {
                announced[name] = try await loadAnnouncement(
                    TripPackingRule.Announced.self, table: "trip_announcements", key: key(name), on: c)
            }
            for name in e.trips.assess(
                trip: trip, weather: weather, alerts: alerts, announced: &announced, now: e.now, into: &out)
            {
                guard let next = announced[name] else { continue }
                try await saveAnnouncement(next, table: "trip_announcements", key: key(name), on: c)
            }
        }
        return try await log(out, e, on: c)
    }

    struct ChangedSeries: Sendable {
        var id: Int64
        var key: SeriesKey
        var unit: String?
        var count: Int
        var stepped: Int
    }

    struct ReadingsSlice: Sendable {
        var done = 0
        var partial = 0
        var late = 0
        var logged: [Logged] = []
    }

    /// A transition as logged: its id, its message, whether any receiver was queued.
    struct Logged: Sendable {
        var transition: Transition
        var message: String
        var id: Int64
        var routed: Bool
    }

    static func add(
        _ logged: [Logged], to result: inout EvaluationResult, route: (@Sendable (Transition) -> [PlannedDelivery])?,
        keep: Bool
    ) {
        result.transitionCount += logged.count
        for l in logged {
            if keep { result.transitions.append((l.transition, l.message)) }
            if route != nil, !l.routed, l.transition.state != .resolved { result.unrouted.append(l.transition) }
        }
    }

    /// Steps the readings of `series`, in order, within the slice's budgets. A few statements for the
    /// whole slice, not a few per series: the series' alert states in one query, their new readings
    /// in another (in series order, each series' own after its last stepped reading, up to the
    /// budget), the states written back in one, and the transitions and outbox rows in two (`log`).
    /// A round trip costs about a millisecond, and a slice holds hundreds of series.
    func evaluateReadings(_ series: [ChangedSeries], _ e: Evaluation, on c: PostgresConnection, cursor: Int64?)
        async throws -> ReadingsSlice
    {
        var slice = ReadingsSlice()
        var out: [Transition] = []
        var budget = e.sliceReadings
        let states = try await loadStates(series.map(\.key), on: c)
        // Each series' session (nil: no rule watches it), with its history seeded where a rule needs it.
        var sessions: [SeriesSession?] = []
        sessions.reserveCapacity(series.count)
        for changed in series {
            var session = e.engine.session(for: changed.key, unit: changed.unit, states: states[changed.key] ?? [:])
            if session?.history != nil, let last = session?.lastTime, let s = session {
                for r in try await pairs(
                    """
                    SELECT time, value FROM readings
                    WHERE series_id = \(changed.id) AND time > \(last - e.engine.historySpan(of: s))
                      AND time <= \(last) AND NOT suspect ORDER BY time
                    """, on: c)
                {
                    session?.seedHistory(time: r.time, value: r.value)
                }
            }
            sessions.append(session)
        }
        // The new readings of every series with a session, in series order then time, up to one more
        // than the budget: exactly what stepping series by series would read.
        var readings = [[(time: Int64, value: Double)]](repeating: [], count: series.count)
        let watched = series.indices.filter { sessions[$0] != nil }
        if !watched.isEmpty && budget > 0 {
            var binds = PostgresBindings(capacity: 4)
            try binds.append(watched.map { series[$0].id })
            try binds.append(watched.map { sessions[$0]?.lastTime ?? Int64.min })
            try binds.append(watched.map { Int64($0) })
            binds.append(Int64(budget + 1))
            for row in try await rows(
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
                readings[Int(try row[0].decode(Int64.self))].append(
                    (try row[1].decode(Int64.self), try row[2].decode(Double.self)))
            }
        }
        var saved: [SeriesSession] = []
        for (i, changed) in series.enumerated() {
            guard budget > 0 else { break }
            guard var session = sessions[i] else {
                slice.done += 1
                continue
            }
            var stepped = 0
            var more = false
            for r in readings[i] {
                if stepped == budget {
                    more = true
                    break
                }
                e.engine.step(&session, time: r.time, value: r.value, into: &out)
                stepped += 1
            }
            budget -= stepped
            if more {
                saved.append(session)
                slice.partial = stepped
                break
            }
            e.engine.advance(&session, to: e.now, into: &out)
            saved.append(session)
            slice.done += 1
            slice.late += max(0, changed.count - changed.stepped - stepped)
            if out.count >= e.sliceTransitions { break }
        }
        try await save(saved, e, on: c)
        slice.logged = try await log(out, e, on: c)
        if let cursor, slice.done == series.count {
            try await setMeta(Self.cursorKey, cursor, on: c)
        }
        return slice
    }

    func advanceQuiet(_ series: [ChangedSeries], _ e: Evaluation, on c: PostgresConnection) async throws -> [Logged] {
        let timeRules = e.engine.rules.filter { $0.kind.reactsToTime }
        var out: [Transition] = []
        var moved: [SeriesSession] = []
        let states = try await loadStates(series.map(\.key), on: c)
        for quiet in series {
            var stored = states[quiet.key] ?? [:]
            for rule in timeRules where stored[rule.name]?.lastTime == nil && rule.kind.watches(quiet.key) {
                if let last = try await pairs(
                    """
                    SELECT time, value FROM readings WHERE series_id = \(quiet.id) AND NOT suspect
                    ORDER BY time DESC LIMIT 1
                    """, on: c
                ).first {
                    var st = stored[rule.name] ?? AlertState()
                    st.lastTime = last.time
                    st.lastValue = last.value
                    stored[rule.name] = st
                }
            }
            guard var s = e.engine.session(for: quiet.key, unit: quiet.unit, states: stored) else { continue }
            let before = out.count
            e.engine.advance(&s, to: e.now, into: &out)
            if out.count > before { moved.append(s) }
        }
        try await save(moved, e, on: c)
        return try await log(out, e, on: c)
    }

    /// The alert states of several series, in one query.
    func loadStates(_ keys: [SeriesKey], on c: PostgresConnection) async throws -> [SeriesKey: [String: AlertState]] {
        guard !keys.isEmpty else { return [:] }
        var binds = PostgresBindings(capacity: 2)
        try binds.append(keys.map(\.station))
        try binds.append(keys.map(\.metric))
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

    static func decodeState(_ json: String) -> AlertState {
        (try? decoder.decode(AlertState.self, from: Data(json.utf8))) ?? AlertState()
    }

    /// Writes the alert states of several sessions back, in one statement.
    func save(_ sessions: [SeriesSession], _ e: Evaluation, on c: PostgresConnection) async throws {
        var records: [AlertStateRecord] = []
        for session in sessions {
            for (rule, state) in e.engine.states(of: session) {
                records.append(
                    AlertStateRecord(
                        key: AlertKey(rule: rule, station: session.series.station, metric: session.series.metric),
                        state: state, updatedAt: e.now))
            }
        }
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

    /// Logs transitions (in output order) with their messages and queues their deliveries, inside
    /// the caller's transaction: the transitions in one statement (their ids taken from the sequence
    /// first, in order), their outbox rows in another.
    func log(_ transitions: [Transition], _ e: Evaluation, on c: PostgresConnection) async throws -> [Logged] {
        guard !transitions.isEmpty else { return [] }
        let sorted = transitions.sorted(by: Transition.outputOrder)
        var deltas = MetricDeltas()
        var records: [TransitionRecord] = []
        records.reserveCapacity(sorted.count)
        for t in sorted {
            deltas.add("transitions", t.rule, t.state.rawValue)
            records.append(TransitionRecord(t, message: e.render(t), recordedAt: e.now))
        }
        // JSON has no NaN or infinity: such a value (none is expected) goes in row by row.
        let ids: [Int64]
        if records.allSatisfy({ $0.value?.isFinite ?? true }) {
            ids = try await rows(
                "SELECT nextval(pg_get_serial_sequence('transitions', 'id')) FROM generate_series(1, \(Int64(records.count)))",
                on: c
            ).map { try $0[0].decode(Int64.self) }.sorted()
            guard ids.count == records.count else {
                throw PostgresStoreError.server(path: path, message: "no ids for new transitions")
            }
            for i in records.indices { records[i].id = ids[i] }
            let json = String(decoding: try JSONEncoder().encode(records), as: UTF8.self)
            try await execute(
                """
                INSERT INTO transitions (id, rule, kind, station, metric, state, level, from_level, at, value, unit,
                  severity, labels, summary, explanation, message, recorded_at)
                SELECT id, rule, kind, station, metric, state, level, from_level, at, value, unit,
                  severity, labels, summary, explanation, message, recorded_at
                FROM jsonb_populate_recordset(NULL::transitions, \(json)::jsonb)
                """, on: c)
        } else {
            var one: [Int64] = []
            for r in records { one.append(try await insert(r, on: c)) }
            ids = one
        }
        var logged: [Logged] = []
        var queue = OutboxRows()
        for (i, t) in sorted.enumerated() {
            var routed = true
            if let route = e.route {
                let planned = route(t)
                routed = !planned.isEmpty
                for p in planned {
                    queue.add(
                        transitionID: ids[i], transition: t, receiver: p.receiver, route: p.route,
                        groupKey: p.groupKey, dueAt: try await dueTime(p, now: e.queuedAt, on: c))
                }
            }
            logged.append(Logged(transition: t, message: records[i].message, id: ids[i], routed: routed))
        }
        try await queue.insert(self, now: e.queuedAt, on: c)
        try await deltas.write(self, on: c)
        return logged
    }

    /// Inserts a transition-log row; returns its id.
    func insert(_ r: TransitionRecord, on c: PostgresConnection) async throws -> Int64 {
        let id = try await scalar(
            """
            INSERT INTO transitions (rule, kind, station, metric, state, level, from_level, at, value, unit,
              severity, labels, summary, explanation, message, recorded_at)
            VALUES (\(r.rule), \(r.kind), \(r.station), \(r.metric), \(r.state), \(r.level), \(r.fromLevel), \(r.at),
              \(r.value), \(r.unit), \(r.severity), \(r.labels), \(r.summary), \(r.explanation), \(r.message),
              \(r.recordedAt))
            RETURNING id
            """, as: Int64.self, on: c)
        guard let id else { throw PostgresStoreError.server(path: path, message: "no id for a new transition") }
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

    public func recentTransitions(limit: Int) async throws -> [TransitionRecord] {
        try await records(
            "SELECT to_jsonb(t)::text FROM transitions t ORDER BY id DESC LIMIT \(max(0, limit))",
            as: TransitionRecord.self)
    }
}

/// Changes to `metric_counts` summed in memory, written once per transaction (as `SQLiteStore` does).
struct MetricDeltas {
    private struct Key: Hashable {
        var family: String
        var a: String
        var b: String
    }
    private var changes: [Key: (n: Int64, total: Double)] = [:]

    mutating func add(_ family: String, _ a: String, _ b: String = "", n: Int64 = 1, total: Double = 0) {
        let key = Key(family: family, a: a, b: b)
        let old = changes[key] ?? (0, 0)
        changes[key] = (old.n + n, old.total + total)
    }

    /// A row reaching a final state from `sending`; `latency` in seconds, for `sent`.
    mutating func outcome(receiver: String, state: String, latency: Double?) {
        add("outbox", state)
        add("deliveries", receiver, state)
        if let latency {
            let bucket = StoreMetrics.latencyBounds.firstIndex { latency <= $0 } ?? StoreMetrics.latencyBounds.count
            add("latency", String(bucket), total: latency)
        }
    }

    func write(_ store: PostgresStore, on c: PostgresConnection) async throws {
        for (key, change) in changes.sorted(by: {
            ($0.key.family, $0.key.a, $0.key.b) < ($1.key.family, $1.key.a, $1.key.b)
        })
        where change.n != 0 || change.total != 0 {
            try await store.execute(
                """
                INSERT INTO metric_counts (family, a, b, n, total)
                VALUES (\(key.family), \(key.a), \(key.b), \(change.n), \(change.total))
                ON CONFLICT (family, a, b) DO UPDATE SET n = metric_counts.n + excluded.n,
                    total = metric_counts.total + excluded.total
                """, on: c)
        }
    }
}
