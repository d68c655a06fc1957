/// USGS parameter codes: the metric names Klaxon stores them under, and the unit of each.
public enum USGSParameters {
    /// A parameter code, the metric Klaxon names it (nil: `p` + the code) and the unit its values
    /// are in, written as Klaxon stores units (`ParserSupport.normalizeUnit`).
    struct Parameter {
        var code: String
        var metric: String?
        var unit: String
    }

    /// The one table of units by parameter code: every format (RDB, WaterServices JSON, OGC) takes
    /// a listed parameter's unit from here, so the same data gets the same unit whatever the format
    /// (RDB names no unit at all; the JSON services spell some differently). The units are NWIS's own.
    static let parameters: [Parameter] = [
        Parameter(code: "00065", metric: "gage_height", unit: "ft"),
        Parameter(code: "00060", metric: "discharge", unit: "ft³/s"),
        Parameter(code: "00045", metric: "precipitation", unit: "in"),
        Parameter(code: "00010", metric: "water_temperature", unit: "°C"),
        Parameter(code: "00011", unit: "°F"),
        Parameter(code: "00020", unit: "°C"),
        Parameter(code: "00021", unit: "°F"),
        Parameter(code: "00025", unit: "mm Hg"),
        Parameter(code: "00035", unit: "mph"),
        Parameter(code: "00036", unit: "deg"),
        Parameter(code: "00055", unit: "ft/s"),
        Parameter(code: "00061", unit: "ft³/s"),
        Parameter(code: "00062", unit: "ft"),
        Parameter(code: "00095", unit: "uS/cm @25C"),
        Parameter(code: "00300", unit: "mg/l"),
        Parameter(code: "00301", unit: "% saturatn"),
        Parameter(code: "00400", unit: "std units"),
        Parameter(code: "00480", unit: "ppt"),
        Parameter(code: "30207", unit: "m"),
        Parameter(code: "30208", unit: "m3/s"),
        Parameter(code: "62614", unit: "ft"),
        Parameter(code: "62615", unit: "ft"),
        Parameter(code: "63680", unit: "FNU"),
        Parameter(code: "72019", unit: "ft"),
        Parameter(code: "72255", unit: "ft/s"),
        Parameter(code: "80154", unit: "mg/l"),
        Parameter(code: "80155", unit: "tons/day"),
        Parameter(code: "99133", unit: "mg/l"),
    ]

    static let byCode: [String: Parameter] = Dictionary(
        parameters.map { ($0.code, $0) }, uniquingKeysWith: { first, _ in first })

    /// `00065` → `gage_height`; a code Klaxon does not name → `p` + the code (`p00095`).
    public static func metric(forCode code: String) -> String {
        byCode[code]?.metric ?? "p" + code
    }

    /// The parameter code for a metric name or a code: `gage_height` or `00065` → `00065`; `p00095`
    /// → `00095`; nil for a name Klaxon does not know.
    public static func code(for nameOrCode: String) -> String? {
        if let entry = parameters.first(where: { $0.metric == nameOrCode || $0.code == nameOrCode }) {
            return entry.code
        }
        if isCode(nameOrCode) { return nameOrCode }
        if nameOrCode.hasPrefix("p"), isCode(nameOrCode.dropFirst()) { return String(nameOrCode.dropFirst()) }
        return nil
    }

    /// The unit of a parameter's values: the table's for a listed code, else what the payload says
    /// (`given`, normalized), else nil.
    static func unit(forCode code: String, given: String? = nil) -> String? {
        byCode[code]?.unit ?? ParserSupport.normalizeUnit(given)
    }

    /// The metric for a parameter and statistic: instantaneous (`00000`, `00011`, none) is the plain
    /// metric; daily statistics get a suffix (`discharge.mean`, `gage_height.max`, `p00095.s00021`).
    static func metric(forCode code: String, statistic: String?) -> String {
        let base = metric(forCode: code)
        switch statistic {
        case nil, "", "00000", "00011": return base
        case "00001": return base + ".max"
        case "00002": return base + ".min"
        case "00003": return base + ".mean"
        case "00006": return base + ".sum"
        case let stat?: return base + ".s" + stat
        }
    }

    /// Five digits.
    static func isCode(_ s: some StringProtocol) -> Bool {
        s.utf8.count == 5 && s.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }

    /// Qualifiers that mean "no value": the gauge was iced, broken, out of season, flooded, …
    static let outageQualifiers: Set<String> = [
        "Ice", "Eqp", "Ssn", "Dis", "Bkw", "Fld", "Mnt", "Pr", "Rat", "Zfl", "***", "--", "Tst", "Dry",
    ]
}
