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
            var why = "\(c.metric) \(c.show(value)) \(op) \(formatValue(threshold)) (\(direction.rawValue))"
            if holdFor > 0 {
                why += "; pending since \(Timestamp.format(since)), held \(DurationText.format(time - since))"
                why += " (for \(DurationText.format(holdFor)))"
            }
            return Change(
                state: .firing, at: time, value: value,
                summary: "\(c.metric) at \(c.station) is \(c.show(value)), \(side) \(formatValue(threshold))",
                explanation: "\(c.show(value)) is \(side) \(c.show(threshold))"
                    + (holdFor > 0 ? " for \(DurationText.format(time - since))" : ""),
                details: why, headline: "\(MetricWords.name(c.metric)) \(c.show(value)), \(side) \(c.show(threshold))")
        case .resolved(let since):
            let back = direction == .above ? "<" : ">"
            let word = direction == .above ? "below" : "above"
            return Change(
                state: .resolved, at: time, value: value,
                summary: "\(c.metric) at \(c.station) is back to \(c.show(value)), \(word) \(formatValue(clear))",
                explanation: "\(c.show(value)) is \(word) \(c.show(clear)) again",
                details:
                    "\(c.metric) \(c.show(value)) \(back) \(formatValue(clear)) (clear); firing since \(Timestamp.format(since))",
                headline: "\(MetricWords.name(c.metric)) back to \(c.show(value))")
        }
    }
}
