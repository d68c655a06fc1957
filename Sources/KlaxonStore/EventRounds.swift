import Foundation
import KlaxonCore

/// The event rules' rounds, written once: each backend's evaluation and `klaxon dry-run` differ only
/// in where "what each rule last announced" is kept (tables, or memory from a clean state). A
/// backend's transaction reads what a round asks for (`QuakeRound`, `TripRound`), and executes the
/// plan it returns (`EventPlan`): the announcements to save, the transitions to log.
public enum EventRounds {
    /// The most quake event versions one evaluation transaction takes.
    public static let quakeSlice = 1_000

    /// Where quake rules' announcements are kept: by rule and event key.
    public static let quakeTable = "quake_announcements"
    /// Where trip-packing rules' announcements are kept: by rule, owner and trip name.
    public static let tripTable = "trip_announcements"

    /// The key columns of an event's announcement by `rule`.
    public static func quakeKey(rule: String, event: String) -> [(column: String, value: String)] {
        [("rule", rule), ("event_id", event)]
    }

    public static func tripKey(rule: String, trip: TripKey) -> [(column: String, value: String)] {
        [("rule", rule), ("owner", trip.owner), ("name", trip.name)]
    }

    /// How far from a trip's stop its weather and alerts are read (km).
    public static let tripRadiusKm = 30.0
    /// How far from a trip's stop an AirNow reporting area's forecast serves it (km): a reporting
    /// area is a metropolitan area, its point its centre.
    public static let airRadiusKm = 50.0

    /// Quake event versions (in the order they were stored) through the quake family's rules: a
    /// revision is an update, never a second new alert. `announced` holds, by event key and rule, what
    /// each rule last announced (its stored JSON); it is updated, and the pairs that changed are returned.
    public static func quakes(
        _ versions: [(key: String, event: QuakeEvent)], runner: QuakeRunner,
        announced: inout [String: [String: String]]
    ) -> (transitions: [Transition], changed: [(event: String, rule: String)]) {
        var out: [Transition] = []
        var changed: [(event: String, rule: String)] = []
        var seen: Set<[String]> = []
        for (key, event) in versions {
            for rule in runner.assess(key: key, event: event, announced: &announced[key, default: [:]], into: &out)
            where seen.insert([key, rule]).inserted {
                changed.append((key, rule))
            }
        }
        return (out, changed)
    }

    /// A trip with what the rules read of it.
    public struct TripInput: Sendable {
        public var trip: Trip
        public var weather: [DayWeather]
        public var alerts: [(stop: Int, alert: WeatherAlert)]
        /// The trip days' air-quality forecasts (`AirForecast.tripDays`).
        public var air: [TripAirDay]

        public init(
            trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay] = []
        ) {
            self.trip = trip
            self.weather = weather
            self.alerts = alerts
            self.air = air
        }
    }

    /// The trip family's rules over trips that have not ended (`TripRunner.isAhead`): each list is
    /// computed from the weather; what differs from the last announcement (stored JSON, by trip and
    /// rule) is a transition.
    public static func trips(
        _ trips: [TripInput], runner: TripRunner, now: Int64,
        announced: inout [TripKey: [String: String]]
    ) -> (transitions: [Transition], changed: [(trip: TripKey, rule: String)]) {
        var out: [Transition] = []
        var changed: [(trip: TripKey, rule: String)] = []
        for input in trips {
            let key = TripKey(input.trip)
            for rule in runner.assess(
                trip: input.trip, weather: input.weather, alerts: input.alerts, air: input.air,
                announced: &announced[key, default: [:]], now: now, into: &out)
            {
                changed.append((key, rule))
            }
        }
        return (out, changed)
    }
}

extension EventRounds {
    /// One transaction's round of the quake rules, in a backend's transaction:
    ///
    ///     let round = QuakeRound(rows: <at most quakeSlice quake_events (id, event, seq) after the cursor, in seq order>,
    ///                            after: <the quake cursor>, runner: e.quakes)
    ///     <log and save> round.plan(announced: <the announcement of each of round.wanted, in order>)
    ///     <the quake cursor> = round.cursor; return round.more
    public struct QuakeRound {
        /// The announcements the round reads, in order, each by its key columns in `quakeTable`.
        public let wanted: [[(column: String, value: String)]]
        /// The quake cursor once the round is logged: the newest version read.
        public let cursor: Int64
        /// Whether more versions wait (the slice was full).
        public let more: Bool
        let versions: [(key: String, event: QuakeEvent)]
        let pairs: [(event: String, rule: String)]
        let runner: QuakeRunner

        /// `rows`: the stored versions (event key, JSON, `seq`) after `cursor`. A version that no
        /// longer decodes is passed over (the cursor moves past it).
        public init(rows: [(key: String, event: String, seq: Int64)], after cursor: Int64, runner: QuakeRunner) {
            var top = cursor
            var versions: [(key: String, event: QuakeEvent)] = []
            for row in rows {
                top = max(top, row.seq)
                guard let event = try? JSONDecoder().decode(QuakeEvent.self, from: Data(row.event.utf8)) else {
                    continue
                }
                versions.append((row.key, event))
            }
            var pairs: [(event: String, rule: String)] = []
            for key in Set(versions.map(\.key)).sorted() {
                for rule in runner.ruleNames { pairs.append((key, rule)) }
            }
            self.versions = versions
            self.pairs = pairs
            self.runner = runner
            self.cursor = top
            more = rows.count == EventRounds.quakeSlice
            wanted = pairs.map { EventRounds.quakeKey(rule: $0.rule, event: $0.event) }
        }

        /// The round over what was read: `announced` holds the announcement of each of `wanted`.
        public func plan(announced stored: [String?]) -> EventPlan {
            var announced: [String: [String: String]] = [:]
            for (pair, json) in zip(pairs, stored) {
                if let json { announced[pair.event, default: [:]][pair.rule] = json }
            }
            let round = EventRounds.quakes(versions, runner: runner, announced: &announced)
            return EventPlan(
                table: EventRounds.quakeTable,
                saves: round.changed.compactMap { key, rule in
                    announced[key]?[rule].map { (key: EventRounds.quakeKey(rule: rule, event: key), json: $0) }
                }, transitions: round.transitions, events: true)
        }
    }

    /// One transaction's round of the trip-packing rules, in a backend's transaction:
    ///
    ///     let round = TripRound(trips: <every trip>, runner: e.trips, now: e.now)
    ///     <log and save> round.plan(<for each of round.trips, its weather and alerts within tripRadiusKm>,
    ///                               announced: <the announcement of each of round.wanted, in order>)
    public struct TripRound {
        /// The trips that have not ended (`TripRunner.isAhead`): the round reads their weather.
        public let trips: [Trip]
        /// The announcements the round reads, in order, each by its key columns in `tripTable`.
        public let wanted: [[(column: String, value: String)]]
        let pairs: [(trip: TripKey, rule: String)]
        let runner: TripRunner
        let now: Int64

        public init(trips all: [Trip], runner: TripRunner, now: Int64) {
            let today = TripRunner.today(now)
            // The places rules watch without a trip are read and assessed like trips.
            trips = all.filter { TripRunner.isAhead($0, today: today) } + runner.watchedPlaces(today: today)
            var pairs: [(trip: TripKey, rule: String)] = []
            for trip in trips {
                for rule in runner.ruleNames { pairs.append((TripKey(trip), rule)) }
            }
            self.pairs = pairs
            self.runner = runner
            self.now = now
            wanted = pairs.map { EventRounds.tripKey(rule: $0.rule, trip: $0.trip) }
        }

        /// The round over what was read: `weather` for each of `trips`, `announced` for each of `wanted`.
        public func plan(
            _ weather: [(weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)])],
            announced stored: [String?]
        ) -> EventPlan {
            plan(weather.map { (weather: $0.weather, alerts: $0.alerts, air: [TripAirDay]()) }, announced: stored)
        }

        /// As above, with each trip's air-quality forecasts (`AirForecast.tripDays` within `airRadiusKm`).
        public func plan(
            _ weather: [(weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay])],
            announced stored: [String?]
        ) -> EventPlan {
            var announced: [TripKey: [String: String]] = [:]
            for (pair, json) in zip(pairs, stored) {
                if let json { announced[pair.trip, default: [:]][pair.rule] = json }
            }
            let inputs = zip(trips, weather).map {
                TripInput(trip: $0, weather: $1.weather, alerts: $1.alerts, air: $1.air)
            }
            let round = EventRounds.trips(inputs, runner: runner, now: now, announced: &announced)
            return EventPlan(
                table: EventRounds.tripTable,
                saves: round.changed.compactMap { trip, rule in
                    announced[trip]?[rule].map { (key: EventRounds.tripKey(rule: rule, trip: trip), json: $0) }
                }, transitions: round.transitions, events: false)
        }
    }
}

/// What an event round writes, in its transaction: the announcements that changed (each rule's
/// JSON under its key columns in `table`), then the transitions, logged (`TransitionLog`, with
/// `events` for quakes).
public struct EventPlan {
    public var table: String
    public var saves: [(key: [(column: String, value: String)], json: String)]
    public var transitions: [Transition]
    public var events: Bool
}

/// A trip's identity: its owner and name.
public struct TripKey: Hashable, Sendable {
    public var owner: String
    public var name: String

    public init(owner: String, name: String) {
        self.owner = owner
        self.name = name
    }

    public init(_ trip: Trip) { self.init(owner: trip.owner, name: trip.name) }
}
