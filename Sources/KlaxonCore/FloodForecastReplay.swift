/// A forecast rule run over a gauge's history (issue 42, items 1 and 2): its issuances and its
/// observed readings in time order, the forecast alert stepped at each issuance and each reading
/// (`FloodForecastAlert`), as the daemon would have seen them. Golden tests and `dry-run --lead-time`
/// use it; it needs no store.
public struct FloodForecastReplay: Sendable {
    public var option: ForecastOption
    public var ladder: [LevelsRule.Level]
    public var context: SeriesContext

    public init(option: ForecastOption, ladder: [LevelsRule.Level], context: SeriesContext) {
        self.option = option
        self.ladder = ladder
        self.context = context
    }

    /// What the replay found: the forecast alert's changes, and each observed crossing with its lead time.
    public struct Outcome: Sendable {
        public var changes: [Change] = []
        public var crossings: [Crossing] = []
    }

    /// The observed river first reaching a category (after having been below it), and how long
    /// before that the forecast alert announced that category or a higher one, uninterrupted until
    /// then; nil `lead` when it did not.
    public struct Crossing: Sendable, Hashable {
        public var category: String
        public var time: Int64
        public var value: Double
        /// Seconds between the forecast alert's announcement and the crossing.
        public var lead: Int64?
        /// When the forecast alert announced it.
        public var warnedAt: Int64?
    }

    /// Replays `issuances` (any order; each counts from its issue time) and `observed` (time, value).
    /// Issuances and readings at the same time: the issuance is seen first.
    public func run(issuances: [FloodForecast], observed: [(time: Int64, value: Double)]) -> Outcome {
        enum Event {
            case issued(FloodForecast)
            case reading(Int64, Double)
        }
        var events: [(time: Int64, order: Int, event: Event)] = []
        for f in issuances { events.append((f.issued, 0, .issued(f))) }
        for (i, r) in observed.enumerated() { events.append((r.time, 1 + i, .reading(r.time, r.value))) }
        events.sort { ($0.time, $0.order) < ($1.time, $1.order) }

        var alert = FloodForecastAlert()
        var latest: FloodForecast?
        var observedValue: Double?
        var out = Outcome()
        // Per category index: since when the forecast alert has announced it (or higher), unbroken.
        var warnedSince: [Int: Int64] = [:]
        var observedLevel = -1
        for (time, _, event) in events {
            switch event {
            case .issued(let f):
                // An issuance older than the one in hand (arrived out of order) is history, not the forecast.
                if latest.map({ f.issued >= $0.issued }) ?? true { latest = f }
            case .reading(_, let v):
                observedValue = v
                let level = ladder.lastIndex { v >= $0.at } ?? -1
                if level > observedLevel {
                    for k in (observedLevel + 1)...level {
                        let since = warnedSince[k]
                        out.crossings.append(
                            Crossing(
                                category: ladder[k].name, time: time, value: v, lead: since.map { time - $0 },
                                warnedAt: since))
                    }
                }
                observedLevel = level
            }
            let look = FloodForecastAlert.Look(
                forecast: latest, ladder: ladder, observed: observedValue, now: time, timeZone: context.info?.timeZone)
            if let change = alert.step(look, option: option, context: context) { out.changes.append(change) }
            // What the forecast alert announces now warns of each category up to it that the river
            // has not reached; a warning runs from the first look that announced it, unbroken.
            let announced = alert.announced.flatMap { a in ladder.firstIndex { $0.name == a.category } } ?? -1
            for k in 0..<ladder.count {
                if k <= announced && k > observedLevel {
                    warnedSince[k] = warnedSince[k] ?? time
                } else {
                    warnedSince[k] = nil
                }
            }
        }
        return out
    }
}
