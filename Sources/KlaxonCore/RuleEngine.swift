/// The state of every rule watching one series, carried from reading to reading.
public struct SeriesSession: Sendable {
    public let series: SeriesKey
    /// Indexes into `RuleEngine.rules`, one per rule that watches the series.
    public let ruleIndexes: [Int]
    /// The state of each of those rules' alert, in the same order.
    public var states: [AlertState]
    /// The newest reading time seen; a reading at or before it is late.
    public var lastTime: Int64?
    /// Readings dropped because they were not newer than `lastTime`.
    public var lateReadings = 0
    /// Marks a series whose readings came out of order (dry-run replays it sorted in a second pass).
    public var disordered = false
    /// What the rules see of the series, kept whole: each reading borrows it instead of building a
    /// new one (seven references retained and released per reading and rule, 7 % of a replay).
    var context: SeriesContext

    public init(series: SeriesKey, unit: String?, ruleIndexes: [Int], states: [AlertState], lastTime: Int64?) {
        self.series = series
        self.ruleIndexes = ruleIndexes
        self.states = states
        self.lastTime = lastTime
        context = SeriesContext(station: series.station, metric: series.metric, unit: unit)
    }

    public var unit: String? {
        get { context.unit }
        set { context.unit = newValue }
    }
    public var info: StationInfo? {
        get { context.info }
        set { context.info = newValue }
    }
    /// Setting it works out `floodLadder` for the series' metric.
    public var flood: FloodCategories? {
        get { context.flood }
        set { context.flood = newValue }
    }
    /// `flood` as a ladder for the series' metric.
    public var floodLadder: [LevelsRule.Level]? { context.floodLadder }
    /// Recent readings, when a rule watching the series needs them.
    public var history: RecentReadings? {
        get { context.history }
        set { context.history = newValue }
    }

    /// Adds an older reading to the history only (resuming a session from the store): no rule sees it.
    public mutating func seedHistory(time: Int64, value: Double) {
        history?.append(time: time, value: value)
    }
}

/// Evaluates rules against readings. Pure and shared by `evaluate`, `dry-run`, `test` and the
/// daemon: they differ only in where readings come from and where transitions go.
public struct RuleEngine: Sendable {
    public let rules: [Rule]
    /// The rules' kinds and whether each reacts to time, kept apart so the per-reading loop touches
    /// only what it needs (no copy of a whole `Rule` per reading). An event family's rule holds
    /// `NoSeries` here: it watches no series, so no session ever steps it.
    let kinds: [any SeriesRuleKind]
    let timeDriven: [Bool]
    /// The series rules that react to time (stale checks), with their kind.
    public let timeRules: [(rule: Rule, kind: any SeriesRuleKind)]

    /// Station metadata and NWS flood categories by station id, for messages and `levels: nws`.
    public let stations: [String: StationInfo]
    public let floods: [String: FloodCategories]

    public init(rules: [Rule], stations: [String: StationInfo] = [:], floods: [String: FloodCategories] = [:]) {
        self.rules = rules
        self.stations = stations
        self.floods = floods
        let kinds = rules.map { $0.kind.series ?? (NoSeries() as any SeriesRuleKind) }
        let timeDriven = kinds.map(\.reactsToTime)
        self.kinds = kinds
        self.timeDriven = timeDriven
        timeRules = rules.indices.filter { timeDriven[$0] }.map { (rules[$0], kinds[$0]) }
    }

    /// The span of history a session's rules need (0 = none).
    public func historySpan(of s: SeriesSession) -> Int64 {
        s.ruleIndexes.map { kinds[$0].historySpan }.max() ?? 0
    }

    /// The rules that watch a series.
    public func ruleIndexes(watching series: SeriesKey) -> [Int] {
        rules.indices.filter { kinds[$0].watches(series) }
    }

    /// A session for a series, resuming from stored states (by rule name); nil when no rule watches it.
    public func session(for series: SeriesKey, unit: String? = nil, states stored: [String: AlertState] = [:])
        -> SeriesSession?
    {
        let indexes = ruleIndexes(watching: series)
        guard !indexes.isEmpty else { return nil }
        let states = indexes.map { stored[rules[$0].name] ?? AlertState() }
        let last = states.compactMap(\.lastTime).max()
        let span = indexes.map { kinds[$0].historySpan }.max() ?? 0
        var s = SeriesSession(series: series, unit: unit, ruleIndexes: indexes, states: states, lastTime: last)
        s.info = stations[series.station]
        s.flood = floods[series.station]
        if span > 0 { s.history = RecentReadings(span: span) }
        return s
    }

    /// Whether a reading is a revision of the session's newest one: its time, another value (an
    /// hourly source correcting the current hour). A revision is news and is stepped again.
    public func isRevision(_ s: SeriesSession, time: Int64, value: Double) -> Bool {
        guard let last = s.lastTime, time == last else { return false }
        return s.states.contains { $0.lastTime == time && $0.lastValue != value }
    }

    /// Feeds one reading. Returns false when the reading was late (older than the last one, or the
    /// last one again with its value unchanged) and ignored; a revision of the last one (same time,
    /// new value) is stepped again with its new value.
    @discardableResult
    public func step(_ s: inout SeriesSession, time: Int64, value: Double, into out: inout [Transition]) -> Bool {
        var revision = false
        if let last = s.lastTime, time <= last {
            guard isRevision(s, time: time, value: value) else {
                s.lateReadings += 1
                return false
            }
            revision = true
        }
        if revision {
            s.context.history?.revise(time: time, value: value)
        } else {
            s.context.history?.append(time: time, value: value)
        }
        // The states are taken out of the session while the rules step them, so the rules can borrow
        // `s.context` as it is: with both inside `s`, each reading copied the whole context.
        var states: [AlertState] = []
        swap(&states, &s.states)
        for i in s.ruleIndexes.indices {
            let k = s.ruleIndexes[i]
            if timeDriven[k], let change = kinds[k].advance(&states[i], to: time, context: s.context) {
                out.append(rules[k].transition(change, s.context))
            }
            let previous = states[i].lastTime
            if let change = kinds[k].step(&states[i], time: time, value: value, context: s.context) {
                out.append(rules[k].transition(change, s.context))
            }
            // The gap to this reading (a revision keeps the one of the reading it revises).
            if let previous, previous < time { states[i].interval = time.subtractingClamped(previous) }
            states[i].lastTime = time
            states[i].lastValue = value
        }
        swap(&states, &s.states)
        s.lastTime = time
        return true
    }

    /// Lets time pass to `now` with no new reading (stale detection).
    public func advance(_ s: inout SeriesSession, to now: Int64, into out: inout [Transition]) {
        let context = s.context
        for i in s.ruleIndexes.indices where timeDriven[s.ruleIndexes[i]] {
            let k = s.ruleIndexes[i]
            if let change = kinds[k].advance(&s.states[i], to: now, context: context) {
                out.append(rules[k].transition(change, context))
            }
        }
    }

    /// The alerts of a session that are firing now, with their level.
    public func firing(in s: SeriesSession) -> [(rule: String, level: String?)] {
        s.ruleIndexes.indices.compactMap { i in
            s.states[i].isFiring ? (rules[s.ruleIndexes[i]].name, s.states[i].level) : nil
        }
    }

    /// Stored states of a session, by rule name.
    public func states(of s: SeriesSession) -> [(rule: String, state: AlertState)] {
        s.ruleIndexes.indices.map { (rules[s.ruleIndexes[$0]].name, s.states[$0]) }
    }
}

/// The place of an event family's rule in `RuleEngine.kinds`: it watches no series.
private struct NoSeries: SeriesRuleKind {
    static let kindName = ""
    var metric: String { "" }
    var stations: Set<String>? { [] }
    func step(_ state: inout AlertState, time: Int64, value: Double, context: SeriesContext) -> Change? { nil }
}
