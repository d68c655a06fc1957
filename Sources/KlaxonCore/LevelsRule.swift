/// `kind: levels` — an ordered ladder over one metric (flood stages, AQI categories). Entering the
/// first level fires, moving between levels is a change, dropping below the lowest resolves.
/// `deadband` keeps a value that hovers at a boundary from flapping down and up. `min_dwell` makes a
/// change hold before it is announced: once the value has stayed away from the announced level (on
/// the same side) for `min_dwell`, the level it is at then is announced. A river rising through two
/// levels inside the dwell time is announced once, at the higher level, without waiting again.
public struct LevelsRule: SeriesRuleKind {
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
    /// `levels: nws`: each station's ladder is its NWS flood categories (action, minor, moderate,
    /// major; undefined ones skipped), and `levels` is unused. A station without categories gets no alert.
    public var nws: Bool
    /// With `nws`: the ladder starts at this category (`minor`: action is left out), so the alert
    /// fires on reaching it (a watch's `watch gauge ID minor`). Nil: every category.
    public var nwsFrom: String?
    /// `scale: us-epa|india-naqi`: the ladder is the scale's levels above its clean one, and messages
    /// carry the level's emoji, colour and health advice.
    public var scale: AQIScale?
    /// Which moves between levels are announced (firing and resolved always are).
    public var direction: Direction
    /// `forecast:` (with `levels: nws`): the gauge's official forecast is watched too, as an alert
    /// of its own (`FloodForecastAlert`, metric `<metric>.forecast`); nil: observations only.
    public var forecast: ForecastOption?

    public enum Direction: String, Sendable, CaseIterable {
        /// Only moves to a worse (higher) level.
        case worse
        /// Only moves to a better (lower) level.
        case better
        /// Every move.
        case both
    }

    public init(
        metric: String, stations: Set<String>? = nil, levels: [Level], deadband: Double = 0, minDwell: Int64 = 0,
        nws: Bool = false, nwsFrom: String? = nil, scale: AQIScale? = nil, direction: Direction = .both,
        forecast: ForecastOption? = nil
    ) {
        self.nwsFrom = nwsFrom
        self.forecast = forecast
        self.metric = metric
        self.stations = stations
        self.levels = scale?.alertLadder ?? levels
        self.deadband = deadband
        self.minDwell = minDwell
        self.nws = nws
        self.scale = scale
        self.direction = direction
    }

    /// Flood messages carry the trend over the last hours and the change over the last day.
    public var historySpan: Int64 { nws ? 86_400 : 0 }
    public var needs: RuleNeeds { nws ? [.stations, .floodCategories] : .stations }
    public var aqiScale: AQIScale? { scale }
    public var forecastOption: ForecastOption? { nws ? forecast : nil }

    /// The ladder for a series: the rule's own, or the station's NWS categories.
    public func ladder(_ c: SeriesContext) -> [Level] {
        guard nws else { return levels }
        let ladder = c.floodLadder ?? []
        guard let from = nwsFrom else { return ladder }
        return Array(ladder.drop { $0.name != from })
    }

    /// The level a value belongs to, given the level it is at now: rising takes the highest level
    /// reached; falling leaves a level only once the value is below its `at` minus the deadband.
    public func target(from current: Int?, value v: Double) -> Int? {
        Self.target(levels, deadband: deadband, from: current, value: v)
    }

    static func target(_ levels: [Level], deadband: Double, from current: Int?, value v: Double) -> Int? {
        var raw = -1
        for (i, level) in levels.enumerated() where v >= level.at { raw = i }
        let cur = current ?? -1
        if raw >= cur { return raw < 0 ? nil : raw }
        var t = cur
        while t >= 0 && v < levels[t].at - deadband { t -= 1 }
        return t < 0 ? nil : t
    }

    public func step(_ state: inout AlertState, time: Int64, value: Double, context c: SeriesContext) -> Change? {
        let levels = ladder(c)
        guard !levels.isEmpty else { return nil }
        let names = levels.map(\.name)
        // A level name no longer on the ladder (the rule was edited) counts as no level.
        let current = state.level.flatMap { names.firstIndex(of: $0) }
        if state.level != nil && current == nil {
            state.level = nil
            state.announced = nil
        }
        // The level last announced: a `direction` rule's state follows the moves it does not announce.
        let announced = state.announced.flatMap { names.firstIndex(of: $0) } ?? current
        let target = Self.target(levels, deadband: deadband, from: current, value: value)
        guard
            let move = state.observeLevel(
                time: time, current: current, target: target, names: names, minDwell: minDwell)
        else { return nil }
        // Messages and the direction compare with what was announced, not with a silent level.
        let from = move.from == nil ? nil : announced
        if let from, let to = move.to {
            // A move between levels the rule does not announce (or back to the announced one): the
            // state follows, silently, and remembers what was announced.
            if to == from || (direction == .worse && to < from) || (direction == .better && to > from) {
                state.announced = to == from ? nil : names[from]
                return nil
            }
        }
        state.announced = nil
        // The engine's account (`--explain`): exact boundaries, deadband, dwell.
        var why: String
        if let to = move.to {
            why = "\(c.metric) \(c.show(value)) ≥ \(levels[to].name) (\(formatValue(levels[to].at)))"
            if to + 1 < levels.count, let left = move.from, left > to {
                why +=
                    ", below \(levels[to + 1].name) (\(formatValue(levels[to + 1].at))) − deadband \(formatValue(deadband))"
            }
        } else {
            let lowest = levels[0]
            why = "\(c.metric) \(c.show(value)) < \(lowest.name) (\(formatValue(lowest.at)))"
            if deadband > 0 { why += " − deadband \(formatValue(deadband))" }
        }
        if let from {
            why += "; previous level \(levels[from].name) (\(formatValue(levels[from].at)))"
        }
        if minDwell > 0 {
            why += "; held since \(Timestamp.format(move.heldSince)) (min_dwell \(DurationText.format(minDwell)))"
        }
        if nws {
            return Self.floodChange(move: (from, move.to), levels: levels, time: time, value: value, why: why, c)
        }
        if let scale {
            return Self.aqiChange(move: (from, move.to), scale: scale, time: time, value: value, why: why, c)
        }
        // A gauge's own ladder named like NWS categories reads as they do (`minor flood stage`).
        let flood =
            SubjectPage.of(metric: c.metric) == .gauge && levels.allSatisfy { FloodCategories.names.contains($0.name) }
        let what = MetricWords.name(c.metric)
        func named(_ i: Int) -> String { flood ? Self.floodTitle(levels[i].name) : "\(what) \(levels[i].name)" }
        // For people: the value against the level it reached (or left) and the next one up.
        func level(_ i: Int) -> String { flood ? Self.floodTitle(levels[i].name) : levels[i].name }
        var reason: String
        if let to = move.to {
            reason = "\(c.show(value)) is at or above \(level(to)) (\(c.show(levels[to].at)))"
            if to + 1 < levels.count { reason += "; next: \(level(to + 1)) at \(c.show(levels[to + 1].at))" }
        } else {
            reason = "\(c.show(value)) is below \(level(0)) (\(c.show(levels[0].at)))"
        }
        switch (from, move.to) {
        case (nil, let to?):
            return Change(
                state: .firing, at: time, value: value, level: levels[to].name,
                summary: "\(c.metric) at \(c.station) reached \(levels[to].name): \(c.show(value))",
                explanation: reason, details: why, headline: named(to))
        case (let from?, nil):
            return Change(
                state: .resolved, at: time, value: value, level: nil, fromLevel: levels[from].name,
                summary: "\(c.metric) at \(c.station) is back below \(levels[0].name): \(c.show(value))",
                explanation: reason, details: why,
                headline: flood
                    ? "below \(Self.floodTitle(levels[0].name)) again" : "\(what) back below \(levels[0].name)")
        case (let from?, let to?):
            let verb = to > from ? "rose" : "fell"
            return Change(
                state: .changed, at: time, value: value, level: levels[to].name, fromLevel: levels[from].name,
                summary:
                    "\(c.metric) at \(c.station) \(verb) from \(levels[from].name) to \(levels[to].name): \(c.show(value))",
                explanation: reason, details: why,
                headline: "\(named(to)), \(to > from ? "up" : "down") from \(levels[from].name)")
        case (nil, nil):
            return nil
        }
    }

    /// `action stage`, `minor flood stage`, …
    public static func floodTitle(_ category: String) -> String {
        category == "action" ? "action stage" : "\(category) flood stage"
    }

    /// A flood message: the river and place with both ids, the value, the category and its threshold,
    /// the next category up, the trend over the last hours and the change over the last day, in words
    /// (a Unicode sparkline renders as black blocks in mail and proportional fonts).
    static func floodChange(
        move: (from: Int?, to: Int?), levels: [Level], time: Int64, value: Double, why: String, _ c: SeriesContext
    ) -> Change? {
        var parts: [String] = []
        let head: String
        let state: TransitionState
        switch move {
        case (nil, let to?):
            state = .firing
            head =
                "\(c.place): \(c.metric) \(c.show(value)) reached \(floodTitle(levels[to].name)) (\(c.show(levels[to].at)))"
        case (let from?, let to?):
            state = .changed
            let verb = to > from ? "rose" : "fell"
            head =
                "\(c.place): \(c.metric) \(c.show(value)) \(verb) from \(floodTitle(levels[from].name)) to \(floodTitle(levels[to].name)) (\(c.show(levels[to].at)))"
        case (let from?, nil):
            state = .resolved
            head =
                "\(c.place): \(c.metric) \(c.show(value)) is back below \(floodTitle(levels[0].name)) (\(c.show(levels[0].at))); was \(floodTitle(levels[from].name))"
        case (nil, nil):
            return nil
        }
        parts.append(head)
        var reason: String
        if let to = move.to {
            reason = "\(c.show(value)) is at or above \(floodTitle(levels[to].name)) (\(c.show(levels[to].at)))"
            if to + 1 < levels.count {
                let next = "next: \(floodTitle(levels[to + 1].name)) at \(c.show(levels[to + 1].at))"
                parts.append(next)
                reason += "; " + next
            } else {
                parts.append("highest category")
                reason += "; the highest category"
            }
        } else {
            reason = "\(c.show(value)) is below \(floodTitle(levels[0].name)) (\(c.show(levels[0].at)))"
        }
        if let history = c.history {
            // The trend agrees with the move it is told beside: up for a firing or a rise, down for a
            // fall or a resolve.
            let rising = move.to.map { to in move.from.map { to > $0 } ?? true } ?? false
            if let trend = trendWords(history, unit: c.unit, rising: rising) {
                parts.append(trend)
                reason += "; " + trend
            }
            if let day = dayWords(history, unit: c.unit) { parts.append(day) }
        }
        let level = move.to.map { levels[$0].name }
        let from = move.from.map { levels[$0].name }
        let headline: String
        switch move {
        case (_, let to?) where move.from == nil: headline = floodTitle(levels[to].name)
        case (let f?, let to?):
            headline = "\(floodTitle(levels[to].name)), \(to > f ? "up" : "down") from \(levels[f].name)"
        default: headline = "below \(floodTitle(levels[0].name)) again"
        }
        return Change(
            state: state, at: time, value: value, level: level, fromLevel: from, summary: parts.joined(separator: "; "),
            explanation: reason, details: why, headline: headline)
    }

    /// `rising 2.3 ft/h over 3 h` (or over the last hour when three are not covered); nil without
    /// enough data for an honest rate. With `rising`, the direction of the move the message tells
    /// (a level entered from below, or left downwards): a window whose trend goes the other way is
    /// not told ("fell from moderate to minor … rising" when the river peaked inside the three hours),
    /// the last hour's is tried instead, and with none that agrees there are no trend words.
    static func trendWords(_ history: RecentReadings, unit: String?, rising: Bool? = nil) -> String? {
        for hours in [3, 1] as [Int64] {
            guard let trend = history.rate(window: hours * 3_600, per: 3_600) else { continue }
            let u = unit.map { " \($0)/h" } ?? "/h"
            let rounded = (trend.rate * 100).rounded() / 100
            if let rising, rounded != 0, (rounded > 0) != rising { continue }
            guard rounded != 0 else { return "steady over \(hours) h" }
            return "\(rounded > 0 ? "rising" : "falling") \(formatValue(abs(rounded)))\(u) over \(hours) h"
        }
        return nil
    }

    /// `up 4.1 ft in 24 h` (from the oldest reading of the last day); nil with under 6 hours of data.
    static func dayWords(_ history: RecentReadings, unit: String?) -> String? {
        guard let now = history.last,
            let first = history.readings.first(where: { $0.time >= now.time.subtractingClamped(86_400) }),
            now.time - first.time >= 6 * 3_600
        else { return nil }
        let delta = ((now.value - first.value) * 100).rounded() / 100
        let hours = (now.time - first.time + 1_800) / 3_600
        let u = unit.map { " \($0)" } ?? ""
        if delta == 0 { return "unchanged in \(hours) h" }
        return "\(delta > 0 ? "up" : "down") \(formatValue(abs(delta)))\(u) in \(hours) h"
    }

    /// An air-quality message: the place, the AQI, the level with its emoji and range, the advice.
    static func aqiChange(
        move: (from: Int?, to: Int?), scale: AQIScale, time: Int64, value: Double, why: String, _ c: SeriesContext
    ) -> Change? {
        func info(_ name: String) -> AQILevel? { scale.levels.first { $0.name == name } }
        let aqi = formatValue(value.rounded())
        let where_ = c.info?.name ?? c.station
        let state: TransitionState
        var text: String
        switch move {
        case (nil, nil):
            return nil
        case (_, let to?):
            let name = scale.alertLadder[to].name
            let l = info(name)
            state = move.from == nil ? .firing : .changed
            text = "\(l?.emoji ?? "") \(where_) air quality \(aqi) (\(scale.title)): \(name)"
            if let l { text += " (\(formatValue(l.at))–\(formatValue(l.upper)))" }
            if let from = move.from {
                text +=
                    to > from
                    ? ", worse than \(scale.alertLadder[from].name)" : ", better than \(scale.alertLadder[from].name)"
            }
            if let advice = l?.advice, !advice.isEmpty { text += ". \(advice)" }
        case (let from?, nil):
            state = .resolved
            let clean = scale.levels[0]
            text =
                "\(clean.emoji) \(where_) air quality \(aqi) (\(scale.title)): back to \(clean.name), from \(scale.alertLadder[from].name)"
        }
        // For people: the index against the category's published range (not the ladder's rounded edge).
        let reason: String
        let headline: String
        switch move {
        case (let from, let to?):
            let name = scale.alertLadder[to].name
            reason =
                "AQI \(aqi) is \(name)" + (info(name).map { " (\(formatValue($0.at))–\(formatValue($0.upper)))" } ?? "")
            if let from {
                headline = "air quality \(name), \(to > from ? "worse" : "better") than \(scale.alertLadder[from].name)"
            } else {
                headline = "air quality \(name)"
            }
        default:
            let clean = scale.levels[0]
            reason = "AQI \(aqi) is \(clean.name) (\(formatValue(clean.at))–\(formatValue(clean.upper)))"
            headline = "air quality back to \(clean.name)"
        }
        return Change(
            state: state, at: time, value: value, level: move.to.map { scale.alertLadder[$0].name },
            fromLevel: move.from.map { scale.alertLadder[$0].name },
            summary: text.trimmingCharacters(in: .whitespaces), explanation: reason, details: why, headline: headline)
    }
}
