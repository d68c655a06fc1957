import KlaxonCore

/// Small helpers the parsers share.
enum ParserSupport {
    /// A UTC offset in seconds as a payload gives it: at most 26 hours either way (real zones span
    /// −12 to +14), else nil.
    static func utcOffset(_ seconds: Int?) -> Int64? {
        guard let seconds else { return 0 }
        return abs(seconds) <= 93_600 ? Int64(seconds) : nil
    }

    /// The local calendar date (`yyyy-MM-dd`) of a UTC time at `offset`; nil for a time beyond year
    /// ±5000 (a sum that would not overflow, but no forecast is dated there).
    static func localDate(_ time: Int64, offset: Int64) -> String? {
        guard abs(time) < 95_617_584_000 else { return nil }
        return String(Timestamp.format(time + offset).prefix(10))
    }

    /// A finite number, surrounding spaces allowed; nil for `""`, `Ice`, `nan`, `inf`.
    static func number(_ text: some StringProtocol) -> Double? {
        var s = Substring(text)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s.removeLast() }
        guard let first = s.utf8.first,
            first == UInt8(ascii: "-") || first == UInt8(ascii: "+")
                || first == UInt8(ascii: ".") || (first >= 48 && first <= 57),
            let v = Double(s), v.isFinite
        else { return nil }
        return v
    }

    /// 00:00Z of the calendar day a text starts with: `2022-01-03`, `2020-02-14T00:00:00.000`
    /// (a time without a zone after the date is ignored). Nil when it does not start with a valid date
    /// or a zone follows the time.
    static func calendarDay(_ text: some StringProtocol) -> Int64? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 10 else { return nil }
        if utf8.count > 10 {
            guard utf8[10] == UInt8(ascii: "T") || utf8[10] == UInt8(ascii: " ") else { return nil }
            // Only digits, ':' and '.' may follow: a zone would make it an instant, not a day.
            for b in utf8[11...] where !(b >= 48 && b <= 57) && b != UInt8(ascii: ":") && b != UInt8(ascii: ".") {
                return nil
            }
        }
        let date = String(decoding: utf8[0..<10], as: UTF8.self)
        return Timestamp.parse(date + "T00:00:00Z")
    }

    /// Units written one way across sources: `ft3/s`, `ft^3/s`, `cfs` → `ft³/s`; `deg C`, `degC` → `°C`.
    static func normalizeUnit(_ unit: String?) -> String? {
        guard let raw = unit else { return nil }
        let u = raw.trimmingSpaces()
        switch u {
        case "": return nil
        case "ft3/s", "ft^3/s", "cfs", "ft3/sec", "ft³/s": return "ft³/s"
        case "deg C", "degC", "C", "°C": return "°C"
        case "deg F", "degF", "F", "°F": return "°F"
        default: return u
        }
    }
}

/// Keeps the method series of one station and metric apart: the first series seen keeps the plain
/// metric, each further one gets `.<discriminator>` appended (`gage_height.69513`).
struct SeriesNamer {
    private var first: [SeriesKey: String] = [:]

    mutating func metric(_ base: String, station: String, discriminator: String) -> String {
        let key = SeriesKey(station: station, metric: base)
        if let seen = first[key] {
            return seen == discriminator ? base : base + "." + discriminator
        }
        first[key] = discriminator
        return base
    }
}

/// Collects stations by id, the first report of each winning.
struct StationList {
    private(set) var stations: [StationInfo] = []
    private var seen: Set<String> = []

    mutating func add(_ station: StationInfo) {
        guard seen.insert(station.id).inserted else { return }
        stations.append(station)
    }

    func contains(_ id: String) -> Bool { seen.contains(id) }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and line ends.
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let c = s.first, c.isWhitespace { s.removeFirst() }
        while let c = s.last, c.isWhitespace { s.removeLast() }
        return String(s)
    }
}
