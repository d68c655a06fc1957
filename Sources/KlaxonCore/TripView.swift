/// What the trip views show — `klaxon trip show`, the chat's `trip NAME` and the status site's trip
/// page — computed once: the weather per trip day (forecast or climatology) in the traveller's
/// units, and the packing list by category.
public enum TripView {
    /// One trip day and the weather stored for it (nil: no forecast yet).
    public struct Day: Sendable, Equatable {
        public var date: String
        public var place: String
        public var weather: DayWeather?

        public init(date: String, place: String, weather: DayWeather?) {
            self.date = date
            self.place = place
            self.weather = weather
        }
    }

    /// The trip's days (`Packer.days(of:)`), each with its weather.
    public static func days(_ trip: Trip, weather: [DayWeather]) -> [Day] {
        Packer.days(of: trip).map { day in
            let place = trip.stops[day.stopIndex].place
            return Day(
                date: day.date, place: place,
                weather: weather.first(where: { $0.date == day.date && $0.place == place }))
        }
    }

    /// A day's conditions, for people, in order: `high 21 °C`, `low 9 °C`, then when known
    /// `rain 70 %`, `snow 2 cm` (only when some falls) and `wind 35 km/h`.
    public static func conditions(_ w: DayWeather, units: PackingPreferences.Units) -> [String] {
        var parts = ["high \(temperature(w.tempMaxC, units))", "low \(temperature(w.tempMinC, units))"]
        if let p = w.precipitationProbability { parts.append("rain \(formatValue(p.rounded())) %") }
        if let s = w.snowfallCm, s > 0 {
            parts.append(
                units == .imperial
                    ? "snow \(formatValue((s / 2.54 * 10).rounded() / 10)) in" : "snow \(formatValue(s)) cm")
        }
        if let wind = w.windMaxKmh {
            parts.append(
                units == .imperial
                    ? "wind \(formatValue((wind / 1.609).rounded())) mph"
                    : "wind \(formatValue(wind.rounded())) km/h")
        }
        return parts
    }

    /// A temperature in the traveller's units, rounded (`—` when unknown).
    public static func temperature(_ c: Double?, _ units: PackingPreferences.Units) -> String {
        guard let c else { return "—" }
        return units == .imperial ? "\(formatValue((c * 9 / 5 + 32).rounded())) °F" : "\(formatValue(c.rounded())) °C"
    }
}

extension PackingList {
    /// The items by category, in list order (the groups `table()` prints).
    public var byCategory: [(category: String, items: [PackingItem])] {
        var out: [(category: String, items: [PackingItem])] = []
        for item in items {
            if out.last?.category == item.category {
                out[out.count - 1].items.append(item)
            } else {
                out.append((item.category, [item]))
            }
        }
        return out
    }
}
