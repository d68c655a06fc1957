import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

@main
struct Klaxon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "klaxon",
        abstract: "Alerts when the world you care about changes: rivers, air, quakes, trips.",
        version: "klaxon \(BuildInfo.line)",
        subcommands: [
            DemoCommand.self, CheckCommand.self, IngestCommand.self, EvaluateCommand.self, DryRunCommand.self,
            TestCommand.self, DispatchCommand.self, OutboxCommand.self, SilenceCommand.self, NotifyTestCommand.self,
            RunCommand.self, FetchCommand.self, GaugeCommand.self, QuakesCommand.self, AQICommand.self,
            TripCommand.self, PruneCommand.self, MigrateStoreCommand.self, AlertsCommand.self, AckCommand.self,
            RoutesCommand.self, NowCastCommand.self, SeriesCommand.self, WatchesCommand.self,
        ])

    /// ArgumentParser's entry point (`main(_:)`, spelled out), after ignoring SIGPIPE: output to a
    /// closed pipe (`klaxon … | head`, a stdout receiver whose reader went away) is an error to
    /// report, not a silent death. `run` and `demo` stop gracefully on SIGTERM and SIGINT, bounded
    /// by the stop watchdog; every other command keeps the signals' default action.
    ///
    /// SIGHUP is ignored before anything else, even parsing: a SIGHUP (logrotate, a reload asked
    /// for too soon) that came before the daemon watches it would take its default action and end
    /// the daemon. Nothing is lost: the daemon reads its config after this. Once the arguments are
    /// parsed, `run` and `demo` hand it to their watch (which logs or reloads); every other command
    /// gets back the action it inherited.
    static func main() async {
        let inheritedHangup = signal(SIGHUP, SIG_IGN)
        signal(SIGPIPE, SIG_IGN)
        StoreFailure.ignoreFileSizeSignal()
        // The daemon: one malloc arena for every thread, set before any other thread allocates (an
        // arena once made stays). It allocates little and often; each further arena kept 3–5 MiB
        // of free memory at the peak of a day's backlog (issue 14's 64 MiB).
        if CommandLine.arguments.dropFirst().first == "run" { limitMallocArenas(1) }
        // Blocking work goes to NIO's blocking pool, not Dispatch's global queue (issue 40).
        BlockingPool.useNIOThreadPool()
        do {
            var command = try await asyncParseAsRoot(nil)
            LogOptions.bootstrap(for: command)
            if stopsGracefully(command) {
                await StopWatchdog.install()
            } else {
                signal(SIGHUP, inheritedHangup)
            }
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exitEscaped(error)
        }
    }

    /// ArgumentParser's `exit(withError:)`, with what it prints to stderr escaped for the terminal
    /// (`TerminalText`, through `printError`): its parse errors quote the command line ("The value
    /// 'x\u{01}' is invalid…"), and every error that reaches here is printed by this one point.
    /// Help, the version and completion scripts (a clean exit) go to stdout as they are.
    static func exitEscaped(_ error: any Error) -> Never {
        let code = exitCode(for: error)
        let text = fullMessage(for: error)
        if !text.isEmpty {
            if code == .success { print(text) } else { printError(text) }
        }
        Foundation.exit(code.rawValue)
    }

    static func stopsGracefully(_ command: any ParsableCommand) -> Bool {
        if command is DemoCommand { return true }
        if let run = command as? RunCommand { return !run.once }
        return false
    }
}
