/// The persisted state of one alert (one rule on one series). Every rule kind keeps its state here,
/// so the store needs one table and replay one dictionary.
public struct AlertState: Sendable, Hashable, Codable {
    public enum Status: String, Sendable, Codable {
        case inactive, pending, firing
    }

    public var status: Status = .inactive
    /// When the current status began: pending since, or firing since.
    public var since: Int64?
    /// `levels`: the level the alert is at, by name (so an edited ladder keeps working): the one
    /// announced, or one a `direction` rule moved to without a word.
    public var level: String?
    /// `levels`: the level last announced, while `level` has moved on without a word (a `worse` rule
    /// falling); nil when `level` is the one announced.
    public var announced: String?
    /// `levels`: a level waiting out `min_dwell`, and since when the value has been away from the announced level.
    public var candidate: String?
    public var candidateSince: Int64?
    /// The time and value of the last reading this alert saw. Readings at or before `lastTime` are late.
    public var lastTime: Int64?
    public var lastValue: Double?
    /// The gap between the last reading and the one before it (seconds): with the next gap, the
    /// series' sampling interval (`cadence(at:)`); a `min_dwell` shorter than it is met by one reading.
    public var interval: Int64?

    public init() {}

    public var isFiring: Bool { status == .firing }
}
