/// EPA's NowCast for particulate matter: a weighted average of the last 12 hourly concentrations
/// that follows a fast change (a smoke plume) and settles to a 12-hour mean when the air is steady,
/// reported on the AQI in place of a 24-hour average until a full day is measured.
///
/// Written from EPA's "Transitioning to a new NowCast Method" / PM NowCast fact sheet and the AQI
/// Technical Assistance Document (EPA-454/B-24-002, May 2024):
/// 1. c₁ … c₁₂ are the hourly averages of the 12 most recent clock hours, c₁ the current one.
/// 2. The weight factor is w* = c_min ÷ c_max over the hours that have data; for PM it is floored:
///    w = max(w*, ½).
/// 3. NowCast = Σ wⁱ⁻¹·cᵢ ÷ Σ wⁱ⁻¹, where a missing hour is in neither sum.
/// 4. It is valid only when at least 2 of the 3 most recent hours (c₁, c₂, c₃) have data.
/// 5. It is truncated (PM2.5 to 0.1 µg/m³, PM10 to 1 µg/m³) and then placed on the AQI with the
///    24-hour breakpoints (`EPAAQI`, the 2024 PM2.5 table).
///
/// The arithmetic is plain `Double`: the sums are of at most 12 terms of positive numbers, and the
/// truncation allows for the last bit (`EPAAQI.truncated`) so 54.8 stored as 54.7999… stays 54.8.
/// All zeros give w = 1 (no change at all) and a NowCast of 0.
public enum NowCast {
    /// The pollutants the PM NowCast is defined for.
    public enum Pollutant: String, Sendable, CaseIterable {
        case pm25 = "pm2.5"
        case pm10 = "pm10"

        /// Accepts `pm2.5`, `pm25`, `pm10` in any case.
        public init?(name: String) {
            switch name.lowercased() {
            case "pm2.5", "pm25", "pm_2.5", "pm2_5": self = .pm25
            case "pm10", "pm_10": self = .pm10
            default: return nil
            }
        }

        /// The stored metric of its hourly concentrations (`pm25`, `pm10`), as the AQ parsers name them.
        public var metric: String { self == .pm25 ? "pm25" : "pm10" }
        /// The derived concentration series (`pm25.nowcast`).
        public var nowcastMetric: String { metric + ".nowcast" }
        /// The derived index series (`aqi.pm25.nowcast`).
        public var aqiMetric: String { "aqi." + metric + ".nowcast" }
        /// Table units per µg/m³ of the truncation: 10 (0.1 µg/m³) for PM2.5, 1 for PM10.
        var scale: Double { self == .pm25 ? 10 : 1 }
        /// The physically possible range of one hourly concentration, µg/m³ (`Plausibility`'s).
        public var plausible: ClosedRange<Double> { self == .pm25 ? 0...2_000 : 0...10_000 }
    }

    /// A NowCast and where it puts the air on the US AQI.
    public struct Result: Sendable, Hashable {
        /// µg/m³, truncated (PM2.5 to 0.1, PM10 to 1).
        public var nowcast: Double
        /// The integer AQI of the truncated NowCast (500 beyond the top of the scale).
        public var aqi: Int
        /// The AQI category (`Moderate`, `Unhealthy for Sensitive Groups`, …).
        public var category: String

        public init(nowcast: Double, aqi: Int, category: String) {
            self.nowcast = nowcast
            self.aqi = aqi
            self.category = category
        }
    }

    /// Why there is no NowCast for these hours.
    public enum Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        /// Fewer than 2 of the 3 most recent hours have data.
        case tooFewRecentHours(present: Int)
        /// More than 12 hours were given.
        case tooManyHours(Int)
        /// An hour's concentration is negative, not finite or beyond what can be measured (1-based
        /// hour, newest first).
        case implausible(hour: Int, value: Double, range: ClosedRange<Double>)

        public var description: String {
            switch self {
            case .tooFewRecentHours(let n):
                return
                    "needs at least 2 of the 3 most recent hours; \(n == 0 ? "none has" : n == 1 ? "only 1 has" : "\(n) have") data"
            case .tooManyHours(let n):
                return "takes at most 12 hourly values (newest first); \(n) given"
            case .implausible(let hour, let value, let range):
                let what = value.isFinite ? "\(value)" : "not a number"
                return "hour \(hour) (\(hour == 1 ? "the newest" : "\(hour - 1) h before the newest")): "
                    + "\(what) µg/m³ is outside \(Int(range.lowerBound))–\(Int(range.upperBound)) µg/m³"
            }
        }
    }

    /// The NowCast of up to 12 hourly concentrations in µg/m³, newest first, nil for an hour without
    /// data. Fewer than 12 values mean the older hours are missing.
    public static func compute(_ pollutant: Pollutant, hourly: [Double?]) -> Swift.Result<Result, Invalid> {
        guard hourly.count <= 12 else { return .failure(.tooManyHours(hourly.count)) }
        for (i, value) in hourly.enumerated() {
            if let value, !(value.isFinite && pollutant.plausible.contains(value)) {
                return .failure(.implausible(hour: i + 1, value: value, range: pollutant.plausible))
            }
        }
        let recent = hourly.prefix(3).reduce(0) { $0 + ($1 == nil ? 0 : 1) }
        guard recent >= 2 else { return .failure(.tooFewRecentHours(present: recent)) }
        let raw = weightedAverage(hourly)
        let truncated = Double(EPAAQI.truncated(raw, scale: pollutant.scale) ?? 0) / pollutant.scale
        let aqi = (pollutant == .pm25 ? EPAAQI.fromPM25(truncated) : EPAAQI.fromPM10(truncated)) ?? 0
        let category = AQIScale.usEPA.level(for: Double(aqi))?.name ?? ""
        return .success(Result(nowcast: truncated, aqi: aqi, category: category))
    }

    /// Σ wⁱ⁻¹·cᵢ ÷ Σ wⁱ⁻¹ over the hours with data, w = max(c_min ÷ c_max, ½); not truncated. The
    /// caller has checked that at least one hour has data and that none is negative.
    static func weightedAverage(_ hourly: [Double?]) -> Double {
        var low = Double.infinity
        var high = -Double.infinity
        for case let c? in hourly {
            low = min(low, c)
            high = max(high, c)
        }
        let w = high > 0 ? max(low / high, 0.5) : 1
        var numerator = 0.0
        var denominator = 0.0
        var weight = 1.0
        for c in hourly {
            if let c {
                numerator += weight * c
                denominator += weight
            }
            weight *= w
        }
        return denominator > 0 ? numerator / denominator : 0
    }
}

extension EPAAQI {
    /// PM10, 24-hour, µg/m³ (2024 TAD, Table 6; the two Hazardous rows joined, 425–604 → 301–500).
    static let pm10: [Row] = [
        Row(low: 0, high: 54, indexLow: 0, indexHigh: 50),
        Row(low: 55, high: 154, indexLow: 51, indexHigh: 100),
        Row(low: 155, high: 254, indexLow: 101, indexHigh: 150),
        Row(low: 255, high: 354, indexLow: 151, indexHigh: 200),
        Row(low: 355, high: 424, indexLow: 201, indexHigh: 300),
        Row(low: 425, high: 604, indexLow: 301, indexHigh: 500),
    ]

    /// The AQI of a 24-hour PM10 concentration in µg/m³, truncated to 1 µg/m³ (54.9 → 54 → 50).
    /// 0–54 → 0–50, 55–154 → 51–100, 155–254 → 101–150, 255–354 → 151–200, 355–424 → 201–300,
    /// 425–604 → 301–500; above 604 (beyond the AQI), 500.
    public static func fromPM10(_ ugm3: Double) -> Int? {
        guard let c = truncated(ugm3, scale: 1) else { return nil }
        return index(c, pm10, beyondTop: 500)
    }
}
