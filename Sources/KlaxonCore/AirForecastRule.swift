/// `kind: air-forecast` — warns before a bad-air day at a trip's stops, or at the reporting areas it
/// watches (`areas`, as `Trip.watchedPlace`: today and the 6 days after): fires when the latest AirNow
/// forecast for a day of the trip (today or later) reaches `min_category` (default Unhealthy for
/// Sensitive Groups) or, with `action_day` (the default), is an Action Day. One alert per trip and
/// rule (metric `alert:air-forecast`): a new issuance that moves the days, the categories or the
/// Action Days edits it (`changed`); when no day reaches the level any more it resolves. A trip
/// without forecasts is not resolved (a missing forecast is no news), nor is one whose bad days are
/// past: the alert resolves once the last of them has gone by.
public struct AirForecastRule: TripFamilyRule {
    public static let kindName = "air-forecast"

    /// Trip names the rule watches; nil = every trip (none when it watches `areas` only).
    public var trips: Set<String>?
    /// Reporting areas watched on their own (`Denver-Boulder`), without a trip.
    public var areas: [String]
    /// The lowest EPA category that fires (1–6).
    public var minCategory: Int
    /// Whether an Action Day fires whatever its category.
    public var actionDay: Bool

    public init(trips: Set<String>? = nil, areas: [String] = [], minCategory: Int = 3, actionDay: Bool = true) {
        self.trips = trips
        self.areas = areas
        self.minCategory = min(max(minCategory, 1), 6)
        self.actionDay = actionDay
    }

    public func watchedPlaces(today: String) -> [Trip] { areas.map { Trip.watchedPlace($0, today: today) } }

    public static let metric = "alert:air-forecast"

    /// A day announced: when, where, and what the forecast said.
    public struct Day: Sendable, Hashable, Codable {
        public var date: String
        public var place: String
        public var area: String
        public var parameter: String
        public var aqi: Int?
        public var category: Int
        public var actionDay: Bool
        public var issued: String
    }

    public struct Announced: Sendable, Hashable, Codable {
        /// The days that reached the level when last announced; empty once resolved.
        public var days: [Day]
    }

    public func watches(_ trip: Trip) -> Bool {
        if trip.isWatchedPlace { return areas.contains { "place:" + $0 == trip.name } }
        // With areas and no trips, it watches its areas only.
        return trips?.contains(trip.name) ?? areas.isEmpty
    }

    /// Whether a forecast reaches the rule's level.
    public func reaches(_ f: AirForecast) -> Bool { f.category >= minCategory || (actionDay && f.actionDay) }

    public func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay],
        announced: Announced?, today: String, at: Int64
    ) -> (changes: [(metric: String, change: Change)], announced: Announced)? {
        guard watches(trip), let last = TripPackingRule.lastDay(trip), last >= today else { return nil }
        let days = air.filter { $0.forecast.date >= today && reaches($0.forecast) }
            .sorted { $0.forecast.date < $1.forecast.date }
            .map {
                Day(
                    date: $0.forecast.date, place: $0.place, area: $0.forecast.area, parameter: $0.forecast.parameter,
                    aqi: $0.forecast.aqi, category: $0.forecast.category, actionDay: $0.forecast.actionDay,
                    issued: $0.forecast.issued)
            }
        let before = announced?.days ?? []
        // Days gone by are not a change: what is compared is what lies ahead.
        let ahead = before.filter { $0.date >= today }
        let place = trip.isWatchedPlace ? (trip.stops.first?.place ?? trip.name) : "Trip \(trip.name)"
        let subject = trip.isWatchedPlace ? place : "Trip \"\(trip.name)\""
        if days.isEmpty {
            // Nothing ahead reaches the level: resolved when the forecasts ahead say so or the bad days
            // have passed. Without any forecast for the announced days ahead, say nothing: a forecast
            // that stopped coming is stale data, not an all-clear.
            let forecastAhead = air.contains { $0.forecast.date >= today }
            guard !before.isEmpty, forecastAhead || ahead.isEmpty else { return nil }
            let change = Change(
                state: .resolved, at: at, value: nil, fromLevel: level(before),
                summary: "\(subject): air quality no longer forecast to reach \(threshold)",
                explanation: forecastAhead
                    ? "the latest forecasts for the trip's days stay below \(threshold)"
                    : "the forecast bad-air days have passed",
                place: place, headline: "air-quality forecast cleared")
            return ([(Self.metric, change)], Announced(days: []))
        }
        if days == ahead { return nil }
        let lines = days.map(Self.line)
        let state: TransitionState = before.isEmpty ? .firing : .changed
        var explanation = lines.joined(separator: "; ")
        if state == .changed {
            let was = ahead.map(Self.line)
            explanation += was.isEmpty ? "" : " (was: " + was.joined(separator: "; ") + ")"
        }
        let first = days[0]
        let change = Change(
            state: state, at: at, value: first.aqi.map(Double.init), level: level(days),
            fromLevel: state == .changed ? level(before) : nil,
            summary: "\(subject): " + Self.line(first)
                + (days.count > 1 ? " and \(days.count - 1) more day\(days.count == 2 ? "" : "s")" : ""),
            explanation: explanation, place: place,
            headline: days.contains(where: \.actionDay) ? "Action Day forecast" : "bad air forecast")
        return ([(Self.metric, change)], Announced(days: days))
    }

    /// Without air forecasts there is nothing to say.
    public func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], announced: Announced?,
        today: String, at: Int64
    ) -> (changes: [(metric: String, change: Change)], announced: Announced)? {
        assess(trip: trip, weather: weather, alerts: alerts, air: [], announced: announced, today: today, at: at)
    }

    var threshold: String { AirForecast.categoryName(minCategory) + (actionDay ? " or an Action Day" : "") }

    /// The worst category of the days, by name.
    func level(_ days: [Day]) -> String? { days.map(\.category).max().map(AirForecast.categoryName) }

    /// `Action Day forecast for Denver, Tue 2026-12-08 (O3 AQI 125, Unhealthy for Sensitive Groups; issued 2026-12-07)`.
    static func line(_ d: Day) -> String {
        let day = (Packer.weekday(of: d.date).map { "\($0) " } ?? "") + d.date
        let what = d.aqi.map { "AQI \($0), " } ?? ""
        let head = d.actionDay ? "Action Day forecast" : AirForecast.categoryName(d.category) + " air forecast"
        return "\(head) for \(d.place), \(day) (\(d.parameter) \(what)\(AirForecast.categoryName(d.category)); "
            + "\(d.area), issued \(d.issued))"
    }
}
