import Foundation
import KlaxonCore

/// Runs the `forecast:` option of `levels: nws` rules (`FloodForecastAlert`) over the stored
/// forecasts. One runner serves every backend's evaluation; the forecast alert of a rule on a
/// series is keyed `(rule, station, <metric>.forecast)`, beside its observed alert.
public struct ForecastRunner: Sendable {
    public let rules: [(rule: Rule, levels: any SeriesRuleKind, option: ForecastOption)]

    public init(rules: [Rule]) {
        self.rules = rules.compactMap { r in
            guard case .series(let kind) = r.kind.family, let option = kind.forecastOption else { return nil }
            return (r, kind, option)
        }
    }

    public var isEmpty: Bool { rules.isEmpty }

    /// The forecast alert's metric for a series' metric.
    public static func alertMetric(_ metric: String) -> String { metric + ForecastOption.metricSuffix }
}

extension Evaluation {
    /// The forecast rules of the evaluation's engine.
    public var forecasts: ForecastRunner { ForecastRunner(rules: engine.rules) }
}

extension EventRounds {
    /// Where forecast alerts' states are kept (`FloodForecastAlert` JSON): by rule, station, metric.
    public static let forecastTable = "forecast_announcements"

    public static func forecastKey(rule: String, series: SeriesKey) -> [(column: String, value: String)] {
        [("rule", rule), ("station", series.station), ("metric", series.metric)]
    }

    /// One transaction's round of the forecast rules, in a backend's transaction:
    ///
    ///     let round = ForecastRound(series: <forecastSeries() keys>, runner: e.forecasts, now: e.now)
    ///     <log and save> round.plan(<for each of round.series: its latest forecast and newest observed value>,
    ///                               announced: <the announcement of each of round.wanted, in order>, engine: e.engine)
    public struct ForecastRound {
        /// The series with a stored forecast that some forecast rule watches, in order.
        public let series: [SeriesKey]
        /// The announcements the round reads, in order, each by its key columns in `forecastTable`.
        public let wanted: [[(column: String, value: String)]]
        let pairs: [(series: Int, rule: Int)]
        let runner: ForecastRunner
        let now: Int64

        public init(series all: [SeriesKey], runner: ForecastRunner, now: Int64) {
            var series: [SeriesKey] = []
            var pairs: [(series: Int, rule: Int)] = []
            for key in all.sorted(by: { ($0.station, $0.metric) < ($1.station, $1.metric) }) {
                let watching = runner.rules.indices.filter { runner.rules[$0].levels.watches(key) }
                guard !watching.isEmpty else { continue }
                series.append(key)
                for r in watching { pairs.append((series.count - 1, r)) }
            }
            self.series = series
            self.pairs = pairs
            self.runner = runner
            self.now = now
            wanted = pairs.map {
                EventRounds.forecastKey(
                    rule: runner.rules[$0.rule].rule.name,
                    series: SeriesKey(
                        station: series[$0.series].station, metric: ForecastRunner.alertMetric(series[$0.series].metric)
                    ))
            }
        }

        /// What the round reads of one series.
        public struct Input: Sendable {
            public var forecast: FloodForecast?
            public var observed: Double?

            public init(forecast: FloodForecast?, observed: Double?) {
                self.forecast = forecast
                self.observed = observed
            }
        }

        /// The round over what was read: `inputs` for each of `series`, `announced` for each of `wanted`.
        public func plan(_ inputs: [Input], announced stored: [String?], engine: RuleEngine) -> EventPlan {
            var saves: [(key: [(column: String, value: String)], json: String)] = []
            var transitions: [Transition] = []
            for (i, pair) in pairs.enumerated() {
                let key = series[pair.series]
                let input = inputs[pair.series]
                let (rule, _, option) = runner.rules[pair.rule]
                var alert =
                    stored[i].flatMap { try? JSONDecoder().decode(FloodForecastAlert.self, from: Data($0.utf8)) }
                    ?? FloodForecastAlert()
                let info = engine.stations[key.station]
                let context = SeriesContext(
                    station: key.station, metric: key.metric, unit: input.forecast?.unit, info: info,
                    flood: engine.floods[key.station])
                let look = FloodForecastAlert.Look(
                    forecast: input.forecast, ladder: context.floodLadder ?? [], observed: input.observed, now: now,
                    timeZone: info?.timeZone)
                guard let change = alert.step(look, option: option, context: context) else { continue }
                var t = rule.transition(change, context)
                t.metric = ForecastRunner.alertMetric(key.metric)
                transitions.append(t)
                let json = (try? JSONEncoder().encode(alert)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                saves.append((wanted[i], json))
            }
            return EventPlan(table: EventRounds.forecastTable, saves: saves, transitions: transitions, events: false)
        }
    }
}
