import Foundation
import GRDB
import KlaxonCore

extension SQLiteStore {
    /// The last `ingest_log` entry evaluated.
    static let cursorKey = "evaluated_log_seq"

    /// Evaluates what arrived since the last evaluation (readings, quake versions, trips' weather),
    /// then lets time pass to `now` (stale checks). Suspect readings (`Plausibility`) are skipped: they
    /// neither fire nor resolve an alert, nor count as data for a stale check.
    ///
    /// The work runs in slices of at most `sliceReadings` readings (or `sliceSeries` quiet series),
    /// each one transaction holding the alert states it moved, the transitions it logged, their
    /// outbox rows and — in the last slice — the cursor. A crash leaves whole slices; evaluating
    /// again steps nothing twice (an alert's state knows the last reading it saw), so no transition
    /// is logged twice. Between slices other writers (the dispatcher, a push) get their turn.
    public func evaluate(_ e: Evaluation) async throws -> EvaluationResult {
        _ = try requireWriter()
        var result = EvaluationResult()
        let (cursor, top) = try await reader.read { db in
            (
                try Self.meta(db, Self.cursorKey),
                try Int64.fetchOne(db, sql: "SELECT coalesce(max(seq), 0) FROM ingest_log") ?? 0
            )
        }
        var touched: Set<Int64> = []
        if top > cursor {
            // What arrived since the last evaluation, per series: how many readings (new or revised),
            // not counting suspect ones. Only readings newer than what the series' alerts have seen
            // are stepped; the rest were late.
            let rows = try await reader.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT l.series_id, s.station, s.metric, s.unit, sum(l.count) AS n, sum(l.suspect) AS x
                        FROM ingest_log l JOIN series s ON s.id = l.series_id
                        WHERE l.seq > ? AND l.seq <= ?
                        GROUP BY l.series_id ORDER BY l.series_id
                        """, arguments: [cursor, top]
                ).map { row -> (ChangedSeries, suspect: Int) in
                    let n: Int = row["n"]
                    let x: Int = row["x"]
                    let changed = ChangedSeries(
                        id: row["series_id"], key: SeriesKey(station: row["station"], metric: row["metric"]),
                        unit: row["unit"], count: max(0, n - x), stepped: 0)
                    return (changed, x)
                }
            }
            var queue = rows.map(\.0)
            touched = Set(queue.map(\.id))
            result.newReadings = queue.reduce(0) { $0 + $1.count }
            result.suspectReadings = rows.reduce(0) { $0 + $1.suspect }
            var index = 0
            // The first slice is short, so the first notifications go out while the rest is evaluated.
            var sliced = e
            sliced.sliceTransitions = max(1, e.sliceTransitions / 4)
            repeat {
                let part = Array(queue[index..<min(queue.count, index + e.sliceSeries)])
                let tail = index + part.count == queue.count
                let slice = try await requireWriter().write { [sliced] db in
                    try Self.evaluateReadings(part, sliced, db, cursor: tail ? top : nil)
                }
                sliced.sliceTransitions = e.sliceTransitions
                try await handOff(slice.claimed, e)
                result.lateReadings += slice.late
                if slice.done < part.count { queue[index + slice.done].stepped += slice.partial }
                result.add(slice.logged, route: e.route, keep: e.keepTransitions)
                if !slice.logged.isEmpty { e.committed?(slice.logged.count) }
                index += slice.done
                await Task.yield()
            } while index < queue.count
        }

        // Time passes for series that got no reading: stale checks, in slices of quiet series.
        let timeRules = e.engine.rules.filter { $0.kind.reactsToTime }
        if !timeRules.isEmpty {
            let touched = touched
            let quiet = try await reader.read { db in
                try Row.fetchAll(db, sql: "SELECT id, station, metric, unit FROM series").compactMap {
                    row -> ChangedSeries? in
                    let key = SeriesKey(station: row["station"], metric: row["metric"])
                    let id: Int64 = row["id"]
                    guard !touched.contains(id), timeRules.contains(where: { $0.kind.watches(key) }) else { return nil }
                    return ChangedSeries(id: id, key: key, unit: row["unit"], count: 0, stepped: 0)
                }
            }
            var index = 0
            while index < quiet.count {
                let part = Array(quiet[index..<min(quiet.count, index + e.sliceSeries)])
                let logged = try await requireWriter().write { db in try Self.advanceQuiet(part, e, db) }
                result.add(logged, route: e.route, keep: e.keepTransitions)
                if !logged.isEmpty { e.committed?(logged.count) }
                index += part.count
                await Task.yield()
            }
        }

        if !e.quakes.isEmpty {
            while true {
                let (logged, more) = try await requireWriter().write { db in try Self.evaluateQuakes(e, db) }
                result.add(logged, route: e.route, keep: e.keepTransitions)
                if !logged.isEmpty { e.committed?(logged.count) }
                guard more else { break }
                await Task.yield()
            }
        }
        if !e.trips.isEmpty {
            let logged = try await requireWriter().write { db in try Self.evaluateTrips(e, db) }
            result.add(logged, route: e.route, keep: e.keepTransitions)
            if !logged.isEmpty { e.committed?(logged.count) }
        }
        result.transitions.sort { Transition.outputOrder($0.transition, $1.transition) }
        return result
    }

    /// A series with readings to step.
    struct ChangedSeries: Sendable {
        var id: Int64
        var key: SeriesKey
        var unit: String?
        /// Readings that arrived for it (new or revised), suspect ones not counted.
        var count: Int
        /// Readings earlier slices stepped of it.
        var stepped: Int
    }

    struct ReadingsSlice: Sendable {
        /// Series finished (stepped to their newest reading, then advanced to `now`).
        var done = 0
        /// Readings stepped of the first unfinished series.
        var partial = 0
        /// Readings of the finished series that were not newer than what their alerts had seen.
        var late = 0
        var logged: [Logged] = []
        /// Claimed for this process's dispatcher (`Evaluation.handoff`).
        var claimed: [OutboxBatch] = []
    }

    /// Hands a committed slice's claims to the dispatcher, or gives them back if it has stopped.
    func handOff(_ claimed: [OutboxBatch], _ e: Evaluation) async throws {
        guard !claimed.isEmpty, let handoff = e.handoff else { return }
        if !handoff.take(claimed) { try await release(claimed) }
    }

    /// Steps series in order until `sliceReadings` readings were stepped; a series cut short is saved
    /// as far as it got and resumed in the next slice. Sets the cursor when every series finished and
    /// `cursor` is given.
    static func evaluateReadings(_ series: [ChangedSeries], _ e: Evaluation, _ db: Database, cursor: Int64?) throws
        -> ReadingsSlice
    {
        var slice = ReadingsSlice()
        var out: [Transition] = []
        var budget = e.sliceReadings
        for changed in series {
            guard budget > 0 else { break }
            guard
                var session = e.engine.session(
                    for: changed.key, unit: changed.unit, states: try loadStates(changed.key, db))
            else {
                slice.done += 1
                continue
            }
            // Rules that look back (rate, flood trends) resume with the readings they had seen.
            if session.history != nil, let last = session.lastTime {
                let older = try Row.fetchCursor(
                    db.cachedStatement(
                        sql:
                            """
                            SELECT time, value FROM readings
                            WHERE series_id = ? AND time > ? AND time <= ? AND suspect = 0 ORDER BY time
                            """
                    ),
                    arguments: [changed.id, last - e.engine.historySpan(of: session), last])
                while let r = try older.next() { session.seedHistory(time: r[0], value: r[1]) }
            }
            let readings = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT time, value FROM readings
                        WHERE series_id = ? AND time > ? AND suspect = 0 ORDER BY time LIMIT ?
                        """),
                arguments: [changed.id, session.lastTime ?? Int64.min, budget + 1])
            var stepped = 0
            var more = false
            while let r = try readings.next() {
                if stepped == budget {
                    more = true
                    break
                }
                e.engine.step(&session, time: r[0], value: r[1], into: &out)
                stepped += 1
            }
            budget -= stepped
            if more {
                try save(session, e, db)
                slice.partial = stepped
                break
            }
            e.engine.advance(&session, to: e.now, into: &out)
            try save(session, e, db)
            slice.done += 1
            slice.late += max(0, changed.count - changed.stepped - stepped)
            if out.count >= e.sliceTransitions { break }
        }
        let claim = e.handoff.flatMap { handoff in
            handoff.room().map {
                QueueClaim(
                    instance: handoff.instance, lease: handoff.lease, now: handoff.clock(), room: $0.limit,
                    excluding: $0.excluding)
            }
        }
        slice.logged = try log(out, db, e, claim: claim)
        slice.claimed = claim?.batches ?? []
        if let cursor, slice.done == series.count {
            try setMeta(db, cursorKey, cursor)
        }
        return slice
    }

    /// Lets time pass to `now` for series that got no reading (stale checks).
    static func advanceQuiet(_ series: [ChangedSeries], _ e: Evaluation, _ db: Database) throws -> [Logged] {
        let timeRules = e.engine.rules.filter { $0.kind.reactsToTime }
        var out: [Transition] = []
        for quiet in series {
            var stored = try loadStates(quiet.key, db)
            // A series never evaluated yet: seed the time-driven rules from its newest reading.
            for rule in timeRules where stored[rule.name]?.lastTime == nil && rule.kind.watches(quiet.key) {
                if let last = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT time, value FROM readings WHERE series_id = ? AND suspect = 0
                        ORDER BY time DESC LIMIT 1
                        """,
                    arguments: [quiet.id])
                {
                    var st = stored[rule.name] ?? AlertState()
                    st.lastTime = last["time"]
                    st.lastValue = last["value"]
                    stored[rule.name] = st
                }
            }
            guard var s = e.engine.session(for: quiet.key, unit: quiet.unit, states: stored) else { continue }
            let before = out.count
            e.engine.advance(&s, to: e.now, into: &out)
            if out.count > before { try save(s, e, db) }
        }
        return try log(out, db, e)
    }

    // The statements below run once per series or per transition: they are prepared once per
    // connection (`cachedStatement`), not compiled again each time, which was a quarter of the cost.

    static func loadStates(_ key: SeriesKey, _ db: Database) throws -> [String: AlertState] {
        var states: [String: AlertState] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: "SELECT rule, state FROM alert_states WHERE station = ? AND metric = ?"),
            arguments: [key.station, key.metric])
        while let row = try rows.next() {
            states[row[0]] = AlertStateRecord.decode(state: row[1])
        }
        return states
    }

    static func save(_ session: SeriesSession, _ e: Evaluation, _ db: Database) throws {
        let upsert = try db.cachedStatement(
            sql: """
                INSERT INTO alert_states (rule, station, metric, status, level, since, state, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (rule, station, metric) DO UPDATE SET status = excluded.status, level = excluded.level,
                  since = excluded.since, state = excluded.state, updated_at = excluded.updated_at
                """)
        for (rule, state) in e.engine.states(of: session) {
            let r = AlertStateRecord(
                key: AlertKey(rule: rule, station: session.series.station, metric: session.series.metric),
                state: state, updatedAt: e.now)
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

    /// Quake rules over the event versions stored since the last evaluation, up to 1,000 per slice:
    /// what each rule announced per event is kept, so a revision is an update and never a second new
    /// alert. Returns whether more versions wait.
    static func evaluateQuakes(_ e: Evaluation, _ db: Database) throws -> (logged: [Logged], more: Bool) {
        let limit = 1_000
        let cursor = try meta(db, quakeCursorKey)
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, event, seq FROM quake_events WHERE seq > ? ORDER BY seq LIMIT ?",
            arguments: [cursor, limit])
        var top = cursor
        var out: [Transition] = []
        let names = e.quakes.rules.map(\.rule.name)
        for row in rows {
            let key: String = row["id"]
            top = max(top, row["seq"])
            guard let event = try? JSONDecoder().decode(QuakeEvent.self, from: Data((row["event"] as String).utf8))
            else { continue }
            var announced: [String: QuakeRule.Announced] = [:]
            for name in names {
                announced[name] = try Announcements.load(
                    QuakeRule.Announced.self, db, table: "quake_announcements",
                    key: [("rule", name), ("event_id", key)])
            }
            for name in e.quakes.assess(key: key, event: event, announced: &announced, into: &out) {
                guard let next = announced[name] else { continue }
                try Announcements.save(
                    next, db, table: "quake_announcements", key: [("rule", name), ("event_id", key)])
            }
        }
        let logged = try log(out, db, e)
        try setMeta(db, quakeCursorKey, top)
        return (logged, rows.count == limit)
    }

    /// Trip-packing rules: every trip that has not ended gets its list recomputed from the stored
    /// weather; what differs from the last announcement is logged with the new announcement.
    static func evaluateTrips(_ e: Evaluation, _ db: Database) throws -> [Logged] {
        let today = TripRunner.today(e.now)
        var out: [Transition] = []
        let names = e.trips.rules.map(\.rule.name)
        for trip in try trips(owner: nil, db) where TripRunner.isAhead(trip, today: today) {
            let weather = try weather(for: trip, radiusKm: 30, db)
            let alerts = try alerts(for: trip, radiusKm: 30, db)
            var announced: [String: TripPackingRule.Announced] = [:]
            let key = { (name: String) in [("rule", name), ("owner", trip.owner), ("name", trip.name)] }
            for name in names {
                announced[name] = try Announcements.load(
                    TripPackingRule.Announced.self, db, table: "trip_announcements", key: key(name))
            }
            for name in e.trips.assess(
                trip: trip, weather: weather, alerts: alerts, announced: &announced, now: e.now, into: &out)
            {
                guard let next = announced[name] else { continue }
                try Announcements.save(next, db, table: "trip_announcements", key: key(name))
            }
        }
        return try log(out, db, e)
    }

    /// A transition as logged: its id in the transition log, its message, and its deliveries.
    struct Logged: Sendable {
        var transition: Transition
        var message: String
        var id: Int64
        var routed: Bool
    }

    /// Logs transitions (in output order) with their rendered messages and queues their deliveries,
    /// inside the caller's transaction.
    /// With `claim`, the rows it queues are claimed for this process's dispatcher as `claim` allows.
    static func log(_ transitions: [Transition], _ db: Database, _ e: Evaluation, claim: QueueClaim? = nil) throws
        -> [Logged]
    {
        var logged: [Logged] = []
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO transitions (rule, kind, station, metric, state, level, from_level, at, value, unit,
                  severity, labels, summary, explanation, message, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        if !transitions.isEmpty && e.route != nil { try deferForeignKeys(db) }
        try claim?.loadOpen(alerts: transitions.map(OutboxRecord.alertKey), db)
        var deltas = MetricDeltas()
        for t in transitions.sorted(by: Transition.outputOrder) {
            deltas.transition(rule: t.rule, state: t.state.rawValue)
            let message = e.render(t)
            let r = TransitionRecord(t, message: message, recordedAt: e.now)
            insert.setUncheckedArguments([
                r.rule, r.kind, r.station, r.metric, r.state, r.level, r.fromLevel, r.at, r.value, r.unit, r.severity,
                r.labels, r.summary, r.explanation, r.message, r.recordedAt,
            ])
            try insert.execute()
            let id = db.lastInsertedRowID
            var routed = true
            if let route = e.route {
                let planned = route(t)
                routed = !planned.isEmpty
                var record = r
                record.id = id
                try enqueue(
                    db, transitionID: id, transition: t, planned: planned, now: e.queuedAt, claim: claim,
                    record: record)
            }
            logged.append(Logged(transition: t, message: message, id: id, routed: routed))
        }
        try deltas.write(db)
        return logged
    }
}

extension EvaluationResult {
    mutating func add(
        _ logged: [SQLiteStore.Logged], route: (@Sendable (Transition) -> [PlannedDelivery])?, keep: Bool
    ) {
        transitionCount += logged.count
        for l in logged {
            if keep { transitions.append((l.transition, l.message)) }
            if route != nil, !l.routed, l.transition.state != .resolved { unrouted.append(l.transition) }
        }
    }
}
