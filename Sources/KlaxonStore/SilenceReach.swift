import KlaxonCore
import KlaxonRegex

/// What a silence reaches now, as `klaxon silence add` and the status site say it: how many firing
/// alerts it mutes, and the rule and station names it gives that nothing known has.
public struct SilenceReach: Sendable {
    /// How many firing alerts the silence mutes now.
    public var muted: Int
    /// Whether every firing alert was counted (false: more fire than were read, and `muted` is a
    /// lower bound).
    public var complete: Bool
    /// The names its equality matchers give that nothing known has (`Silence.unknownNames`).
    public var unknown: [Silence.UnknownName]

    /// Counts within one request's `MatchBudget`: when it runs out, `muted` is a lower bound.
    public init(_ silence: Silence, firing: Firing, rules: Set<String>?, stations: Set<String>?, now: Int64) {
        var budget = MatchBudget(steps: MatchBudget.requestSteps)
        let (count, counted) = silence.muteCount(firing.labels, at: now, budget: &budget)
        muted = count
        complete = firing.complete && counted
        unknown = silence.unknownNames(rules: rules, stations: stations)
    }

    /// How many of the firing alerts each silence mutes now, by id (`complete` false: a lower
    /// bound), within one request's `MatchBudget` shared by them all; matched off the pool.
    public static func mutedCounts(_ silences: [Silence], firing: Firing, now: Int64) async throws -> [String: Count] {
        guard !silences.isEmpty, !firing.labels.isEmpty else { return [:] }
        return try await offPool {
            var budget = MatchBudget(steps: MatchBudget.requestSteps)
            var out: [String: Count] = [:]
            for s in silences {
                let (n, counted) = s.muteCount(firing.labels, at: now, budget: &budget)
                out[s.id] = Count(muted: n, complete: counted && firing.complete)
            }
            return out
        }
    }

    /// A silence's count: how many firing alerts it mutes, and whether every one was counted.
    public struct Count: Sendable, Equatable {
        public var muted: Int
        public var complete: Bool

        public init(muted: Int, complete: Bool) {
            self.muted = muted
            self.complete = complete
        }
    }

    /// `mutes 2 firing alerts now` (`Silence.mutesText`).
    public var mutedText: String { Silence.mutesText(muted, atLeast: !complete) }

    /// The firing alerts silences are counted against.
    public struct Firing: Sendable {
        /// Each firing alert's `Transition.matchLabels`.
        public var labels: [[String: String]]
        /// Whether every firing alert is here.
        public var complete: Bool
        /// The stations they fire at.
        public var stations: Set<String>

        public init(_ transitions: [Transition], complete: Bool) {
            labels = transitions.map(\.matchLabels)
            self.complete = complete
            stations = Set(transitions.map(\.station))
        }
    }

    /// The firing alerts: every one (`limit` nil, a command), or the first `limit` in one query (a
    /// request: bounded work however many fire).
    public static func firing(_ store: any AlertReads, limit: Int?) async throws -> Firing {
        guard let limit else { return Firing(try await store.firingAlerts().map(\.transition), complete: true) }
        let page = try await store.firingAlerts(limit: limit, after: nil)
        return Firing(page.alerts.map(\.transition), complete: page.next == nil)
    }

    /// The station ids a silence may name: stored stations and series, saved trips (`owner/name`),
    /// the stations alerts fire at now, and `listed` (those the rules list: `listedStations`).
    public static func knownStations(
        _ store: any StationReads & SeriesReads & TripStore, firing: Firing, listed: Set<String>
    ) async throws -> Set<String> {
        var known = firing.stations.union(listed)
        known.formUnion(try await store.stationInfos().keys)
        known.formUnion(try await store.latestTimes(metric: nil).keys.map(\.station))
        known.formUnion(try await store.trips(owner: nil).map(TripPackingRule.key))
        return known
    }

    /// The stations rules list (`stations:`).
    public static func listedStations(_ rules: [Rule]) -> Set<String> {
        rules.reduce(into: []) { $0.formUnion($1.kind.series?.stations ?? []) }
    }
}
