/// Runs quake rules over event versions. One runner serves `evaluate`, the daemon and `dry-run`:
/// callers differ only in where "what each rule last announced" is kept (the store, or memory).
public struct QuakeRunner: Sendable {
    public let rules: [(rule: Rule, kind: QuakeRule)]
    /// Origin-time bounds (seconds, inclusive); an event outside them is not assessed.
    public var from: Int64?
    public var to: Int64?

    public init(rules: [Rule], from: Int64? = nil, to: Int64? = nil) {
        self.rules = rules.compactMap { r in (r.kind as? QuakeRule).map { (r, $0) } }
        self.from = from
        self.to = to
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// Assesses one version of the event stored under `key`. `announced` holds, by rule name, what
    /// each rule last announced about the event; it is updated for every rule that speaks now.
    /// - Returns: the names of the rules whose announcement changed.
    @discardableResult
    public func assess(
        key: String, event e: QuakeEvent, announced: inout [String: QuakeRule.Announced],
        into out: inout [Transition]
    ) -> [String] {
        let seconds = e.timeSeconds
        guard from.map({ seconds >= $0 }) ?? true, to.map({ seconds <= $0 }) ?? true else { return [] }
        var spoke: [String] = []
        for (rule, kind) in rules {
            guard let (change, next) = kind.assess(e, announced: announced[rule.name]) else { continue }
            announced[rule.name] = next
            spoke.append(rule.name)
            out.append(rule.transition(change, SeriesContext(station: key, metric: "quake")))
        }
        return spoke
    }
}

/// Runs trip-packing rules over trips and their weather; shared like `QuakeRunner`.
public struct TripRunner: Sendable {
    public let rules: [(rule: Rule, kind: TripPackingRule)]

    public init(rules: [Rule]) {
        self.rules = rules.compactMap { r in (r.kind as? TripPackingRule).map { (r, $0) } }
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// The evaluation date (`YYYY-MM-DD`, UTC) at `now` (seconds).
    public static func today(_ now: Int64) -> String { String(Timestamp.format(now).prefix(10)) }

    /// Whether a trip is still to be assessed on `today` (it has not ended); ended trips need no weather read.
    public static func isAhead(_ trip: Trip, today: String) -> Bool { (TripPackingRule.lastDay(trip) ?? "") >= today }

    /// Assesses one trip. `announced` holds, by rule name, what each rule last announced about it;
    /// it is updated for every rule that speaks now.
    /// - Returns: the names of the rules whose announcement changed.
    @discardableResult
    public func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)],
        announced: inout [String: TripPackingRule.Announced], now: Int64, into out: inout [Transition]
    ) -> [String] {
        let today = Self.today(now)
        var spoke: [String] = []
        for (rule, kind) in rules {
            guard
                let (changes, next) = kind.assess(
                    trip: trip, weather: weather, alerts: alerts, announced: announced[rule.name], today: today, at: now
                )
            else { continue }
            announced[rule.name] = next
            spoke.append(rule.name)
            for (metric, change) in changes {
                out.append(TripPackingRule.transition(rule, trip: trip, metric: metric, change: change))
            }
        }
        return spoke
    }
}
