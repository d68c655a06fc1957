/// The time-zone spellings US water agencies use, mapped to IANA zones and UTC offsets.
public enum TimeZones {
    /// NWPS' POSIX TZ strings: `PST8PDT` → `America/Los_Angeles`, `MST7` → `America/Phoenix`,
    /// `GMT0GMT` → `UTC`. Nil when the string has no known IANA equivalent.
    public static func iana(posix: String) -> String? {
        switch posix.trimmingSpaces().uppercased() {
        case "EST5EDT": "America/New_York"
        case "EST5": "America/Panama"
        case "CST6CDT": "America/Chicago"
        case "CST6": "America/Regina"
        case "MST7MDT": "America/Denver"
        case "MST7": "America/Phoenix"
        case "PST8PDT": "America/Los_Angeles"
        case "AKST9AKDT": "America/Anchorage"
        case "HST10", "HST10HDT": "Pacific/Honolulu"
        case "AST4", "AST4ADT": "America/Puerto_Rico"
        case "SST11": "Pacific/Pago_Pago"
        case "CHST-10": "Pacific/Guam"
        case "GMT0GMT", "GMT0", "UTC0", "UTC", "GMT", "UTC0UTC", "Z": "UTC"
        default: nil
        }
    }

    /// USGS zone abbreviations (`timeZoneInfo.defaultTimeZone.zoneAbbreviation`, OGC
    /// `time_zone_abbreviation`): `CST` → `America/Chicago`; `MST` → `America/Denver`, or
    /// `America/Phoenix` for a site without daylight saving time. Nil for an unknown abbreviation.
    public static func iana(abbreviation: String, usesDST: Bool) -> String? {
        switch abbreviation.trimmingSpaces().uppercased() {
        case "EST", "EDT": "America/New_York"
        case "CST", "CDT": "America/Chicago"
        case "MST", "MDT": usesDST ? "America/Denver" : "America/Phoenix"
        case "PST", "PDT": "America/Los_Angeles"
        case "AKST", "AKDT": "America/Anchorage"
        case "HST", "HDT": "Pacific/Honolulu"
        case "AST", "ADT": "America/Puerto_Rico"
        case "SST": "Pacific/Pago_Pago"
        case "CHST": "Pacific/Guam"
        case "UTC", "GMT", "Z": "UTC"
        default: nil
        }
    }

    /// The UTC offset an abbreviation stands for, as in RDB's `tz_cd`: `EST` → -18000,
    /// `EDT` → -14400. Nil for an unknown abbreviation.
    public static func offsetSeconds(abbreviation: String) -> Int? {
        let hours: Int? =
            switch abbreviation.trimmingSpaces().uppercased() {
            case "UTC", "GMT", "Z": 0
            case "ADT": -3
            case "AST", "EDT": -4
            case "EST", "CDT": -5
            case "CST", "MDT": -6
            case "MST", "PDT": -7
            case "PST", "AKDT": -8
            case "AKST", "HDT": -9
            case "HST": -10
            case "SST": -11
            case "CHST": 10
            default: nil
            }
        return hours.map { $0 * 3600 }
    }
}
