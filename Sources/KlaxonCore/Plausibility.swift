/// Which readings cannot be believed: a value outside the physical range of its metric, or a source
/// quality code that says the value was rejected, questioned or not measured normally.
///
/// A suspect reading is stored and shown as such, but by default it neither fires nor resolves an
/// alert and stays out of statistics: one glitch (a CWMS daily flow of −8,455,545 cfs with quality 0)
/// must not page anyone nor turn a gauge's mean negative.
public enum Plausibility {
    /// The values a metric can physically take, in each unit it comes in.
    public struct PhysicalRange: Sendable {
        /// The metric's base name: it also covers `NAME.…` (`discharge.mean`, `discharge.res_out`).
        public var metric: String
        /// Unit keys (see `unitKey`) and the range in that unit; the first is assumed when a
        /// reading has no unit. A reading in a unit not listed is not range-checked.
        public var units: [(unit: String, range: ClosedRange<Double>)]
        /// Why these bounds, for people.
        public var note: String
    }

    /// The ranges, by metric. Generous on purpose: they catch glitches (sentinels, sign and scale
    /// errors), not unusual weather.
    public static let ranges: [PhysicalRange] = {
        let cfs = -1_000_000.0...5_000_000.0
        let stage = -100.0...5_000.0
        let elevation = -1_500.0...30_000.0
        func cms(_ r: ClosedRange<Double>) -> ClosedRange<Double> {
            (r.lowerBound * 0.028_316_846_592)...(r.upperBound * 0.028_316_846_592)
        }
        func meters(_ r: ClosedRange<Double>) -> ClosedRange<Double> {
            (r.lowerBound * 0.3048)...(r.upperBound * 0.3048)
        }
        // Weather stations: the records are −89.2 °C (Vostok), 56.7 °C (Death Valley), a 408 km/h
        // gust (Barrow Island), 870 and 1084 hPa at sea level; station pressure is lower up a mountain.
        let air: [(String, ClosedRange<Double>)] = [("c", -100...70), ("f", -148...158), ("k", 173.15...343.15)]
        let airNote = "−100 to 70 °C (the records are −89.2 and 56.7 °C)"
        let wind: [(String, ClosedRange<Double>)] = [
            ("km/h", 0...500), ("mph", 0...311), ("m/s", 0...139), ("kn", 0...270), ("kt", 0...270),
        ]
        let windNote = "0 to 500 km/h (the record gust is 408 km/h)"
        let pressure: [(String, ClosedRange<Double>)] = [
            ("hpa", 300...1_100), ("mb", 300...1_100), ("pa", 30_000...110_000), ("kpa", 30...110),
            ("inhg", 8.86...32.49),
        ]
        let pressureNote = "300 to 1,100 hPa: sea level's records are 870 and 1,084; a summit station reads lower"
        let flow: [(String, ClosedRange<Double>)] = [
            ("ft3/s", cfs), ("cfs", cfs), ("m3/s", cms(cfs)), ("cms", cms(cfs)),
        ]
        let flowNote =
            "−1,000,000 to 5,000,000 cfs: twice the Mississippi's 1927 flood; tidal rivers run backwards, so some negative flow is real"
        return [
            PhysicalRange(metric: "discharge", units: flow, note: flowNote),
            PhysicalRange(metric: "flow", units: flow, note: flowNote),
            PhysicalRange(
                metric: "gage_height", units: [("ft", stage), ("m", meters(stage))],
                note: "−100 to 5,000 ft above the gauge's datum"),
            PhysicalRange(
                metric: "stage", units: [("ft", stage), ("m", meters(stage))],
                note: "−100 to 5,000 ft above the gauge's datum"),
            PhysicalRange(
                metric: "elevation", units: [("ft", elevation), ("m", meters(elevation))],
                note: "−1,500 to 30,000 ft: the Dead Sea to Everest"),
            PhysicalRange(
                metric: "water_temperature", units: [("c", -5...50), ("f", 23...122)], note: "−5 to 50 °C"),
            PhysicalRange(
                metric: "precipitation", units: [("in", 0...1_000), ("mm", 0...25_400)],
                note: "0 to 1,000 in (cumulative series included)"),
            PhysicalRange(metric: "temperature", units: air, note: airNote),
            PhysicalRange(metric: "dewpoint", units: air, note: airNote),
            PhysicalRange(metric: "wind_chill", units: air, note: airNote),
            PhysicalRange(metric: "heat_index", units: air, note: airNote),
            PhysicalRange(
                metric: "humidity", units: [("%", 0...100), ("percent", 0...100)], note: "0 to 100 % relative humidity"),
            PhysicalRange(metric: "wind_speed", units: wind, note: windNote),
            PhysicalRange(metric: "wind_gust", units: wind, note: windNote),
            PhysicalRange(
                metric: "wind_direction", units: [("", 0...360)], note: "0 to 360 degrees from true north"),
            PhysicalRange(metric: "pressure", units: pressure, note: pressureNote),
            PhysicalRange(metric: "sea_level_pressure", units: pressure, note: pressureNote),
            PhysicalRange(
                metric: "visibility", units: [("m", 0...200_000), ("km", 0...200), ("mi", 0...125)],
                note: "0 to 200 km"),
            PhysicalRange(metric: "aqi", units: [("", 0...1_000), ("aqi", 0...1_000)], note: "0 to 1,000"),
            PhysicalRange(metric: "pm25", units: [("ug/m3", 0...2_000)], note: "0 to 2,000 µg/m³"),
            PhysicalRange(metric: "pm10", units: [("ug/m3", 0...10_000)], note: "0 to 10,000 µg/m³ (dust storms)"),
        ]
    }()

    /// `ranges` by metric.
    static let rangesByMetric: [String: PhysicalRange] = {
        var out: [String: PhysicalRange] = [:]
        for r in ranges { out[r.metric] = r }
        return out
    }()

    /// NWIS qualifiers that say the instrument was not measuring the river normally. (NWIS sends
    /// most of them without a value, which is a gap; with a value, the value is suspect.)
    public static let suspectQualifiers: Set<String> = ["Eqp", "Ice", "Mnt", "Tst", "Fld", "***"]

    /// NWS (MADIS) quality-control letters of `api.weather.gov` observations that say a value is not
    /// to be believed: `X` rejected, `Q` questioned, `B` subjectively bad. (`Z` no QC yet, `C` coarse
    /// pass, `S` screened, `V` verified, `G` subjectively good are fine.)
    public static let nwsSuspectCodes: Set<String> = ["X", "Q", "B"]

    /// CWMS quality bits (HEC's convention): 1 screened, 2 okay, 4 missing, 8 questionable, 16 rejected.
    /// Unless the screened bit is set no other bit means anything: 0 is "not screened", not "bad".
    public static let cwmsScreened: Int64 = 1
    public static let cwmsSuspectBits: Int64 = 4 | 8 | 16

    /// The range check's unit key: lowercased, spaces, `^` and degree signs dropped, `µ` → `u`, `³` → `3`
    /// (`ft³/s` → `ft3/s`, `deg C` → `c`, `µg/m³` → `ug/m3`); "" for no unit.
    public static func unitKey(_ unit: String?) -> String {
        guard let unit else { return "" }
        var out = ""
        for ch in unit.lowercased() {
            switch ch {
            case " ", "°", "^": continue
            case "µ", "μ": out.append("u")
            case "³": out.append("3")
            default: out.append(ch)
            }
        }
        if out.hasPrefix("deg") { out.removeFirst(3) }
        return out
    }

    /// The physical range of a metric in a unit; nil when the metric has none or the unit is not one
    /// the table knows.
    public static func range(metric: String, unit: String?) -> ClosedRange<Double>? {
        let base = metric.firstIndex(of: ".").map { String(metric[..<$0]) } ?? metric
        guard let entry = rangesByMetric[base] else { return nil }
        guard let unit else { return entry.units.first?.range }
        let key = unitKey(unit)
        return entry.units.first { $0.unit == key }?.range
    }

    /// Whether a source's quality code says the value is not to be believed: a CWMS code (from source
    /// `cwms`, or written `cwms:CODE`) that is screened and missing, questionable or rejected; an NWS
    /// observation's quality-control letter (source `nws-observations`, or written `nws:X`) of
    /// `nwsSuspectCodes`; any
    /// other source's qualifiers (`:` or `,` between them) holding one of `suspectQualifiers`.
    public static func qualityIsSuspect(_ quality: String, source: String?) -> Bool {
        if source == "nws-observations" || quality.hasPrefix("nws:") {
            let code = quality.hasPrefix("nws:") ? String(quality.dropFirst(4)) : quality
            return nwsSuspectCodes.contains(code)
        }
        if source == "cwms" || quality.hasPrefix("cwms:") {
            let digits = quality.hasPrefix("cwms:") ? quality.dropFirst(5) : Substring(quality)
            guard let code = Int64(digits) else { return false }
            return code & cwmsScreened != 0 && code & cwmsSuspectBits != 0
        }
        return quality.split(whereSeparator: { $0 == ":" || $0 == "," }).contains {
            suspectQualifiers.contains(String($0))
        }
    }

    /// Whether a reading is suspect (out of its metric's range, or flagged so by its source).
    public static func isSuspect(_ r: Reading) -> Bool {
        var check = SuspectCheck()
        return check.isSuspect(r)
    }

    /// `isSuspect` for a stream of readings: remembers the last metric's range and the last quality
    /// code's verdict, so a batch of one series costs two string comparisons a reading.
    public struct SuspectCheck: Sendable {
        private var metric: String?
        private var unit: String?
        private var range: ClosedRange<Double>?
        private var quality: String?
        private var source: String?
        private var qualitySuspect = false

        public init() {}

        public mutating func isSuspect(_ r: Reading) -> Bool {
            if r.metric != metric || r.unit != unit {
                metric = r.metric
                unit = r.unit
                range = Plausibility.range(metric: r.metric, unit: r.unit)
            }
            if let range, !range.contains(r.value) { return true }
            guard let q = r.quality else { return false }
            if q != quality || r.source != source {
                quality = q
                source = r.source
                qualitySuspect = Plausibility.qualityIsSuspect(q, source: r.source)
            }
            return qualitySuspect
        }
    }
}
