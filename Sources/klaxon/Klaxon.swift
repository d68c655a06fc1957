import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonDemo
import KlaxonSources
import KlaxonStore
import Logging

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
            RoutesCommand.self,
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

/// `--config` and `--db`, shared by every command that touches the store.
struct StoreOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file (klaxon.yaml; default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml if it exists).",
            valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store: a SQLite file, or postgres://USER@HOST:PORT/DATABASE (default: database: of the config, else ./klaxon.sqlite).",
            discussion:
                "In a postgres:// URL, ${NAME} is taken from the environment: quote it, so the password stays out of the command line.",
            valueName: "path-or-url"),
        completion: .file(extensions: ["sqlite", "db"]))
    var db: String?

    /// The config file these options name (`--config`, `KLAXON_CONFIG`, /etc/klaxon/klaxon.yaml).
    var lookup: ConfigLookup? { ConfigLookup.resolve(flag: config) }

    func loadConfig() throws -> Config? {
        try lookup.map { try Config.load(path: $0.path) }
    }

    /// Where the store is: `--db`, else `database:` of the config, else ./klaxon.sqlite.
    func location(_ config: Config?) throws -> StoreLocation {
        try located(config).location
    }

    /// The store's location and where it came from, in words for an error ("from --db").
    func located(_ config: Config?) throws -> (location: StoreLocation, origin: String) {
        if let db {
            return (try StoreLocation.parse(db, environment: ProcessInfo.processInfo.environment), "from --db")
        }
        if let store = config?.store, let lookup {
            let via = lookup.origin == .flag ? "" : ", found through \(lookup.source)"
            return (store, "from database: in \(lookup.path)\(via)")
        }
        return (.sqlite(path: StoreLocation.defaultPath), "from the default")
    }

    /// Runs `body` with the store these options name, open (read-only if asked, for SQLite) for the
    /// call: a SQLite file or a PostgreSQL server (see `StoreLocation.withStore`). Only commands that
    /// store readings or trips pass `create: true`; the rest expect a database and never create one
    /// (a `silence add` on a mistyped path would make a database the daemon never reads).
    func withStore<T>(
        config: Config?, readOnly: Bool = false, create: Bool = false, isolation: isolated (any Actor)? = #isolation,
        _ body: (any Store) async throws -> T
    ) async throws -> T {
        let (location, origin) = try located(config)
        // A command that only reads (or changes what a database holds) never makes one: say where
        // it looked and why there.
        if !create, let path = location.sqlitePath, !FileManager.default.fileExists(atPath: path) {
            throw UserError(Self.noDatabase(path: path, origin: origin))
        }
        return try await location.withStore(readOnly: readOnly, create: create, logger: storeLogger, body)
    }

    /// The error of a command that expects a database where there is none.
    static func noDatabase(path: String, origin: String) -> String {
        let shown = path.contains("/") ? path : "./" + path
        return "no database at \(shown) (no such file; \(origin)): start `klaxon run` or `klaxon ingest` first "
            + "(they create it), or check --db/--config (set --db, database: in the config, or "
            + "\(ConfigLookup.environmentVariable))"
    }

    /// The same, loading `--config` first.
    func withStore<T>(
        readOnly: Bool = false, create: Bool = false, isolation: isolated (any Actor)? = #isolation,
        _ body: (any Store) async throws -> T
    ) async throws -> T {
        try await withStore(config: try loadConfig(), readOnly: readOnly, create: create, body)
    }
}

/// The logger of a one-shot command's store (the PostgreSQL pool): errors, on stderr. (A failure
/// reaches the user as the command's error; the pool's warnings, such as a query queued before its
/// run loop started, are noise in a command's output.)
let storeLogger: Logger = {
    var logger = Logger(label: "klaxon.store")
    logger.logLevel = LogOptions.chosenLevel.withLock { $0 } ?? .error
    return logger
}()

struct RulesOption: ParsableArguments {
    @Option(
        name: .long, parsing: .upToNextOption,
        help: ArgumentHelp("Rule files or folders (default: rules: of the config, else Rules/).", valueName: "path"),
        completion: .file(extensions: ["yaml", "yml"])
    )
    var rules: [String] = []

    func paths(_ config: Config?) -> [String] {
        !rules.isEmpty ? rules : config?.rules ?? ["Rules"]
    }
}

/// Runs a command body, turning errors into messages and exit codes (never a stack trace).
func guarded(_ body: () throws -> Int32) throws {
    let code: Int32
    do { code = try body() } catch { code = try failure(error) }
    if code != 0 { throw ExitCode(code) }
}

/// `guarded` for async commands.
func guarded(_ body: () async throws -> Int32) async throws {
    let code: Int32
    do { code = try await body() } catch { code = try failure(error) }
    if code != 0 { throw ExitCode(code) }
}

/// Prints an error for people and returns the exit status (docs/cli.md's table): 64 for a usage
/// error (`ValidationError`, as ArgumentParser exits for one found while parsing), else 1. An
/// `ExitCode` passes through.
func failure(_ error: any Error) throws -> Int32 {
    if let second = error as? SecondSignal { throw ExitCode(128 + second.signo) }
    if let e = error as? ExitCode { throw e }
    if let e = error as? ValidationError {
        printError("error: \(e.message)")
        return ExitCode.validationFailure.rawValue
    }
    printError(error is DiagnosticsError ? "\(error)" : "error: \(ErrorWords.describe(error))")
    return 1
}

func loadRules(_ paths: [String]) throws -> [Rule] {
    try RuleLoader.load(paths: paths)
}

func parseTime(_ text: String?, option: String) throws -> Int64? {
    guard let text else { return nil }
    guard let t = Timestamp.parse(text) else {
        throw ValidationError(
            "\(option) \"\(text)\" is not an ISO 8601 time with Z or an offset (like 2026-01-01T00:00:00Z)")
    }
    return t
}

func nowSeconds() -> Int64 { Int64(Date().timeIntervalSince1970) }

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Run the daemon offline against local stand-ins for its upstreams, with time compressed.",
        discussion:
            "A river rises through its flood stages and recedes, Delhi's air worsens, an M6.8 earthquake near Tokyo is revised to M7.0, and a saved trip's forecast turns snowy. Alerts go to stdout and to a local chat sink that writes an HTML page; the daemon's status site is served on 127.0.0.1 while it runs, and snapshots of its overview and the river's page are written beside the chat page. A summary of what went where ends the run (with --serve, the daemon and the site stay up until Ctrl-C). Ctrl-C ends it early, with the summary; a second Ctrl-C exits at once."
    )

    @Option(help: "Output format of the stdout receiver: text or json.")
    var format: StdoutNotifier.Format = .text

    @Option(help: "Scenario hours per second.")
    var speed: Double = 1

    @Option(
        help:
            "Where to write the chat page (default: klaxon-demo-chat.html in the run's own folder, a new private folder under the temporary folder)."
    )
    var page: String?

    @Flag(help: "Keep the temporary config, rules and database (their folder is printed).")
    var keep = false

    @Flag(
        help:
            "After the story, keep the daemon and its status site up, in real time, until Ctrl-C (the URL is printed).")
    var serve = false

    @Option(help: "The daemon's HTTP port on 127.0.0.1, for the status site (0: any free port).")
    var port: Int = 0

    @OptionGroup var log: LogOptions

    func validate() throws {
        guard speed >= 0.1 && speed <= 10 else { throw ValidationError("--speed must be between 0.1 and 10") }
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        try await guarded {
            var options = Demo.Options()
            options.stdout = format
            options.speed = speed * 3_600
            options.keep = keep
            options.serve = serve
            options.port = port
            if let level = log.explicitLevel { options.logLevel = level }
            // Relative to where the command runs (the default alone goes in the run's folder).
            if let page { options.page = URL(fileURLWithPath: page).path }
            let report = try await Demo.run(options)
            printError(Demo.summary(report))
            if keep { printError("  kept:              \(report.folder)") }
            return report.undelivered == 0 ? 0 : 1
        }
    }
}

extension StdoutNotifier.Format: ExpressibleByArgument {}
extension IngestFormat: ExpressibleByArgument {}
extension StationUnits: ExpressibleByArgument {}

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Validate rule files (and --config); report every problem.")

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file to validate too (default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml if it exists).",
            valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @OptionGroup var rules: RulesOption

    @Option(
        help: ArgumentHelp(
            "Output format: text or json.",
            discussion:
                "json: {\"ok\", \"rules\", \"files\", \"errors\": [{\"file\", \"line\", \"column\", \"message\"}], \"warnings\": [the same; a warning without a position has only \"message\"]}."
        ))
    var format: OutputFormat = .text

    struct Problem: Encodable {
        var file: String?
        var line: Int?
        var column: Int?
        var message: String
        init(_ d: Diagnostic) {
            file = d.path
            line = d.line
            column = d.column
            message = d.message
        }
        init(message: String) { self.message = message }
    }

    struct Report: Encodable {
        var ok: Bool
        var rules: Int
        var files: Int
        var errors: [Problem]
        var warnings: [Problem]
    }

    func run() async throws {
        try await guarded {
            let configPath = resolvedConfigPath(config)
            // The rules: default comes from the config even when the config has other problems.
            let partial = configPath.map {
                Config.load(path: $0, environment: ProcessInfo.processInfo.environment, diagnostics: Diagnostics())
            }
            let outcome = Check.run(rulePaths: rules.paths(partial), configPath: configPath)
            // `levels: nws` rules over stations the database has no flood categories for.
            let missing =
                outcome.diagnostics.isEmpty
                ? await Check.missingCategories(rulePaths: rules.paths(partial), database: partial?.database) : []
            if format == .json {
                try printJSON(
                    Report(
                        ok: outcome.diagnostics.isEmpty, rules: outcome.rules, files: outcome.files,
                        errors: outcome.diagnostics.map(Problem.init),
                        warnings: outcome.warnings.map(Problem.init) + missing.map { Problem(message: $0) }))
                return outcome.diagnostics.isEmpty ? 0 : 1
            }
            for w in outcome.warnings { printError(w.warningDescription) }
            for d in outcome.diagnostics { printError(d.description) }
            for line in missing { printError("warning: \(line)") }
            if outcome.diagnostics.isEmpty {
                print("ok: \(outcome.rules) rules in \(outcome.files) files")
                return 0
            }
            printError("\(outcome.diagnostics.count) problem\(outcome.diagnostics.count == 1 ? "" : "s") found")
            return 1
        }
    }
}

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Store readings from CSV (station,metric,time,value[,unit,source]) or JSON Lines files.",
        discussion: """
            A bad row is reported as FILE:LINE: reason and skipped (the first 10 of a file, then a count); exit \
            status 1 if any row was rejected, or if a file read with --format yields nothing and is not an empty \
            answer of that format.
            """)

    @OptionGroup var store: StoreOptions
    @OptionGroup var log: LogOptions

    @Option(
        help: ArgumentHelp(
            "File format: readings (CSV/JSON Lines), usgs-iv-json, usgs-rdb, usgs-ogc-json, cwms-json, nwps-json, "
                + "usgs-quakes, open-meteo-json, owm-json, airnow-json, openaq-json, waqi-json, nws-observations "
                + "or aqi-frames.",
            discussion: "Saved service responses load station metadata and NWS flood categories too. "
                + "With --config, they land as its sources would store them (cwms metric:, aqi-websocket name and "
                + "sample_every)."))
    var format: IngestFormat = .readings

    @Option(
        name: .customLong("owm-units"),
        help: "With --format owm-json: the units= it was fetched with (standard, metric, imperial).")
    var owmUnits: String = "standard"

    @Option(
        help: ArgumentHelp(
            "With --format nws-observations: the units to store (metric: °C, km/h, hPa; us: °F, mph, inHg).",
            discussion: "Default: those of the config's nws-observations source, else metric."))
    var units: StationUnits?

    @Argument(help: "Files to load.")
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one file") }
    }

    func run() async throws {
        try await guarded {
            let config = try store.loadConfig()
            return try await store.withStore(config: config, create: true) { db in
                let clock = ContinuousClock.now
                let s = try await Ingest.run(
                    store: db, files: files, format: format, now: nowSeconds(), owmUnits: owmUnits, config: config,
                    stationUnits: units)
                let seconds =
                    Double(clock.duration(to: .now).components.attoseconds) / 1e18
                    + Double(clock.duration(to: .now).components.seconds)
                var line =
                    "ingest: \(s.stats.inserted) new, \(s.stats.revised) revised, \(s.stats.unchanged) unchanged, \(s.rejected) rejected"
                if s.gaps > 0 { line += ", \(s.gaps) missing values skipped" }
                if s.stats.suspect > 0 { line += ", \(s.stats.suspect) marked suspect" }
                if s.stations > 0 { line += ", \(s.stations) station records" }
                if !s.stats.quakeConflicts.isEmpty {
                    line += ", \(s.stats.quakeConflicts.count) quake id conflicts (kept as separate events)"
                }
                printError(line + " in \(String(format: "%.2f", seconds)) s")
                return s.rejected > 0 ? 1 : 0
            }
        }
    }
}

struct EvaluateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluate",
        abstract: "Evaluate readings that arrived since the last evaluation; record and print transitions.")

    @OptionGroup var store: StoreOptions
    @OptionGroup var rules: RulesOption

    @Option(help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    @Option(help: "Evaluate as of this time (ISO 8601; default: now). For tests and back-fills.")
    var now: String?

    func run() async throws {
        try await guarded {
            let config = try store.loadConfig()
            let ruleList = try loadRules(rules.paths(config))
            let at = try parseTime(now, option: "--now") ?? nowSeconds()
            if let config {
                let problems = config.check(rules: ruleList)
                if !problems.isEmpty { throw DiagnosticsError(diagnostics: problems) }
            }
            // Nothing to evaluate without a database (readings come from `ingest`, `fetch` or `run`).
            return try await store.withStore(config: config) { db in
                // Without receivers there is nowhere to deliver: print the transitions instead.
                let routing = (config?.receivers.isEmpty ?? true) ? nil : config?.routing
                for line in try await WaterContext.missingCategories(rules: ruleList, store: db) {
                    printError("warning: \(line)")
                }
                let result = try await Evaluate.run(store: db, rules: ruleList, now: at, routing: routing)
                for t in result.unrouted {
                    printError(
                        "warning: \(t.rule) \(t.station) \(t.state.rawValue) reaches no receiver (give the rule notify:, add a route or default_receiver)"
                    )
                }
                if routing == nil {
                    // Without a config there are no receivers: print the transitions.
                    let out = StdoutNotifier(format: format)
                    for (t, message) in result.transitions { out.write(t, message: message) }
                }
                var line = "evaluate: \(result.newReadings) new readings, \(result.transitions.count) transitions"
                if routing != nil { line += " queued in the outbox" }
                if result.lateReadings > 0 { line += ", \(result.lateReadings) late readings ignored" }
                if result.suspectReadings > 0 { line += ", \(result.suspectReadings) suspect readings skipped" }
                printError(line)
                return 0
            }
        }
    }
}

struct DryRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dry-run",
        abstract: "Replay readings through the rules from a clean state and print what would be sent.",
        discussion: """
            Never writes to --db (it is opened read-only) and never delivers.

            With --config, the transitions recorded are followed by what would be sent: the readings \
            are replayed again through a scratch store and the dispatcher, under the config's receivers \
            and routes (grouping, group_wait and group_interval, folding of unsent notifications, \
            resolves only to receivers that heard the alert firing). The replay is as if live: each \
            evaluation runs at its readings' own time, so notify_max_age never holds old data back. \
            Reminders (repeat_interval), escalations, silences and quake and trip rules are not \
            replayed. With --format json, each notification is one more line, with "type":"notification".
            """)

    @OptionGroup var rules: RulesOption

    @Option(
        name: .long, parsing: .upToNextOption, help: "Readings files to replay (CSV or JSON Lines).",
        completion: .file(extensions: ["csv", "jsonl", "json"]))
    var readings: [String] = []

    @Option(
        name: .long, parsing: .upToNextOption,
        help: "USGS earthquake GeoJSON files to replay through quake rules (versions in `updated` order).",
        completion: .file(extensions: ["json", "geojson"]))
    var events: [String] = []

    @Option(
        name: .long,
        help: "Replay the readings stored in this database (a SQLite file, opened read-only, or a postgres:// URL).",
        completion: .file(extensions: ["sqlite", "db"]))
    var db: String?

    @Option(name: .long, help: "Only readings at or after this ISO 8601 time.")
    var from: String?

    @Option(name: .long, help: "Only readings at or before this ISO 8601 time.")
    var to: String?

    @Option(help: "Output format: text or json (one object per line).")
    var format: StdoutNotifier.Format = .text

    @Flag(help: "Say why each transition happened.")
    var explain = false

    @Option(
        help: "Print the exact payloads this receiver would get, as the daemon would send them (needs a config).",
        completion: .custom { words, index, prefix in ConfigCompletion.receivers(words, index, prefix) })
    var render: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file: rules (unless --rules), receivers for --render, and receivers and routes for what would be sent (replayed as if live); default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml if it exists.",
            valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"])
    )
    var config: String?

    func validate() throws {
        if !readings.isEmpty && db != nil {
            throw ValidationError("give exactly one of --readings FILE... or --db PATH, not both")
        }
        if readings.isEmpty && db == nil && events.isEmpty {
            throw ValidationError(
                "give exactly one of --readings FILE... or --db PATH (or --events FILE... for quake rules)")
        }
        if render != nil && resolvedConfigPath(config) == nil {
            throw ValidationError("--render needs a config: --config or KLAXON_CONFIG (receivers are defined there)")
        }
    }

    func run() async throws {
        try await guarded {
            let job = DryRunJob(
                rules: rules.rules, readings: readings, events: events, db: db,
                from: try parseTime(from, option: "--from"), to: try parseTime(to, option: "--to"), format: format,
                explain: explain, render: render, config: resolvedConfigPath(config))
            return try await job.run()
        }
    }
}

struct TestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run rule unit tests (series in; firing alerts, transitions and what is sent out).",
        discussion:
            "An expectation's sent: replays the case through a scratch store and the dispatcher, so it checks what a receiver would get (folding, group timing, resolves), not only what fires."
    )

    @Argument(help: "Test files or folders.", completion: .file(extensions: ["yaml", "yml"]))
    var paths: [String]

    @Option(
        help: ArgumentHelp(
            "Output format: text or json.",
            discussion:
                "json: {\"passed\", \"failed\", \"tests\": [{\"file\", \"name\", \"passed\", \"seconds\", \"failure\"}]}."
        ))
    var format: OutputFormat = .text

    @Option(
        help: ArgumentHelp(
            "Also write the results as JUnit XML to this file (as `promtool test rules --junit` does).",
            valueName: "file"),
        completion: .file(extensions: ["xml"]))
    var junit: String?

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give at least one test file or folder") }
    }

    struct Case: Encodable {
        var file: String
        var name: String
        var passed: Bool
        var seconds: Double
        var failure: String?
    }

    struct Report: Encodable {
        var passed: Int
        var failed: Int
        var tests: [Case]
    }

    func run() async throws {
        try await guarded {
            let outcome = try await RuleTests.run(paths: paths)
            if let junit {
                let xml = JUnitReport.xml(outcome)
                do {
                    try await offPool { try Data(xml.utf8).write(to: URL(fileURLWithPath: junit), options: .atomic) }
                } catch {
                    throw UserError("--junit \(junit): cannot write: \(error.localizedDescription)")
                }
            }
            switch format {
            case .json:
                try printJSON(
                    Report(
                        passed: outcome.passed, failed: outcome.failed,
                        tests: outcome.cases.map {
                            Case(
                                file: $0.file, name: $0.name, passed: $0.failure == nil,
                                seconds: ($0.seconds * 1000).rounded() / 1000, failure: $0.failure)
                        }))
            case .text:
                for f in outcome.failures { print(f.description) }
                print(outcome.summary)
            }
            return outcome.failed > 0 ? 1 : 0
        }
    }
}

func requireConfig(_ store: StoreOptions) throws -> Config {
    guard let config = try store.loadConfig() else {
        throw ValidationError(
            "this command needs a config: --config klaxon.yaml or \(ConfigLookup.environmentVariable) (receivers are defined there)"
        )
    }
    return config
}

func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

struct DispatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dispatch", abstract: "Deliver the outbox: send due notifications, with retries.")

    @OptionGroup var store: StoreOptions
    @OptionGroup var log: LogOptions

    @Flag(help: "Stop when nothing is left to send now or soon (waiting out retries up to --deadline).")
    var untilEmpty = false

    @Option(help: "With --until-empty: give up waiting after this long.")
    var deadline: String = "5m"

    @Option(
        help:
            "How long a claim lasts unless renewed (every third of it while a send is in flight); a dispatcher that dies on this host is taken over at once (default: delivery_lease in the config, else 30s)."
    )
    var lease: String?

    func run() async throws {
        let code: Int32
        do {
            let config = try requireConfig(store)
            code = try await store.withStore(config: config) { db in
                let logger = Logger(label: "klaxon.dispatch")
                var leaseMs: Int64? = nil
                if let lease {
                    guard let seconds = DurationText.parse(lease), seconds > 0 else {
                        throw ValidationError("--lease \"\(lease)\" is not a duration")
                    }
                    leaseMs = seconds * 1000
                }
                let dispatcher = try DeliveryWiring.dispatcher(
                    store: db, config: config, logger: logger, lease: leaseMs)
                // Reminders for alerts still firing (repeat_interval), then deliver.
                let rules = try RuleLoader.load(paths: config.rules ?? ["Rules"])
                let reminders = try await Repeats.enqueue(
                    store: db, rules: rules, routing: config.routing, now: nowMillis())
                if reminders > 0 { printError("dispatch: \(reminders) reminders queued (repeat_interval)") }
                let escalated = try await Escalations.enqueue(
                    store: db, rules: rules, routing: config.routing, now: nowMillis())
                if escalated > 0 { printError("dispatch: \(escalated) escalations queued (escalate_after)") }
                if untilEmpty {
                    guard let d = DurationText.parse(deadline) else {
                        throw ValidationError("--deadline \"\(deadline)\" is not a duration")
                    }
                    let p = try await dispatcher.runUntilEmpty(deadline: nowMillis() + d * 1000)
                    let counts = try await db.outboxCounts()
                    printError(
                        "dispatch: \(p.sent) sent, \(p.retried) retried, \(p.dead) dead, \(p.muted) muted, \(p.dropped) dropped, \(p.deferred) deferred; \(counts[.pending, default: 0] + counts[.sending, default: 0]) still queued"
                    )
                    return 0
                } else {
                    try await dispatcher.run()
                    return 0
                }
            }
        } catch let e as DiagnosticsError {
            printError(e.description)
            code = 1
        } catch let e as ValidationError {
            printError("error: \(e.message)")
            code = ExitCode.validationFailure.rawValue
        } catch {
            printError("error: \(ErrorWords.describe(error))")
            code = 1
        }
        if code != 0 { throw ExitCode(code) }
    }
}

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove history older than retention: (klaxon.yaml) allows; --dry-run counts it first.",
        discussion: """
            Never removes an alert's state, a firing alert's latest transition, an undelivered notification \
            or its transition, a series' newest reading or the readings the rules look back over.
            """)

    @OptionGroup var store: StoreOptions
    @OptionGroup var rules: RulesOption

    @Flag(help: "Count what would be removed; remove nothing.")
    var dryRun = false

    @Option(help: "Prune as of this time (ISO 8601; default: now). For tests and back-fills.")
    var now: String?

    func run() async throws {
        try await guarded {
            let config = try store.loadConfig()
            // The rules say how far back rate and trend rules look; without rules, nothing looks back.
            let paths = rules.paths(config)
            let explicit = !rules.rules.isEmpty || config?.rules != nil
            let ruleList =
                explicit || paths.contains(where: { FileManager.default.fileExists(atPath: $0) })
                ? try loadRules(paths) : []
            let retention = config?.retention ?? Retention()
            let plan = retention.plan(now: try parseTime(now, option: "--now") ?? nowSeconds(), rules: ruleList)
            return try await store.withStore(config: config, readOnly: dryRun) { db in
                let counts = dryRun ? try await db.prunable(plan) : try await Prune.run(store: db, plan: plan)
                for (key, kind) in Retention.kinds {
                    let keep = retention[kind]
                    guard keep != nil else {
                        print("\(key): kept forever")
                        continue
                    }
                    let verb = dryRun ? "would remove" : "removed"
                    var line = "\(key): \(verb) \(counts[kind]) older than \(Retention.describe(keep))"
                    if kind == .readings, counts[.ingestLog] > 0 {
                        line += " (and fold \(counts[.ingestLog]) ingest-log entries)"
                    }
                    print(line)
                }
                if dryRun { printError("prune: dry run, nothing removed") }
                return 0
            }
        }
    }
}

struct OutboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox", abstract: "Inspect and retry queued notifications.",
        subcommands: [List.self, Retry.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List outbox rows, newest first.")
        @OptionGroup var store: StoreOptions
        /// The states `--state` accepts, in the words of its help and of its error.
        static let states = OutboxRecord.State.allCases.map(\.rawValue).joined(separator: ", ")

        @Option(help: ArgumentHelp("Only rows in this state: \(List.states).", valueName: "state"))
        var state: String?
        @Option(help: "At most this many rows, newest first (1 to 1000000).")
        var limit: Int = 200
        @Option(
            help: ArgumentHelp(
                "Output format: text or json.",
                discussion:
                    "json: an array of {\"id\", \"state\", \"receiver\", \"alert\", \"attempts\", \"due\", \"created\", \"sent\", \"last_error\"} (times ISO 8601)."
            ))
        var format: OutputFormat = .text

        struct Row: Encodable {
            var id: String
            var state: String
            var receiver: String
            var alert: String
            var attempts: Int
            var due: String
            var created: String
            var sent: String?
            var last_error: String?
        }

        func run() async throws {
            try await guarded {
                guard (1...1_000_000).contains(limit) else { throw UserError("--limit must be from 1 to 1000000") }
                // Checked before the store is opened: a wrong word is the error to report.
                let filter = try state.map { (word: String) throws -> OutboxRecord.State in
                    guard let s = OutboxRecord.State(rawValue: word) else {
                        throw UserError("--state must be one of \(Self.states) (not \"\(word)\")")
                    }
                    return s
                }
                return try await store.withStore(readOnly: true) { db in
                    let rows = try await db.outbox(state: filter, limit: limit)
                    if rows.count == limit {
                        printError("outbox list: the newest \(limit) rows; --limit shows more")
                    }
                    if format == .json {
                        try printJSON(
                            rows.map {
                                Row(
                                    id: $0.id, state: $0.state.rawValue, receiver: $0.receiver, alert: $0.alert,
                                    attempts: Int($0.attempts), due: Timestamp.format($0.dueAt / 1000),
                                    created: Timestamp.format($0.createdAt / 1000),
                                    sent: $0.sentAt.map { Timestamp.format($0 / 1000) }, last_error: $0.lastError)
                            })
                        return 0
                    }
                    if rows.isEmpty { print("(empty)") }
                    for r in rows {
                        let due = Timestamp.format(r.dueAt / 1000)
                        // last_error quotes what a receiver answered: hostile text, escaped.
                        print(
                            TerminalText.safe(
                                "\(r.id)  \(r.state.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0))  \(r.receiver)  \(r.alert)  attempts=\(r.attempts)  due=\(due)\(r.lastError.map { "  error=\($0)" } ?? "")"
                            ))
                    }
                    return 0
                }
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue a dead, dropped or muted row again (same id).")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The outbox row id.")
        var id: String

        func run() async throws {
            try await guarded {
                return try await store.withStore { db in
                    guard try await db.retryOutbox(id: id, now: nowMillis()) else {
                        throw UserError("no dead, dropped or muted outbox row \(id)")
                    }
                    print("queued \(id) again")
                    return 0
                }
            }
        }
    }
}

struct SilenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "silence", abstract: "Mute alerts for a while.", subcommands: [Add.self, List.self, Expire.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a silence.")
        @OptionGroup var store: StoreOptions
        @Option(
            name: .long, parsing: .upToNextOption,
            help: "Matchers: KEY=VALUE, KEY!=VALUE, KEY=~REGEX (rule, station, metric, severity, level, labels).")
        var match: [String] = []
        @Option(name: .long, help: "How long, like 2h or 3d.")
        var `for`: String
        @Option(help: "Why.")
        var comment: String
        @Option(
            help: ArgumentHelp(
                "Who (default: the user running the command).",
                discussion:
                    "web:, slack:, mattermost: and api: are for identities the server verified: a name with one is refused."
            ))
        var author: String?

        func run() async throws {
            let author =
                self.author ?? CurrentUser.name
            try await guarded {
                guard !match.isEmpty else { throw UserError("give at least one --match KEY=VALUE") }
                // Stored text people read later in a terminal and on the site: no control characters,
                // and no author only the server may write (`slack:…` is someone a chat platform verified).
                if let problem = Silence.commentProblem(comment) { throw UserError("--comment: \(problem)") }
                if let problem = Silence.claimedAuthorProblem(author) { throw UserError("--author: \(problem)") }
                guard let d = DurationText.parse(self.for), d > 0 else {
                    throw UserError("--for \"\(self.for)\" is not a duration like 2h")
                }
                let matchers = try match.map { try Matcher.parse($0) }
                let config = try store.loadConfig()
                return try await store.withStore(config: config) { db in
                    let now = nowSeconds()
                    let silence: Silence
                    do {
                        silence = try Silence.make(
                            matchers: matchers, starts: now, ends: now + d, now: now, comment: comment,
                            createdBy: author)
                    } catch let e as SilenceError {
                        throw UserError(e.message)
                    }
                    try await db.addSilence(silence, now: now)
                    print(
                        TerminalText.safe(
                            "\(silence.id)  until \(Timestamp.format(silence.ends))  \(matchers.map(\.description).joined(separator: " "))"
                        ))
                    // Added; now say what it reaches: a mistyped name mutes nothing, and says so.
                    let firing = try await SilenceReach.firing(db, limit: nil)
                    let rules = silence.namesRule || silence.namesStation ? knownRules(config) : nil
                    var ruleNames: Set<String>? = nil
                    if silence.namesRule {
                        // Without --config, the rules the store has alerts of.
                        ruleNames = config == nil ? try await ruleNamesInStore(db) : rules.map { Set($0.map(\.name)) }
                    }
                    var stations: Set<String>? = nil
                    if silence.namesStation {
                        stations = try await SilenceReach.knownStations(
                            db, firing: firing, listed: SilenceReach.listedStations(rules ?? []))
                    }
                    let reach = SilenceReach(silence, firing: firing, rules: ruleNames, stations: stations, now: now)
                    print(reach.mutedText)
                    for unknown in reach.unknown { printError(TerminalText.safe("warning: \(unknown)")) }
                    return 0
                }
            }
        }

        /// The rules of `--config`; nil without one, or when they do not load (said on stderr).
        func knownRules(_ config: Config?) -> [Rule]? {
            guard let config else { return nil }
            do {
                return try loadRules(config.rules ?? ["Rules"])
            } catch {
                printError("warning: rule names not checked: the rules did not load (klaxon check says why)")
                return nil
            }
        }

        /// The rules the store holds alert states of (nil when none, such as a new store: then
        /// nothing is checked).
        func ruleNamesInStore(_ db: any Store) async throws -> Set<String>? {
            let names = Set(try await db.alertStates().keys.map(\.rule))
            return names.isEmpty ? nil : names
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List silences that have not ended.")
        @OptionGroup var store: StoreOptions
        @Flag(help: "Include ended silences.")
        var all = false
        @Option(
            help: ArgumentHelp(
                "Output format: text or json.",
                discussion:
                    "json: an array of {\"id\", \"matchers\", \"starts\", \"ends\", \"created_by\", \"comment\", \"active\"} (times ISO 8601)."
            ))
        var format: OutputFormat = .text

        struct Row: Encodable {
            var id: String
            var matchers: [String]
            var starts: String
            var ends: String
            var created_by: String
            var comment: String
            var active: Bool
        }

        func run() async throws {
            try await guarded {
                return try await store.withStore(readOnly: true) { db in
                    let now = nowSeconds()
                    let list = try await db.silences(now: now, includeExpired: all)
                    if format == .json {
                        try printJSON(
                            list.map {
                                Row(
                                    id: $0.id, matchers: $0.matchers.map(\.description),
                                    starts: Timestamp.format($0.starts),
                                    ends: Timestamp.format($0.ends), created_by: $0.createdBy, comment: $0.comment,
                                    active: $0.isActive(at: now))
                            })
                        return 0
                    }
                    if list.isEmpty { print("(no silences)") }
                    for s in list {
                        // Every part was stored from outside (API, chat, site, an older version): escaped.
                        print(
                            TerminalText.safe(
                                "\(s.id)  \(Timestamp.format(s.starts)) → \(Timestamp.format(s.ends))  \(s.matchers.map(\.description).joined(separator: " "))  by \(s.createdBy): \(s.comment)"
                            ))
                    }
                    return 0
                }
            }
        }
    }

    struct Expire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End a silence now.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The silence id (or a unique prefix).")
        var id: String

        func run() async throws {
            try await guarded {
                return try await store.withStore { db in
                    switch try await db.expireSilence(id: id, now: nowSeconds()) {
                    case .expired(let full):
                        print("expired \(full)")
                        return 0
                    case .notFound:
                        throw UserError("no active silence \(id)")
                    case .ambiguous(let ids):
                        throw UserError(
                            "\(id) names \(ids.count) silences; give more of the id: \(ids.joined(separator: ", "))")
                    }
                }
            }
        }
    }
}

struct NotifyTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notify-test", abstract: "Send a test message to a receiver, for real, and say what happened.")

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file (klaxon.yaml; default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml).", valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @Argument(
        help: "The receiver name.",
        completion: .custom { words, index, prefix in ConfigCompletion.receivers(words, index, prefix) })
    var receiver: String

    func run() async throws {
        do {
            let cfg = try Config.load(path: try requiredConfigPath(config, for: "notify-test"))
            guard let notifier = try DeliveryWiring.notifiers(cfg)[receiver] else {
                throw UserError("no receiver \"\(receiver)\"\(cfg.knownReceivers)")
            }
            let sample = DeliveryWiring.sample(receiver: receiver, now: nowSeconds())
            try await notifier.send(sample)
            print(TerminalText.safe("sent a test message to \(receiver) (key \(sample.key))"))
        } catch let e as DiagnosticsError {
            printError(e.description)
            throw ExitCode(1)
        } catch let e as ValidationError {
            printError("error: \(e.message)")
            throw ExitCode.validationFailure
        } catch {
            printError("error: \(ErrorWords.describe(error))")
            throw ExitCode(1)
        }
    }
}

struct MigrateStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-store",
        abstract: "Copy a SQLite store into an empty PostgreSQL database, checked by each table's row count.",
        discussion: """
            Copies readings, stations and series, the ingest log and cursors, source state, alert states, \
            transitions, the outbox, silences, acks, quakes, trips and forecasts with their ids, then prints each \
            table's rows in both stores; exit status 1 if any count differs. Stop the daemon first. The copy is \
            not one transaction: after a failure, empty the database and run it again.
            """)

    @OptionGroup var log: LogOptions

    @Option(help: "The SQLite database to copy (opened read-only).")
    var from: String

    @Option(help: "The PostgreSQL database: postgres://USER@HOST:PORT/DATABASE (${NAME} from the environment).")
    var to: String

    func run() async throws {
        try await guarded {
            let environment = ProcessInfo.processInfo.environment
            let source = try StoreLocation.parse(from, environment: environment)
            let target = try StoreLocation.parse(to, environment: environment)
            var mismatched = 0
            _ = try await MigrateStore.run(from: source, to: target, logger: storeLogger) { count in
                if !count.matches { mismatched += 1 }
                print(
                    "\(count.table): \(count.source) → \(count.target)\(count.matches ? "" : "  MISMATCH")")
            }
            printError(
                mismatched == 0
                    ? "migrate-store: \(source) → \(target): every table's count matches"
                    : "migrate-store: \(mismatched) table\(mismatched == 1 ? "" : "s") differ")
            return mismatched == 0 ? 0 : 1
        }
    }
}
