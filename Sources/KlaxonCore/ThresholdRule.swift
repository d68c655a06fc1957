/// `kind: threshold` — fires while a value is at or above (`above`) or at or below (`below`) a
/// threshold, optionally only after it has held `for` a while, and resolves past a separate `clear`
/// value (hysteresis).
public struct ThresholdRule: SeriesRuleKind {
    public static let kindName = "threshold"

    public enum Direction: String, Sendable {
        case above, below
    }

    public var metric: String
    public var stations: Set<String>?
    public var direction: Direction
    public var threshold: Double
    /// Resolve only past this value: `above` resolves when value < clear, `below` when value > clear.
    public var clear: Double
    /// Seconds the condition must hold before firing.
    public var holdFor: Int64

    public init(
        metric: String, stations: Set<String>? = nil, direction: Direction, threshold: Double, clear: Double? = nil,
        holdFor: Int64 = 0
    ) {
        self.metric = metric
        self.stations = stations
        self.direction = direction
        self.threshold = threshold
        self.clear = clear ?? threshold
        self.holdFor = holdFor
    }

    func isActive(_ v: Double) -> Bool { direction == .above ? v >= threshold : v <= threshold }
    func isCleared(_ v: Double) -> Bool { direction == .above ? v < clear : v > clear }

    public func step(_ state: inout AlertState, time: Int64, value: Double, context c: SeriesContext) -> Change? {
        let action = state.observe(
            time: time, active: isActive(value), cleared: isCleared(value), holdFor: holdFor)
        let op = direction == .above ? "≥" : "≤"
        let side = direction == .above ? "at or above" : "at or below"
        switch action {
        case .none, .startedPending, .cancelledPending:
            return nil
        case .fired(let since):
            // Each number is formatted once (a flapping replay words hundreds of thousands of these).
            let shown = c.show(value)
            let limit = formatValue(threshold)
            let limitShown = c.withUnit(limit)
            var why = "\(c.metric) \(shown) \(op) \(limit) (\(direction.rawValue))"
            var held = ""
            if holdFor > 0 {
                held = DurationText.format(time - since)
                why += "; pending since \(Timestamp.format(since)), held \(held)"
                why += " (for \(DurationText.format(holdFor)))"
            }
            return Change(
                state: .firing, at: time, value: value,
                summary: "\(c.metric) at \(c.station) is \(shown), \(side) \(limit)",
                explanation: "\(shown) is \(side) \(limitShown)" + (holdFor > 0 ? " for \(held)" : ""),
                details: why, headline: "\(MetricWords.name(c.metric)) \(shown), \(side) \(limitShown)")
        case .resolved(let since):
            let back = direction == .above ? "<" : ">"
            let word = direction == .above ? "below" : "above"
            let shown = c.show(value)
            let limit = formatValue(clear)
            return Change(
                state: .resolved, at: time, value: value,
                summary: "\(c.metric) at \(c.station) is back to \(shown), \(word) \(limit)",
                explanation: "\(shown) is \(word) \(c.withUnit(limit)) again",
                details: "\(c.metric) \(shown) \(back) \(limit) (clear); firing since \(Timestamp.format(since))",
                headline: "\(MetricWords.name(c.metric)) back to \(shown)")
        }
    }
}
