import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore
import Logging

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

extension StdoutNotifier.Format: ExpressibleByArgument {}

extension IngestFormat: ExpressibleByArgument {}

extension StationUnits: ExpressibleByArgument {}

func requireConfig(_ store: StoreOptions) throws -> Config {
    guard let config = try store.loadConfig() else {
        throw ValidationError(
            "this command needs a config: --config klaxon.yaml or \(ConfigLookup.environmentVariable) (receivers are defined there)"
        )
    }
    return config
}

func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
