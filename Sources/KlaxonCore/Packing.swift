// What to pack for a trip, from its days' weather, and what changed between two lists.
//
// The days (`Packer.days(of:)`): stop i contributes the `nights` days starting at its `arrive` date
// (a 0-night stop contributes its arrival day); the last stop also contributes its departure day
// (`arrive + nights`). A day claimed by two stops belongs to the later one (later in `stops`). Days
// between stops that no stop claims are not trip days. Stops with an unparseable `arrive` are
// skipped; `nights` is clamped to 0...366.
//
// Each day gets a temperature class (`Packer.tempClass`) from the mean of its high and low as the
// traveller feels it; a day without weather (or without temperatures) is packed as mild and its
// reasons say "no forecast". Climatology days are packed like forecast days; their reasons say
// "(climatology)". The list is then built in this order:
//
// 1. Essentials, once: toiletries, phone charger, documents, medication, sleepwear; underwear and
//    socks, one per day. Business trips add a laptop, a laptop charger and business attire (one per
//    day; category `formal`).
// 2. Activities (lowercased): `swimming` → swimwear, one per two warm or hot days and always at least
//    one (pools are indoors); `formal` → formal outfit and dress shoes; `hiking` → hiking boots and a
//    daypack. Other activities are ignored.
// 3. Per day by class: hot and warm → t-shirt and shorts (trousers on business trips); mild →
//    t-shirt and trousers; cool → long-sleeve top and trousers, plus a sweater per three cool days
//    (at least one) and one light jacket; cold → long-sleeve top and trousers, a thermal layer per
//    three cold days (at least one), one warm coat, hat, gloves and scarf.
// 4. Weather, per day: rain (probability ≥ 50 % or ≥ 2 mm) → umbrella, and a rain jacket when the
//    day is cool or cold; snowfall > 0 → waterproof boots, gloves and hat; wind ≥ 40 km/h →
//    windbreaker; a hot, sunny day (WMO code 0–2, or no code and no rain) → sunglasses, sunscreen.
// 5. Caps on per-day clothing (t-shirt, long-sleeve top, shorts, trousers, underwear, socks,
//    business attire), each item on its own: with `laundry`, at most `laundryEvery` days' worth;
//    with `rewearBottoms`, shorts and trousers are one per three days (of the capped days, at
//    least one).
// 5b. Bad air (`air`: each day's worst AirNow forecast for the stop's reporting area): a day forecast
//    Unhealthy for Sensitive Groups or worse (category ≥ 3), or declared an Action Day → one N95 mask
//    per such day and, once, a plan for indoor activities; the reasons name the day and the forecast
//    ("Action Day forecast for Denver, Tue (O3 AQI 125, …)").
// 6. Overrides, in order: `add` packs at least `quantity` (default 1); `remove` drops the item;
//    `quantity` packs exactly `quantity` (default 1; 0 or less drops it). Items are matched by name,
//    ignoring case; an item the algorithm does not know goes under `essentials`.
//
// Every item says why: the days and classes behind it ("4 warm days (Denver Thu–Sun)") or the day and
// weather that triggered it ("Denver Thu 2026-12-03: 70 % rain"; at most three such days, then
// "and N more days"), in the traveller's units.
//
// `PackingDiff` compares two lists and explains each changed item with the weather changes, per trip
// day, that turned it on or off; it falls back to the item's own reasons.

/// One line of a packing list.
public struct PackingItem: Sendable, Hashable, Codable {
    /// `t-shirt`, `umbrella`.
    public var item: String
    /// `essentials`, `tops`, `bottoms`, `layers`, `outerwear`, `footwear`, `accessories`, `swim`,
    /// `formal`, `rain` or `cold`.
    public var category: String
    public var quantity: Int
    /// Why, for people: `Denver Thu 2026-12-03: 70 % rain`, `4 warm days (Denver Thu–Sun)`.
    public var reasons: [String]

    public init(item: String, category: String, quantity: Int, reasons: [String] = []) {
        self.item = item
        self.category = category
        self.quantity = quantity
        self.reasons = reasons
    }
}

/// A packing list, in a stable order: by category (in `PackingList.categories` order), then item name
/// (ignoring case).
public struct PackingList: Sendable, Hashable, Codable {
    public var items: [PackingItem]

    /// The categories, in list order. Items of another category come last.
    public static let categories = [
        "essentials", "tops", "bottoms", "layers", "outerwear", "footwear", "accessories", "swim", "formal", "rain",
        "cold", "bad air",
    ]

    /// Sorts `items` into list order.
    public init(items: [PackingItem]) {
        self.items = items.sorted { a, b in
            let (ra, rb) = (Self.rank(a.category), Self.rank(b.category))
            if ra != rb { return ra < rb }
            if a.category != b.category { return a.category < b.category }
            let (ka, kb) = (a.item.lowercased(), b.item.lowercased())
            return ka != kb ? ka < kb : a.item < b.item
        }
    }

    static func rank(_ category: String) -> Int { categories.firstIndex(of: category) ?? categories.count }

    /// How many of an item the list packs (0 when absent); names match ignoring case.
    public func quantity(of item: String) -> Int {
        let key = PackCatalogue.key(item)
        return items.first { PackCatalogue.key($0.item) == key }?.quantity ?? 0
    }

    /// A text table grouped by category, one item per line, without a trailing newline:
    ///
    ///     tops
    ///       t-shirt × 4 — 4 warm days (Denver Thu–Sun)
    ///
    /// A quantity of 1 is not written; several reasons are joined with `; `.
    public func table() -> String {
        var lines: [String] = []
        var category: String? = nil
        for item in items {
            if item.category != category {
                lines.append(item.category)
                category = item.category
            }
            var line = "  \(item.item)"
            if item.quantity != 1 { line += " × \(item.quantity)" }
            if !item.reasons.isEmpty { line += " — " + item.reasons.joined(separator: "; ") }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

/// One day of a trip and the stop it belongs to.
public struct TripDay: Sendable, Hashable, Codable {
    /// `YYYY-MM-DD`.
    public var date: String
    /// Index into `Trip.stops`.
    public var stopIndex: Int
    /// The stop's place.
    public var place: String

    public init(date: String, stopIndex: Int, place: String) {
        self.date = date
        self.stopIndex = stopIndex
        self.place = place
    }
}

/// Builds packing lists (see the algorithm at the top of this file). Pure.
public enum Packer {
    /// The most weather days an item's reasons name; more are summarised as `and N more days`.
    static let maxWeatherReasons = 3

    /// The days of a trip, in date order.
    ///
    /// Stop i contributes `nights` days starting at its `arrive` date (a 0-night stop contributes its
    /// arrival day only); the last stop of `trip.stops` also contributes its departure day,
    /// `arrive + nights` (the same day for a 0-night last stop). A day claimed by several stops
    /// belongs to the one later in `trip.stops`. Days between stops that no stop claims are not trip
    /// days. A stop whose `arrive` is not a valid `YYYY-MM-DD` date contributes nothing; `nights` is
    /// clamped to 0...366.
    ///
    /// Denver (arrive 2026-12-03, 3 nights) then Phoenix (2026-12-06, 2 nights): Denver 03, 04, 05,
    /// Phoenix 06, 07, 08.
    public static func days(of trip: Trip) -> [TripDay] {
        var owner: [Int: Int] = [:]
        for (i, stop) in trip.stops.enumerated() {
            guard let arrive = PackDate.parse(stop.arrive) else { continue }
            let nights = min(max(stop.nights, 0), 366)
            for d in arrive..<(arrive + max(nights, 1)) { owner[d] = i }
            if i == trip.stops.count - 1 { owner[arrive + nights] = i }
        }
        return owner.keys.sorted().map { d in
            let i = owner[d]!
            return TripDay(date: PackDate.format(d), stopIndex: i, place: trip.stops[i].place)
        }
    }

    /// Whether a forecast calls for bad-air packing: Unhealthy for Sensitive Groups or worse, or an
    /// Action Day.
    public static func isBadAir(_ f: AirForecast) -> Bool { f.category >= 3 || f.actionDay }

    /// `Tue` for `2026-12-08`; nil for a text that is not a `YYYY-MM-DD` date.
    public static func weekday(of date: String) -> String? { PackDate.parse(date).map(PackDate.weekday) }

    /// A day's temperature as the traveller feels it.
    public enum TempClass: String, Sendable, Hashable, Codable, CaseIterable {
        case hot, warm, mild, cool, cold
    }

    /// The temperature class of a day, from the mean of its high and low (°C; one of them alone when
    /// the other is missing): hot ≥ 27, warm ≥ 20, mild ≥ 13, cool ≥ 5, cold below. `feels` raises
    /// every threshold for a traveller who runs cold (`runs-cold` +4 °C, `cold` +2) and lowers it for
    /// one who runs hot (`warm` −2, `runs-hot` −4): a runs-cold traveller feels 16 °C as cool, not
    /// mild. No weather or no temperature → mild.
    public static func tempClass(_ w: DayWeather?, feels: PackingPreferences.Feels) -> TempClass {
        let mean: Double
        switch (w?.tempMaxC, w?.tempMinC) {
        case (let hi?, let lo?): mean = (hi + lo) / 2
        case (let hi?, nil): mean = hi
        case (nil, let lo?): mean = lo
        case (nil, nil): return .mild
        }
        guard mean.isFinite else { return .mild }
        let shift: Double
        switch feels {
        case .runsCold: shift = 4
        case .cold: shift = 2
        case .neutral: shift = 0
        case .warm: shift = -2
        case .runsHot: shift = -4
        }
        if mean >= 27 + shift { return .hot }
        if mean >= 20 + shift { return .warm }
        if mean >= 13 + shift { return .mild }
        if mean >= 5 + shift { return .cool }
        return .cold
    }

    /// The packing list for a trip.
    ///
    /// `weather` holds at most one `DayWeather` per (place, date), `place` being the stop's place as the
    /// trip names it (matched exactly, else ignoring case); should there be several, a forecast wins
    /// over climatology, then the newest issue. A day without weather is packed as mild and its
    /// reasons say "no forecast".
    ///
    /// `air`: the trip days' air-quality forecasts (`AirForecast.tripDays`); a bad-air day adds N95
    /// masks and an indoor plan (step 5b).
    public static func pack(_ trip: Trip, weather: [DayWeather], air: [TripAirDay] = []) -> PackingList {
        let prefs = trip.preferences
        let units = PackUnits(prefs.units)
        let index = PackWeatherIndex(weather)
        let days = Self.days(of: trip).map { PackDay($0, index.weather(for: $0), feels: prefs.feels) }
        let activities = Set(trip.activities.map(PackCatalogue.key))
        let swimming = activities.contains("swimming")
        var list = PackListBuilder()

        // 1. Essentials.
        for item in ["toiletries", "phone charger", "documents", "medication", "sleepwear"] {
            list.add(item, 1, "essential")
        }
        if !days.isEmpty {
            let reason = "1 per day, \(plural(days.count, "day"))"
            for item in ["underwear", "socks"] {
                list.add(item, perDay(item, days.count, prefs, reasons: [reason]))
            }
        }
        if trip.purpose == .business {
            list.add("laptop", 1, "business trip")
            list.add("laptop charger", 1, "business trip")
            if !days.isEmpty {
                let reason = "business trip: 1 per day, \(plural(days.count, "day"))"
                list.add("business attire", perDay("business attire", days.count, prefs, reasons: [reason]))
            }
        }

        // 2. Activities.
        if activities.contains("formal") {
            list.add("formal outfit", 1, "formal in activities")
            list.add("dress shoes", 1, "formal in activities")
        }
        if activities.contains("hiking") {
            list.add("hiking boots", 1, "hiking in activities")
            list.add("daypack", 1, "hiking in activities")
        }

        // 3–4. Per day: class and weather (5, the caps, in `perDay`).
        var wanted: [String: [(day: PackDay, weather: String?)]] = [:]
        var order: [String] = []
        for day in days {
            for need in needs(of: day, purpose: trip.purpose, swimming: swimming, units: units) {
                if wanted[need.item] == nil { order.append(need.item) }
                wanted[need.item, default: []].append((day, need.weather))
            }
        }
        for item in order {
            let entries = wanted[item]!
            var byClass: [PackDay] = []
            var seen: Set<String> = []
            for e in entries where e.weather == nil && seen.insert(e.day.day.date).inserted { byClass.append(e.day) }
            var reasons = classReasons(byClass)
            var weatherReasons: [String] = []
            for e in entries {
                guard let phrase = e.weather else { continue }
                let reason = e.day.label + ": " + phrase + (e.day.climatology ? " (climatology)" : "")
                if !weatherReasons.contains(reason) { weatherReasons.append(reason) }
            }
            reasons += weatherReasons.prefix(maxWeatherReasons)
            if weatherReasons.count > maxWeatherReasons {
                reasons.append("and \(plural(weatherReasons.count - maxWeatherReasons, "more day"))")
            }
            let n = Set(entries.map(\.day.day.date)).count
            switch item {
            case _ where PackCatalogue.perDay.contains(item):
                list.add(item, perDay(item, n, prefs, reasons: reasons))
            case "sweater", "thermal layer":
                list.add(item, (max(1, (n + 2) / 3), reasons))
            case "swimwear":
                list.add(item, (max(1, (n + 1) / 2), ["swimming: 1 per 2 warm or hot days"] + reasons))
            default:
                list.add(item, (1, reasons))
            }
        }
        if swimming && wanted["swimwear"] == nil {
            list.add("swimwear", 1, "swimming (no warm or hot day: 1 for pools)")
        }

        // 5b. Bad air: days forecast Unhealthy for Sensitive Groups or worse, or Action Days.
        let tripDates = Set(days.map(\.day.date))
        var badDays: [TripAirDay] = []
        for d in air where tripDates.contains(d.forecast.date) && isBadAir(d.forecast) {
            if !badDays.contains(where: { $0.forecast.date == d.forecast.date }) { badDays.append(d) }
        }
        badDays.sort { $0.forecast.date < $1.forecast.date }
        if !badDays.isEmpty {
            var reasons = badDays.prefix(maxWeatherReasons).map(\.reason)
            if badDays.count > maxWeatherReasons {
                reasons.append("and \(plural(badDays.count - maxWeatherReasons, "more day"))")
            }
            list.add("N95 mask", (badDays.count, reasons))
            list.add("indoor activity plan", (1, reasons))
        }

        // 6. Overrides.
        for o in trip.overrides {
            let name = o.item.trimmingWhitespace()
            guard !name.isEmpty else { continue }
            switch o.action {
            case .remove:
                list.remove(name)
            case .add:
                let q = max(o.quantity ?? 1, 1)
                list.atLeast(name, q, "added by you")
            case .quantity:
                let q = o.quantity ?? 1
                if q <= 0 { list.remove(name) } else { list.exactly(name, q, "your quantity: \(q)") }
            }
        }
        return PackingList(items: list.items)
    }

    /// A per-day clothing item's quantity for `n` days after the laundry and rewear caps, with the
    /// reasons for the caps appended.
    fileprivate static func perDay(_ item: String, _ n: Int, _ prefs: PackingPreferences, reasons: [String]) -> (
        Int, [String]
    ) {
        var reasons = reasons
        var q = n
        if prefs.laundry {
            let every = max(prefs.laundryEvery, 1)
            if n > every {
                q = every
                reasons.append("laundry every \(plural(every, "day")): \(every) of \(n)")
            }
        }
        if prefs.rewearBottoms, PackCatalogue.category(item) == "bottoms", q > 0 {
            let worn = max(1, (q + 2) / 3)
            if worn < q { reasons.append("worn again: 1 per 3 days, \(worn) of \(q)") }
            q = worn
        }
        return (q, reasons)
    }

    /// What one day calls for. `weather` is the day's weather phrase for weather-triggered items and
    /// nil for items its temperature class calls for.
    fileprivate static func needs(
        of day: PackDay, purpose: Trip.Purpose, swimming: Bool, units: PackUnits
    ) -> [(item: String, weather: String?)] {
        var out: [(item: String, weather: String?)] = []
        func add(_ items: String..., weather: String? = nil) { for i in items { out.append((i, weather)) } }
        switch day.tempClass {
        case .hot, .warm:
            add("t-shirt", purpose == .business ? "trousers" : "shorts")
            if swimming { add("swimwear") }
        case .mild:
            add("t-shirt", "trousers")
        case .cool:
            add("long-sleeve top", "trousers", "sweater", "light jacket")
        case .cold:
            add("long-sleeve top", "trousers", "thermal layer", "warm coat", "hat", "gloves", "scarf")
        }
        guard let w = day.weather else { return out }
        if day.rainy {
            let phrase = rainPhrase(w, units)
            add("umbrella", weather: phrase)
            if day.tempClass == .cool || day.tempClass == .cold { add("rain jacket", weather: phrase) }
        }
        if day.snowy {
            add("waterproof boots", "gloves", "hat", weather: "snow \(units.snow(w.snowfallCm)) \(units.snowUnit)")
        }
        if day.windy { add("windbreaker", weather: "wind \(units.wind(w.windMaxKmh)) \(units.windUnit)") }
        if day.hotAndSunny { add("sunglasses", "sunscreen", weather: "hot and sunny, high \(units.temp(w.tempMaxC))") }
        return out
    }

    /// `70 % rain`, `12 mm rain`, `70 % rain, 12 mm`.
    fileprivate static func rainPhrase(_ w: DayWeather, _ units: PackUnits) -> String {
        var parts: [String] = []
        if let p = w.precipitationProbability, p >= PackDay.rainProbability { parts.append("\(units.percent(p)) rain") }
        if let mm = w.precipitationMm, mm >= PackDay.rainMm {
            parts.append(parts.isEmpty ? "\(units.rain(mm)) rain" : units.rain(mm))
        }
        return parts.joined(separator: ", ")
    }

    /// `4 warm days (Denver Thu–Sun)`, `2 warm days (Denver Sat–Sun) (climatology)`,
    /// `1 day with no forecast, packed as mild (Denver Sun)`: grouped by class, then by source.
    fileprivate static func classReasons(_ days: [PackDay]) -> [String] {
        var out: [String] = []
        for c in TempClass.allCases {
            let ofClass = days.filter { $0.tempClass == c && $0.hasForecast }
            let forecast = ofClass.filter { !$0.climatology }
            let climatology = ofClass.filter(\.climatology)
            if !forecast.isEmpty {
                out.append("\(plural(forecast.count, "\(c.rawValue) day")) (\(ranges(forecast)))")
            }
            if !climatology.isEmpty {
                out.append("\(plural(climatology.count, "\(c.rawValue) day")) (\(ranges(climatology))) (climatology)")
            }
        }
        let none = days.filter { !$0.hasForecast }
        if !none.isEmpty {
            let with = none.count == 1 ? "day with" : "days with"
            out.append("\(none.count) \(with) no forecast, packed as mild (\(ranges(none)))")
        }
        return out
    }

    /// Consecutive days at one stop as `Denver Thu–Sun`; runs of a week or more by date.
    fileprivate static func ranges(_ days: [PackDay]) -> String {
        var runs: [[PackDay]] = []
        for d in days.sorted(by: { $0.day.date < $1.day.date }) {
            if let last = runs.last?.last, last.day.stopIndex == d.day.stopIndex, let a = last.dayNumber,
                let b = d.dayNumber, b == a + 1
            {
                runs[runs.count - 1].append(d)
            } else {
                runs.append([d])
            }
        }
        return runs.map { run in
            let (first, last) = (run.first!, run.last!)
            if run.count == 1 { return "\(first.day.place) \(first.weekday)" }
            if run.count >= 7 { return "\(first.day.place) \(first.day.date)–\(last.day.date)" }
            return "\(first.day.place) \(first.weekday)–\(last.weekday)"
        }.joined(separator: ", ")
    }

    fileprivate static func plural(_ n: Int, _ noun: String) -> String { n == 1 ? "1 \(noun)" : "\(n) \(noun)s" }
}

/// One change between two packing lists.
public struct PackingChange: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case added, removed, quantity
    }

    public var kind: Kind
    public var item: String
    /// The old quantity (0 when added).
    public var from: Int
    /// The new quantity (0 when removed).
    public var to: Int
    /// The weather behind the change, in the traveller's units
    /// (`Denver Thu 2026-12-03: high 50 °F → 28 °F, snow 0 → 4 in`), or else the item's reasons.
    public var because: String
    /// `+ umbrella — …`, `− sunglasses — …`, `~ t-shirt 4 → 2 — …` (`× n` after an added or removed
    /// item when n > 1).
    public var line: String

    public init(kind: Kind, item: String, from: Int, to: Int, because: String, line: String) {
        self.kind = kind
        self.item = item
        self.from = from
        self.to = to
        self.because = because
        self.line = line
    }
}

/// What changed between two packing lists of one trip, and the weather behind it. Pure.
public enum PackingDiff {
    /// The most days one change names; more are summarised as `and N more days`.
    static let maxDays = 3

    /// The item differences between the announced list and the new one, ordered added, removed,
    /// quantity, then by item name.
    ///
    /// Each change is explained by the trip days whose weather turned the item on or off (old vs new
    /// `DayWeather` per day — pass the weather each list was made from), naming the weather aspects
    /// that matter for the item (temperature class, rain, snow, wind, sun); when no day's weather
    /// explains it, by the new item's reasons (added, quantity) or the old item's (removed).
    public static func changes(
        trip: Trip, old: PackingList, oldWeather: [DayWeather], new: PackingList, newWeather: [DayWeather]
    ) -> [PackingChange] {
        let prefs = trip.preferences
        let units = PackUnits(prefs.units)
        let pairs = dayPairs(trip, oldWeather, newWeather)
        let swimming = trip.activities.map(PackCatalogue.key).contains("swimming")
        let needs = pairs.map { p in
            (
                old: Set(Packer.needs(of: p.old, purpose: trip.purpose, swimming: swimming, units: units).map(\.item)),
                new: Set(Packer.needs(of: p.new, purpose: trip.purpose, swimming: swimming, units: units).map(\.item))
            )
        }
        var oldItems: [String: PackingItem] = [:]
        var newItems: [String: PackingItem] = [:]
        for i in old.items where i.quantity > 0 && oldItems[PackCatalogue.key(i.item)] == nil {
            oldItems[PackCatalogue.key(i.item)] = i
        }
        for i in new.items where i.quantity > 0 && newItems[PackCatalogue.key(i.item)] == nil {
            newItems[PackCatalogue.key(i.item)] = i
        }
        let removedByYou = Set(trip.overrides.filter { $0.action == .remove }.map { PackCatalogue.key($0.item) })

        var out: [PackingChange] = []
        for key in Set(oldItems.keys).union(newItems.keys) {
            let (o, n) = (oldItems[key], newItems[key])
            let (from, to) = (o?.quantity ?? 0, n?.quantity ?? 0)
            guard from != to, let name = (n ?? o)?.item else { continue }
            let kind: PackingChange.Kind = from == 0 ? .added : to == 0 ? .removed : .quantity

            var days: [String] = []
            for (p, need) in zip(pairs, needs) where need.old.contains(key) != need.new.contains(key) {
                let all = aspectChanges(p.old, p.new, units)
                let relevant = all.filter { PackCatalogue.aspects(key).contains($0.aspect) }
                let parts = relevant.isEmpty ? all : relevant
                if !parts.isEmpty { days.append(p.new.label + ": " + parts.map(\.text).joined(separator: ", ")) }
            }
            if days.isEmpty {
                for p in pairs {
                    let relevant = aspectChanges(p.old, p.new, units).filter {
                        PackCatalogue.aspects(key).contains($0.aspect)
                    }
                    if !relevant.isEmpty {
                        days.append(p.new.label + ": " + relevant.map(\.text).joined(separator: ", "))
                    }
                }
            }
            let because: String
            if !days.isEmpty {
                var shown = Array(days.prefix(maxDays))
                if days.count > maxDays { shown.append("and \(Packer.plural(days.count - maxDays, "more day"))") }
                because = shown.joined(separator: "; ")
            } else if kind == .removed {
                because =
                    removedByYou.contains(key)
                    ? "removed by you"
                    : "no longer needed" + (o!.reasons.isEmpty ? "" : " (was: \(o!.reasons.joined(separator: "; ")))")
            } else {
                because = n!.reasons.isEmpty ? "new in the list" : n!.reasons.joined(separator: "; ")
            }
            let line: String
            switch kind {
            case .added: line = "+ \(name)\(to > 1 ? " × \(to)" : "") — \(because)"
            case .removed: line = "− \(name)\(from > 1 ? " × \(from)" : "") — \(because)"
            case .quantity: line = "~ \(name) \(from) → \(to) — \(because)"
            }
            out.append(PackingChange(kind: kind, item: name, from: from, to: to, because: because, line: line))
        }
        let rank: [PackingChange.Kind: Int] = [.added: 0, .removed: 1, .quantity: 2]
        return out.sorted { a, b in
            rank[a.kind]! != rank[b.kind]! ? rank[a.kind]! < rank[b.kind]! : a.item < b.item
        }
    }

    /// One line per trip day whose weather changed in a way that matters for packing — its temperature
    /// class (for the traveller), rain (≥ 50 % or ≥ 2 mm), snow (> 0), wind (≥ 40 km/h), or sun on a
    /// hot day — in date order and the traveller's units (metric: °C, mm, cm, km/h; imperial: °F, in,
    /// mph): `Denver Thu 2026-12-03: high 50 °F → 28 °F, rain 10 % → 70 %, snow 0 → 4 in`.
    /// A missing value shows as `—`.
    public static func weatherChanges(trip: Trip, oldWeather: [DayWeather], newWeather: [DayWeather]) -> [String] {
        let units = PackUnits(trip.preferences.units)
        return dayPairs(trip, oldWeather, newWeather).compactMap { p in
            let parts = aspectChanges(p.old, p.new, units)
            guard !parts.isEmpty else { return nil }
            var line = p.new.label + ": " + parts.map(\.text).joined(separator: ", ")
            if let a = p.old.weather, let b = p.new.weather, a.climatology != b.climatology {
                line += a.climatology ? " (climatology → forecast)" : " (forecast → climatology)"
            }
            return line
        }
    }

    fileprivate static func dayPairs(_ trip: Trip, _ oldWeather: [DayWeather], _ newWeather: [DayWeather]) -> [(
        old: PackDay, new: PackDay
    )] {
        let (a, b) = (PackWeatherIndex(oldWeather), PackWeatherIndex(newWeather))
        let feels = trip.preferences.feels
        return Packer.days(of: trip).map { d in
            (PackDay(d, a.weather(for: d), feels: feels), PackDay(d, b.weather(for: d), feels: feels))
        }
    }

    /// The changes of one day's weather that matter, in order: temperature, rain, snow, wind, sun.
    fileprivate static func aspectChanges(_ old: PackDay, _ new: PackDay, _ u: PackUnits) -> [(
        aspect: PackAspect, text: String
    )] {
        var out: [(aspect: PackAspect, text: String)] = []
        let (a, b) = (old.weather, new.weather)
        if old.tempClass != new.tempClass {
            let (hiA, hiB) = (u.temp(a?.tempMaxC), u.temp(b?.tempMaxC))
            let (loA, loB) = (u.temp(a?.tempMinC), u.temp(b?.tempMinC))
            if hiA != hiB {
                out.append((.temperature, "high \(hiA) → \(hiB)"))
            } else if loA != loB {
                out.append((.temperature, "low \(loA) → \(loB)"))
            } else {
                out.append((.temperature, "\(old.tempClass.rawValue) → \(new.tempClass.rawValue)"))
            }
        }
        if old.rainy != new.rainy {
            var parts: [String] = []
            let (pA, pB) = (a?.precipitationProbability, b?.precipitationProbability)
            if pA != nil || pB != nil, u.percent(pA) != u.percent(pB) {
                parts.append("\(u.percent(pA)) → \(u.percent(pB))")
            }
            let (mA, mB) = (a?.precipitationMm, b?.precipitationMm)
            let amountMatters = ((mA ?? 0) >= PackDay.rainMm) != ((mB ?? 0) >= PackDay.rainMm)
            if u.rain(mA) != u.rain(mB), amountMatters || parts.isEmpty {
                parts.append("\(u.rain(mA)) → \(u.rain(mB))")
            }
            if parts.isEmpty { parts.append(old.rainy ? "yes → no" : "no → yes") }
            out.append((.rain, "rain " + parts.joined(separator: ", ")))
        }
        if old.snowy != new.snowy {
            out.append((.snow, "snow \(u.snow(a?.snowfallCm)) → \(u.snow(b?.snowfallCm)) \(u.snowUnit)"))
        }
        if old.windy != new.windy {
            out.append((.wind, "wind \(u.wind(a?.windMaxKmh)) → \(u.wind(b?.windMaxKmh)) \(u.windUnit)"))
        }
        if old.hotAndSunny != new.hotAndSunny, old.tempClass == new.tempClass {
            out.append((.sun, old.hotAndSunny ? "sunny → not sunny" : "not sunny → sunny"))
        }
        return out
    }
}

// MARK: - Helpers

/// A weather aspect an item depends on.
private enum PackAspect: Sendable, Hashable {
    case temperature, rain, snow, wind, sun
}

/// The items the algorithm knows: their categories and the weather they depend on.
private enum PackCatalogue {
    struct Entry: Sendable {
        var category: String
        var aspects: Set<PackAspect>
    }

    /// Per-day clothing, subject to the laundry cap.
    static let perDay: Set<String> = [
        "t-shirt", "long-sleeve top", "shorts", "trousers", "underwear", "socks", "business attire",
    ]

    static let entries: [String: Entry] = [
        "toiletries": Entry(category: "essentials", aspects: []),
        "phone charger": Entry(category: "essentials", aspects: []),
        "documents": Entry(category: "essentials", aspects: []),
        "medication": Entry(category: "essentials", aspects: []),
        "sleepwear": Entry(category: "essentials", aspects: []),
        "underwear": Entry(category: "essentials", aspects: []),
        "socks": Entry(category: "essentials", aspects: []),
        "laptop": Entry(category: "essentials", aspects: []),
        "laptop charger": Entry(category: "essentials", aspects: []),
        "t-shirt": Entry(category: "tops", aspects: [.temperature]),
        "long-sleeve top": Entry(category: "tops", aspects: [.temperature]),
        "shorts": Entry(category: "bottoms", aspects: [.temperature]),
        "trousers": Entry(category: "bottoms", aspects: [.temperature]),
        "sweater": Entry(category: "layers", aspects: [.temperature]),
        "thermal layer": Entry(category: "layers", aspects: [.temperature]),
        "light jacket": Entry(category: "outerwear", aspects: [.temperature]),
        "warm coat": Entry(category: "outerwear", aspects: [.temperature]),
        "windbreaker": Entry(category: "outerwear", aspects: [.wind]),
        "hiking boots": Entry(category: "footwear", aspects: []),
        "dress shoes": Entry(category: "footwear", aspects: []),
        "waterproof boots": Entry(category: "footwear", aspects: [.snow]),
        "sunglasses": Entry(category: "accessories", aspects: [.temperature, .sun, .rain]),
        "sunscreen": Entry(category: "accessories", aspects: [.temperature, .sun, .rain]),
        "daypack": Entry(category: "accessories", aspects: []),
        "swimwear": Entry(category: "swim", aspects: [.temperature]),
        "formal outfit": Entry(category: "formal", aspects: []),
        "business attire": Entry(category: "formal", aspects: []),
        "umbrella": Entry(category: "rain", aspects: [.rain]),
        "rain jacket": Entry(category: "rain", aspects: [.rain, .temperature]),
        "hat": Entry(category: "cold", aspects: [.temperature, .snow]),
        "gloves": Entry(category: "cold", aspects: [.temperature, .snow]),
        "scarf": Entry(category: "cold", aspects: [.temperature]),
        "n95 mask": Entry(category: "bad air", aspects: []),
        "indoor activity plan": Entry(category: "bad air", aspects: []),
    ]

    /// The matching key of an item name: trimmed, lowercased.
    static func key(_ name: String) -> String { name.trimmingWhitespace().lowercased() }

    /// Unknown items (the traveller's own) are essentials.
    static func category(_ item: String) -> String { entries[key(item)]?.category ?? "essentials" }

    static func aspects(_ item: String) -> Set<PackAspect> { entries[key(item)]?.aspects ?? [] }
}

/// Accumulates items; quantities of repeated additions take the larger, reasons are appended.
private struct PackListBuilder {
    private(set) var items: [PackingItem] = []

    private func index(_ name: String) -> Int? {
        let key = PackCatalogue.key(name)
        return items.firstIndex { PackCatalogue.key($0.item) == key }
    }

    mutating func add(_ name: String, _ quantity: Int, _ reason: String) { add(name, (quantity, [reason])) }

    mutating func add(_ name: String, _ q: (Int, [String])) {
        guard q.0 > 0 else { return }
        atLeast(name, q.0, q.1)
    }

    mutating func atLeast(_ name: String, _ quantity: Int, _ reason: String) { atLeast(name, quantity, [reason]) }

    mutating func atLeast(_ name: String, _ quantity: Int, _ reasons: [String]) {
        if let i = index(name) {
            items[i].quantity = max(items[i].quantity, quantity)
            for r in reasons where !items[i].reasons.contains(r) { items[i].reasons.append(r) }
        } else {
            items.append(
                PackingItem(item: name, category: PackCatalogue.category(name), quantity: quantity, reasons: reasons))
        }
    }

    mutating func exactly(_ name: String, _ quantity: Int, _ reason: String) {
        if let i = index(name) {
            items[i].quantity = quantity
            items[i].reasons.append(reason)
        } else {
            items.append(
                PackingItem(item: name, category: PackCatalogue.category(name), quantity: quantity, reasons: [reason]))
        }
    }

    mutating func remove(_ name: String) {
        let key = PackCatalogue.key(name)
        items.removeAll { PackCatalogue.key($0.item) == key }
    }
}

/// A trip day with its weather and what the packing rules read from it.
private struct PackDay {
    static let rainProbability = 50.0
    static let rainMm = 2.0
    static let windKmh = 40.0

    let day: TripDay
    let weather: DayWeather?
    let tempClass: Packer.TempClass
    let dayNumber: Int?

    init(_ day: TripDay, _ weather: DayWeather?, feels: PackingPreferences.Feels) {
        self.day = day
        self.weather = weather
        self.tempClass = Packer.tempClass(weather, feels: feels)
        self.dayNumber = PackDate.parse(day.date)
    }

    /// Whether the day has a temperature to classify.
    var hasForecast: Bool { weather?.tempMaxC != nil || weather?.tempMinC != nil }
    var climatology: Bool { weather?.climatology ?? false }

    var rainy: Bool {
        (weather?.precipitationProbability ?? 0) >= Self.rainProbability
            || (weather?.precipitationMm ?? 0) >= Self.rainMm
    }
    var snowy: Bool { (weather?.snowfallCm ?? 0) > 0 }
    var windy: Bool { (weather?.windMaxKmh ?? 0) >= Self.windKmh }
    /// WMO 0–2 (clear to partly cloudy), or no code and no rain.
    var sunny: Bool {
        guard let w = weather else { return false }
        if let code = w.weatherCode { return (0...2).contains(code) }
        return !rainy
    }
    var hotAndSunny: Bool { tempClass == .hot && sunny }

    /// `Thu`.
    var weekday: String { dayNumber.map(PackDate.weekday) ?? "" }
    /// `Denver Thu 2026-12-03`.
    var label: String { dayNumber == nil ? "\(day.place) \(day.date)" : "\(day.place) \(weekday) \(day.date)" }
}

/// Weather by (place, date): exact place first, then ignoring case.
private struct PackWeatherIndex {
    private var exact: [String: DayWeather] = [:]
    private var folded: [String: DayWeather] = [:]

    init(_ list: [DayWeather]) {
        for w in list {
            Self.keep(w, in: &exact, key: w.place + "\n" + w.date)
            Self.keep(w, in: &folded, key: PackCatalogue.key(w.place) + "\n" + w.date)
        }
    }

    /// A forecast beats climatology, then the newer issue wins.
    private static func keep(_ w: DayWeather, in map: inout [String: DayWeather], key: String) {
        if let have = map[key] {
            if have.climatology != w.climatology {
                if w.climatology { return }
            } else if have.issued >= w.issued {
                return
            }
        }
        map[key] = w
    }

    func weather(for day: TripDay) -> DayWeather? {
        exact[day.place + "\n" + day.date] ?? folded[PackCatalogue.key(day.place) + "\n" + day.date]
    }
}

/// Numbers in the traveller's units.
private struct PackUnits {
    let imperial: Bool

    init(_ units: PackingPreferences.Units) { imperial = units == .imperial }

    /// `31 °F`, `−1 °C`… (`—` when missing).
    func temp(_ c: Double?) -> String {
        guard let c else { return "—" }
        return imperial ? "\(Self.number(c * 9 / 5 + 32, 0)) °F" : "\(Self.number(c, 0)) °C"
    }
    /// `70 %`.
    func percent(_ p: Double?) -> String { p.map { "\(Self.number($0, 0)) %" } ?? "—" }
    /// `12 mm`, `0.47 in`.
    func rain(_ mm: Double?) -> String {
        guard let mm else { return "—" }
        return imperial ? "\(Self.number(mm / 25.4, 2)) in" : "\(Self.number(mm, 1)) mm"
    }
    /// The number only: `4` (see `snowUnit`).
    func snow(_ cm: Double?) -> String { cm.map { Self.number(imperial ? $0 / 2.54 : $0, 1) } ?? "—" }
    var snowUnit: String { imperial ? "in" : "cm" }
    /// The number only: `45` (see `windUnit`).
    func wind(_ kmh: Double?) -> String { kmh.map { Self.number(imperial ? $0 / 1.609344 : $0, 0) } ?? "—" }
    var windUnit: String { imperial ? "mph" : "km/h" }

    /// Rounded to `decimals`, without trailing zeros: `4`, `0.5`, `-3`.
    static func number(_ x: Double, _ decimals: Int) -> String {
        guard x.isFinite else { return "—" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let r = (x * scale).rounded()
        guard r != 0 else { return "0" }
        guard r.magnitude < 1e15 else { return "\(x)" }
        let n = Int64(r)
        let m = n.magnitude
        let s = UInt64(scale)
        var out = (n < 0 ? "-" : "") + String(m / s)
        if m % s != 0 {
            var frac = String(m % s)
            while frac.count < decimals { frac = "0" + frac }
            while frac.hasSuffix("0") { frac.removeLast() }
            out += "." + frac
        }
        return out
    }
}

/// `YYYY-MM-DD` dates as days since 1970-01-01.
private enum PackDate {
    static func parse(_ text: String) -> Int? {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-") else { return nil }
        func digits(_ r: Range<Int>) -> Int? {
            var v = 0
            for i in r {
                let c = b[i] &- 48
                guard c < 10 else { return nil }
                v = v * 10 + Int(c)
            }
            return v
        }
        guard let y = digits(0..<4), let m = digits(5..<7), let d = digits(8..<10), (1...12).contains(m), d >= 1,
            d <= Timestamp.daysInMonth(y, m)
        else { return nil }
        return Timestamp.daysFromCivil(y, m, d)
    }

    static func format(_ day: Int) -> String {
        let (y, m, d) = Timestamp.civilFromDays(day)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var year = String(y)
        while year.count < 4 { year = "0" + year }
        return "\(year)-\(two(m))-\(two(d))"
    }

    /// `Thu` (1970-01-01 was a Thursday).
    static func weekday(_ day: Int) -> String {
        ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((day % 7) + 7) % 7]
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
