/// One category of an air-quality index: a range of index values with its name, colour and advice.
public struct AQILevel: Sendable, Hashable {
    /// `Moderate`, `Unhealthy for Sensitive Groups`, `Very Poor`.
    public var name: String
    /// The lowest index value of the category (51 for Moderate on the US scale).
    public var at: Double
    /// The highest index value of the category (100 for Moderate on the US scale).
    public var upper: Double
    /// What the category means for health, in one sentence.
    public var advice: String
    /// The agency's colour, `#RRGGBB`.
    public var colour: String
    /// The colour in words (`green`), for plain-text messages.
    public var colourName: String
    /// A face that matches the category, for chat messages.
    public var emoji: String

    public init(
        name: String, at: Double, upper: Double, advice: String, colour: String, colourName: String, emoji: String
    ) {
        self.name = name
        self.at = at
        self.upper = upper
        self.advice = advice
        self.colour = colour
        self.colourName = colourName
        self.emoji = emoji
    }
}

/// An air-quality index scale: its categories from clean to worst. A `levels` rule names one with
/// `scale:` and gets its `alertLadder`; messages use `level(for:)` for the colour, emoji and advice.
///
/// Index values are integers by definition, but sources send fractions (the AQI WebSocket feed sends
/// `181.3946…`, WAQI sends sub-indices such as `29.4`). A fraction is rounded half up before it is
/// placed: 50.4 counts as 50 (Good), 50.5 as 51 (Moderate). This matches how EPA rounds a computed
/// AQI to an integer, and `alertLadder` places its boundaries at `at − 0.5` so that a `levels` rule
/// agrees with `level(for:)` on every value.
public struct AQIScale: Sendable, Hashable {
    /// `us-epa` or `india-naqi`: what a rule's `scale:` names.
    public var id: String
    /// `US EPA AQI`.
    public var title: String
    /// Ascending and contiguous; the first is the clean level (Good).
    public var levels: [AQILevel]

    public init(id: String, title: String, levels: [AQILevel]) {
        self.id = id
        self.title = title
        self.levels = levels
    }

    /// The US EPA Air Quality Index, with EPA's colours and AirNow's statements of what each category
    /// means (AirNow "AQI Basics").
    public static let usEPA = AQIScale(
        id: "us-epa", title: "US EPA AQI",
        levels: [
            AQILevel(
                name: "Good", at: 0, upper: 50,
                advice: "Air quality is satisfactory, and air pollution poses little or no risk.",
                colour: "#00E400", colourName: "green", emoji: "😀"),
            AQILevel(
                name: "Moderate", at: 51, upper: 100,
                advice:
                    "Air quality is acceptable; however, there may be a risk for some people, particularly those who are unusually sensitive to air pollution.",
                colour: "#FFFF00", colourName: "yellow", emoji: "🙂"),
            AQILevel(
                name: "Unhealthy for Sensitive Groups", at: 101, upper: 150,
                advice:
                    "Members of sensitive groups may experience health effects; the general public is less likely to be affected.",
                colour: "#FF7E00", colourName: "orange", emoji: "😐"),
            AQILevel(
                name: "Unhealthy", at: 151, upper: 200,
                advice:
                    "Some members of the general public may experience health effects; members of sensitive groups may experience more serious health effects.",
                colour: "#FF0000", colourName: "red", emoji: "😷"),
            AQILevel(
                name: "Very Unhealthy", at: 201, upper: 300,
                advice: "Health alert: the risk of health effects is increased for everyone.",
                colour: "#8F3F97", colourName: "purple", emoji: "🤢"),
            AQILevel(
                name: "Hazardous", at: 301, upper: 500,
                advice: "Health warning of emergency conditions: everyone is more likely to be affected.",
                colour: "#7E0023", colourName: "maroon", emoji: "😵"),
        ])

    /// India's National Air Quality Index (CPCB, 2014), with the CPCB's category colours and its
    /// statements of likely health impacts.
    public static let indiaNAQI = AQIScale(
        id: "india-naqi", title: "India National AQI",
        levels: [
            AQILevel(
                name: "Good", at: 0, upper: 50, advice: "Minimal impact.",
                colour: "#00B050", colourName: "dark green", emoji: "😀"),
            AQILevel(
                name: "Satisfactory", at: 51, upper: 100,
                advice: "May cause minor breathing discomfort to sensitive people.",
                colour: "#92D050", colourName: "light green", emoji: "🙂"),
            AQILevel(
                name: "Moderate", at: 101, upper: 200,
                advice:
                    "May cause breathing discomfort to people with lung disease such as asthma, and discomfort to people with heart disease, children and older adults.",
                colour: "#FFFF00", colourName: "yellow", emoji: "😐"),
            AQILevel(
                name: "Poor", at: 201, upper: 300,
                advice:
                    "May cause breathing discomfort to most people on prolonged exposure, and discomfort to people with heart disease.",
                colour: "#FF6500", colourName: "orange", emoji: "😷"),
            AQILevel(
                name: "Very Poor", at: 301, upper: 400,
                advice:
                    "May cause respiratory illness on prolonged exposure; the effect may be more pronounced in people with lung and heart diseases.",
                colour: "#FF0000", colourName: "red", emoji: "🤢"),
            AQILevel(
                name: "Severe", at: 401, upper: 500,
                advice:
                    "Affects healthy people and seriously impacts those with existing lung or heart diseases, even during light physical activity.",
                colour: "#C00000", colourName: "maroon", emoji: "😵"),
        ])

    /// The scale a rule's `scale:` names (`us-epa`, `india-naqi`; case and surrounding spaces ignored),
    /// or nil.
    public static func named(_ id: String) -> AQIScale? {
        var key = Substring(id)
        while let c = key.first, c.isWhitespace { key.removeFirst() }
        while let c = key.last, c.isWhitespace { key.removeLast() }
        switch key.lowercased() {
        case usEPA.id: return usEPA
        case indiaNAQI.id: return indiaNAQI
        default: return nil
        }
    }

    /// The level an AQI value falls in. The value is first rounded half up to an integer (50.4 → 50,
    /// Good; 50.5 → 51, Moderate on `us-epa`), then placed in the level whose range holds it. A value
    /// above the top of the scale (beyond 500) is in the top level. Nil for a negative or non-finite
    /// value: no index is below 0.
    public func level(for aqi: Double) -> AQILevel? {
        guard aqi.isFinite, aqi >= 0, !levels.isEmpty else { return nil }
        let rounded = (aqi + 0.5).rounded(.down)
        var found = levels[0]
        for level in levels where rounded >= level.at { found = level }
        return found
    }

    /// The ladder for a `levels` rule: every level above the first (an alert fires on leaving Good),
    /// ascending, each starting at its lower bound minus 0.5. With the rule's `value >= at`, a value
    /// then changes level exactly where `level(for:)` does: 50.49 stays Good, 50.5 is Moderate.
    public var alertLadder: [LevelsRule.Level] {
        levels.dropFirst().map { LevelsRule.Level(name: $0.name, at: $0.at - 0.5) }
    }
}

/// The US EPA Air Quality Index from pollutant concentrations, with the breakpoints EPA published in
/// its 2024 revision (effective 2024-05-06; Technical Assistance Document EPA-454/B-24-002).
///
/// Each function truncates the concentration to the table's precision, finds the breakpoint row
/// `BPlo…BPhi` that holds it and applies EPA's linear formula
/// `AQI = (Ihi − Ilo) / (BPhi − BPlo) × (C − BPlo) + Ilo`, rounded half up to an integer. The
/// arithmetic is done exactly, in whole table units, so a result that is exactly `….5` (O3 8-hour
/// 0.078 ppm → 125.5) rounds up (126) rather than falling either side by binary floating-point error.
/// A negative or non-finite concentration gives nil.
///
/// The concentration must already be the average the table is defined for (24-hour PM2.5, 8-hour
/// O3); an hourly value gives only an indication. AirNow's NowCast is not computed here.
public enum EPAAQI {
    /// A row of a breakpoint table, concentrations in table units (tenths of µg/m³, ppb).
    struct Row {
        let low: Int
        let high: Int
        let indexLow: Int
        let indexHigh: Int
    }

    /// PM2.5, 24-hour, tenths of µg/m³.
    static let pm25: [Row] = [
        Row(low: 0, high: 90, indexLow: 0, indexHigh: 50),
        Row(low: 91, high: 354, indexLow: 51, indexHigh: 100),
        Row(low: 355, high: 554, indexLow: 101, indexHigh: 150),
        Row(low: 555, high: 1254, indexLow: 151, indexHigh: 200),
        Row(low: 1255, high: 2254, indexLow: 201, indexHigh: 300),
        Row(low: 2255, high: 3254, indexLow: 301, indexHigh: 500),
    ]

    /// O3, 8-hour, thousandths of a ppm.
    static let o3EightHour: [Row] = [
        Row(low: 0, high: 54, indexLow: 0, indexHigh: 50),
        Row(low: 55, high: 70, indexLow: 51, indexHigh: 100),
        Row(low: 71, high: 85, indexLow: 101, indexHigh: 150),
        Row(low: 86, high: 105, indexLow: 151, indexHigh: 200),
        Row(low: 106, high: 200, indexLow: 201, indexHigh: 300),
    ]

    /// O3, 1-hour, thousandths of a ppm.
    static let o3OneHour: [Row] = [
        Row(low: 125, high: 164, indexLow: 101, indexHigh: 150),
        Row(low: 165, high: 204, indexLow: 151, indexHigh: 200),
        Row(low: 205, high: 404, indexLow: 201, indexHigh: 300),
        Row(low: 405, high: 604, indexLow: 301, indexHigh: 500),
    ]

    /// The AQI of a 24-hour PM2.5 concentration in µg/m³, truncated to 0.1 µg/m³ (9.09 → 9.0 → 50).
    /// 0.0–9.0 → 0–50, 9.1–35.4 → 51–100, 35.5–55.4 → 101–150, 55.5–125.4 → 151–200,
    /// 125.5–225.4 → 201–300, 225.5–325.4 → 301–500. EPA calls values above 325.4 "beyond the AQI";
    /// they give 500, the top of the scale.
    public static func fromPM25(_ ugm3: Double) -> Int? {
        guard let c = truncated(ugm3, scale: 10) else { return nil }
        return index(c, pm25, beyondTop: 500)
    }

    /// The AQI of an 8-hour O3 concentration in ppm, truncated to 0.001 ppm.
    /// 0.000–0.054 → 0–50, 0.055–0.070 → 51–100, 0.071–0.085 → 101–150, 0.086–0.105 → 151–200,
    /// 0.106–0.200 → 201–300. Above 0.200 ppm EPA does not use the 8-hour value: nil, and the AQI
    /// comes from the 1-hour O3 (`fromO3OneHour`).
    public static func fromO3EightHour(_ ppm: Double) -> Int? {
        guard let c = truncated(ppm, scale: 1000) else { return nil }
        return index(c, o3EightHour, beyondTop: nil)
    }

    /// The AQI of a 1-hour O3 concentration in ppm, truncated to 0.001 ppm.
    /// 0.125–0.164 → 101–150, 0.165–0.204 → 151–200, 0.205–0.404 → 201–300, 0.405–0.604 → 301–500;
    /// above 0.604, 500 (beyond the AQI). Below 0.125 ppm the 1-hour table defines nothing: nil.
    /// EPA reports O3 from the 8-hour value; where the 1-hour value is more protective (some areas,
    /// and always above 0.200 ppm 8-hour) the higher of the two indices is the O3 AQI.
    public static func fromO3OneHour(_ ppm: Double) -> Int? {
        guard let c = truncated(ppm, scale: 1000) else { return nil }
        return index(c, o3OneHour, beyondTop: 500)
    }

    /// A concentration in whole table units, truncated; nil when negative or not finite. The tiny
    /// allowance keeps a decimal such as 35.9 (stored as 35.899999…) from truncating to 35.8.
    static func truncated(_ value: Double, scale: Double) -> Int? {
        guard value.isFinite, value >= 0, value < 1e9 else { return nil }
        return Int((value * scale + 1e-6).rounded(.down))
    }

    /// EPA's linear interpolation in the row holding `c`, rounded half up; `beyondTop` above the last
    /// row, nil below the first.
    static func index(_ c: Int, _ rows: [Row], beyondTop: Int?) -> Int? {
        guard let first = rows.first, let last = rows.last, c >= first.low else { return nil }
        if c > last.high { return beyondTop }
        guard let row = rows.first(where: { c >= $0.low && c <= $0.high }) else { return nil }
        let numerator = (row.indexHigh - row.indexLow) * (c - row.low)
        let denominator = row.high - row.low
        guard denominator > 0 else { return row.indexLow }
        return row.indexLow + (2 * numerator + denominator) / (2 * denominator)
    }
}
