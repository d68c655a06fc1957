import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

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
