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

    /// The wall clock.
    public static let wall = DaemonClock(origin: 0, wallOrigin: 0, factor: 1)

    /// A clock that reads `start` now and runs `factor` times faster than the wall clock.
    public static func compressed(start: Int64, factor: Double) -> DaemonClock {
        DaemonClock(origin: Double(start), wallOrigin: Date().timeIntervalSince1970, factor: factor)
    }

    init(origin: Double, wallOrigin: Double, factor: Double) {
        self.origin = origin
        self.wallOrigin = wallOrigin
        self.factor = factor
    }

    /// Now, in seconds since the epoch.
    public func now() -> Int64 { Int64(seconds()) }

    /// Now, with the fraction.
    public func seconds() -> Double {
        origin + (Date().timeIntervalSince1970 - wallOrigin) * factor  // the wall clock: 0 + (t - 0) × 1
    }

    /// Wall-clock seconds that `seconds` of this clock take.
    public func wallSeconds(_ seconds: Double) -> Double { seconds / factor }

    /// Sleeps for `seconds` of this clock.
    public func sleep(_ seconds: Double) async throws {
        try await Task.sleep(for: .seconds(max(0, wallSeconds(seconds))))
    }
}
