import Logging

/// One source's run of failures, and the log line each change of it deserves: every source kind
/// (a polled fetch, a WebSocket feed's connections) reports through this one rule.
///
/// - the first failure of a streak: a warning, `source failing`;
/// - the 2nd, 4th, 8th … failure in a row, or a failure whose error differs from the last one: a
///   warning, `source still failing` (the rest of the streak at debug);
/// - the first success after failures: a notice, `source recovered`, with how many failures and
///   since when.
///
/// A source down for a day writes a dozen warnings, not thousands, and `/readyz` always has the
/// latest error. A value type with no I/O: the caller logs the `Line` it returns.
public struct SourceStreak: Sendable, Equatable {
    /// Failures in a row (0: the source works).
    public private(set) var failures: Int
    /// The last failure's error, in words.
    public private(set) var lastError: String?
    /// When the streak's first failure happened (seconds since the epoch), if known.
    public private(set) var since: Int64?

    public init(failures: Int = 0, lastError: String? = nil, since: Int64? = nil) {
        self.failures = failures
        self.lastError = lastError
        self.since = since
    }

    /// A log line: its level, message and metadata.
    public struct Line: Sendable, Equatable {
        public var level: Logger.Level
        public var message: String
        /// `failures` is a number (typed in JSON logs), the rest strings.
        public var metadata: Logger.Metadata

        public init(level: Logger.Level, message: String, metadata: Logger.Metadata) {
            self.level = level
            self.message = message
            self.metadata = metadata
        }

        /// Writes it to `logger`.
        public func log(to logger: Logger) {
            logger.log(level: level, "\(message)", metadata: metadata)
        }
    }

    /// Records a failure at `now` (seconds) and returns its line (at debug when nothing changed).
    public mutating func failed(source: String, error: String, at now: Int64) -> Line {
        let previous = lastError
        failures += 1
        lastError = error
        if failures == 1 { since = now }
        let level = Self.level(streak: failures, error: error, previous: previous)
        var metadata: Logger.Metadata = [
            "source": .string(source), "error": .string(error), "failures": .stringConvertible(failures),
        ]
        if failures > 1, let since { metadata["since"] = .string(Timestamp.format(since)) }
        return Line(
            level: level, message: failures == 1 ? "source failing" : "source still failing", metadata: metadata)
    }

    /// Records a success at `now`; returns the recovery's line when the source had been failing.
    public mutating func succeeded(source: String, at now: Int64) -> Line? {
        defer { self = SourceStreak() }
        guard failures > 0 else { return nil }
        var metadata: Logger.Metadata = ["source": .string(source), "failures": .stringConvertible(failures)]
        if let since { metadata["since"] = .string(Timestamp.format(since)) }
        if let lastError { metadata["last_error"] = .string(lastError) }
        return Line(level: .notice, message: "source recovered", metadata: metadata)
    }

    /// How loudly to log failure number `streak` of a streak: a warning for the first, for the 2nd,
    /// 4th, 8th … and when the error changed; the rest at debug.
    public static func level(streak: Int, error: String, previous: String?) -> Logger.Level {
        if streak <= 1 || error != previous || streak & (streak - 1) == 0 { return .warning }
        return .debug
    }
}
