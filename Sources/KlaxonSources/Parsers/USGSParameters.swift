/// USGS parameter codes and the metric names Klaxon stores them under.
public enum USGSParameters {
    /// The parameters Klaxon names, with the unit their values come in.
    static let known: [(code: String, metric: String, unit: String)] = [
        ("00065", "gage_height", "ft"),
        ("00060", "discharge", "ft³/s"),
        ("00045", "precipitation", "in"),
        ("00010", "water_temperature", "°C"),
    ]

    /// `00065` → `gage_height`; a code Klaxon does not name → `p` + the code (`p00095`).
    public static func metric(forCode code: String) -> String {
        known.first { $0.code == code }?.metric ?? "p" + code
    }

    /// The parameter code for a metric name or a code: `gage_height` or `00065` → `00065`; `p00095`
    /// → `00095`; nil for a name Klaxon does not know.
    public static func code(for nameOrCode: String) -> String? {
        if let entry = known.first(where: { $0.metric == nameOrCode || $0.code == nameOrCode }) { return entry.code }
        if isCode(nameOrCode) { return nameOrCode }
        if nameOrCode.hasPrefix("p"), isCode(nameOrCode.dropFirst()) { return String(nameOrCode.dropFirst()) }
        return nil
    }

    /// The unit a parameter's values come in when the payload does not say (RDB).
    static func unit(forCode code: String) -> String? {
        known.first { $0.code == code }?.unit
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
