/// `kind: levels` — an ordered ladder over one metric (flood stages, AQI categories). Entering the
/// first level fires, moving between levels is a change, dropping below the lowest resolves.
/// `deadband` keeps a value that hovers at a boundary from flapping down and up. `min_dwell` makes a
/// change hold before it is announced: once the value has stayed away from the announced level (on
/// the same side) for `min_dwell`, the level it is at then is announced. A river rising through two
/// levels inside the dwell time is announced once, at the higher level, without waiting again.
public struct LevelsRule: RuleKind {
    public static let kindName = "levels"

    public struct Level: Sendable, Hashable {
        public var name: String
        public var at: Double
        public init(name: String, at: Double) {
            self.name = name
            self.at = at
        }
    }

    public var metric: String
    public var stations: Set<String>?
    /// Ascending by `at`.
    public var levels: [Level]
    public var deadband: Double
    public var minDwell: Int64

    public init(
        metric: String, stations: Set<String>? = nil, levels: [Level], deadband: Double = 0, minDwell: Int64 = 0
    ) {
        self.metric = metric
        self.stations = stations
        self.levels = levels
        self.deadband = deadband
        self.minDwell = minDwell
    }

    /// The level a value belongs to, given the level it is at now: rising takes the highest level
    /// reached; falling leaves a level only once the value is below its `at` minus the deadband.
    public func target(from current: Int?, value v: Double) -> Int? {
        var raw = -1
        for (i, level) in levels.enumerated() where v >= level.at { raw = i }
        let cur = current ?? -1
        if raw >= cur { return raw < 0 ? nil : raw }
        var t = cur
        while t >= 0 && v < levels[t].at - deadband { t -= 1 }
        return t < 0 ? nil : t
    }

    public func step(_ state: inout AlertState, time: Int64, value: Double, context c: SeriesContext) -> Change? {
        let names = levels.map(\.name)
        // A level name no longer on the ladder (the rule was edited) counts as no level.
        let current = state.level.flatMap { names.firstIndex(of: $0) }
        if state.level != nil && current == nil { state.level = nil }
        let target = target(from: current, value: value)
        guard
            let move = state.observeLevel(
                time: time, current: current, target: target, names: names, minDwell: minDwell)
        else { return nil }
        var why: String
        if let to = move.to {
            why = "\(c.metric) \(c.show(value)) ≥ \(levels[to].name) (\(formatValue(levels[to].at)))"
            if to + 1 < levels.count, let from = move.from, from > to {
                why +=
                    ", below \(levels[to + 1].name) (\(formatValue(levels[to + 1].at))) − deadband \(formatValue(deadband))"
            }
        } else {
            let lowest = levels[0]
            why = "\(c.metric) \(c.show(value)) < \(lowest.name) (\(formatValue(lowest.at)))"
            if deadband > 0 { why += " − deadband \(formatValue(deadband))" }
        }
        if let from = move.from {
            why += "; previous level \(levels[from].name) (\(formatValue(levels[from].at)))"
        }
        if minDwell > 0 {
            why += "; held since \(Timestamp.format(move.heldSince)) (min_dwell \(DurationText.format(minDwell)))"
        }
        switch (move.from, move.to) {
        case (nil, let to?):
            return Change(
                state: .firing, at: time, value: value, level: levels[to].name,
                summary: "\(c.metric) at \(c.station) reached \(levels[to].name): \(c.show(value))",
                explanation: why)
        case (let from?, nil):
            return Change(
                state: .resolved, at: time, value: value, level: nil, fromLevel: levels[from].name,
                summary: "\(c.metric) at \(c.station) is back below \(levels[0].name): \(c.show(value))",
                explanation: why)
        case (let from?, let to?):
            let verb = to > from ? "rose" : "fell"
            return Change(
                state: .changed, at: time, value: value, level: levels[to].name, fromLevel: levels[from].name,
                summary:
                    "\(c.metric) at \(c.station) \(verb) from \(levels[from].name) to \(levels[to].name): \(c.show(value))",
                explanation: why)
        case (nil, nil):
            return nil
        }
    }
}
