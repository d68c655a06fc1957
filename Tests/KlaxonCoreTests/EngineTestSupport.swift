import KlaxonCore
import Testing

/// 2026-01-01T00:00:00Z.
let t0: Int64 = 1_767_225_600

/// `t0` plus a number of minutes.
func m(_ minutes: Int64) -> Int64 { t0 + minutes * 60 }

/// The parts of a transition the rule semantics are about, comparable in one `#expect`.
struct Brief: Equatable, CustomStringConvertible {
    var rule: String
    var state: TransitionState
    var at: Int64
    var value: Double?
    var level: String? = nil
    var fromLevel: String? = nil

    init(_ t: Transition) {
        rule = t.rule
        state = t.state
        at = t.at
        value = t.value
        level = t.level
        fromLevel = t.fromLevel
    }

    init(
        rule: String, state: TransitionState, at: Int64, value: Double?, level: String? = nil,
        fromLevel: String? = nil
    ) {
        self.rule = rule
        self.state = state
        self.at = at
        self.value = value
        self.level = level
        self.fromLevel = fromLevel
    }

    static func firing(_ rule: String, _ at: Int64, _ value: Double?, level: String? = nil) -> Brief {
        Brief(rule: rule, state: .firing, at: at, value: value, level: level)
    }

    static func resolved(_ rule: String, _ at: Int64, _ value: Double?, from: String? = nil) -> Brief {
        Brief(rule: rule, state: .resolved, at: at, value: value, level: nil, fromLevel: from)
    }

    static func changed(_ rule: String, _ at: Int64, _ value: Double?, to: String, from: String) -> Brief {
        Brief(rule: rule, state: .changed, at: at, value: value, level: to, fromLevel: from)
    }

    var description: String {
        var s = "\(rule) \(state.rawValue) @\(at - t0)s"
        if let value { s += " v=\(value)" }
        if let fromLevel { s += " from=\(fromLevel)" }
        if let level { s += " to=\(level)" }
        return s
    }
}

/// One engine and one series session, fed readings as (time, value) pairs.
struct Harness {
    let engine: RuleEngine
    var session: SeriesSession
    /// Every transition produced so far, in order.
    private(set) var transitions: [Transition] = []

    init(
        _ rules: [Rule], station: String = "s1", metric: String = "m", unit: String? = nil,
        stations: [String: StationInfo] = [:], floods: [String: FloodCategories] = [:]
    ) throws {
        engine = RuleEngine(rules: rules, stations: stations, floods: floods)
        session = try #require(
            engine.session(for: SeriesKey(station: station, metric: metric), unit: unit))
    }

    init(engine: RuleEngine, session: SeriesSession) {
        self.engine = engine
        self.session = session
    }

    /// Feeds one reading; returns whether it was accepted and the transitions it produced.
    @discardableResult
    mutating func step(_ time: Int64, _ value: Double) -> (accepted: Bool, briefs: [Brief]) {
        var out: [Transition] = []
        let accepted = engine.step(&session, time: time, value: value, into: &out)
        transitions += out
        return (accepted, out.map(Brief.init))
    }

    /// Feeds readings in order; returns the transitions they produced.
    @discardableResult
    mutating func feed(_ readings: [(Int64, Double)]) -> [Brief] {
        var briefs: [Brief] = []
        for (t, v) in readings { briefs += step(t, v).briefs }
        return briefs
    }

    /// Lets time pass with no reading.
    @discardableResult
    mutating func advance(to now: Int64) -> [Brief] {
        var out: [Transition] = []
        engine.advance(&session, to: now, into: &out)
        transitions += out
        return out.map(Brief.init)
    }

    /// The rules firing now.
    var firing: [String] { engine.firing(in: session).map(\.rule) }

    /// The state of one rule's alert.
    func state(_ rule: String) -> AlertState? {
        engine.states(of: session).first { $0.rule == rule }?.state
    }

    /// Saves the states as a store would and resumes in a fresh session.
    func restarted() throws -> Harness {
        let saved = Dictionary(uniqueKeysWithValues: engine.states(of: session).map { ($0.rule, $0.state) })
        let fresh = RuleEngine(rules: engine.rules, stations: engine.stations, floods: engine.floods)
        let resumed = try #require(fresh.session(for: session.series, unit: session.unit, states: saved))
        return Harness(engine: fresh, session: resumed)
    }
}

func thresholdRule(
    _ name: String, _ direction: ThresholdRule.Direction, _ threshold: Double, clear: Double? = nil,
    for hold: Int64 = 0, metric: String = "m", stations: Set<String>? = nil, severity: Severity = .warning
) -> Rule {
    Rule(
        name: name,
        kind: ThresholdRule(
            metric: metric, stations: stations, direction: direction, threshold: threshold, clear: clear,
            holdFor: hold),
        severity: severity)
}

/// An `above` rule.
func thresholdRule(
    _ name: String, _ threshold: Double, clear: Double? = nil, for hold: Int64 = 0, metric: String = "m",
    stations: Set<String>? = nil, severity: Severity = .warning
) -> Rule {
    thresholdRule(
        name, .above, threshold, clear: clear, for: hold, metric: metric, stations: stations, severity: severity)
}

/// An `above` rule named `hi`.
func thresholdRule(_ threshold: Double, clear: Double? = nil, for hold: Int64 = 0) -> Rule {
    thresholdRule("hi", .above, threshold, clear: clear, for: hold)
}

/// action 10, minor 12, moderate 15, major 20.
let floodLadder: [LevelsRule.Level] = [
    .init(name: "action", at: 10), .init(name: "minor", at: 12), .init(name: "moderate", at: 15),
    .init(name: "major", at: 20),
]

func levelsRule(
    _ name: String = "flood", levels: [LevelsRule.Level] = floodLadder, deadband: Double = 0,
    minDwell: Int64 = 0, metric: String = "m", scale: AQIScale? = nil, direction: LevelsRule.Direction = .both
) -> Rule {
    Rule(
        name: name,
        kind: LevelsRule(
            metric: metric, levels: levels, deadband: deadband, minDwell: minDwell, scale: scale,
            direction: direction))
}

func staleRule(_ name: String = "quiet", after: Int64, metric: String = "m") -> Rule {
    Rule(name: name, kind: StaleRule(metric: metric, after: after))
}
