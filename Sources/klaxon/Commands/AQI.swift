import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

struct AQICommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aqi", abstract: "A city's latest AQI, its level and a sparkline of the last 25 samples.",
        discussion: """
            With --forecast: the AirNow forecasts stored for the reporting area (`klaxon ingest` an AirNow \
            forecast answer), the latest issuance of each date and pollutant; with -o json, \
            [{"date", "issued", "parameter", "aqi", "category", "action_day"}] (aqi null for a category-only \
            forecast).
            """)

    @Argument(help: "City (station id or name, any case).")
    var city: String

    @OptionGroup var store: StoreOptions

    @Option(help: "AQI scale: us-epa or india-naqi.")
    var scale: String = "us-epa"

    @Option(
        name: [.customShort("o"), .customLong("output"), .customLong("format")],
        help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    @Flag(help: "The reporting area's air-quality forecasts (AirNow) instead of its latest AQI.")
    var forecast = false

    func run() async throws {
        try await guarded {
            guard let s = AQIScale.named(scale) else { throw UserError("--scale must be us-epa or india-naqi") }
            return try await store.withStore(readOnly: true) { db in
                if forecast {
                    let rows = try await db.airForecasts(area: city)
                    guard !rows.isEmpty else {
                        throw UserError(
                            "no air-quality forecasts for \"\(TerminalText.safe(city))\"; ingest an AirNow forecast "
                                + "answer first (`klaxon ingest FILE`)")
                    }
                    print(
                        format == .json
                            ? AirReport.forecastJSON(rows) : TerminalText.safeLines(AirReport.forecastText(rows)))
                    return 0
                }
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
