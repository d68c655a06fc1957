import Foundation

/// A daily quiet period in a time zone, such as 22:00–07:00 in America/Chicago. It is correct across
/// midnight and across daylight-saving changes, because every decision is made on the local wall
/// clock of the zone, never on a fixed UTC offset.
public struct QuietHours: Sendable, Hashable {
    public enum Policy: String, Sendable, CaseIterable {
        /// Hold notifications and send one digest when the quiet period ends.
        case `defer`
        /// Do not send notifications that fall in the quiet period.
        case drop
    }

    public enum Weekday: String, Sendable, CaseIterable {
        case sun, mon, tue, wed, thu, fri, sat

        /// Also accepts full names (`monday`).
        public init?(name: String) {
            let lower = name.lowercased()
            guard
                let day = Weekday.allCases.first(where: {
                    lower == $0.rawValue || lower.hasPrefix($0.rawValue) && lower.hasSuffix("day")
                })
            else { return nil }
            self = day
        }

        /// Foundation's weekday number (Sunday = 1).
        var number: Int { Weekday.allCases.firstIndex(of: self)! + 1 }
    }

    public var timeZone: TimeZone
    /// Minutes after local midnight.
    public var from: Int
    public var to: Int
    /// The days a quiet period may start on (a 22:00–07:00 period that starts Friday ends Saturday morning).
    public var days: Set<Weekday>
    public var policy: Policy
    /// Alerts of this severity or higher are sent anyway.
    public var bypassSeverity: Severity?

    public init(
        timeZone: TimeZone, from: Int, to: Int, days: Set<Weekday> = Set(Weekday.allCases), policy: Policy = .defer,
        bypassSeverity: Severity? = nil
    ) {
        self.timeZone = timeZone
        self.from = from
        self.to = to
        self.days = days
        self.policy = policy
        self.bypassSeverity = bypassSeverity
    }

    /// Parses `HH:MM` (00:00–24:00) into minutes after midnight.
    public static func minutes(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2, let h = Int(parts[0]), let m = Int(parts[1]),
            (0...24).contains(h), (0...59).contains(m), h < 24 || m == 0
        else { return nil }
        return h * 60 + m
    }

    var calendar: Calendar {
        var c = Calendar(identifier: .gregorian)
        c.timeZone = timeZone
        return c
    }

    /// Whether an alert of `severity` is held back at `t`.
    public func mutes(_ severity: Severity, at t: Int64) -> Bool {
        if let bypass = bypassSeverity, severity >= bypass { return false }
        return isQuiet(at: t)
    }

    /// Whether `t` (UTC seconds) falls inside a quiet period.
    public func isQuiet(at t: Int64) -> Bool {
        currentPeriod(at: t) != nil
    }

    /// When the quiet period that contains `t` ends (UTC seconds), or nil when `t` is not quiet.
    public func end(of t: Int64) -> Int64? {
        currentPeriod(at: t)?.end
    }

    /// The quiet period containing `t`, as UTC start and end.
    func currentPeriod(at t: Int64) -> (start: Int64, end: Int64)? {
        guard from != to else { return nil }
        let cal = calendar
        let date = Date(timeIntervalSince1970: TimeInterval(t))
        // A period containing t started today or (when it crosses midnight) yesterday, local time.
        let today = cal.startOfDay(for: date)
        for dayOffset in [0, -1] {
            guard let day = cal.date(byAdding: .day, value: dayOffset, to: today) else { continue }
            let weekday = cal.component(.weekday, from: day)
            guard days.contains(where: { $0.number == weekday }) else { continue }
            guard let start = localTime(day, minutes: from, cal),
                let endDay = from < to ? day : cal.date(byAdding: .day, value: 1, to: day),
                let end = localTime(endDay, minutes: to, cal)
            else { continue }
            if t >= start && t < end { return (start, end) }
        }
        return nil
    }

    /// The instant a local wall-clock time happens on a local day. A time skipped by a daylight-saving
    /// change (02:30 on a spring-forward day) maps to the first instant after the gap.
    func localTime(_ day: Date, minutes: Int, _ cal: Calendar) -> Int64? {
        if minutes == 24 * 60 {
            return cal.date(byAdding: .day, value: 1, to: day).flatMap { localTime($0, minutes: 0, cal) }
        }
        var comps = cal.dateComponents([.year, .month, .day], from: day)
        comps.hour = minutes / 60
        comps.minute = minutes % 60
        comps.second = 0
        guard let d = cal.date(from: comps) else { return nil }
        let back = cal.dateComponents([.hour, .minute], from: d)
        if back.hour == comps.hour && back.minute == comps.minute {
            return Int64(d.timeIntervalSince1970)
        }
        // Skipped local time: the wall clock jumped over it; the period boundary is the jump itself.
        let next = cal.nextDate(
            after: d.addingTimeInterval(-7200), matching: DateComponents(hour: comps.hour, minute: comps.minute),
            matchingPolicy: .nextTime)
        return next.map { Int64($0.timeIntervalSince1970) }
    }
}
