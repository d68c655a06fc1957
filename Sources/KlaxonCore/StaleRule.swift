/// `kind: stale` — fires when a series has had no reading for longer than `after`; resolves when a
/// reading arrives. Missing data is its own alert: it never resolves another rule's alert.
public struct StaleRule: SeriesRuleKind {
    public static let kindName = "stale"
    public var reactsToTime: Bool { true }

    public var metric: String
    public var stations: Set<String>?
    /// Seconds without a reading after which the series is stale.
    public var after: Int64

    public init(metric: String, stations: Set<String>? = nil, after: Int64) {
        self.metric = metric
        self.stations = stations
        self.after = after
    }

    public func step(_ state: inout AlertState, time: Int64, value: Double, context c: SeriesContext) -> Change? {
        guard state.status == .firing else { return nil }
        let last = state.lastTime ?? time
        state.status = .inactive
        state.since = nil
        return Change(
            state: .resolved, at: time, value: value,
            summary: "\(c.metric) at \(c.station) is reporting again: \(c.show(value))",
            explanation: "a reading came after \(DurationText.format(time - last)) without one",
            details:
                "reading at \(Timestamp.format(time)) after \(DurationText.format(time - last)) without data (after \(DurationText.format(after)))",
            headline: "\(MetricWords.name(c.metric)) readings again")
    }

    public func advance(_ state: inout AlertState, to now: Int64, context c: SeriesContext) -> Change? {
        guard state.status != .firing, let last = state.lastTime, now.subtractingClamped(last) > after else {
            return nil
        }
        let at = last.addingClamped(after)
        state.status = .firing
        state.since = at
        return Change(
            state: .firing, at: at, value: nil,
            summary: "\(c.metric) at \(c.station) has sent no reading for \(DurationText.format(after))",
            explanation:
                "last reading at \(Timestamp.format(last)) (\(state.lastValue.map { c.show($0) } ?? "?")); no reading for more than \(DurationText.format(after))",
            headline: "no \(MetricWords.name(c.metric)) readings for \(DurationText.format(after))")
    }
}
