import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Logging

struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Fetch every configured source (sources: in --config) once and store what is new.",
        discussion:
            "Each source is written in one transaction. A source that fails stores nothing, keeps its cursor and is asked again next time; the others go on. Exit status 1 if any source failed."
    )

    @OptionGroup var store: StoreOptions

    @Option(name: .long, help: "Only this source (repeatable).")
    var source: [String] = []

    @Flag(help: "Fetch even a source whose server asked to wait (HTTP 429 Retry-After).")
    var force = false

    @Option(
        help: ArgumentHelp(
            "Bound the whole fetch, every source included, to this long (like 30s or 2m).",
            discussion:
                "A WebSocket source listens at most until then; a source still waiting for an answer when it runs out fails with \"timed out\" and stores nothing; sources not reached are skipped."
        ))
    var timeout: String?

    @OptionGroup var log: LogOptions

    func run() async throws {
        try await guarded {
            var deadline: ContinuousClock.Instant? = nil
            if let timeout {
                guard let seconds = DurationText.parse(timeout), seconds > 0 else {
                    throw ValidationError("--timeout \"\(timeout)\" is not a duration like 30s")
                }
                deadline = .now + .seconds(seconds)
            }
            guard let config = try store.loadConfig() else {
                throw UserError("fetch needs a config with sources: (--config or \(ConfigLookup.environmentVariable))")
            }
            var sources = config.sources
            if !source.isEmpty {
                for name in source where !sources.contains(where: { $0.source.name == name }) {
                    let names = sources.map(\.source.name).sorted().joined(separator: ", ")
                    throw UserError("no source \"\(name)\" (sources are \(names.isEmpty ? "none" : names))")
                }
                sources = sources.filter { source.contains($0.source.name) }
            }
            if sources.isEmpty { throw UserError("\(store.lookup?.path ?? "the config") defines no sources") }
            return try await store.withStore(config: config, create: true) { db in
                let outcomes = await Fetch.run(
                    sources: sources, store: db, now: nowSeconds(), force: force, future: config.futureBound,
                    deadline: deadline)
                for o in outcomes { print(TerminalText.safe(o.line)) }
                return outcomes.contains { $0.error != nil } ? 1 : 0
            }
        }
    }
}

struct GaugeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gauge",
        abstract: "What a gauge reads now and over a range: height, flood category, discharge, precipitation.",
        discussion:
            "ID is a USGS site number (02336910), an NWS LID (PRTO3) or any station id. Ranges end at the gauge's newest reading. Works from the store; --fetch asks USGS and NWS first."
    )

    @Argument(help: "USGS site number, NWS LID or station id.")
    var id: String

    @OptionGroup var store: StoreOptions

    @Option(help: "Report the last 24 h and the last N days (default 7).")
    var days: Int?

    @Option(help: "Report from this date (2026-11-01 or an ISO 8601 time) instead.")
    var since: String?

    @Option(help: "With --since: up to this date (default: the newest reading).")
    var until: String?

    @Flag(help: "Fetch first: the configured sources that cover the gauge, else NWPS and USGS directly.")
    var fetch = false

    @Option(help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    func validate() throws {
        if days != nil && since != nil { throw ValidationError("give --days or --since, not both") }
        if until != nil && since == nil { throw ValidationError("--until needs --since") }
        if let days, days < 1 { throw ValidationError("--days must be at least 1") }
    }

    /// `2026-11-01` (00:00Z that day) or a full ISO 8601 time.
    static func date(_ text: String, option: String, endOfDay: Bool = false) throws -> Int64 {
        if let t = Timestamp.parse(text) { return t }
        if let t = Timestamp.parse(text + "T00:00:00Z") { return endOfDay ? t + 86_400 : t }
        throw ValidationError("\(option) \"\(text)\" is not a date (2026-11-01) or an ISO 8601 time with Z")
    }

    func run() async throws {
        try await guarded {
            let config = try store.loadConfig()
            let (location, origin) = try store.located(config)
            let span: GaugeReport.Span
            if let since {
                span = .range(
                    from: try Self.date(since, option: "--since"),
                    to: try until.map { try Self.date($0, option: "--until", endOfDay: true) })
            } else {
                span = .days(days ?? 7)
            }
            if !fetch, let path = location.sqlitePath, !FileManager.default.fileExists(atPath: path) {
                let shown = path.contains("/") ? path : "./" + path
                throw UserError(
                    "no database at \(shown) (no such file; \(origin)); run `klaxon gauge \(id) --fetch` to fetch the gauge first, or set --db, database: in the config, or \(ConfigLookup.environmentVariable)"
                )
            }
            // With --fetch the store is written first (SQLite: opened for writing); else only read.
            let report = try await location.withStore(readOnly: !fetch, logger: storeLogger) { db in
                if fetch { try await fetchFirst(db, config: config) }
                return try await GaugeReport.build(store: db, id: id, span: span)
            }
            guard let report else {
                throw UserError(
                    "unknown gauge \"\(id)\": no station or NWS gauge by that id in \(location); run `klaxon gauge \(id) --fetch` to fetch it from USGS and NWS"
                )
            }
            print(format == .json ? GaugeReport.json(report) : TerminalText.safeLines(GaugeReport.text(report)))
            return 0
        }
    }

    /// The configured sources that cover the gauge; when none does, NWPS for its metadata and then
    /// USGS instantaneous values for its USGS site.
    func fetchFirst(_ db: any Store, config: Config?) async throws {
        let resolved = try await db.resolveStation(id)
        let ids = Set([id, resolved].compactMap { $0 })
        let covering = (config?.sources ?? []).filter { !ids.isDisjoint(with: $0.source.covers) }
        let now = nowSeconds()
        if !covering.isEmpty {
            for o in await Fetch.run(sources: covering, store: db, now: now, force: true) { printError(o.line) }
            return
        }
        let adHoc = Fetch.adHoc(id: id, config: config, days: Int64(days ?? 7))
        let isSite = id.count >= 8 && id.allSatisfy(\.isNumber)
        let nwps = await Fetch.run(sources: [ConfiguredSource(source: adHoc.nwps)], store: db, now: now, force: true)
        for o in nwps { printError(o.line) }
        let gauge = try await db.gauges().first { $0.lid.uppercased() == id.uppercased() || $0.usgsID == id }
        guard let site = gauge?.usgsID ?? (isSite ? id : nil) else { return }
        let usgs = await Fetch.run(
            sources: [ConfiguredSource(source: adHoc.usgs(site))], store: db, now: now, force: true)
        for o in usgs { printError(o.line) }
    }
}

struct QuakesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "quakes", abstract: "List stored earthquakes: near a place, since a time, above a magnitude.")

    @OptionGroup var store: StoreOptions

    @Option(help: "Only events within --radius of LAT,LON (like 35.68,139.69).")
    var near: String?

    @Option(help: "Radius for --near, in km.")
    var radius: Double = 300

    @Option(help: "Events since this long ago (24h, 7d) or this date/time.")
    var since: String = "24h"

    @Option(name: .customLong("min-magnitude"), help: "Only events of at least this magnitude.")
    var minMagnitude: Double?

    @Option(help: "Output format: text or json (one object per line).")
    var format: StdoutNotifier.Format = .text

    func run() async throws {
        try await guarded {
            var filter = QuakeList.Filter(since: try Self.since(since, now: nowSeconds()), minMagnitude: minMagnitude)
            if let near {
                let parts = near.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
                guard parts.count == 2, let lat = parts[0], let lon = parts[1], (-90...90).contains(lat),
                    (-180...180).contains(lon)
                else { throw UserError("--near \"\(near)\" must be LAT,LON (like 35.68,139.69)") }
                filter.near = (lat, lon, radius)
            }
            return try await store.withStore(readOnly: true) { db in
                let rows = try await QuakeList.find(store: db, filter: filter)
                for r in rows { print(format == .json ? QuakeList.json(r) : TerminalText.safeLines(QuakeList.text(r))) }
                printError("quakes: \(rows.count) event\(rows.count == 1 ? "" : "s")")
                return 0
            }
        }
    }

    /// `24h` (ago) or a date/time.
    static func since(_ text: String, now: Int64) throws -> Int64 {
        if let d = DurationText.parse(text) { return now - d }
        if let t = Timestamp.parse(text) ?? Timestamp.parse(text + "T00:00:00Z") { return t }
        throw UserError("--since \"\(text)\" must be a duration (24h, 7d) or a date (2026-11-01)")
    }
}

struct AQICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aqi", abstract: "A city's latest AQI, its level and a sparkline of the last 25 samples.")

    @Argument(help: "City (station id or name, any case).")
    var city: String

    @OptionGroup var store: StoreOptions

    @Option(help: "AQI scale: us-epa or india-naqi.")
    var scale: String = "us-epa"

    @Option(help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    func run() async throws {
        try await guarded {
            guard let s = AQIScale.named(scale) else { throw UserError("--scale must be us-epa or india-naqi") }
            return try await store.withStore(readOnly: true) { db in
                guard let report = try await AirReport.build(store: db, city: city, scale: s) else {
                    throw UserError(
                        "no AQI readings for \"\(city)\"; fetch an AQI source first (`klaxon fetch --config …`)")
                }
                print(format == .json ? AirReport.json(report) : TerminalText.safeLines(AirReport.text(report)))
                return 0
            }
        }
    }
}

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The daemon: poll every source, evaluate as readings arrive, deliver, serve HTTP.",
        discussion:
            "SIGTERM or SIGINT stops it cleanly (exit 0); a notification claimed but not sent is sent after a restart under the same key. --once fetches each source once, evaluates, delivers until the outbox is empty or --deadline, and exits: for cron."
    )

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file (klaxon.yaml; default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml).", valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @Flag(help: "Each source once, evaluate, deliver until the outbox is empty, exit.")
    var once = false

    @Option(help: "With --once: stop delivering after this long.")
    var deadline: String = "5m"

    @OptionGroup var log: LogOptions

    func run() async throws {
        try await guarded {
            let path = try requiredConfigPath(config, for: "run")
            // What the start reads and checks; a reload (SIGHUP, POST /-/reload) reads the same again.
            // Checked as `klaxon check` checks: a bad config does not hide the rules' errors.
            let loader: Daemon.Loader = { try Check.load(configPath: path) }
            let (cfg, ruleList, _) = try loader()
            let logger = Logger(label: "klaxon")
            StartLine.log(to: logger)
            for w in cfg.warnings { logger.warning("\(w.warningDescription)") }  // a secret file anyone may read
            let location = cfg.store ?? .sqlite(path: StoreLocation.defaultPath)
            // A long-running writer of small batches: modest page caches keep the daemon small. On
            // PostgreSQL each duty (a source's polling, the evaluator, the pruner) keeps a connection.
            return try await location.withStore(
                sqliteWriterCacheMiB: 4, sqliteReaderCacheMiB: 1, dutyConnections: cfg.sources.count + 2, logger: logger
            ) { store in
                for line in try await WaterContext.missingCategories(rules: ruleList, store: store) {
                    logger.warning("\(line)")
                }
                let daemon = Daemon(config: cfg, store: store, rules: ruleList, logger: logger, loader: loader)
                if once {
                    guard let d = DurationText.parse(deadline) else {
                        throw UserError("--deadline \"\(deadline)\" is not a duration")
                    }
                    let r = try await daemon.once(deadline: d)
                    for o in r.outcomes { printError(o.line) }
                    var line =
                        "run --once: \(r.evaluation.newReadings) new readings, \(r.evaluation.transitionCount) transitions"
                    if let p = r.delivery { line += ", \(p.sent) sent, \(p.dead) dead, \(p.retried) retried" }
                    printError(line)
                    return r.outcomes.contains { $0.error != nil } ? 1 : 0
                } else {
                    try await daemon.run { port in
                        // Once, through the logger (Hummingbird's own line is below its level: KlaxonHTTP).
                        logger.notice("listening", metadata: ["address": "\(cfg.listen.host):\(port)"])
                    }
                    return 0
                }
            }
        }
    }
}
