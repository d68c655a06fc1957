import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

@main
struct Klaxon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "klaxon",
        abstract: "Alerts when the world you care about changes: rivers, air, quakes, trips.",
        subcommands: [
            DemoCommand.self, CheckCommand.self, IngestCommand.self, EvaluateCommand.self, DryRunCommand.self,
            TestCommand.self,
        ])
}

/// `--config` and `--db`, shared by every command that touches the store.
struct StoreOptions: ParsableArguments {
    @Option(name: .long, help: "Config file (klaxon.yaml).")
    var config: String?

    @Option(name: .long, help: "SQLite database (default: database: of --config, else ./klaxon.sqlite).")
    var db: String?

    func loadConfig() throws -> Config? {
        try config.map { try Config.load(path: $0) }
    }

    func databasePath(_ config: Config?) -> String {
        db ?? config?.database ?? "klaxon.sqlite"
    }
}

struct RulesOption: ParsableArguments {
    @Option(name: .long, parsing: .upToNextOption, help: "Rule files or folders (default: rules: of --config, else Rules/).")
    var rules: [String] = []

    func paths(_ config: Config?) -> [String] {
        !rules.isEmpty ? rules : config?.rules ?? ["Rules"]
    }
}

/// Runs a command body, turning errors into messages and exit codes (never a stack trace).
func guarded(_ body: () throws -> Int32) throws {
    let code: Int32
    do {
        code = try body()
    } catch let e as DiagnosticsError {
        printError(e.description)
        code = 1
    } catch let e as ExitCode {
        throw e
    } catch {
        printError("error: \(error)")
        code = 1
    }
    if code != 0 { throw ExitCode(code) }
}

func loadRules(_ paths: [String]) throws -> [Rule] {
    try RuleLoader.load(paths: paths)
}

func parseTime(_ text: String?, option: String) throws -> Int64? {
    guard let text else { return nil }
    guard let t = Timestamp.parse(text) else {
        throw ValidationError("\(option) \"\(text)\" is not an ISO 8601 time with Z or an offset (like 2026-01-01T00:00:00Z)")
    }
    return t
}

func nowSeconds() -> Int64 { Int64(Date().timeIntervalSince1970) }

struct DemoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo", abstract: "Run a bundled river-flood scenario through the real path, offline.")

    @Option(help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    @Flag(help: "Keep the temporary database and files (their folder is printed).")
    var keep = false

    func run() throws {
        try guarded {
            try Demo.run(format: format, keep: keep)
            return 0
        }
    }
}

extension StdoutNotifier.Format: ExpressibleByArgument {}

struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Validate rule files (and --config); report every problem.")

    @Option(name: .long, help: "Config file to validate too.")
    var config: String?

    @OptionGroup var rules: RulesOption

    func run() throws {
        try guarded {
            let configValue = try? config.map { try Config.load(path: $0) }
            let outcome = Check.run(rulePaths: rules.paths(configValue ?? nil), configPath: config)
            for d in outcome.diagnostics { printError(d.description) }
            if outcome.diagnostics.isEmpty {
                print("ok: \(outcome.rules) rules in \(outcome.files) files")
                return 0
            }
            printError("\(outcome.diagnostics.count) problem\(outcome.diagnostics.count == 1 ? "" : "s") found")
            return 1
        }
    }
}

struct IngestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Store readings from CSV (station,metric,time,value[,unit,source]) or JSON Lines files.",
        discussion: "A bad row is reported as FILE:LINE: reason and skipped; exit status 1 if any row was rejected.")

    @OptionGroup var store: StoreOptions

    @Argument(help: "Readings files (.csv, .jsonl).")
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one readings file") }
    }

    func run() throws {
        try guarded {
            let config = try store.loadConfig()
            let db = try Store.open(path: store.databasePath(config))
            let clock = ContinuousClock.now
            let s = try Ingest.run(store: db, files: files)
            let seconds = Double(clock.duration(to: .now).components.attoseconds) / 1e18 + Double(clock.duration(to: .now).components.seconds)
            printError(
                "ingest: \(s.stats.inserted) new, \(s.stats.revised) revised, \(s.stats.unchanged) unchanged, \(s.rejected) rejected in \(String(format: "%.2f", seconds)) s"
            )
            return s.rejected > 0 ? 1 : 0
        }
    }
}

struct EvaluateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluate",
        abstract: "Evaluate readings that arrived since the last evaluation; record and print transitions.")

    @OptionGroup var store: StoreOptions
    @OptionGroup var rules: RulesOption

    @Option(help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    @Option(help: "Evaluate as of this time (ISO 8601; default: now). For tests and back-fills.")
    var now: String?

    func run() throws {
        try guarded {
            let config = try store.loadConfig()
            let ruleList = try loadRules(rules.paths(config))
            let at = try parseTime(now, option: "--now") ?? nowSeconds()
            let db = try Store.open(path: store.databasePath(config))
            let result = try Evaluate.run(store: db, rules: ruleList, now: at)
            let out = StdoutNotifier(format: format)
            for (t, message) in result.transitions { out.write(t, message: message) }
            var line = "evaluate: \(result.newReadings) new readings, \(result.transitions.count) transitions"
            if result.lateReadings > 0 { line += ", \(result.lateReadings) late readings ignored" }
            printError(line)
            return 0
        }
    }
}

struct DryRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dry-run",
        abstract: "Replay readings through the rules from a clean state and print what would be sent.",
        discussion: "Never writes to --db (it is opened read-only) and never delivers.")

    @OptionGroup var rules: RulesOption

    @Option(name: .long, parsing: .upToNextOption, help: "Readings files to replay (CSV or JSON Lines).")
    var readings: [String] = []

    @Option(name: .long, help: "Replay the readings stored in this database (opened read-only).")
    var db: String?

    @Option(name: .long, help: "Only readings at or after this ISO 8601 time.")
    var from: String?

    @Option(name: .long, help: "Only readings at or before this ISO 8601 time.")
    var to: String?

    @Option(help: "Output format: text or json (one object per line).")
    var format: StdoutNotifier.Format = .text

    @Flag(help: "Say why each transition happened.")
    var explain = false

    func validate() throws {
        if readings.isEmpty == (db == nil) { throw ValidationError("give exactly one of --readings FILE... or --db PATH") }
    }

    func run() throws {
        try guarded {
            let clock = ContinuousClock.now
            let ruleList = try loadRules(rules.paths(nil))
            let dry = DryRun(rules: ruleList, from: try parseTime(from, option: "--from"), to: try parseTime(to, option: "--to"))
            let result: DryRun.Result
            if let db {
                result = try dry.run(store: try Store.openReadOnly(path: db))
            } else {
                result = try dry.run(files: readings)
            }
            let renderer = try MessageRenderer(rules: ruleList)
            let lines =
                format == .json
                ? DryRunPrinter.json(result.transitions, renderer: renderer, explain: explain)
                : DryRunPrinter.text(result.transitions, renderer: renderer, explain: explain)
            print(lines.joined(separator: "\n"))
            let elapsed = clock.duration(to: .now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            var summary = "dry-run: \(result.readings) readings replayed, \(result.transitions.count) transitions, \(String(format: "%.2f", seconds)) s"
            if result.rejected > 0 { summary += ", \(result.rejected) rows rejected" }
            printError(summary)
            return result.rejected > 0 ? 1 : 0
        }
    }
}

struct TestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test", abstract: "Run rule unit tests (series in, expected firing alerts out).")

    @Argument(help: "Test files or folders.")
    var paths: [String]

    func validate() throws {
        if paths.isEmpty { throw ValidationError("give at least one test file or folder") }
    }

    func run() throws {
        try guarded {
            let outcome = try RuleTests.run(paths: paths)
            for f in outcome.failures { print(f.description) }
            print(outcome.summary)
            return outcome.failed > 0 ? 1 : 0
        }
    }
}
