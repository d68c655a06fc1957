import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Logging

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

    @Flag(help: "The latest forecast issuance instead: its points, crest, and when it reaches each flood category.")
    var forecast = false

    @Option(
        name: [.customShort("o"), .customLong("output"), .customLong("format")], help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    func validate() throws {
        if days != nil && since != nil { throw ValidationError("give --days or --since, not both") }
        if until != nil && since == nil { throw ValidationError("--until needs --since") }
        if let days, days < 1 { throw ValidationError("--days must be at least 1") }
        if forecast && (days != nil || since != nil) { throw ValidationError("--forecast takes no --days or --since") }
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
            if forecast {
                let found = try await location.withStore(readOnly: !fetch, logger: storeLogger) { db in
                    if fetch { try await fetchFirst(db, config: config) }
                    return try await GaugeForecast.build(store: db, id: id)
                }
                guard let found else {
                    throw UserError(
                        "no forecast stored for gauge \"\(id)\" in \(location); ingest its NWPS stageflow, HML or AHPS XML (klaxon ingest FILE)"
                    )
                }
                if format == .json {
                    if let note = found.note { printError("note: " + note) }
                    print(GaugeForecast.json(found.report))
                } else {
                    print(TerminalText.safeLines(GaugeForecast.text(found.report, note: found.note)))
                }
                return 0
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
