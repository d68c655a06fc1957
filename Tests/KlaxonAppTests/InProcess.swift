import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonSources
import KlaxonStore
import Synchronization

// The commands' own code, run in this process: what `klaxon ingest`, `evaluate`, `check` and
// `dry-run` do once their arguments are read lives in KlaxonApp, and these helpers call it as the
// command does, collecting its standard output and standard error into a `Run`. A test of what a
// command *does* (what ingest stores, what evaluation fires, what check reports) uses these; a
// test of the command line itself (arguments, exit codes of the process, the split of the streams)
// spawns `klaxon` (`klaxonAsync`).

/// The lines a command in process writes, kept in order per stream.
final class Console: Sendable {
    private let out = Mutex<[String]>([])
    private let err = Mutex<[String]>([])

    /// Standard error is escaped for the terminal as `printError` escapes it.
    var output: CommandOutput {
        CommandOutput(
            line: { [self] line in out.withLock { $0.append(line) } },
            error: { [self] text in err.withLock { $0.append(TerminalText.safeLines(text)) } })
    }

    /// The run of a command that exited with `status`.
    func run(_ status: Int32) -> Run {
        func text(_ lines: [String]) -> String { lines.map { $0 + "\n" }.joined() }
        return Run(status: status, stdout: text(out.withLock { $0 }), stderr: text(err.withLock { $0 }))
    }
}

/// Runs a command's body as `klaxon`'s `guarded` does: a thrown error is reported on standard error
/// (a config's diagnostics as they are, anything else as `error: …`) and the status is 1.
func inProcess(_ body: (CommandOutput) async throws -> Int32) async -> Run {
    let console = Console()
    let status: Int32
    do {
        status = try await body(console.output)
    } catch {
        console.output.error(error is DiagnosticsError ? "\(error)" : "error: \(ErrorWords.describe(error))")
        status = 1
    }
    return console.run(status)
}

/// The store a command names: `db` (a SQLite file), else the `database:` of `config`; opened for the
/// call (created when `create`), as `--db` and `--config` open it.
func withCommandStore<T>(
    db: String?, config: Config?, create: Bool, isolation: isolated (any Actor)? = #isolation,
    _ body: (any Store) async throws -> T
) async throws -> T {
    let location = try db.map { try StoreLocation.parse($0, environment: [:]) } ?? config?.store
    guard let location else { throw UserError("give db: or a config with database:") }
    return try await location.withStore(create: create, logger: quietLogger, body)
}

/// The commands in process.
enum InProcess {
    /// `klaxon ingest [--db DB] [--config CONFIG] [--format F] [--owm-units U] [--units U] FILE…`:
    /// `Ingest.run` into the store they name. Standard error holds the reports, then the closing line
    /// (`ingest: N new, …`, without the time taken).
    static func ingest(
        db: String? = nil, config: String? = nil, format: IngestFormat? = nil, owmUnits: String = "standard",
        units: StationUnits? = nil, _ files: String...
    ) async -> Run {
        await inProcess { output in
            let loaded = try config.map { try Config.load(path: $0) }
            return try await withCommandStore(db: db, config: loaded, create: true) { store in
                try await ingest(
                    into: store, config: loaded, format: format, owmUnits: owmUnits, units: units, files, output: output
                )
            }
        }
    }

    /// `Ingest.run` into an open store, as `klaxon ingest` runs it; the exit status.
    static func ingest(
        into store: any Store, config: Config? = nil, format: IngestFormat? = nil, owmUnits: String = "standard",
        units: StationUnits? = nil, _ files: [String], output: CommandOutput
    ) async throws -> Int32 {
        let summary = try await Ingest.run(
            store: store, files: files, format: format, now: Int64(Date().timeIntervalSince1970), owmUnits: owmUnits,
            config: config, stationUnits: units, report: { output.error($0) })
        output.error(summary.line)
        return summary.status
    }

    /// `klaxon evaluate [--db DB] [--config CONFIG] [--rules R…] [--now T] [--format F]`: the config's
    /// check, then `Evaluate.command` over the store they name (which must exist).
    static func evaluate(
        db: String? = nil, config: String? = nil, rules: [String] = [], now: String? = nil,
        format: StdoutNotifier.Format = .text
    ) async -> Run {
        await inProcess { output in
            let loaded = try config.map { try Config.load(path: $0) }
            let ruleList = try RuleLoader.load(paths: !rules.isEmpty ? rules : loaded?.rules ?? ["Rules"])
            let at = try now.map(time) ?? Int64(Date().timeIntervalSince1970)
            try Evaluate.check(config: loaded, rules: ruleList)
            return try await withCommandStore(db: db, config: loaded, create: false) { store in
                try await Evaluate.command(
                    store: store, rules: ruleList, config: loaded, now: at, format: format, output: output)
            }
        }
    }

    /// `klaxon check [--config CONFIG] [--rules R…] [--format json]`: `Check.command`. With no config,
    /// none is read (the command would look at `KLAXON_CONFIG` and /etc/klaxon).
    static func check(config: String? = nil, rules: [String] = [], json: Bool = false) async -> Run {
        await inProcess { output in
            try await Check.command(configPath: config, rules: rules, json: json, output: output)
        }
    }

    /// `klaxon dry-run [--rules R…] [--readings F…] [--events F…] [--db DB] [--from T] [--to T]
    /// [--format F] [--explain] [--render RECEIVER] [--config CONFIG]`: `DryRunJob`.
    static func dryRun(
        rules: [String] = [], readings: [String] = [], events: [String] = [], db: String? = nil, from: String? = nil,
        to: String? = nil, format: StdoutNotifier.Format = .text, explain: Bool = false, render: String? = nil,
        config: String? = nil
    ) async -> Run {
        await inProcess { output in
            let job = DryRunJob(
                rules: rules, readings: readings, events: events, db: db, from: try from.map(time),
                to: try to.map(time), format: format, explain: explain, render: render, config: config,
                console: output)
            return try await job.run()
        }
    }

    /// `klaxon silence add [--db DB] [--config CONFIG] --match M… --for D --comment C [--author A]`:
    /// `SilenceCommands.add` (the author defaults to the user, as the command's does).
    static func silenceAdd(
        db: String? = nil, config: String? = nil, match: [String], for duration: String, comment: String,
        author: String? = nil
    ) async -> Run {
        await inProcess { output in
            let request = try SilenceCommands.Request(
                match: match, for: duration, comment: comment, author: author ?? CurrentUser.name)
            let loaded = try config.map { try Config.load(path: $0) }
            return try await withCommandStore(db: db, config: loaded, create: false) { store in
                try await SilenceCommands.add(
                    request, store: store, config: loaded, now: Int64(Date().timeIntervalSince1970), output: output)
            }
        }
    }

    /// `klaxon silence list [--db DB] [--config CONFIG] [--all] [--format json]`.
    static func silenceList(db: String? = nil, config: String? = nil, all: Bool = false, json: Bool = false) async
        -> Run
    {
        await inProcess { output in
            let loaded = try config.map { try Config.load(path: $0) }
            return try await withCommandStore(db: db, config: loaded, create: false) { store in
                try await SilenceCommands.list(
                    store: store, all: all, json: json, now: Int64(Date().timeIntervalSince1970), output: output)
            }
        }
    }

    /// `klaxon silence expire [--db DB] [--config CONFIG] ID`.
    static func silenceExpire(db: String? = nil, config: String? = nil, _ id: String) async -> Run {
        await inProcess { output in
            let loaded = try config.map { try Config.load(path: $0) }
            return try await withCommandStore(db: db, config: loaded, create: false) { store in
                try await SilenceCommands.expire(
                    id: id, store: store, now: Int64(Date().timeIntervalSince1970), output: output)
            }
        }
    }

    /// `klaxon outbox list [--db DB] [--config CONFIG] [--state S] [--limit N] [--format json]`.
    static func outboxList(
        db: String? = nil, config: String? = nil, state: String? = nil, limit: Int = 200, json: Bool = false
    ) async -> Run {
        await inProcess { output in
            let filter = try OutboxCommands.filter(state: state, limit: limit)
            let loaded = try config.map { try Config.load(path: $0) }
            return try await withCommandStore(db: db, config: loaded, create: false) { store in
                try await OutboxCommands.list(store: store, state: filter, limit: limit, json: json, output: output)
            }
        }
    }

    /// `klaxon outbox retry [--db DB] [--config CONFIG] ID`.
    static func outboxRetry(db: String? = nil, config: String? = nil, _ id: String) async -> Run {
        await inProcess { output in
            let loaded = try config.map { try Config.load(path: $0) }
            return try await withCommandStore(db: db, config: loaded, create: false) { store in
                try await OutboxCommands.retry(
                    id: id, store: store, now: Int64(Date().timeIntervalSince1970 * 1000), output: output)
            }
        }
    }

    /// `klaxon gauge ID --db DB [--since T] [--format json]`: `GaugeReport` over the store, read only.
    static func gauge(_ id: String, db: String, since: String? = nil, json: Bool = false) async -> Run {
        await inProcess { output in
            let span: GaugeReport.Span = try since.map { .range(from: try time($0), to: nil) } ?? .days(7)
            let report = try await StoreLocation.sqlite(path: db).withStore(readOnly: true, logger: quietLogger) {
                try await GaugeReport.build(store: $0, id: id, span: span)
            }
            guard let report else { throw UserError("unknown gauge \"\(id)\"") }
            output.line(json ? GaugeReport.json(report) : TerminalText.safeLines(GaugeReport.text(report)))
            return 0
        }
    }

    /// An ISO 8601 time of a command line.
    static func time(_ text: String) throws -> Int64 {
        guard let t = Timestamp.parse(text) else { throw UserError("\(text) is not an ISO 8601 time") }
        return t
    }
}

/// A path in the repository (the spawned `klaxon` ran there: its relative paths).
func repoPath(_ relative: String) -> String { packageRoot.appendingPathComponent(relative).path }
