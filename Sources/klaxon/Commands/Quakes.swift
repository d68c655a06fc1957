import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

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

    @Option(
        help: ArgumentHelp(
            "Estimate each event's felt intensity at LAT,LON: distance_km is then hypocentral from there.",
            valueName: "lat,lon"))
    var at: String?

    @Option(
        name: .customLong("intensity-model"),
        help: "The intensity model for --at: aw2007 (Atkinson & Wald 2007; the only one).")
    var intensityModel: String = "aw2007"

    @Option(
        name: [.customShort("o"), .customLong("output"), .customLong("format")],
        help: "Output format: text or json (one object per line).")
    var format: StdoutNotifier.Format = .text

    func run() async throws {
        try await guarded {
            var filter = QuakeList.Filter(since: try Self.since(since, now: nowSeconds()), minMagnitude: minMagnitude)
            if let near {
                let (lat, lon) = try Self.point(near, option: "--near")
                filter.near = (lat, lon, radius)
            }
            if let at {
                guard intensityModel.lowercased() == "aw2007" else {
                    throw ValidationError(
                        "--intensity-model \"\(TerminalText.safe(intensityModel))\" is not known: aw2007 (Atkinson & Wald 2007)"
                    )
                }
                filter.at = try Self.point(at, option: "--at")
            }
            return try await store.withStore(readOnly: true) { db in
                let rows = try await QuakeList.find(store: db, filter: filter)
                for r in rows { print(format == .json ? QuakeList.json(r) : TerminalText.safeLines(QuakeList.text(r))) }
                printError("quakes: \(rows.count) event\(rows.count == 1 ? "" : "s")")
                return 0
            }
        }
    }

    /// `LAT,LON` in degrees.
    static func point(_ text: String, option: String) throws -> (Double, Double) {
        let parts = text.split(separator: ",").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let lat = parts[0], let lon = parts[1], (-90...90).contains(lat),
            (-180...180).contains(lon)
        else { throw UserError("\(option) \"\(TerminalText.safe(text))\" must be LAT,LON (like 35.68,139.69)") }
        return (lat, lon)
    }

    /// `24h` (ago) or a date/time.
    static func since(_ text: String, now: Int64) throws -> Int64 {
        if let d = DurationText.parse(text) { return now - d }
        if let t = Timestamp.parse(text) ?? Timestamp.parse(text + "T00:00:00Z") { return t }
        throw UserError("--since \"\(text)\" must be a duration (24h, 7d) or a date (2026-11-01)")
    }
}
