import ArgumentParser
import Foundation
import KlaxonApp
import Logging
import Synchronization

/// `--log-format` and `--log-level`, on every command that logs; `KLAXON_LOG_FORMAT` and
/// `KLAXON_LOG_LEVEL` when the flag is not given (the flag wins). A value that is neither is a
/// usage error (exit 64), found while the command line is parsed.
struct LogOptions: ParsableArguments {
    @Option(
        name: .customLong("log-format"),
        help: ArgumentHelp("logfmt or json (default: KLAXON_LOG_FORMAT, else logfmt).", valueName: "format"))
    var format: String?

    @Option(
        name: .customLong("log-level"),
        help: ArgumentHelp(
            "trace, debug, info, notice, warning, error or critical (default: KLAXON_LOG_LEVEL, else info).",
            valueName: "level"))
    var level: String?

    func validate() throws {
        do {
            _ = try settings()
        } catch let e as LogSettingsError {
            throw ValidationError(e.message)
        }
    }

    /// The settings these flags and the environment give.
    func settings() throws -> LogSettings {
        try LogSettings.resolve(format: format, level: level, environment: ProcessInfo.processInfo.environment)
    }

    /// The level asked for by the flag or the environment, if any (a command with a quieter
    /// default of its own, `demo`'s warning, keeps it otherwise).
    var explicitLevel: Logger.Level? {
        guard level != nil || !(ProcessInfo.processInfo.environment["KLAXON_LOG_LEVEL"] ?? "").isEmpty else {
            return nil
        }
        return try? settings().level
    }

    /// The level a command chose at start (`bootstrap`), if any: the one-shot commands' store
    /// logger (errors only, by default) heeds it.
    static let chosenLevel = Mutex<Logger.Level?>(nil)

    /// Bootstraps swift-log with Klaxon's handler, once, for the parsed `command`: its own flags
    /// when it has them, else the environment (a bad value there falls back to the defaults: the
    /// command does not log).
    static func bootstrap(for command: any ParsableCommand) {
        let options = (command as? any LoggingCommand)?.log
        let settings =
            (try? options?.settings())
            ?? (try? LogSettings.resolve(format: nil, level: nil, environment: ProcessInfo.processInfo.environment))
            ?? LogSettings()
        chosenLevel.withLock { $0 = options?.explicitLevel }
        KlaxonLogHandler.bootstrap(settings)
    }
}

/// A command that logs: it has `LogOptions`.
protocol LoggingCommand {
    var log: LogOptions { get }
}

extension RunCommand: LoggingCommand {}
extension DemoCommand: LoggingCommand {}
extension DispatchCommand: LoggingCommand {}
extension FetchCommand: LoggingCommand {}
extension IngestCommand: LoggingCommand {}
extension MigrateStoreCommand: LoggingCommand {}
