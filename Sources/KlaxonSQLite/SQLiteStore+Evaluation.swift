import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore: EvaluationBackend {
    /// The last `ingest_log` entry evaluated.
    static let cursorKey = "evaluated_log_seq"

    /// Evaluates what arrived since the last evaluation: `EvaluationBackend.runEvaluation`, over this
    /// backend's transactions.
    public func evaluate(_ e: Evaluation) async throws -> EvaluationResult {
        _ = try requireWriter()
        return try await runEvaluation(e)
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

    public func evaluateReadings(_ series: [ChangedSeries], _ e: Evaluation, cursor: Int64?, claim: QueueClaim?)
        async throws -> ReadingsSlice
    {
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

    public func advanceQuiet(_ series: [ChangedSeries], _ e: Evaluation) async throws -> [Logged] {
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

    public func evaluateQuakes(_ e: Evaluation) async throws -> (logged: [Logged], more: Bool) {
        try await requireWriter().write { db in
            let limit = EventRounds.quakeSlice
            let cursor = try Self.meta(db, Self.quakeCursorKey)
            let rows = try Row.fetchAll(
                db, sql: "SELECT id, event, seq FROM quake_events WHERE seq > ? ORDER BY seq LIMIT ?",
                arguments: [cursor, limit])
            var top = cursor
            var versions: [(key: String, event: QuakeEvent)] = []
            for row in rows {
                top = max(top, row["seq"])
                guard let event = try? JSONDecoder().decode(QuakeEvent.self, from: Data((row["event"] as String).utf8))
                else { continue }
                versions.append((row["id"], event))
            }
            var announced: [String: [String: String]] = [:]
            for key in Set(versions.map(\.key)) {
                for rule in e.quakes.ruleNames {
                    announced[key, default: [:]][rule] = try Announcements.load(
                        db, table: EventRounds.quakeTable, key: EventRounds.quakeKey(rule: rule, event: key))
                }
            }
            let round = EventRounds.quakes(versions, runner: e.quakes, announced: &announced)
            for (key, rule) in round.changed {
                guard let next = announced[key]?[rule] else { continue }
                try Announcements.save(
                    next, db, table: EventRounds.quakeTable, key: EventRounds.quakeKey(rule: rule, event: key))
            }
            let logged = try Self.log(round.transitions, db, e)
            try Self.setMeta(db, Self.quakeCursorKey, top)
            return (logged, rows.count == limit)
        }
    }

    public func evaluateTrips(_ e: Evaluation) async throws -> [Logged] {
        try await requireWriter().write { db in
            let today = TripRunner.today(e.now)
            var inputs: [EventRounds.TripInput] = []
            var announced: [TripKey: [String: String]] = [:]
            for trip in try Self.trips(owner: nil, db) where TripRunner.isAhead(trip, today: today) {
                inputs.append(
                    EventRounds.TripInput(
                        trip: trip, weather: try Self.weather(for: trip, radiusKm: 30, db),
                        alerts: try Self.alerts(for: trip, radiusKm: 30, db)))
                for rule in e.trips.ruleNames {
                    announced[TripKey(trip), default: [:]][rule] = try Announcements.load(
                        db, table: EventRounds.tripTable, key: EventRounds.tripKey(rule: rule, trip: TripKey(trip)))
                }
            }
            let round = EventRounds.trips(inputs, runner: e.trips, now: e.now, announced: &announced)
            for (trip, rule) in round.changed {
                guard let next = announced[trip]?[rule] else { continue }
                try Announcements.save(
                    next, db, table: EventRounds.tripTable, key: EventRounds.tripKey(rule: rule, trip: trip))
            }
            return try Self.log(round.transitions, db, e)
        }
    }

    /// Logs transitions (`TransitionLog`) and queues their deliveries, inside the caller's transaction.
    /// With `claim`, the rows it queues are claimed for this process's dispatcher as `claim` allows.
    static func log(_ transitions: [Transition], _ db: Database, _ e: Evaluation, claim: QueueClaim? = nil) throws
        -> [Logged]
    {
        let log = TransitionLog(transitions, e)
        guard !log.isEmpty else { return [] }
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO transitions (rule, kind, station, metric, state, level, from_level, at, value, unit,
                  severity, labels, summary, explanation, message, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        if e.route != nil { try deferForeignKeys(db) }
        try claim?.loadOpen(alerts: log.transitions.map(OutboxRecord.alertKey), db)
        var ids: [Int64] = []
        ids.reserveCapacity(log.records.count)
        for (i, r) in log.records.enumerated() {
            insert.setUncheckedArguments([
                r.rule, r.kind, r.station, r.metric, r.state, r.level, r.fromLevel, r.at, r.value, r.unit, r.severity,
                r.labels, r.summary, r.explanation, r.message, r.recordedAt,
            ])
            try insert.execute()
            let id = db.lastInsertedRowID
            ids.append(id)
            if e.route != nil {
                var record = r
                record.id = id
                try enqueue(
                    db, transitionID: id, transition: log.transitions[i], planned: log.deliveries[i], now: e.queuedAt,
                    claim: claim, record: record)
            }
        }
        try log.deltas.write(db)
        return log.logged(ids: ids)
    }
}
