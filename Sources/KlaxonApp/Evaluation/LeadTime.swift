import Foundation
import KlaxonCore
import KlaxonStore

/// `klaxon dry-run --db DB --lead-time` (issue 42, item 2): the forecast rules (`levels: nws` with
/// `forecast:`) replayed over the stored observations and forecast issuances (`FloodForecastReplay`);
/// per observed crossing of a flood category, how many hours earlier the forecast alert announced
/// it, or that it did not. The same replay gives `dry-run --db` the forecast alerts' transitions.
public enum LeadTime {
    /// One observed crossing.
    public struct Row: Codable, Sendable, Equatable {
        public var rule: String
        public var station: String
        public var metric: String
        public var category: String
        public var time: String
        public var value: Double
        /// Hours between the forecast alert and the crossing (to 0.1 h); nil: no forecast alert before it.
        public var leadHours: Double?
        public var warnedAt: String?

        enum CodingKeys: String, CodingKey {
            case rule, station, metric, category, time, value
            case leadHours = "lead_hours", warnedAt = "warned_at"
        }
    }

    /// A rule's replay over one series.
    public struct Replayed: Sendable {
        public var rule: Rule
        public var series: SeriesKey
        public var outcome: FloodForecastReplay.Outcome
    }

    /// Replays every forecast rule over each series with stored forecasts that it watches; readings
    /// and issuances within `[from, to]` (issuances from a `horizon` before `from`). A series
    /// without flood categories is named in `report` and skipped.
    public static func replay(
        store: any ForecastReads & SeriesReads, rules: [Rule], stations: [String: StationInfo],
        floods: [String: FloodCategories], from: Int64?, to: Int64?, report: (String) -> Void
    ) async throws -> [Replayed] {
        let runner = ForecastRunner(rules: rules)
        guard !runner.isEmpty else { return [] }
        var out: [Replayed] = []
        let series = try await store.forecastSeries().keys.sorted { ($0.station, $0.metric) < ($1.station, $1.metric) }
        for (rule, levels, option) in runner.rules {
            for key in series where levels.watches(key) {
                let context = SeriesContext(
                    station: key.station, metric: key.metric, info: stations[key.station], flood: floods[key.station])
                guard let ladder = context.floodLadder, !ladder.isEmpty else {
                    report(
                        "\(rule.name): \(key.station) has no flood categories for \(key.metric): its forecasts are not replayed"
                    )
                    continue
                }
                let start = from ?? .min
                let end = to ?? .max
                let issuances = try await store.forecasts(
                    station: key.station, metric: key.metric, from: start == .min ? .min : start - option.horizon,
                    to: end)
                var ctx = context
                ctx.unit = issuances.last?.unit
                let observed = try await store.values(
                    station: key.station, metric: key.metric, from: start == .min ? .min : start - 1, to: end)
                let replay = FloodForecastReplay(option: option, ladder: ladder, context: ctx)
                out.append(
                    Replayed(rule: rule, series: key, outcome: replay.run(issuances: issuances, observed: observed)))
            }
        }
        return out
    }

    /// The forecast alerts' transitions of a replay.
    public static func transitions(_ replayed: [Replayed]) -> [Transition] {
        replayed.flatMap { r in
            r.outcome.changes.map { change in
                var t = r.rule.transition(change, SeriesContext(station: r.series.station, metric: r.series.metric))
                t.metric = ForecastRunner.alertMetric(r.series.metric)
                return t
            }
        }
    }

    public static func rows(_ replayed: [Replayed]) -> [Row] {
        replayed.flatMap { r in
            r.outcome.crossings.map { c in
                Row(
                    rule: r.rule.name, station: r.series.station, metric: r.series.metric, category: c.category,
                    time: Timestamp.format(c.time), value: c.value,
                    leadHours: c.lead.map { (Double($0) / 360).rounded() / 10 },
                    warnedAt: c.warnedAt.map(Timestamp.format))
            }
        }
    }

    /// `mill-river MILC1 gage_height: minor reached 2026-03-02T14:00:00Z (16 ft): forecast alert 48 h earlier (2026-02-28T14:00:00Z)`.
    public static func text(_ row: Row) -> String {
        let head =
            "\(row.rule) \(row.station) \(row.metric): \(row.category) reached \(row.time) (\(formatValue(row.value))): "
        guard let lead = row.leadHours, let at = row.warnedAt else { return head + "no forecast alert before it" }
        return head + "forecast alert \(formatValue(lead)) h earlier (\(at))"
    }

    public static func json(_ row: Row) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(row)) ?? Data("{}".utf8), as: UTF8.self)
    }

    /// `lead time: 6 crossings, 4 warned ahead (median 48 h), 2 not`.
    public static func summary(_ rows: [Row]) -> String {
        let leads = rows.compactMap(\.leadHours).sorted()
        var s = "lead time: \(rows.count) crossings, \(leads.count) warned ahead"
        if !leads.isEmpty {
            let mid = leads.count / 2
            let median = leads.count % 2 == 1 ? leads[mid] : (leads[mid - 1] + leads[mid]) / 2
            s += " (median \(formatValue(median)) h)"
        }
        return s + ", \(rows.count - leads.count) not"
    }
}
