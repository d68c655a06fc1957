import Foundation
import KlaxonCore
import KlaxonStore

/// What `WaterContext` reads: station metadata and flood categories, and which series exist.
public typealias RuleContextReads = SeriesReads & StationReads

/// What rules need from the store besides readings: station metadata for messages and NWS flood
/// categories for `levels: nws`.
public enum WaterContext {
    /// An engine over `rules` with the store's stations and flood categories.
    public static func engine(rules: [Rule], store: any RuleContextReads) async throws -> RuleEngine {
        guard needsStations(rules) else { return RuleEngine(rules: rules) }
        let (stations, floods) = try await store.stationsAndFloods()
        return RuleEngine(rules: rules, stations: stations, floods: floods)
    }

    /// Whether any of the rules needs the stations' metadata and flood categories (`RuleNeeds`).
    static func needsStations(_ rules: [Rule]) -> Bool {
        rules.contains { !$0.kind.needs.isDisjoint(with: [.stations, .floodCategories]) }
    }

    /// One line per station a `levels: nws` rule watches that has no NWS flood categories: it would
    /// get no flood alert, and people should hear that rather than find out in a flood.
    public static func missingCategories(rules: [Rule], store: any RuleContextReads) async throws -> [String] {
        let nwsRules: [(rule: Rule, kind: any SeriesRuleKind)] = rules.compactMap { rule in
            guard let kind = rule.kind.series, kind.needs.contains(.floodCategories) else { return nil }
            return (rule, kind)
        }
        guard !nwsRules.isEmpty else { return [] }
        let (infos, floods) = try await store.stationsAndFloods()
        var out: [String] = []
        for (rule, kind) in nwsRules {
            // Without a stations list: every station with readings of the metric (one query).
            var stations = kind.stations ?? []
            if kind.stations == nil {
                stations = Set(try await store.latestTimes(metric: kind.metric).keys.map(\.station))
            }
            for station in stations.sorted() {
                let ladder = floods[station]?.ladder(forMetric: kind.metric) ?? []
                guard ladder.isEmpty else { continue }
                let lid = infos[station]?.nwsLID.map { " (NWS \($0))" } ?? ""
                let why =
                    floods[station] == nil
                    ? "has no NWS flood categories stored" : "has no NWS \(kind.metric) flood categories defined"
                out.append(
                    "rule \"\(rule.name)\" (\(rule.origin)): station \(station)\(lid) \(why); it gets no flood alert until an nwps source fetches its gauge (`klaxon gauge \(station) --fetch`)"
                )
            }
        }
        return out
    }
}
