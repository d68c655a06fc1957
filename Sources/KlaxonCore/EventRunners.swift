import Foundation

/// A rule of the quake family: it assesses each version of an event against what it last announced
/// about it. A new kind of the family conforms (and is listed in the rule loader's kinds); the
/// runner, the evaluation of every store and `dry-run` take it with nothing else changed. What a
/// rule announced is kept as its JSON (the stores' `announced` column), decoded here.
public protocol QuakeFamilyRule: RuleKind {
    associatedtype Announced: Codable & Sendable
    /// The places the rule watches (the status site's map and chat's `quakes near NAME` know them).
    var near: [QuakeRule.Place] { get }
    /// The change to announce for this version of the event, and what is announced then; nil when
    /// there is nothing to say.
    func assess(_ e: QuakeEvent, announced: Announced?) -> (change: Change, announced: Announced)?
}

/// A rule of the trip family: it assesses each trip (with its weather and alerts) against what it
/// last announced about it. Like `QuakeFamilyRule`, a new kind conforms and nothing else changes.
public protocol TripFamilyRule: RuleKind {
    associatedtype Announced: Codable & Sendable
    /// (metric, change) pairs to announce for the trip, and what is announced then; nil when there is
    /// nothing to say. `today` is the evaluation date (`YYYY-MM-DD`, UTC), `at` the transitions' time;
    /// `air` the trip days' air-quality forecasts (`AirForecast.tripDays`).
    func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay],
        announced: Announced?, today: String, at: Int64
    ) -> (changes: [(metric: String, change: Change)], announced: Announced)?
    /// Places the rule watches without a trip, as one-stop trips of no owner from `today` on
    /// (`Trip.watchedPlace`): assessed like trips, by this rule only.
    func watchedPlaces(today: String) -> [Trip]
}

extension QuakeFamilyRule {
    public var family: RuleFamily { .quake(self) }
    public var near: [QuakeRule.Place] { [] }
}

extension TripFamilyRule {
    public var family: RuleFamily { .trip(self) }
    public func watchedPlaces(today: String) -> [Trip] { [] }
}

/// What a rule announced, as stored: JSON of the rule's own `Announced`.
enum StoredAnnouncement {
    static func decode<A: Decodable>(_ json: String?, as: A.Type) -> A? {
        json.flatMap { try? JSONDecoder().decode(A.self, from: Data($0.utf8)) }
    }

    static func encode<A: Encodable>(_ value: A) -> String {
        (try? JSONEncoder().encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
    }
}

extension QuakeFamilyRule {
    /// `assess` over the stored JSON.
    func assess(_ e: QuakeEvent, stored: String?) -> (change: Change, stored: String)? {
        guard let (change, next) = assess(e, announced: StoredAnnouncement.decode(stored, as: Announced.self)) else {
            return nil
        }
        return (change, StoredAnnouncement.encode(next))
    }
}

extension TripFamilyRule {
    /// `assess` over the stored JSON.
    func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay],
        stored: String?, today: String, at: Int64
    ) -> (changes: [(metric: String, change: Change)], stored: String)? {
        guard
            let (changes, next) = assess(
                trip: trip, weather: weather, alerts: alerts, air: air,
                announced: StoredAnnouncement.decode(stored, as: Announced.self), today: today, at: at)
        else { return nil }
        return (changes, StoredAnnouncement.encode(next))
    }
}

/// Runs the quake family's rules over event versions. One runner serves `evaluate`, the daemon and
/// `dry-run`: callers differ only in where "what each rule last announced" is kept (the store, or memory).
public struct QuakeRunner: Sendable {
    public let rules: [(rule: Rule, kind: any QuakeFamilyRule)]
    /// Origin-time bounds (seconds, inclusive); an event outside them is not assessed.
    public var from: Int64?
    public var to: Int64?

    public init(rules: [Rule], from: Int64? = nil, to: Int64? = nil) {
        self.rules = rules.compactMap { r in
            guard case .quake(let kind) = r.kind.family else { return nil }
            return (r, kind)
        }
        self.from = from
        self.to = to
    }

    public var isEmpty: Bool { rules.isEmpty }
    public var ruleNames: [String] { rules.map(\.rule.name) }

    /// Assesses one version of the event stored under `key`. `announced` holds, by rule name, what
    /// each rule last announced about the event (its stored JSON); it is updated for every rule that
    /// speaks now.
    /// - Returns: the names of the rules whose announcement changed.
    @discardableResult
    public func assess(
        key: String, event e: QuakeEvent, announced: inout [String: String], into out: inout [Transition]
    ) -> [String] {
        let seconds = e.timeSeconds
        guard from.map({ seconds >= $0 }) ?? true, to.map({ seconds <= $0 }) ?? true else { return [] }
        var spoke: [String] = []
        for (rule, kind) in rules {
            guard let (change, next) = kind.assess(e, stored: announced[rule.name]) else { continue }
            announced[rule.name] = next
            spoke.append(rule.name)
            out.append(rule.transition(change, SeriesContext(station: key, metric: "quake")))
        }
        return spoke
    }
}

/// Runs the trip family's rules over trips and their weather; shared like `QuakeRunner`.
public struct TripRunner: Sendable {
    public let rules: [(rule: Rule, kind: any TripFamilyRule)]

    public init(rules: [Rule]) {
        self.rules = rules.compactMap { r in
            guard case .trip(let kind) = r.kind.family else { return nil }
            return (r, kind)
        }
    }

    public var isEmpty: Bool { rules.isEmpty }
    public var ruleNames: [String] { rules.map(\.rule.name) }

    /// The evaluation date (`YYYY-MM-DD`, UTC) at `now` (seconds).
    public static func today(_ now: Int64) -> String { String(Timestamp.format(now).prefix(10)) }

    /// Whether a trip is still to be assessed on `today` (it has not ended); ended trips need no weather read.
    public static func isAhead(_ trip: Trip, today: String) -> Bool { (TripPackingRule.lastDay(trip) ?? "") >= today }

    /// The places the rules watch without a trip (`TripFamilyRule.watchedPlaces`), each once.
    public func watchedPlaces(today: String) -> [Trip] {
        var seen: Set<String> = []
        var out: [Trip] = []
        for (_, kind) in rules {
            for p in kind.watchedPlaces(today: today) where seen.insert(p.name).inserted { out.append(p) }
        }
        return out
    }

    /// Assesses one trip. `announced` holds, by rule name, what each rule last announced about it (its
    /// stored JSON); it is updated for every rule that speaks now.
    /// - Returns: the names of the rules whose announcement changed.
    @discardableResult
    public func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay] = [],
        announced: inout [String: String], now: Int64, into out: inout [Transition]
    ) -> [String] {
        let today = Self.today(now)
        var spoke: [String] = []
        for (rule, kind) in rules {
            // A watched place is assessed by the rules that watch it, no other.
            if trip.isWatchedPlace && !kind.watchedPlaces(today: today).contains(where: { $0.name == trip.name }) {
                continue
            }
            guard
                let (changes, next) = kind.assess(
                    trip: trip, weather: weather, alerts: alerts, air: air, stored: announced[rule.name], today: today,
                    at: now)
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
