import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

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
                + "usgs-quakes, open-meteo-json, owm-json, airnow-json, airnow-forecast, openaq-json, waqi-json, "
                + "nws-observations or aqi-frames; hml or ahps-xml (river forecasts). Default: each file as what it "
                + "looks like (a saved response of one of these, "
                + "else readings).",
            discussion: "Saved service responses load station metadata and NWS flood categories too. "
                + "With --config, they land as its sources would store them (cwms metric:, aqi-websocket name and "
                + "sample_every)."))
    var format: IngestFormat?

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
                printError(s.line + " in \(String(format: "%.2f", seconds)) s")
                return s.status
            }
        }
    }
}
