/// `kind: rate` — fires while a series changes at least as fast as `rising` (or `falling`) per `per`
/// (an hour by default), measured over `window` (an hour by default): from the newest reading at or
/// before the window's start to the newest reading. `for` and `clear` work as in `threshold`. When
/// the readings cannot give an honest rate (a gap longer than two windows, or less than half a window
/// of data) the alert keeps its state: missing data neither fires nor resolves it.
public struct RateRule: SeriesRuleKind {
    public static let kindName = "rate"

    public enum Direction: String, Sendable {
        case rising, falling
    }

    public var metric: String
    public var stations: Set<String>?
    public var direction: Direction
    /// The rate (a positive number, in units per `per`) at or beyond which the rule fires.
    public var threshold: Double
    /// Resolve once the rate is below this (rising) or falling slower than this (falling).
    public var clear: Double
    /// Seconds the rate is measured over.
    public var window: Int64
    /// Seconds the rate is expressed per (3600 = per hour).
    public var per: Int64
    /// Seconds the condition must hold before firing.
    public var holdFor: Int64

    public init(
        metric: String, stations: Set<String>? = nil, direction: Direction, threshold: Double, clear: Double? = nil,
        window: Int64 = 3_600, per: Int64 = 3_600, holdFor: Int64 = 0
    ) {
        self.metric = metric
        self.stations = stations
        self.direction = direction
        self.threshold = threshold
        self.clear = clear ?? threshold
        self.window = window
        self.per = per
        self.holdFor = holdFor
    }

    public var historySpan: Int64 { window.multipliedClamped(by: 2) }
    public var needs: RuleNeeds { .stations }

    /// A rate signed by direction: positive means changing the watched way.
    func signed(_ rate: Double) -> Double { direction == .rising ? rate : -rate }

    public func step(_ state: inout AlertState, time: Int64, value: Double, context c: SeriesContext) -> Change? {
        guard let measured = c.history?.rate(window: window, per: per) else { return nil }
        let r = signed(measured.rate)
        let action = state.observe(time: time, active: r >= threshold, cleared: r < clear, holdFor: holdFor)
        switch action {
        case .none, .startedPending, .cancelledPending: return nil
        case .fired, .resolved: break
        }
        // Words only for the rare reading that changes the alert: this runs once per reading.
        let perText = per == 3_600 ? "h" : DurationText.format(per)
        let unit = c.unit.map { " \($0)" } ?? ""
        let rateText = "\(formatValue((abs(measured.rate) * 1000).rounded() / 1000))\(unit)/\(perText)"
        let verb = measured.rate >= 0 ? "rising" : "falling"
        let basis =
            "\(c.metric) \(c.show(measured.from.value)) at \(Timestamp.format(measured.from.time)) → \(c.show(value)) at \(Timestamp.format(time))"
        switch action {
        case .none, .startedPending, .cancelledPending:
            return nil
        case .fired(let since):
            var why =
                "\(basis): \(verb) \(rateText) ≥ \(formatValue(threshold))\(unit)/\(perText) (\(direction.rawValue))"
            if holdFor > 0 {
                why += "; pending since \(Timestamp.format(since)), held \(DurationText.format(time - since))"
                why += " (for \(DurationText.format(holdFor)))"
            }
            return Change(
                state: .firing, at: time, value: value,
                summary: "\(c.metric) at \(c.place) is \(verb) \(rateText): \(c.show(value))",
                explanation: "\(verb) \(rateText), now \(c.show(value)) (from \(c.show(measured.from.value)))",
                details: why, headline: "\(MetricWords.name(c.metric)) \(verb) \(rateText)")
        case .resolved(let since):
            return Change(
                state: .resolved, at: time, value: value,
                summary:
                    "\(c.metric) at \(c.place) is no longer \(direction.rawValue) fast (\(verb) \(rateText)): \(c.show(value))",
                explanation: "now \(verb) \(rateText), \(c.show(value))",
                details:
                    "\(basis): \(direction.rawValue) rate \(formatValue((r * 1000).rounded() / 1000))\(unit)/\(perText) < \(formatValue(clear)) (clear); firing since \(Timestamp.format(since))",
                headline: "\(MetricWords.name(c.metric)) no longer \(direction.rawValue) fast")
        }
    }
}
