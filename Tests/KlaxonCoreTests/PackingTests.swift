import Foundation
import KlaxonCore
import Testing

// Dates: 2026-12-03 is a Thursday.

/// One day's weather at a place (metric).
private func day(
    _ place: String, _ date: String, hi: Double?, lo: Double?, pop: Double? = nil, mm: Double? = nil,
    snow: Double? = nil, wind: Double? = nil, code: Int? = nil, climatology: Bool = false, issued: Int64 = 1
) -> DayWeather {
    DayWeather(
        place: place, date: date, tempMaxC: hi, tempMinC: lo, precipitationMm: mm, precipitationProbability: pop,
        snowfallCm: snow, windMaxKmh: wind, weatherCode: code, source: climatology ? "climatology" : "open-meteo",
        issued: issued, climatology: climatology)
}

/// The same weather for `count` days from `from`.
private func days(
    _ place: String, from: String, count: Int, hi: Double, lo: Double, code: Int? = nil, climatology: Bool = false
) -> [DayWeather] {
    let start = Timestamp.parse(from + "T00:00:00Z")!
    return (0..<count).map { i in
        let date = String(Timestamp.format(start + Int64(i) * 86_400).prefix(10))
        return day(place, date, hi: hi, lo: lo, code: code, climatology: climatology)
    }
}

private func trip(
    _ stops: [(String, String, Int)], purpose: Trip.Purpose = .leisure, activities: [String] = [],
    preferences: PackingPreferences = PackingPreferences(), overrides: [PackingOverride] = []
) -> Trip {
    Trip(
        name: "t", owner: "ana", stops: stops.map { Trip.Stop(place: $0.0, arrive: $0.1, nights: $0.2) },
        purpose: purpose, activities: activities, preferences: preferences, overrides: overrides)
}

/// (item, quantity) pairs of a list, for comparing subsets.
private func quantities(_ list: PackingList, _ items: [String]) -> [String: Int] {
    Dictionary(uniqueKeysWithValues: items.map { ($0, list.quantity(of: $0)) })
}

private func reasons(_ list: PackingList, _ item: String) -> [String] {
    list.items.first { $0.item == item }?.reasons ?? []
}

@Suite("Packer.days")
struct TripDaysTests {
    @Test(
        "each stop's nights, a 0-night stop's arrival day, the last departure day; overlaps go to the later stop",
        arguments: [
            ("one stop, 3 nights", [("Denver", "2026-12-03", 3)], ["03 0", "04 0", "05 0", "06 0"]),
            ("a day visit", [("Denver", "2026-12-03", 0)], ["03 0"]),
            (
                "a 0-night stop between two",
                [("Denver", "2026-12-03", 2), ("Boulder", "2026-12-05", 0), ("Phoenix", "2026-12-06", 1)],
                ["03 0", "04 0", "05 1", "06 2", "07 2"]
            ),
            (
                "a 0-night last stop", [("Denver", "2026-12-03", 2), ("Boulder", "2026-12-05", 0)],
                ["03 0", "04 0", "05 1"]
            ),
            (
                "overlap goes to the later stop", [("Denver", "2026-12-03", 3), ("Phoenix", "2026-12-05", 1)],
                ["03 0", "04 0", "05 1", "06 1"]
            ),
            (
                "a gap is not a trip day", [("Denver", "2026-12-03", 1), ("Phoenix", "2026-12-06", 1)],
                ["03 0", "06 1", "07 1"]
            ),
            ("a bad date is skipped", [("Nowhere", "2026-13-01", 2), ("Denver", "2026-12-03", 1)], ["03 1", "04 1"]),
        ] as [(String, [(String, String, Int)], [String])])
    func days(name: String, stops: [(String, String, Int)], expected: [String]) {
        let got = Packer.days(of: trip(stops)).map { "\($0.date.suffix(2)) \($0.stopIndex)" }
        #expect(got == expected, "\(name)")
    }

    @Test("dates cross months and years; places are the stops'")
    func crossesYear() {
        let got = Packer.days(of: trip([("Oslo", "2026-12-30", 3)]))
        #expect(
            got == [
                TripDay(date: "2026-12-30", stopIndex: 0, place: "Oslo"),
                TripDay(date: "2026-12-31", stopIndex: 0, place: "Oslo"),
                TripDay(date: "2027-01-01", stopIndex: 0, place: "Oslo"),
                TripDay(date: "2027-01-02", stopIndex: 0, place: "Oslo"),
            ])
        #expect(Packer.days(of: trip([])).isEmpty)
    }
}

@Suite("Packer.tempClass")
struct TempClassTests {
    @Test(
        "classifies the mean of high and low, shifted by how the traveller feels",
        arguments: [
            (30.0, 24.0, PackingPreferences.Feels.neutral, Packer.TempClass.hot),  // 27
            (30.0, 23.8, .neutral, .warm),  // 26.9
            (24.0, 16.0, .neutral, .warm),  // 20
            (24.0, 15.8, .neutral, .mild),  // 19.9
            (16.0, 10.0, .neutral, .mild),  // 13
            (16.0, 9.8, .neutral, .cool),  // 12.9
            (8.0, 2.0, .neutral, .cool),  // 5
            (8.0, 1.8, .neutral, .cold),  // 4.9
            (20.0, 12.0, .runsCold, .cool),  // 16 < 13 + 4
            (20.0, 12.0, .cold, .mild),  // 16 ≥ 13 + 2
            (26.0, 22.0, .runsHot, .hot),  // 24 ≥ 27 − 4
            (26.0, 22.0, .warm, .warm),  // 24 < 27 − 2
            (6.0, 2.0, .runsCold, .cold),  // 4 < 5 + 4… and 4 < 5
            (10.0, 6.0, .runsCold, .cold),  // 8 < 9
        ] as [(Double, Double, PackingPreferences.Feels, Packer.TempClass)])
    func classifies(hi: Double, lo: Double, feels: PackingPreferences.Feels, expected: Packer.TempClass) {
        #expect(Packer.tempClass(day("X", "2026-12-03", hi: hi, lo: lo), feels: feels) == expected)
    }

    @Test("missing temperatures")
    func missing() {
        #expect(Packer.tempClass(nil, feels: .runsCold) == .mild)
        #expect(Packer.tempClass(day("X", "2026-12-03", hi: nil, lo: nil), feels: .neutral) == .mild)
        #expect(Packer.tempClass(day("X", "2026-12-03", hi: 30, lo: nil), feels: .neutral) == .hot)
        #expect(Packer.tempClass(day("X", "2026-12-03", hi: nil, lo: 2), feels: .neutral) == .cold)
    }
}

@Suite("Packer.pack")
struct PackTests {
    static let essentials = ["toiletries", "phone charger", "documents", "medication", "sleepwear"]

    @Test("one stop, 3 nights, warm")
    func warm() {
        let t = trip([("Denver", "2026-12-03", 3)])
        let list = Packer.pack(t, weather: days("Denver", from: "2026-12-03", count: 4, hi: 26, lo: 18))
        #expect(
            list.items.map(\.item) == [
                "documents", "medication", "phone charger", "sleepwear", "socks", "toiletries", "underwear", "t-shirt",
                "shorts",
            ])
        #expect(
            quantities(list, ["t-shirt", "shorts", "underwear", "socks", "toiletries", "sleepwear"]) == [
                "t-shirt": 4, "shorts": 4, "underwear": 4, "socks": 4, "toiletries": 1, "sleepwear": 1,
            ])
        #expect(reasons(list, "t-shirt") == ["4 warm days (Denver Thu–Sun)"])
        #expect(reasons(list, "underwear") == ["1 per day, 4 days"])
        #expect(list.items.first { $0.item == "t-shirt" }?.category == "tops")
        #expect(list.table().contains("tops\n  t-shirt × 4 — 4 warm days (Denver Thu–Sun)\nbottoms\n  shorts × 4"))
        #expect(list.table().hasPrefix("essentials\n  documents — essential\n"))
        #expect(list.quantity(of: "UMBRELLA") == 0)
        #expect(list.quantity(of: "T-Shirt") == 4)
    }

    @Test("multi-stop trip from cold to hot")
    func coldToHot() {
        let t = trip([("Denver", "2026-12-03", 2), ("Phoenix", "2026-12-05", 2)])
        let weather =
            days("Denver", from: "2026-12-03", count: 2, hi: 2, lo: -6)
            + days("Phoenix", from: "2026-12-05", count: 3, hi: 36, lo: 22, code: 0)
        let list = Packer.pack(t, weather: weather)
        let expected = [
            "long-sleeve top": 2, "trousers": 2, "thermal layer": 1, "warm coat": 1, "hat": 1, "gloves": 1,
            "scarf": 1, "t-shirt": 3, "shorts": 3, "sunglasses": 1, "sunscreen": 1, "underwear": 5, "socks": 5,
            "sweater": 0, "light jacket": 0, "umbrella": 0,
        ]
        #expect(quantities(list, Array(expected.keys)) == expected)
        #expect(reasons(list, "warm coat") == ["2 cold days (Denver Thu–Fri)"])
        #expect(reasons(list, "t-shirt") == ["3 hot days (Phoenix Sat–Mon)"])
        #expect(
            reasons(list, "sunglasses") == [
                "Phoenix Sat 2026-12-05: hot and sunny, high 36 °C",
                "Phoenix Sun 2026-12-06: hot and sunny, high 36 °C",
                "Phoenix Mon 2026-12-07: hot and sunny, high 36 °C",
            ])
        #expect(
            list.items.map(\.category)
                == list.items.map(\.category).sorted {
                    PackingList.categories.firstIndex(of: $0)! < PackingList.categories.firstIndex(of: $1)!
                })
    }

    @Test("hot under cloud: no sunglasses")
    func hotCloudy() {
        let t = trip([("Phoenix", "2026-12-05", 0)])
        let list = Packer.pack(t, weather: days("Phoenix", from: "2026-12-05", count: 1, hi: 36, lo: 22, code: 3))
        #expect(list.quantity(of: "sunglasses") == 0)
        #expect(list.quantity(of: "t-shirt") == 1)
    }

    @Test("a zero-night stop is one day")
    func zeroNight() {
        let t = trip([("Denver", "2026-12-03", 2), ("Boulder", "2026-12-05", 0), ("Phoenix", "2026-12-06", 1)])
        let weather =
            days("Denver", from: "2026-12-03", count: 2, hi: 24, lo: 18)
            + [day("Boulder", "2026-12-05", hi: 10, lo: 2)]
            + days("Phoenix", from: "2026-12-06", count: 2, hi: 24, lo: 18)
        let list = Packer.pack(t, weather: weather)
        #expect(
            quantities(list, ["t-shirt", "long-sleeve top", "sweater", "underwear"]) == [
                "t-shirt": 4, "long-sleeve top": 1, "sweater": 1, "underwear": 5,
            ])
        #expect(reasons(list, "t-shirt") == ["4 warm days (Denver Thu–Fri, Phoenix Sun–Mon)"])
        #expect(reasons(list, "sweater") == ["1 cool day (Boulder Sat)"])
    }

    @Test(
        "laundry caps per-day clothing at laundryEvery days",
        arguments: [
            (PackingPreferences(laundry: true, laundryEvery: 4), 4, 4),
            (PackingPreferences(laundry: false, laundryEvery: 4), 10, 10),
            (PackingPreferences(laundry: true, laundryEvery: 14), 10, 10),
            (PackingPreferences(laundry: true, laundryEvery: 0), 1, 1),
            (PackingPreferences(rewearBottoms: true), 10, 4),
            (PackingPreferences(laundry: true, laundryEvery: 4, rewearBottoms: true), 4, 2),
        ] as [(PackingPreferences, Int, Int)])
    func caps(preferences: PackingPreferences, tops: Int, bottoms: Int) {
        let t = trip([("Lisbon", "2026-07-01", 9)], preferences: preferences)
        let list = Packer.pack(t, weather: days("Lisbon", from: "2026-07-01", count: 10, hi: 26, lo: 18))
        #expect(list.quantity(of: "t-shirt") == tops)
        #expect(list.quantity(of: "underwear") == tops)
        #expect(list.quantity(of: "socks") == tops)
        #expect(list.quantity(of: "shorts") == bottoms)
    }

    @Test("cap reasons")
    func capReasons() {
        let laundry = trip([("Lisbon", "2026-07-01", 9)], preferences: PackingPreferences(laundry: true))
        let list = Packer.pack(laundry, weather: days("Lisbon", from: "2026-07-01", count: 10, hi: 26, lo: 18))
        #expect(
            reasons(list, "t-shirt") == [
                "10 warm days (Lisbon 2026-07-01–2026-07-10)", "laundry every 4 days: 4 of 10",
            ])
        let rewear = trip([("Lisbon", "2026-07-01", 5)], preferences: PackingPreferences(rewearBottoms: true))
        let list2 = Packer.pack(rewear, weather: days("Lisbon", from: "2026-07-01", count: 6, hi: 26, lo: 18))
        #expect(list2.quantity(of: "shorts") == 2)
        #expect(list2.quantity(of: "t-shirt") == 6)
        #expect(reasons(list2, "shorts").last == "worn again: 1 per 3 days, 2 of 6")
    }

    @Test(
        "feels shifts the class boundary: 16 °C is mild, or cool for one who runs cold",
        arguments: [
            (PackingPreferences.Feels.neutral, ["t-shirt": 2, "long-sleeve top": 0, "sweater": 0, "light jacket": 0]),
            (.runsCold, ["t-shirt": 0, "long-sleeve top": 2, "sweater": 1, "light jacket": 1]),
        ] as [(PackingPreferences.Feels, [String: Int])])
    func feels(feels: PackingPreferences.Feels, expected: [String: Int]) {
        let t = trip([("Denver", "2026-12-03", 1)], preferences: PackingPreferences(feels: feels))
        let list = Packer.pack(t, weather: days("Denver", from: "2026-12-03", count: 2, hi: 20, lo: 12))
        #expect(quantities(list, Array(expected.keys)) == expected)
        #expect(list.quantity(of: "trousers") == 2)
    }

    @Test(
        "rain: 50 % or 2 mm brings an umbrella, a rain jacket on cool days",
        arguments: [
            (day("Denver", "2026-12-03", hi: 24, lo: 18, pop: 70), 1, 0, "Denver Thu 2026-12-03: 70 % rain"),
            (day("Denver", "2026-12-03", hi: 24, lo: 18, pop: 50), 1, 0, "Denver Thu 2026-12-03: 50 % rain"),
            (day("Denver", "2026-12-03", hi: 24, lo: 18, pop: 30, mm: 2), 1, 0, "Denver Thu 2026-12-03: 2 mm rain"),
            (
                day("Denver", "2026-12-03", hi: 12, lo: 6, pop: 80, mm: 12.5), 1, 1,
                "Denver Thu 2026-12-03: 80 % rain, 12.5 mm"
            ),
            (day("Denver", "2026-12-03", hi: 24, lo: 18, pop: 49, mm: 1.9), 0, 0, ""),
        ] as [(DayWeather, Int, Int, String)])
    func rain(weather: DayWeather, umbrella: Int, jacket: Int, reason: String) {
        let list = Packer.pack(trip([("Denver", "2026-12-03", 0)]), weather: [weather])
        #expect(list.quantity(of: "umbrella") == umbrella)
        #expect(list.quantity(of: "rain jacket") == jacket)
        if umbrella > 0 {
            #expect(reasons(list, "umbrella") == [reason])
            #expect(list.items.first { $0.item == "umbrella" }?.category == "rain")
        }
    }

    @Test("rain on one day of several names that day")
    func rainOneDay() {
        var weather = days("Denver", from: "2026-12-03", count: 4, hi: 24, lo: 18)
        weather[2].precipitationProbability = 70
        let list = Packer.pack(trip([("Denver", "2026-12-03", 3)]), weather: weather)
        #expect(list.quantity(of: "umbrella") == 1)
        #expect(reasons(list, "umbrella") == ["Denver Sat 2026-12-05: 70 % rain"])
        #expect(list.table().contains("rain\n  umbrella — Denver Sat 2026-12-05: 70 % rain"))
    }

    @Test("an item names at most three weather days")
    func manyRainyDays() {
        var weather = days("Denver", from: "2026-12-03", count: 5, hi: 24, lo: 18)
        for i in weather.indices { weather[i].precipitationProbability = 60 + Double(i) }
        let list = Packer.pack(trip([("Denver", "2026-12-03", 4)]), weather: weather)
        #expect(list.quantity(of: "umbrella") == 1)
        #expect(
            reasons(list, "umbrella") == [
                "Denver Thu 2026-12-03: 60 % rain", "Denver Fri 2026-12-04: 61 % rain",
                "Denver Sat 2026-12-05: 62 % rain",
                "and 2 more days",
            ])
    }

    @Test("snow brings waterproof boots, gloves and a hat, in the traveller's units")
    func snow() {
        let metric = trip([("Denver", "2026-12-03", 0)])
        let weather = [day("Denver", "2026-12-03", hi: 14, lo: 8, snow: 4)]
        let list = Packer.pack(metric, weather: weather)
        #expect(
            quantities(list, ["waterproof boots", "gloves", "hat", "scarf"]) == [
                "waterproof boots": 1, "gloves": 1, "hat": 1, "scarf": 0,
            ])
        #expect(reasons(list, "waterproof boots") == ["Denver Thu 2026-12-03: snow 4 cm"])
        #expect(list.items.first { $0.item == "waterproof boots" }?.category == "footwear")
        let imperial = trip([("Denver", "2026-12-03", 0)], preferences: PackingPreferences(units: .imperial))
        let list2 = Packer.pack(imperial, weather: [day("Denver", "2026-12-03", hi: -2, lo: -8, snow: 10.16)])
        #expect(reasons(list2, "hat") == ["1 cold day (Denver Thu)", "Denver Thu 2026-12-03: snow 4 in"])
        #expect(list2.quantity(of: "hat") == 1)
    }

    @Test("wind of 40 km/h brings a windbreaker", arguments: [(45.0, 1), (40.0, 1), (39.9, 0)])
    func wind(kmh: Double, expected: Int) {
        let list = Packer.pack(
            trip([("Denver", "2026-12-03", 0)]), weather: [day("Denver", "2026-12-03", hi: 24, lo: 18, wind: kmh)])
        #expect(list.quantity(of: "windbreaker") == expected)
        if expected == 1 {
            #expect(reasons(list, "windbreaker") == ["Denver Thu 2026-12-03: wind \(Int(kmh.rounded())) km/h"])
        }
    }

    @Test("climatology days are packed alike and say so")
    func climatology() {
        let t = trip([("Denver", "2026-12-03", 3)])
        var weather =
            days("Denver", from: "2026-12-03", count: 2, hi: 24, lo: 18)
            + days("Denver", from: "2026-12-05", count: 2, hi: 24, lo: 18, climatology: true)
        weather[3].precipitationProbability = 60
        let list = Packer.pack(t, weather: weather)
        #expect(list.quantity(of: "t-shirt") == 4)
        #expect(
            reasons(list, "t-shirt") == ["2 warm days (Denver Thu–Fri)", "2 warm days (Denver Sat–Sun) (climatology)"])
        #expect(reasons(list, "umbrella") == ["Denver Sun 2026-12-06: 60 % rain (climatology)"])
    }

    @Test("a day without weather is packed as mild: no forecast")
    func noForecast() {
        let t = trip([("Denver", "2026-12-03", 2)])
        let list = Packer.pack(t, weather: days("Denver", from: "2026-12-03", count: 2, hi: 30, lo: 25))
        #expect(list.quantity(of: "t-shirt") == 3)
        #expect(list.quantity(of: "shorts") == 2)
        #expect(list.quantity(of: "trousers") == 1)
        #expect(reasons(list, "trousers") == ["1 day with no forecast, packed as mild (Denver Sat)"])
        #expect(
            reasons(list, "t-shirt") == [
                "2 hot days (Denver Thu–Fri)", "1 day with no forecast, packed as mild (Denver Sat)",
            ])
    }

    @Test("weather matches the stop's place ignoring case; a forecast beats climatology, then the newest")
    func weatherChoice() {
        let t = trip([("Denver", "2026-12-03", 0)])
        let list = Packer.pack(t, weather: [day("denver", "2026-12-03", hi: 2, lo: -6)])
        #expect(list.quantity(of: "warm coat") == 1)
        let several = [
            day("Denver", "2026-12-03", hi: 2, lo: -6, climatology: true, issued: 9),
            day("Denver", "2026-12-03", hi: 24, lo: 18, issued: 5),
            day("Denver", "2026-12-03", hi: 12, lo: 6, issued: 2),
        ]
        #expect(Packer.pack(t, weather: several).quantity(of: "t-shirt") == 1)
    }

    @Test("overrides: remove, a fixed quantity, add")
    func overrides() {
        let t = trip(
            [("Denver", "2026-12-03", 3)],
            overrides: [
                PackingOverride(item: "Umbrella", action: .remove),
                PackingOverride(item: "t-shirt", action: .quantity, quantity: 2),
                PackingOverride(item: "Camera", action: .add),
                PackingOverride(item: "socks", action: .add, quantity: 6),
                PackingOverride(item: "underwear", action: .add, quantity: 2),
                PackingOverride(item: "shorts", action: .quantity, quantity: 0),
                PackingOverride(item: "sweater", action: .quantity, quantity: 3),
            ])
        var weather = days("Denver", from: "2026-12-03", count: 4, hi: 24, lo: 18)
        weather[0].precipitationProbability = 90
        let list = Packer.pack(t, weather: weather)
        #expect(
            quantities(list, ["umbrella", "t-shirt", "camera", "socks", "underwear", "shorts", "sweater"]) == [
                "umbrella": 0, "t-shirt": 2, "camera": 1, "socks": 6, "underwear": 4, "shorts": 0, "sweater": 3,
            ])
        #expect(reasons(list, "t-shirt") == ["4 warm days (Denver Thu–Sun)", "your quantity: 2"])
        #expect(reasons(list, "Camera") == ["added by you"])
        #expect(list.items.first { $0.item == "Camera" }?.category == "essentials")
        #expect(list.items.first { $0.item == "sweater" }?.category == "layers")
        #expect(list.items.prefix(3).map(\.item) == ["Camera", "documents", "medication"])
    }

    @Test(
        "activities",
        arguments: [
            (["swimming"], 26.0, ["swimwear": 2]),  // 4 warm days → 2
            (["Swimming"], 26.0, ["swimwear": 2]),
            (["swimming"], 10.0, ["swimwear": 1]),  // no warm day: 1 for pools
            (["formal"], 26.0, ["formal outfit": 1, "dress shoes": 1, "swimwear": 0]),
            (["hiking"], 26.0, ["hiking boots": 1, "daypack": 1]),
            (["juggling"], 26.0, ["swimwear": 0, "formal outfit": 0, "hiking boots": 0]),
        ] as [([String], Double, [String: Int])])
    func activities(activities: [String], hi: Double, expected: [String: Int]) {
        let t = trip([("Denver", "2026-12-03", 3)], activities: activities)
        let list = Packer.pack(t, weather: days("Denver", from: "2026-12-03", count: 4, hi: hi, lo: hi - 6))
        #expect(quantities(list, Array(expected.keys)) == expected)
    }

    @Test("swimwear counts warm and hot days only")
    func swimwearDays() {
        let t = trip([("Denver", "2026-12-03", 1), ("Miami", "2026-12-05", 2)], activities: ["swimming"])
        let weather =
            days("Denver", from: "2026-12-03", count: 2, hi: 5, lo: -2)
            + days("Miami", from: "2026-12-05", count: 3, hi: 30, lo: 24)
        let list = Packer.pack(t, weather: weather)
        #expect(list.quantity(of: "swimwear") == 2)
        #expect(reasons(list, "swimwear") == ["swimming: 1 per 2 warm or hot days", "3 hot days (Miami Sat–Mon)"])
        #expect(list.items.first { $0.item == "swimwear" }?.category == "swim")
    }

    @Test("business: laptop, attire per day, trousers rather than shorts")
    func business() {
        let t = trip([("Denver", "2026-12-03", 2)], purpose: .business)
        let list = Packer.pack(t, weather: days("Denver", from: "2026-12-03", count: 3, hi: 26, lo: 18))
        #expect(
            quantities(list, ["laptop", "laptop charger", "business attire", "trousers", "shorts", "t-shirt"]) == [
                "laptop": 1, "laptop charger": 1, "business attire": 3, "trousers": 3, "shorts": 0, "t-shirt": 3,
            ])
    }

    @Test("an empty trip packs only the once-only essentials; lists round-trip through JSON")
    func empty() throws {
        let list = Packer.pack(trip([]), weather: [])
        #expect(Set(list.items.map(\.item)) == Set(Self.essentials))
        let full = Packer.pack(
            trip([("Denver", "2026-12-03", 3)]), weather: days("Denver", from: "2026-12-03", count: 4, hi: 2, lo: -6))
        let data = try JSONEncoder().encode(full)
        #expect(try JSONDecoder().decode(PackingList.self, from: data) == full)
    }
}

@Suite("PackingDiff")
struct PackingDiffTests {
    let denver = trip([("Denver", "2026-12-03", 3)])

    func warmWeek(rainOnFri pop: Double) -> [DayWeather] {
        var w = days("Denver", from: "2026-12-03", count: 4, hi: 24, lo: 18)
        w[1].precipitationProbability = pop
        return w
    }

    @Test("rain appears: + umbrella, with the day and the rain change")
    func rainAppears() {
        let (oldW, newW) = (warmWeek(rainOnFri: 10), warmWeek(rainOnFri: 70))
        let changes = PackingDiff.changes(
            trip: denver, old: Packer.pack(denver, weather: oldW), oldWeather: oldW,
            new: Packer.pack(denver, weather: newW), newWeather: newW)
        #expect(
            changes == [
                PackingChange(
                    kind: .added, item: "umbrella", from: 0, to: 1, because: "Denver Fri 2026-12-04: rain 10 % → 70 %",
                    line: "+ umbrella — Denver Fri 2026-12-04: rain 10 % → 70 %")
            ])
        #expect(
            PackingDiff.weatherChanges(trip: denver, oldWeather: oldW, newWeather: newW) == [
                "Denver Fri 2026-12-04: rain 10 % → 70 %"
            ])
    }

    @Test("rain goes: − umbrella")
    func rainGoes() {
        let (oldW, newW) = (warmWeek(rainOnFri: 70), warmWeek(rainOnFri: 20))
        let changes = PackingDiff.changes(
            trip: denver, old: Packer.pack(denver, weather: oldW), oldWeather: oldW,
            new: Packer.pack(denver, weather: newW), newWeather: newW)
        #expect(changes.map(\.line) == ["− umbrella — Denver Fri 2026-12-04: rain 70 % → 20 %"])
        #expect(changes.first?.kind == .removed)
        #expect(changes.first?.from == 1)
        #expect(changes.first?.to == 0)
    }

    @Test("unchanged weather, or changes that do not matter: no changes")
    func unchanged() {
        let w = warmWeek(rainOnFri: 70)
        var later = w
        later[1].precipitationProbability = 80  // still rain
        later[2].tempMaxC = 25  // still warm
        for i in later.indices { later[i].issued = 99 }
        let list = Packer.pack(denver, weather: w)
        #expect(PackingDiff.changes(trip: denver, old: list, oldWeather: w, new: list, newWeather: w).isEmpty)
        #expect(
            PackingDiff.changes(
                trip: denver, old: list, oldWeather: w, new: Packer.pack(denver, weather: later), newWeather: later
            ).isEmpty)
        #expect(PackingDiff.weatherChanges(trip: denver, oldWeather: w, newWeather: later).isEmpty)
    }

    @Test("a warm day turns cool: quantities change, new items come, with the temperature change")
    func quantity() {
        let oldW = days("Denver", from: "2026-12-03", count: 4, hi: 26, lo: 18)
        var newW = oldW
        newW[1].tempMaxC = 10
        newW[1].tempMinC = 4
        let changes = PackingDiff.changes(
            trip: denver, old: Packer.pack(denver, weather: oldW), oldWeather: oldW,
            new: Packer.pack(denver, weather: newW), newWeather: newW)
        let why = "Denver Fri 2026-12-04: high 26 °C → 10 °C"
        #expect(
            changes.map(\.line) == [
                "+ light jacket — \(why)", "+ long-sleeve top — \(why)", "+ sweater — \(why)", "+ trousers — \(why)",
                "~ shorts 4 → 3 — \(why)", "~ t-shirt 4 → 3 — \(why)",
            ])
        #expect(changes.first { $0.item == "t-shirt" }?.kind == .quantity)
    }

    @Test("imperial units in the explanation: °F and inches")
    func imperial() {
        let t = trip([("Denver", "2026-12-03", 0)], preferences: PackingPreferences(units: .imperial))
        let oldW = [day("Denver", "2026-12-03", hi: 10, lo: 4, snow: 0)]
        let newW = [day("Denver", "2026-12-03", hi: -2, lo: -8, snow: 10.16)]
        let changes = PackingDiff.changes(
            trip: t, old: Packer.pack(t, weather: oldW), oldWeather: oldW, new: Packer.pack(t, weather: newW),
            newWeather: newW)
        let day = "Denver Thu 2026-12-03"
        #expect(
            changes.map(\.line) == [
                "+ gloves — \(day): high 50 °F → 28 °F, snow 0 → 4 in",
                "+ hat — \(day): high 50 °F → 28 °F, snow 0 → 4 in",
                "+ scarf — \(day): high 50 °F → 28 °F", "+ thermal layer — \(day): high 50 °F → 28 °F",
                "+ warm coat — \(day): high 50 °F → 28 °F", "+ waterproof boots — \(day): snow 0 → 4 in",
                "− light jacket — \(day): high 50 °F → 28 °F", "− sweater — \(day): high 50 °F → 28 °F",
            ])
        #expect(
            PackingDiff.weatherChanges(trip: t, oldWeather: oldW, newWeather: newW) == [
                "\(day): high 50 °F → 28 °F, snow 0 → 4 in"
            ])
    }

    @Test("weather lines in metric: rain amounts, wind, climatology to forecast")
    func metricLines() {
        let t = trip([("Denver", "2026-12-03", 1)])
        let oldW = [
            day("Denver", "2026-12-03", hi: 24, lo: 18, mm: 0.5, wind: 20, climatology: true),
            day("Denver", "2026-12-04", hi: 24, lo: 18),
        ]
        let newW = [
            day("Denver", "2026-12-03", hi: 24, lo: 18, mm: 6, wind: 55),
            day("Denver", "2026-12-04", hi: 24, lo: 18),
        ]
        #expect(
            PackingDiff.weatherChanges(trip: t, oldWeather: oldW, newWeather: newW) == [
                "Denver Thu 2026-12-03: rain 0.5 mm → 6 mm, wind 20 → 55 km/h (climatology → forecast)"
            ])
        let changes = PackingDiff.changes(
            trip: t, old: Packer.pack(t, weather: oldW), oldWeather: oldW, new: Packer.pack(t, weather: newW),
            newWeather: newW)
        #expect(
            changes.map(\.line) == [
                "+ umbrella — Denver Thu 2026-12-03: rain 0.5 mm → 6 mm",
                "+ windbreaker — Denver Thu 2026-12-03: wind 20 → 55 km/h",
            ])
    }

    @Test("a change names at most three days")
    func manyDays() {
        let t = trip([("Denver", "2026-12-03", 4)])
        let oldW = days("Denver", from: "2026-12-03", count: 5, hi: 24, lo: 18)
        let newW = days("Denver", from: "2026-12-03", count: 5, hi: 10, lo: 4)
        let changes = PackingDiff.changes(
            trip: t, old: Packer.pack(t, weather: oldW), oldWeather: oldW, new: Packer.pack(t, weather: newW),
            newWeather: newW)
        #expect(
            changes.first { $0.item == "sweater" }?.line
                == "+ sweater × 2 — Denver Thu 2026-12-03: high 24 °C → 10 °C; Denver Fri 2026-12-04: high 24 °C → 10 °C; "
                + "Denver Sat 2026-12-05: high 24 °C → 10 °C; and 2 more days")
        #expect(changes.map(\.item) == ["light jacket", "long-sleeve top", "sweater", "trousers", "shorts", "t-shirt"])
        #expect(changes.map(\.kind) == [.added, .added, .added, .added, .removed, .removed])
        #expect(PackingDiff.weatherChanges(trip: t, oldWeather: oldW, newWeather: newW).count == 5)
    }

    @Test("a change no weather explains gives the item's reasons")
    func noWeather() {
        let w = days("Denver", from: "2026-12-03", count: 4, hi: 24, lo: 18)
        var swimmer = denver
        swimmer.activities = ["swimming"]
        let changes = PackingDiff.changes(
            trip: swimmer, old: Packer.pack(denver, weather: w), oldWeather: w, new: Packer.pack(swimmer, weather: w),
            newWeather: w)
        #expect(
            changes.map(\.line) == [
                "+ swimwear × 2 — swimming: 1 per 2 warm or hot days; 4 warm days (Denver Thu–Sun)"
            ])
        var removing = denver
        removing.overrides = [PackingOverride(item: "sleepwear", action: .remove)]
        let removed = PackingDiff.changes(
            trip: removing, old: Packer.pack(denver, weather: w), oldWeather: w,
            new: Packer.pack(removing, weather: w), newWeather: w)
        #expect(removed.map(\.line) == ["− sleepwear — removed by you"])
    }
}
