import Foundation

/// Times as people read them: in a zone (the station's, else the site's), to the minute.
enum SiteTime {
    /// `Mar 3 14:05`.
    static func short(_ t: Int64, zone: TimeZone) -> String {
        let c = components(t, zone)
        return "\(Ticks.months[c.month - 1]) \(c.day) \(two(c.hour)):\(two(c.minute))"
    }

    /// `2025-03-03 14:05 PST`.
    static func full(_ t: Int64, zone: TimeZone) -> String {
        let c = components(t, zone)
        let abbreviation = zone.abbreviation(for: Date(timeIntervalSince1970: Double(t))) ?? zone.identifier
        return "\(c.year)-\(two(c.month))-\(two(c.day)) \(two(c.hour)):\(two(c.minute)) \(abbreviation)"
    }

    /// `2025-03-03`, the local date.
    static func date(_ t: Int64, zone: TimeZone) -> String {
        let c = components(t, zone)
        return "\(c.year)-\(two(c.month))-\(two(c.day))"
    }

    /// `3 h 20 min ago`, `2 d ago`, `in 5 min` (how long from `t` to `now`).
    static func ago(_ t: Int64, now: Int64) -> String {
        let d = now - t
        let a = abs(d)
        let text: String
        if a < 60 {
            text = "\(a) s"
        } else if a < 3600 {
            text = "\(a / 60) min"
        } else if a < 86_400 {
            text = a % 3600 >= 60 ? "\(a / 3600) h \(a % 3600 / 60) min" : "\(a / 3600) h"
        } else {
            text = "\(a / 86_400) d" + (a % 86_400 >= 3600 ? " \(a % 86_400 / 3600) h" : "")
        }
        return d >= 0 ? "\(text) ago" : "in \(text)"
    }

    static func two(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }

    /// Calendar fields of `t` in `zone`, from the zone's offset at that instant (no Calendar: this
    /// runs for every label and title of a chart).
    static func components(_ t: Int64, _ zone: TimeZone) -> (
        year: Int, month: Int, day: Int, hour: Int, minute: Int
    ) {
        let local = t + Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t))))
        var days = local / 86_400
        var rest = local % 86_400
        if rest < 0 {
            rest += 86_400
            days -= 1
        }
        // Civil from days (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = Int(doy - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = Int(yoe + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day, Int(rest / 3600), Int(rest % 3600 / 60))
    }
}
