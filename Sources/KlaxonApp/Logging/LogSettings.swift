import Foundation
import Logging

/// How the process logs: the format, the least level written, and whether stderr is the journal.
/// From `--log-format`/`--log-level`, else `KLAXON_LOG_FORMAT`/`KLAXON_LOG_LEVEL`, else logfmt at
/// info; the journal from `JOURNAL_STREAM` (`Logging.journalStream`).
public struct LogSettings: Sendable, Equatable {
    public var format: LogFormat
    public var level: Logger.Level
    /// stderr is connected to systemd's journal: lines carry `<N>` priorities and no time.
    public var journal: Bool

    public init(format: LogFormat = .logfmt, level: Logger.Level = .info, journal: Bool = false) {
        self.format = format
        self.level = level
        self.journal = journal
    }

    /// The settings for these flags and this environment; a value that is not a format or a level
    /// is an error naming where it came from.
    public static func resolve(
        format: String?, level: String?, environment: [String: String], journal: Bool? = nil
    ) throws -> LogSettings {
        var out = LogSettings()
        if let picked = pick(format, "--log-format", environment, "KLAXON_LOG_FORMAT") {
            let (text, origin) = picked
            guard let f = LogFormat(rawValue: text.lowercased()) else {
                throw LogSettingsError(message: "\(origin) \"\(text)\" is not a log format (logfmt or json)")
            }
            out.format = f
        }
        if let picked = pick(level, "--log-level", environment, "KLAXON_LOG_LEVEL") {
            let (text, origin) = picked
            guard let l = Logger.Level(rawValue: text.lowercased()) else {
                throw LogSettingsError(
                    message:
                        "\(origin) \"\(text)\" is not a log level (trace, debug, info, notice, warning, error or critical)"
                )
            }
            out.level = l
        }
        out.journal = journal ?? journalStream(environment["JOURNAL_STREAM"], fd: 2)
        return out
    }

    /// The flag's value, else the environment variable's (an empty one counts as unset).
    static func pick(_ flag: String?, _ flagName: String, _ env: [String: String], _ name: String) -> (
        String, String
    )? {
        if let flag { return (flag, flagName) }
        if let value = env[name], !value.isEmpty { return (value, name) }
        return nil
    }

    /// Whether `fd` is the journal's stream: systemd sets `JOURNAL_STREAM=DEV:INODE` for a service
    /// whose stderr or stdout goes to the journal, and a program checks that `fstat` of its stderr
    /// gives the same device and inode (systemd.exec(5)); a child whose stderr was redirected
    /// elsewhere inherits the variable, but not the match.
    public static func journalStream(_ value: String?, fd: Int32) -> Bool {
        guard let value, let colon = value.firstIndex(of: ":"),
            let dev = UInt64(value[..<colon]), let ino = UInt64(value[value.index(after: colon)...])
        else { return false }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return UInt64(st.st_dev) == dev && UInt64(st.st_ino) == ino
    }
}

/// A `--log-format`/`--log-level` or its environment variable that is not a known value.
public struct LogSettingsError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}
