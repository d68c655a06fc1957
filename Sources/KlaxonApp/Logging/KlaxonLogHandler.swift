import Foundation
import KlaxonCore
import Logging
import Synchronization

/// Klaxon's `LogHandler`: one line per record, logfmt or JSON (`LogLine`), written whole to stderr
/// with one `write(2)` under a lock, so lines of concurrent tasks never interleave. The write is
/// a single small one (the kernel takes a line at once unless stderr is a full pipe).
public struct KlaxonLogHandler: LogHandler {
    public let label: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let settings: LogSettings
    let output: LogOutput
    let clock: @Sendable () -> Int64

    /// `clock` gives milliseconds since the epoch (a test's fixed time).
    public init(
        label: String, settings: LogSettings, output: LogOutput = .standardError,
        clock: @escaping @Sendable () -> Int64 = { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
    ) {
        self.label = label
        self.settings = settings
        self.logLevel = settings.level
        self.output = output
        self.clock = clock
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        if let error = event.error, merged["error"] == nil { merged["error"] = .string(ErrorWords.describe(error)) }
        let line = LogLine.render(
            format: settings.format, journal: settings.journal, timeMs: clock(), level: event.level,
            message: event.message.description, label: label, metadata: merged)
        output.write(line)
    }

    /// Makes every `Logger(label:)` of the process use this handler with `settings`. Once per
    /// process (swift-log's rule): the executable calls it at start.
    public static func bootstrap(_ settings: LogSettings) {
        LoggingSystem.bootstrap { label in KlaxonLogHandler(label: label, settings: settings) }
    }
}

/// Where lines go: stderr, or a test's sink. Each line is handed over whole, under one lock.
public final class LogOutput: Sendable {
    private let sink: Mutex<@Sendable (String) -> Void>

    /// Lines to `sink` (a test collects them).
    public init(_ sink: @escaping @Sendable (String) -> Void) { self.sink = Mutex(sink) }

    public func write(_ line: String) { sink.withLock { $0(line) } }

    /// File descriptor 2, one `write(2)` per line (a partial write, rare, is continued; an error
    /// such as a closed stderr drops the line: logging must never stop the daemon).
    public static let standardError = LogOutput { line in writeAll(2, line) }
}

/// Writes `line` to `fd`: one `write(2)`, continued after a partial write or EINTR.
private func writeAll(_ fd: Int32, _ line: String) {
    Array(line.utf8).withUnsafeBytes { raw in
        guard let base = raw.baseAddress else { return }
        var offset = 0
        while offset < raw.count {
            let n = write(fd, base + offset, raw.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return
            }
        }
    }
}
