import Foundation

/// The daemon's sense of time: the wall clock, or a compressed one (`klaxon demo` replays a day of
/// upstream data in seconds). Polling, evaluation and the readings' receive stamps follow it;
/// delivery timing (group waits, retries, give-up) always runs on the wall clock.
public struct DaemonClock: Sendable {
    /// Scenario seconds at `wallOrigin`.
    public let origin: Double
    /// Wall-clock seconds since the epoch when the clock started.
    public let wallOrigin: Double
    /// Scenario seconds per wall second.
    public let factor: Double
    /// Where the compressed stretch ends (scenario seconds): from there on the clock runs at the wall
    /// clock's pace. Nil: compressed for ever.
    public let realTimeFrom: Double?

    /// The wall clock.
    public static let wall = DaemonClock(origin: 0, wallOrigin: 0, factor: 1)

    /// A clock that reads `start` now and runs `factor` times faster than the wall clock; from
    /// `realTimeFrom` on (if given) it runs at the wall clock's pace (`klaxon demo --serve` after the
    /// story: the story ends at the real now, and the daemon goes on in real time).
    public static func compressed(start: Int64, factor: Double, realTimeFrom: Int64? = nil) -> DaemonClock {
        DaemonClock(
            origin: Double(start), wallOrigin: Date().timeIntervalSince1970, factor: factor,
            realTimeFrom: realTimeFrom.map(Double.init))
    }

    public init(origin: Double, wallOrigin: Double, factor: Double, realTimeFrom: Double? = nil) {
        self.origin = origin
        self.wallOrigin = wallOrigin
        self.factor = factor
        self.realTimeFrom = realTimeFrom
    }

    /// Now, in seconds since the epoch.
    public func now() -> Int64 { Int64(seconds()) }

    /// Now, with the fraction.
    public func seconds() -> Double {
        let elapsed = Date().timeIntervalSince1970 - wallOrigin
        let compressed = origin + elapsed * factor  // the wall clock: 0 + (t - 0) × 1
        guard let end = realTimeFrom, compressed > end, factor > 0 else { return compressed }
        // Past the compressed stretch: the wall seconds since it ended, at their own pace.
        return end + (elapsed - (end - origin) / factor)
    }

    /// The pace now: `factor` during the compressed stretch, 1 after it.
    var pace: Double {
        guard let end = realTimeFrom, seconds() >= end else { return factor }
        return 1
    }

    /// Wall-clock seconds that `seconds` of this clock take (at the present pace).
    public func wallSeconds(_ seconds: Double) -> Double { seconds / pace }

    /// Sleeps for `seconds` of this clock.
    public func sleep(_ seconds: Double) async throws {
        try await Task.sleep(for: .seconds(max(0, wallSeconds(seconds))))
    }
}
