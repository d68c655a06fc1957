import KlaxonCore

/// The step loop of one readings slice, written once for every backend. Series are stepped in
/// order until `sliceReadings` readings were stepped; a series cut short is saved as far as it got and
/// resumed in the next slice. A slice also ends once its series logged `sliceTransitions`
/// transitions, so their notifications can go out while the rest is evaluated.
///
/// A backend's transaction runs it with three readers, each asked for one series when the loop
/// reaches it, so a slice that ends early reads nothing for the series it does not step:
///
///     let run = try ReadingsStep(series, e).run(
///         states: { i in <series i's alert states> },
///         history: { i, seriesID, from, through in <its readings in (from, through], oldest first> },
///         readings: { i, seriesID, after, limit in <its readings after `after`, oldest first, at most `limit`> })
///     <save run.states>; <log run.transitions (`TransitionLog`)>; <the cursor when run.slice.done == series.count>
///
/// (Readings not suspect, throughout.) A backend for which a query per series costs a round trip
/// reads the slice's states first, asks `wanted(states:)` what else the loop could read, reads that
/// in a few statements, and answers the readers from what it read.
public struct ReadingsStep {
    public let series: [ChangedSeries]
    /// What the step reads of the evaluation (not its planner: the loop is not generic over it).
    let e: EvaluationScope

    public init<P: TransitionPlanner>(_ series: [ChangedSeries], _ e: Evaluation<P>) {
        self.series = series
        self.e = EvaluationScope(e)
    }

    /// What the loop may read, given every series' alert states: the history of series whose rules
    /// look back (rate, flood trends: they resume with the readings they had seen), and the new
    /// readings of each series a rule watches, at most `readLimit` in all.
    public func wanted(states: (Int) -> [String: AlertState]) -> (
        history: [(index: Int, seriesID: Int64, from: Int64, through: Int64)],
        readings: [(index: Int, seriesID: Int64, after: Int64)]
    ) {
        var history: [(index: Int, seriesID: Int64, from: Int64, through: Int64)] = []
        var readings: [(index: Int, seriesID: Int64, after: Int64)] = []
        for (i, changed) in series.enumerated() {
            guard let s = e.engine.session(for: changed.key, unit: changed.unit, states: states(i)) else { continue }
            if s.history != nil, let last = s.lastTime {
                history.append((i, changed.id, last - e.engine.historySpan(of: s), last))
            }
            readings.append((i, changed.id, Self.after(s.lastTime)))
        }
        return (history, readings)
    }

    /// The most readings a slice reads in all: one past its budget, and each series' newest reading
    /// stepped, read again (`after`).
    public var readLimit: Int { e.sliceReadings + 1 + series.count }

    /// What a series' readings are read after: its newest reading stepped is read again, so a
    /// revision of it (same time, new value: an hourly source correcting the current hour) is news,
    /// stepped again, not late (`RuleEngine.isRevision`).
    static func after(_ lastTime: Int64?) -> Int64 { lastTime.map { $0 - 1 } ?? Int64.min }

    /// What a slice made: the slice's counts, the alert states to save, the transitions to log.
    public struct Outcome {
        public var slice = ReadingsSlice()
        public var states: [AlertStateRecord] = []
        public var transitions: [Transition] = []
    }

    public typealias Values = [(time: Int64, value: Double)]

    public func run(
        states: (_ index: Int) throws -> [String: AlertState],
        history: (_ index: Int, _ seriesID: Int64, _ from: Int64, _ through: Int64) throws -> Values,
        readings: (_ index: Int, _ seriesID: Int64, _ after: Int64, _ limit: Int) throws -> Values
    ) rethrows -> Outcome {
        var outcome = Outcome()
        var budget = e.sliceReadings
        var saved: [SeriesSession] = []
        for (i, changed) in series.enumerated() {
            guard budget > 0 else { break }
            guard var session = e.engine.session(for: changed.key, unit: changed.unit, states: try states(i)) else {
                outcome.slice.done += 1
                continue
            }
            if session.history != nil, let last = session.lastTime {
                for r in try history(i, changed.id, last - e.engine.historySpan(of: session), last) {
                    session.seedHistory(time: r.time, value: r.value)
                }
            }
            var stepped = 0
            var more = false
            var ahead = 0
            let present = e.present
            for r in try readings(i, changed.id, Self.after(session.lastTime), budget + 2) {
                // The newest reading stepped, read again: stepped only if it was revised.
                if r.time == session.lastTime && !e.engine.isRevision(session, time: r.time, value: r.value) {
                    continue
                }
                // Dated ahead of now (readings come oldest first): it and what follows wait for
                // their time (`Evaluation.present`), so they do not make the present's readings late.
                if r.time > present {
                    ahead += 1
                    continue
                }
                if stepped == budget {
                    more = true
                    break
                }
                e.engine.step(&session, time: r.time, value: r.value, into: &outcome.transitions)
                stepped += 1
            }
            budget -= stepped
            if more {
                saved.append(session)
                outcome.slice.partial = stepped
                break
            }
            e.engine.advance(&session, to: e.now, into: &outcome.transitions)
            saved.append(session)
            outcome.slice.done += 1
            outcome.slice.late += max(0, changed.count - changed.stepped - stepped - ahead)
            if outcome.transitions.count >= e.sliceTransitions { break }
        }
        outcome.states = AlertStateRecord.records(saved, e)
        return outcome
    }
}

/// Time passing for series that got no reading (stale checks), written once for every backend:
///
///     let step = QuietStep(series, e, states: <the series' alert states>)
///     let run = step.run(newest: <for each of step.newestWanted, its newest reading not suspect>)
///     <save run.states>; <log run.transitions>
public struct QuietStep {
    public let series: [ChangedSeries]
    let e: EvaluationScope
    let states: [SeriesKey: [String: AlertState]]
    let timeRules: [(rule: Rule, kind: any SeriesRuleKind)]

    public init<P: TransitionPlanner>(
        _ series: [ChangedSeries], _ e: Evaluation<P>, states: [SeriesKey: [String: AlertState]]
    ) {
        self.series = series
        self.e = EvaluationScope(e)
        self.states = states
        timeRules = e.engine.timeRules
    }

    /// Series never evaluated yet by a time-driven rule: those rules start from the newest reading.
    public var newestWanted: [(index: Int, seriesID: Int64)] {
        series.indices.compactMap { i in
            let stored = states[series[i].key] ?? [:]
            let unseeded = timeRules.contains {
                $0.kind.watches(series[i].key) && stored[$0.rule.name]?.lastTime == nil
            }
            return unseeded ? (i, series[i].id) : nil
        }
    }

    public func run(newest: [Int: (time: Int64, value: Double)]) -> (
        states: [AlertStateRecord], transitions: [Transition]
    ) {
        var out: [Transition] = []
        var moved: [SeriesSession] = []
        for (i, quiet) in series.enumerated() {
            var stored = states[quiet.key] ?? [:]
            if let last = newest[i] {
                for (rule, kind) in timeRules where stored[rule.name]?.lastTime == nil && kind.watches(quiet.key) {
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
        return (AlertStateRecord.records(moved, e), out)
    }
}

/// What the step loops read of an evaluation: all of it but the planner, so they stay concrete.
struct EvaluationScope {
    let engine: RuleEngine
    let now: Int64
    let present: Int64
    let sliceReadings: Int
    let sliceTransitions: Int

    init<P: TransitionPlanner>(_ e: Evaluation<P>) {
        engine = e.engine
        now = e.now
        present = e.present
        sliceReadings = e.sliceReadings
        sliceTransitions = e.sliceTransitions
    }
}

extension AlertStateRecord {
    /// The rows of the sessions' alert states, as of `e.now`.
    static func records(_ sessions: [SeriesSession], _ e: EvaluationScope) -> [AlertStateRecord] {
        var records: [AlertStateRecord] = []
        for session in sessions {
            for (rule, state) in e.engine.states(of: session) {
                records.append(
                    AlertStateRecord(
                        key: AlertKey(rule: rule, station: session.series.station, metric: session.series.metric),
                        state: state, updatedAt: e.now))
            }
        }
        return records
    }
}

/// The transitions a transaction logs, written once for every backend: in output order, each
/// planned (`TransitionPlanner`: annotated, with its rendered message and its planned deliveries),
/// and the metric changes they make.
///
///     var log = TransitionLog(out, e)
///     <take ids for log.records>; <read the open episodes of log.episodeLookups>
///     log.assign(ids: ids, open: open); <insert log.records>
///     let plan = OutboxPlan(log, queued: <the alerts' queued rows>, now: e.now)
///     <mark plan.folded superseded>; for row in plan.rows { <queue it, held or due at `GroupTiming.due`> }
///     <write log.deltas>; return log.logged(ids: ids)
public struct TransitionLog {
    public internal(set) var transitions: [Transition]
    public var records: [TransitionRecord]
    /// Each transition's planned deliveries (empty without routing).
    public private(set) var deliveries: [[PlannedDelivery]]
    public var deltas = MetricDeltas()
    let routed: Bool
    /// The transitions are events' (quakes): an event is news only while it is fresh. Unlike an
    /// alert's standing state, which a held row may still tell once caught up, an event older than its
    /// route's `notify_max_age` is recorded and never sent (`OutboxPlan` queues no row for it).
    public let events: Bool

    public init<P: TransitionPlanner>(_ transitions: [Transition], _ e: Evaluation<P>, events: Bool = false) {
        self.events = events
        var planned = transitions.sorted(by: Transition.outputOrder)
        var records: [TransitionRecord] = []
        var deliveries: [[PlannedDelivery]] = []
        records.reserveCapacity(planned.count)
        deliveries.reserveCapacity(planned.count)
        for i in planned.indices {
            let plan = e.planner.plan(&planned[i])
            records.append(TransitionRecord(planned[i], message: plan.message, recordedAt: e.now))
            deliveries.append(plan.deliveries)
            deltas.transition(rule: planned[i].rule, state: planned[i].state.rawValue)
        }
        self.transitions = planned
        self.records = records
        self.deliveries = deliveries
        routed = e.planner.routes
    }

    public var isEmpty: Bool { transitions.isEmpty }

    /// The resolve contract: each resolve also goes to the receivers that heard its alert firing
    /// (`heard`, by `QueueClaim.heardKey`) and that the routing no longer sends it to
    /// (`TransitionPlanner.resolvePlan`). Before `OutboxPlan`; `heard` covers `OutboxPlan.heardNeeded`.
    public mutating func routeResolves<P: TransitionPlanner>(heard: [String: Heard], _ e: Evaluation<P>) {
        guard !heard.isEmpty else { return }
        // The receivers that believe each alert is firing.
        var firing: [Substring: [String]] = [:]
        for (key, h) in heard where h.isFiring {
            guard let cut = key.firstIndex(of: "\u{1F}") else { continue }
            firing[key[..<cut], default: []].append(String(key[key.index(after: cut)...]))
        }
        for i in transitions.indices where transitions[i].state == .resolved {
            guard let receivers = firing[Substring(OutboxRecord.alertKey(transitions[i]))] else { continue }
            let planned = Set(deliveries[i].map(\.receiver))
            let heardBy = receivers.filter { !planned.contains($0) }.sorted()
            guard !heardBy.isEmpty else { continue }
            deliveries[i] += e.planner.resolvePlan(transitions[i], heardBy: heardBy)
        }
    }

    /// The transitions as logged under `ids` (in `records`' order).
    public func logged(ids: [Int64]) -> [Logged] {
        transitions.indices.map { i in
            Logged(
                transition: transitions[i], message: records[i].message, id: ids[i],
                routed: !routed || !deliveries[i].isEmpty, episode: records[i].episode)
        }
    }
}

/// Group timing, after Alertmanager: a new group waits `group_wait` to collect alerts; a group
/// already waiting is joined; a group notified recently waits until `group_interval` has passed.
/// Each backend reads the two facts (`waiting`, `lastSent`) its own way.
public enum GroupTiming {
    /// Whether a delivery is due at once without reading the group (no timing configured).
    public static func isImmediate(_ p: PlannedDelivery) -> Bool { p.groupWait == 0 && p.groupInterval == 0 }

    /// When a delivery is due. `waiting`: the earliest due time of the group's rows still waiting
    /// (pending, in no batch, due at or after `now`); `lastSent`: when the group last went out.
    public static func due(_ p: PlannedDelivery, now: Int64, waiting: Int64?, lastSent: Int64?) -> Int64 {
        if isImmediate(p) { return now }
        if let waiting { return waiting }
        let interval = p.groupInterval.multipliedClamped(by: 1000)
        if let lastSent, lastSent.addingClamped(interval) > now { return lastSent.addingClamped(interval) }
        return now.addingClamped(p.groupWait.multipliedClamped(by: 1000))
    }
}

/// Changes to `metric_counts` summed in memory, written once per transaction (one upsert per key):
/// a trigger per row had cost a third of delivery's time.
public struct MetricDeltas: Sendable {
    public struct Key: Hashable, Sendable, Comparable {
        public var family: String
        public var a: String
        public var b: String

        public static func < (l: Key, r: Key) -> Bool { (l.family, l.a, l.b) < (r.family, r.a, r.b) }
    }
    private var changes: [Key: (n: Int, total: Double)] = [:]

    /// A row of `metric_counts`.
    public struct Row: Sendable {
        public var family: String
        public var a: String
        public var b: String
        public var n: Int
        public var total: Double

        public init(family: String, a: String, b: String, n: Int, total: Double) {
            self.family = family
            self.a = a
            self.b = b
            self.n = n
            self.total = total
        }
    }

    public init() {}

    public mutating func add(_ family: String, _ a: String, _ b: String = "", n: Int = 1, total: Double = 0) {
        let key = Key(family: family, a: a, b: b)
        let old = changes[key] ?? (0, 0)
        changes[key] = (old.n + n, old.total + total)
    }

    /// A transition logged.
    public mutating func transition(rule: String, state: String) { add("transitions", rule, state) }

    /// A row reaching a final state (sent, dead, muted, dropped) from `sending`; `latency` in
    /// seconds from queueing to sending, for `sent`.
    public mutating func outcome(receiver: String, state: String, latency: Double?) {
        add("outbox", state)
        add("deliveries", receiver, state)
        if let latency { add("latency", String(Self.bucket(latency)), total: latency) }
    }

    /// The histogram bucket of a latency: the first bound it is within, else past the last.
    public static func bucket(_ latency: Double) -> Int {
        StoreMetrics.latencyBounds.firstIndex { latency <= $0 } ?? StoreMetrics.latencyBounds.count
    }

    /// The changes to write, in key order (a fixed order: two writers lock rows alike), none that is zero.
    public var rows: [(key: Key, n: Int, total: Double)] {
        changes.filter { $0.value.n != 0 || $0.value.total != 0 }.sorted { $0.key < $1.key }.map {
            ($0.key, $0.value.n, $0.value.total)
        }
    }
}
