import KlaxonCore

/// The event rules' rounds, written once: each backend's evaluation and `klaxon dry-run` differ only
/// in where "what each rule last announced" is kept (tables, or memory from a clean state). A
/// backend's transaction loads the announcements of the round's subjects, runs the round, and saves
/// those it names as changed.
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

        public init(trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)]) {
            self.trip = trip
            self.weather = weather
            self.alerts = alerts
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
                trip: input.trip, weather: input.weather, alerts: input.alerts,
                announced: &announced[key, default: [:]], now: now, into: &out)
            {
                changed.append((key, rule))
            }
        }
        return (out, changed)
    }
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
