import Logging
import Synchronization

/// Keeps the lines logged through its loggers, so a test can prove what was and was not logged.
/// Each line reads `LEVEL MESSAGE METADATA`.
public final class LogCapture: Sendable {
    private let lines = Mutex<[String]>([])

    public init() {}

    /// Every line so far, in order.
    public var all: [String] { lines.withLock { $0 } }

    /// A logger whose lines at `level` and above are kept here.
    public func logger(_ label: String = "klaxon.test", level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: label) { _ in Handler(capture: self, logLevel: level) }
        logger.logLevel = level
        return logger
    }

    struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level

        init(capture: LogCapture, logLevel: Logger.Level) {
            self.capture = capture
            self.logLevel = logLevel
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let meta = metadata.merging(event.metadata ?? [:]) { $1 }
            capture.lines.withLock { $0.append("\(event.level) \(event.message) \(meta)") }
        }
    }
}
