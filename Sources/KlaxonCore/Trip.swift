/// A saved trip: where and when, what for, and how its traveller packs. Owned by one owner.
public struct Trip: Sendable, Hashable, Codable {
    public var name: String
    public var owner: String
    /// In date order.
    public var stops: [Stop]
    public var purpose: Purpose
    /// `swimming`, `formal`, `hiking`, … (lowercased).
    public var activities: [String]
    public var preferences: PackingPreferences
    /// Applied last, in order.
    public var overrides: [PackingOverride]

    public init(
        name: String, owner: String, stops: [Stop], purpose: Purpose = .leisure, activities: [String] = [],
        preferences: PackingPreferences = PackingPreferences(), overrides: [PackingOverride] = []
    ) {
        self.name = name
        self.owner = owner
        self.stops = stops
        self.purpose = purpose
        self.activities = activities
        self.preferences = preferences
        self.overrides = overrides
    }

    public enum Purpose: String, Sendable, Hashable, Codable, CaseIterable {
        case business, leisure
    }

    public struct Stop: Sendable, Hashable, Codable {
        /// As the traveller wrote it (`Denver`, `Denver, CO`).
        public var place: String
        public var latitude: Double?
        public var longitude: Double?
        /// IANA zone (from geocoding), when known.
        public var timeZone: String?
        /// The arrival date, `YYYY-MM-DD` (local).
        public var arrive: String
        /// Nights at the stop (0 = a day visit).
        public var nights: Int

        public init(
            place: String, latitude: Double? = nil, longitude: Double? = nil, timeZone: String? = nil, arrive: String,
            nights: Int
        ) {
            self.place = place
            self.latitude = latitude
            self.longitude = longitude
            self.timeZone = timeZone
            self.arrive = arrive
            self.nights = nights
        }
    }
}

/// How a traveller likes to pack.
public struct PackingPreferences: Sendable, Hashable, Codable {
    /// Can wash clothes during the trip (every `laundryEvery` days).
    public var laundry: Bool
    public var laundryEvery: Int
    /// Wears bottoms (trousers, skirts) more than one day.
    public var rewearBottoms: Bool
    public var feels: Feels
    public var units: Units

    public init(
        laundry: Bool = false, laundryEvery: Int = 4, rewearBottoms: Bool = false, feels: Feels = .neutral,
        units: Units = .metric
    ) {
        self.laundry = laundry
        self.laundryEvery = laundryEvery
        self.rewearBottoms = rewearBottoms
        self.feels = feels
        self.units = units
    }

    /// How the traveller feels temperature: shifts the temperature classes.
    public enum Feels: String, Sendable, Hashable, Codable, CaseIterable {
        case runsCold = "runs-cold"
        case cold
        case neutral
        case warm
        case runsHot = "runs-hot"
    }

    public enum Units: String, Sendable, Hashable, Codable, CaseIterable {
        case metric, imperial
    }
}

/// A traveller's own change to the list, applied after the algorithm.
public struct PackingOverride: Sendable, Hashable, Codable {
    public enum Action: String, Sendable, Hashable, Codable {
        /// Always pack `quantity` (default 1) of the item.
        case add
        /// Never pack the item.
        case remove
        /// Pack exactly `quantity`, whatever the weather says.
        case quantity
    }

    public var item: String
    public var action: Action
    public var quantity: Int?

    public init(item: String, action: Action, quantity: Int? = nil) {
        self.item = item
        self.action = action
        self.quantity = quantity
    }
}

/// One day's weather at one place, as a forecast (or climatology) gives it. Metric units.
public struct DayWeather: Sendable, Hashable, Codable {
    /// The stop's place (as the trip names it) or a location key.
    public var place: String
    /// Local date, `YYYY-MM-DD`.
    public var date: String
    public var tempMaxC: Double?
    public var tempMinC: Double?
    public var precipitationMm: Double?
    /// 0–100.
    public var precipitationProbability: Double?
    public var snowfallCm: Double?
    public var windMaxKmh: Double?
    /// WMO weather code.
    public var weatherCode: Int?
    /// `open-meteo`, `owm`, `climatology`, …
    public var source: String
    /// When the forecast was issued (or fetched), UTC seconds.
    public var issued: Int64
    /// True for a climatological estimate (beyond the forecast horizon).
    public var climatology: Bool

    public init(
        place: String, date: String, tempMaxC: Double? = nil, tempMinC: Double? = nil, precipitationMm: Double? = nil,
        precipitationProbability: Double? = nil, snowfallCm: Double? = nil, windMaxKmh: Double? = nil,
        weatherCode: Int? = nil, source: String, issued: Int64, climatology: Bool = false
    ) {
        self.place = place
        self.date = date
        self.tempMaxC = tempMaxC
        self.tempMinC = tempMinC
        self.precipitationMm = precipitationMm
        self.precipitationProbability = precipitationProbability
        self.snowfallCm = snowfallCm
        self.windMaxKmh = windMaxKmh
        self.weatherCode = weatherCode
        self.source = source
        self.issued = issued
        self.climatology = climatology
    }
}

/// An active weather alert (NWS) for a place.
public struct WeatherAlert: Sendable, Hashable, Codable {
    public var id: String
    /// `Flood Watch`.
    public var event: String
    /// `Extreme`, `Severe`, `Moderate`, `Minor`, `Unknown`.
    public var severity: String
    public var headline: String?
    public var areaDescription: String?
    /// UTC seconds.
    public var onset: Int64?
    public var ends: Int64?
    public var url: String?

    public init(
        id: String, event: String, severity: String, headline: String? = nil, areaDescription: String? = nil,
        onset: Int64? = nil, ends: Int64? = nil, url: String? = nil
    ) {
        self.id = id
        self.event = event
        self.severity = severity
        self.headline = headline
        self.areaDescription = areaDescription
        self.onset = onset
        self.ends = ends
        self.url = url
    }

    /// NWS "critical" for a traveller: Extreme or Severe.
    public var isCritical: Bool { severity == "Extreme" || severity == "Severe" }
}
