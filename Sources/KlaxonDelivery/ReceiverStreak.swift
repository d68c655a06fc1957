import KlaxonCore
import Logging

/// One receiver's run of failed sends, and the log line each change of it deserves, as
/// `SourceStreak` does for sources: a receiver failing for a day (every retry of every row) writes
/// a few warnings, not one line per retry.
///
/// - the first failure of a streak: a warning, `receiver failing`;
/// - a failure whose reason (`DeliveryError.reason`) differs from the last one: a warning,
///   `receiver still failing` (an HTTP 500 turned into timeouts);
/// - the first successful send after failures: a warning too, `receiver recovered` (so a
///   `journalctl -p warning` view shows when the trouble ended, not only when it began).
///
/// Every other failure returns no line: the dispatcher logs each retry at debug. A value type with
/// no I/O: the dispatcher keeps one per receiver and logs the `Line` it returns.
public struct ReceiverStreak: Sendable, Equatable {
    /// Failed sends in a row (0: the receiver works).
    public private(set) var failures = 0
    /// The last failure's reason and error.
    public private(set) var lastReason: String?
    public private(set) var lastError: String?
    /// When the streak's first failure happened (seconds since the epoch).
    public private(set) var since: Int64?

    public init() {}

    /// A log line: its level, message and metadata.
    public struct Line: Sendable, Equatable {
        public var level: Logger.Level
        public var message: String
        public var metadata: Logger.Metadata

        /// Writes it to `logger`.
        public func log(to logger: Logger) {
            logger.log(level: level, "\(message)", metadata: metadata)
        }
    }

    /// Records a failed send at `now` (seconds): `attempt` is the batch's attempt number. Returns the
    /// line to log, if the receiver's state changed.
    public mutating func failed(
        receiver: String, integration: String, error: DeliveryError, attempt: Int, at now: Int64
    ) -> Line? {
        let previous = lastReason
        failures += 1
        lastReason = error.reason
        lastError = error.message
        if failures == 1 { since = now }
        guard failures == 1 || previous != error.reason else { return nil }
        var metadata: Logger.Metadata = [
            "receiver": .string(receiver), "integration": .string(integration), "reason": .string(error.reason),
            "error": .string(error.message), "attempt": .stringConvertible(attempt),
            "failures": .stringConvertible(failures),
        ]
        if failures > 1, let since { metadata["since"] = .string(Timestamp.format(since)) }
        return Line(
            level: .warning, message: failures == 1 ? "receiver failing" : "receiver still failing", metadata: metadata)
    }

    /// Records a successful send; returns the recovery's line when the receiver had been failing.
    public mutating func succeeded(receiver: String, integration: String) -> Line? {
        defer { self = ReceiverStreak() }
        guard failures > 0 else { return nil }
        var metadata: Logger.Metadata = [
            "receiver": .string(receiver), "integration": .string(integration),
            "failures": .stringConvertible(failures),
        ]
        if let since { metadata["since"] = .string(Timestamp.format(since)) }
        if let lastReason { metadata["last_reason"] = .string(lastReason) }
        if let lastError { metadata["last_error"] = .string(lastError) }
        return Line(level: .warning, message: "receiver recovered", metadata: metadata)
    }
}
