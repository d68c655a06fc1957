import Foundation

/// A person's own quiet hours (issue 43, `quiet 22:00-07:00 Europe/Berlin`): a daily window in their
/// IANA time zone (UTC when they name none), applied to the deliveries of their watches as a route's
/// quiet hours with the `defer` policy: what falls in the window, a resolve too, is held to the
/// window's end and sent then; nothing is dropped. Their watches' rules carry it as the label
/// `watch_quiet` (`labelValue`), so whichever daemon dispatches reads it from the transition.
public struct WatchQuietHours: Sendable, Hashable, Codable {
    /// Minutes after local midnight (0…1440).
    public var from: Int
    public var to: Int
    /// An IANA time zone identifier as `TimeZone.knownTimeZoneIdentifiers` spells it, or `UTC`.
    public var timeZone: String

    /// The label a person's quiet hours ride on in their watches' transitions (not an identifying
    /// label: `AlertIdentity` leaves it out, so changing them does not make another alert).
    public static let label = "watch_quiet"
    /// The zone of quiet hours set without one.
    public static let defaultZone = "UTC"
    /// The longest zone name read (the longest IANA name is 32 characters).
    public static let maxZoneLength = 64

    /// Nil unless both times are 0…1440 minutes, differ, and the zone is one `zone(named:)` knows.
    public init?(from: Int, to: Int, timeZone: String = WatchQuietHours.defaultZone) {
        guard (0...1440).contains(from), (0...1440).contains(to), from != to,
            let zone = Self.zone(named: timeZone)
        else { return nil }
        self.from = from
        self.to = to
        self.timeZone = zone
    }

    /// The quiet hours the dispatcher's quiet-hours stage applies: every day, `defer`.
    public var quietHours: QuietHours {
        QuietHours(
            timeZone: TimeZone(identifier: timeZone) ?? TimeZone(identifier: "UTC")!, from: from, to: to,
            policy: .defer)
    }

    /// `22:00–07:00 Europe/Berlin`, for answers.
    public var words: String { "\(Self.clock(from))–\(Self.clock(to)) \(timeZone)" }

    /// `22:00-07:00 Europe/Berlin`: the value of the `watch_quiet` label, read back by `init(labelValue:)`.
    public var labelValue: String { "\(Self.clock(from))-\(Self.clock(to)) \(timeZone)" }

    /// The quiet hours a `watch_quiet` label holds; nil for anything else.
    public init?(labelValue: String) {
        guard labelValue.utf8.count <= 12 + Self.maxZoneLength else { return nil }
        let parts = labelValue.split(separator: " ")
        guard parts.count == 2 else { return nil }
        let times = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard times.count == 2, let from = QuietHours.minutes(String(times[0])),
            let to = QuietHours.minutes(String(times[1]))
        else { return nil }
        self.init(from: from, to: to, timeZone: String(parts[1]))
    }

    static func clock(_ minutes: Int) -> String {
        let h = minutes / 60
        let m = minutes % 60
        return (h < 10 ? "0" : "") + "\(h):" + (m < 10 ? "0" : "") + "\(m)"
    }

    /// Every zone Foundation knows, by lowercased name (read once).
    static let known: [String: String] = {
        var out: [String: String] = [:]
        for id in TimeZone.knownTimeZoneIdentifiers { out[id.lowercased()] = id }
        for id in ["UTC", "GMT"] { out[id.lowercased()] = id }
        return out
    }()

    /// The IANA name `text` means, spelled as the zone database spells it (`europe/berlin` →
    /// `Europe/Berlin`); nil for a name it does not list. Hostile text is looked up, never used as a
    /// path: only a name of the known list comes back.
    public static func zone(named text: String) -> String? {
        guard !text.isEmpty, text.utf8.count <= maxZoneLength else { return nil }
        return known[text.lowercased()]
    }

    /// Known zone names near `text` (a misspelling), for "did you mean".
    public static func zones(near text: String) -> [String] {
        guard text.utf8.count <= maxZoneLength else { return [] }
        return NearNames.near(text, among: known.values.sorted(), limit: 1)
    }
}
