import Foundation
import GRDB
import KlaxonCore

/// What one incremental evaluation did.
public struct EvaluationResult: Sendable {
    /// Transitions recorded, in output order, each with its rendered message.
    public var transitions: [(transition: Transition, message: String)] = []
    /// Readings that arrived since the previous evaluation.
    public var newReadings = 0
    /// New readings not newer than what their alerts had already seen (late or revised history): ignored.
    public var lateReadings = 0
    /// Transitions that no receiver was queued for (set by the caller that routes them).
    public var unrouted: [Transition] = []
}

extension Store {
    /// The last `ingest_log` entry evaluated.
    static let cursorKey = "evaluated_log_seq"

    /// Evaluates the readings that arrived since the last evaluation, then lets time pass to `now`
    /// (stale checks). Alert states, the transition log and the cursor are written in one transaction,
    /// so a crash leaves either everything or nothing, and evaluating the same readings twice creates
    /// no new transitions. Cost grows with the new readings, not with history.
    ///
    /// - Parameters:
    ///   - render: the message for a transition (the rule's template, or its summary).
    ///   - record: called inside the transaction with the transitions just logged, so callers (the
    ///     delivery outbox) can write their rows atomically with them.
    public func evaluate(
        engine: RuleEngine, now: Int64, render: (Transition) -> String,
        record: (Database, [(transition: Transition, message: String, id: Int64)]) throws -> Void = { _, _ in }
    ) throws -> EvaluationResult {
        let writer = try requireWriter()
        return try writer.write { db in
            var result = EvaluationResult()
            let cursor =
                try Int64.fetchOne(
                    db, sql: "SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?", arguments: [Self.cursorKey]) ?? 0
            let top = try Int64.fetchOne(db, sql: "SELECT coalesce(max(seq), 0) FROM ingest_log") ?? 0
            var out: [Transition] = []
            var touched: Set<Int64> = []

            func loadStates(_ key: SeriesKey) throws -> [String: AlertState] {
                var states: [String: AlertState] = [:]
                for r in try AlertStateRecord.filter(Column("station") == key.station && Column("metric") == key.metric)
                    .fetchAll(db)
                {
                    states[r.rule] = r.alertState
                }
                return states
            }
            func save(_ session: SeriesSession) throws {
                for (rule, state) in engine.states(of: session) {
                    try AlertStateRecord(
                        key: AlertKey(rule: rule, station: session.series.station, metric: session.series.metric),
                        state: state, updatedAt: now
                    ).upsert(db)
                }
            }

            if top > cursor {
                // What arrived since the last evaluation, per series: the earliest time and how many
                // readings (new or revised). Only readings newer than what the series' alerts have
                // seen are stepped; the rest of the count were late.
                let changed = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT l.series_id, s.station, s.metric, s.unit, sum(l.count) AS n
                        FROM ingest_log l JOIN series s ON s.id = l.series_id
                        WHERE l.seq > ? AND l.seq <= ?
                        GROUP BY l.series_id ORDER BY l.series_id
                        """, arguments: [cursor, top])
                for row in changed {
                    let id: Int64 = row["series_id"]
                    let count: Int = row["n"]
                    result.newReadings += count
                    touched.insert(id)
                    let key = SeriesKey(station: row["station"], metric: row["metric"])
                    guard var session = engine.session(for: key, unit: row["unit"], states: try loadStates(key)) else {
                        continue
                    }
                    // Rules that look back (rate, flood trends) resume with the readings they had seen.
                    if session.history != nil, let last = session.lastTime {
                        let older = try Row.fetchCursor(
                            db,
                            sql:
                                "SELECT time, value FROM readings WHERE series_id = ? AND time > ? AND time <= ? ORDER BY time",
                            arguments: [id, last - engine.historySpan(of: session), last])
                        while let r = try older.next() { session.seedHistory(time: r[0], value: r[1]) }
                    }
                    let readings = try Row.fetchCursor(
                        db, sql: "SELECT time, value FROM readings WHERE series_id = ? AND time > ? ORDER BY time",
                        arguments: [id, session.lastTime ?? Int64.min])
                    var stepped = 0
                    while let r = try readings.next() {
                        engine.step(&session, time: r[0], value: r[1], into: &out)
                        stepped += 1
                    }
                    result.lateReadings += max(0, count - stepped)
                    engine.advance(&session, to: now, into: &out)
                    try save(session)
                }
            }

            // Time passes for series that got no reading: stale checks.
            let timeRules = engine.rules.filter { $0.kind.reactsToTime }
            if !timeRules.isEmpty {
                for row in try Row.fetchAll(db, sql: "SELECT id, station, metric, unit FROM series") {
                    let id: Int64 = row["id"]
                    guard !touched.contains(id) else { continue }
                    let key = SeriesKey(station: row["station"], metric: row["metric"])
                    guard timeRules.contains(where: { $0.kind.watches(key) }) else { continue }
                    var stored = try loadStates(key)
                    // A series never evaluated yet: seed the time-driven rules from its newest reading.
                    for rule in timeRules where stored[rule.name]?.lastTime == nil && rule.kind.watches(key) {
                        if let last = try Row.fetchOne(
                            db, sql: "SELECT time, value FROM readings WHERE series_id = ? ORDER BY time DESC LIMIT 1",
                            arguments: [id])
                        {
                            var st = stored[rule.name] ?? AlertState()
                            st.lastTime = last["time"]
                            st.lastValue = last["value"]
                            stored[rule.name] = st
                        }
                    }
                    guard var s = engine.session(for: key, unit: row["unit"], states: stored) else { continue }
                    let before = out.count
                    engine.advance(&s, to: now, into: &out)
                    if out.count > before { try save(s) }
                }
            }

            let logged = try Self.log(out, db, now: now, render: render, record: record)
            result.transitions = logged.map { ($0.transition, $0.message) }
            try db.execute(
                sql:
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                arguments: [Self.cursorKey, String(top)])
            return result
        }
    }

    /// Logs transitions (in output order) with their rendered messages, then hands them to `record`
    /// inside the same transaction (the outbox). Shared by every kind of evaluation.
    static func log(
        _ transitions: [Transition], _ db: Database, now: Int64, render: (Transition) -> String,
        record: (Database, [(transition: Transition, message: String, id: Int64)]) throws -> Void
    ) throws -> [(transition: Transition, message: String, id: Int64)] {
        var logged: [(transition: Transition, message: String, id: Int64)] = []
        for t in transitions.sorted(by: Transition.outputOrder) {
            let message = render(t)
            var rec = TransitionRecord(t, message: message, recordedAt: now)
            try rec.insert(db)
            logged.append((t, message, rec.id ?? 0))
        }
        try record(db, logged)
        return logged
    }
}
