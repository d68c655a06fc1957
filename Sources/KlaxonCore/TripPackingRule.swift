/// `kind: trip-packing` — keeps each trip's packing list in step with its forecasts. The first list
/// is announced as ready once the trip has weather; afterwards every difference from the last announced list is a `changed`
/// transition listing `+ added`, `− removed` and `~ quantity changed` items with the weather change
/// behind each; a critical weather alert for a stop during the trip is announced once. Nothing is
/// said about a trip that has ended. Trips are not readings: the rule is of the trip family, not a series rule.
public struct TripPackingRule: TripFamilyRule {
    public static let kindName = "trip-packing"

    /// Trip names the rule watches; nil = every trip.
    public var trips: Set<String>?
    /// Alert severities announced (NWS: Extreme, Severe, Moderate, Minor).
    public var alertSeverities: Set<String>

    public init(trips: Set<String>? = nil, alertSeverities: Set<String> = ["Extreme", "Severe"]) {
        self.trips = trips
        self.alertSeverities = alertSeverities
    }

    /// The metric the list's transitions carry (an alert's is `alert:<id>`).
    public var metric: String { "packing" }

    /// What was last announced for a trip.
    public struct Announced: Sendable, Hashable, Codable {
        public var list: PackingList
        public var weather: [DayWeather]
        /// Alert ids already announced.
        public var alerts: [String]
        /// The air-quality forecasts the list was made from (nil in announcements stored before them).
        public var air: [TripAirDay]?

        public init(list: PackingList, weather: [DayWeather], alerts: [String], air: [TripAirDay]? = nil) {
            self.list = list
            self.weather = weather
            self.alerts = alerts
            self.air = air
        }
    }

    /// The key a trip's alerts go under (`owner/name`), for transitions and routing.
    public static func key(_ trip: Trip) -> String { "\(trip.owner)/\(trip.name)" }

    /// A trip's transition, labelled with its owner and name (for routes and payloads). Shared by
    /// `evaluate` and `dry-run`.
    public static func transition(_ rule: Rule, trip: Trip, metric: String, change: Change) -> Transition {
        if trip.isWatchedPlace, let place = trip.stops.first?.place {
            // A place watched without a trip: its alerts go under the place.
            var t = rule.transition(change, SeriesContext(station: place, metric: metric))
            t.labels["place"] = place
            return t
        }
        var t = rule.transition(change, SeriesContext(station: key(trip), metric: metric))
        t.labels["owner"] = trip.owner
        t.labels["trip"] = trip.name
        return t
    }

    public func watches(_ trip: Trip) -> Bool { trips?.contains(trip.name) ?? true }

    /// The trip's last day (`YYYY-MM-DD`), or nil for a trip without stops.
    public static func lastDay(_ trip: Trip) -> String? { Packer.days(of: trip).last?.date }

    /// Decides what to announce for a trip given its current weather and alerts.
    /// - Parameters:
    ///   - today: the evaluation date (`YYYY-MM-DD`, UTC); a trip whose last day is before it has ended.
    ///   - at: the transitions' time (seconds).
    /// - Returns: (metric, change) pairs — `packing` for the list, `alert:<id>` for an alert — and what
    ///   is announced now; nil when there is nothing to say.
    public func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], announced: Announced?,
        today: String, at: Int64
    ) -> (changes: [(metric: String, change: Change)], announced: Announced)? {
        assess(trip: trip, weather: weather, alerts: alerts, air: [], announced: announced, today: today, at: at)
    }

    /// As above, the list also packing for the trip days' bad-air forecasts (`air`): N95 masks and an
    /// indoor plan, with the day and forecast as the reason.
    public func assess(
        trip: Trip, weather: [DayWeather], alerts: [(stop: Int, alert: WeatherAlert)], air: [TripAirDay],
        announced: Announced?, today: String, at: Int64
    ) -> (changes: [(metric: String, change: Change)], announced: Announced)? {
        guard watches(trip), !trip.isWatchedPlace, let last = Self.lastDay(trip), last >= today else { return nil }
        // The first list waits for the first forecast: a list made of essentials alone, followed by a
        // "changed" as soon as the weather arrives, would be noise.
        if announced == nil && weather.isEmpty && alerts.isEmpty { return nil }
        let list = Packer.pack(trip, weather: weather, air: air)
        var out: [(String, Change)] = []
        var next = announced ?? Announced(list: list, weather: weather, alerts: [], air: air)
        if let announced {
            let changes = PackingDiff.changes(
                trip: trip, old: announced.list, oldWeather: announced.weather, new: list, newWeather: weather)
            if !changes.isEmpty {
                let why =
                    PackingDiff.weatherChanges(trip: trip, oldWeather: announced.weather, newWeather: weather)
                    + Self.airChanges(old: announced.air ?? [], new: air)
                out.append(
                    (
                        metric,
                        Change(
                            state: .changed, at: at, value: nil,
                            summary: "Trip \"\(trip.name)\": packing list changed — "
                                + changes.map(\.line).joined(separator: "; "),
                            explanation: why.isEmpty ? "the forecast changed" : why.joined(separator: "; "),
                            place: "Trip \(trip.name)", headline: "packing list changed")
                    ))
                next.list = list
                next.weather = weather
                next.air = air
            }
        } else {
            let count = list.items.reduce(0) { $0 + $1.quantity }
            let days = Packer.days(of: trip)
            let climatology = weather.contains { $0.climatology } ? " (some days from climatology)" : ""
            out.append(
                (
                    metric,
                    Change(
                        state: .firing, at: at, value: Double(count),
                        summary:
                            "Trip \"\(trip.name)\": packing list ready — \(count) items for \(days.count) days\(climatology)",
                        explanation: list.table(), place: "Trip \(trip.name)", headline: "packing list ready")
                ))
        }
        let (first, lastDate) = (Packer.days(of: trip).first?.date ?? last, last)
        for (stop, alert) in alerts
        where alertSeverities.contains(alert.severity) && !next.alerts.contains(alert.id)
            && Self.overlaps(alert, from: first, to: lastDate)
        {
            next.alerts.append(alert.id)
            let place = trip.stops[stop].place
            var text =
                "Trip \"\(trip.name)\": \(alert.severity.lowercased()) weather alert for \(place): \(alert.event)"
            if let h = alert.headline { text += " — \(h)" }
            out.append(
                (
                    "alert:\(alert.id)",
                    Change(
                        state: .firing, at: at, value: nil, level: alert.severity, summary: text,
                        explanation:
                            "NWS \(alert.event) (\(alert.severity)) at \(place) during the trip (\(first) to \(lastDate))"
                            + (alert.areaDescription.map { "; area: \($0)" } ?? ""),
                        place: "Trip \(trip.name)", headline: "\(alert.event) at \(place)")
                ))
        }
        guard !out.isEmpty else { return nil }
        return (out, next)
    }

    /// One line per trip day whose bad-air forecast came or went: `Denver Tue 2026-12-08: air Moderate
    /// → Action Day (O3 AQI 125, Unhealthy for Sensitive Groups)`.
    static func airChanges(old: [TripAirDay], new: [TripAirDay]) -> [String] {
        func bad(_ days: [TripAirDay]) -> [String: TripAirDay] {
            var out: [String: TripAirDay] = [:]
            for d in days where out[d.forecast.date] == nil { out[d.forecast.date] = d }
            return out
        }
        let (a, b) = (bad(old), bad(new))
        func word(_ d: TripAirDay?) -> String {
            guard let f = d?.forecast else { return "no forecast" }
            return f.actionDay ? "Action Day (\(f.parameter) \(f.described))" : "\(f.parameter) \(f.described)"
        }
        return Set(a.keys).union(b.keys).sorted().compactMap { date in
            let (o, n) = (a[date], b[date])
            let (wasBad, isBad) = (
                o.map { Packer.isBadAir($0.forecast) } ?? false, n.map { Packer.isBadAir($0.forecast) } ?? false
            )
            guard wasBad != isBad else { return nil }
            let place = (n ?? o)!.place
            return "\(place) \(Packer.weekday(of: date) ?? "") \(date): air \(word(o)) → \(word(n))"
        }
    }

    /// Whether an alert's time overlaps the trip's dates (an alert without times does).
    static func overlaps(_ a: WeatherAlert, from: String, to: String) -> Bool {
        guard let start = Timestamp.parse(from + "T00:00:00Z"), let end = Timestamp.parse(to + "T00:00:00Z") else {
            return true
        }
        // A day of slack either side: stop times are local, alert times UTC.
        if let ends = a.ends, ends < start - 86_400 { return false }
        if let onset = a.onset, onset > end + 2 * 86_400 { return false }
        return true
    }
}
