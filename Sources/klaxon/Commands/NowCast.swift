import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore

/// `klaxon nowcast`: EPA's PM NowCast of hourly concentrations given on the command line (issue 42).
struct NowCastCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nowcast",
        abstract: "EPA's NowCast and its AQI from up to 12 hourly PM2.5 or PM10 concentrations.",
        discussion: """
            --hourly takes the hourly averages in µg/m³, newest first, comma-separated, with an empty item \
            for an hour without data (`12.1,,9.8`). The NowCast needs 2 of the 3 most recent hours; it is \
            truncated (PM2.5 to 0.1 µg/m³, PM10 to 1 µg/m³) and placed on the US AQI with EPA's 2024 \
            breakpoints. With -o json: {"nowcast", "aqi", "category"}. When there is no valid NowCast the \
            command says "not valid: …" and exits 1. See docs/sources.md, "NowCast".
            """)

    @Option(help: "pm2.5 or pm10.")
    var pollutant: String

    @Option(help: ArgumentHelp("Hourly concentrations in µg/m³, newest first (C1,C2,…,C12).", valueName: "list"))
    var hourly: String

    @Option(
        name: [.customShort("o"), .customLong("output"), .customLong("format")],
        help: "Output format: text or json.")
    var output: OutputFormat = .text

    struct Answer: Encodable {
        var nowcast: Double
        var aqi: Int
        var category: String
    }

    func run() throws {
        try guarded {
            guard let p = NowCast.Pollutant(name: pollutant) else {
                throw ValidationError("--pollutant must be pm2.5 or pm10, not \"\(TerminalText.safe(pollutant))\"")
            }
            let hours = try Self.parse(hourly)
            switch NowCast.compute(p, hourly: hours) {
            case .failure(let invalid):
                printError("not valid: \(invalid)")
                return 1
            case .success(let r):
                switch output {
                case .json: try printJSON(Answer(nowcast: r.nowcast, aqi: r.aqi, category: r.category))
                case .text:
                    let unit = "µg/m³"
                    let value = p == .pm25 ? String(format: "%.1f", r.nowcast) : String(Int(r.nowcast))
                    print("NowCast \(p.rawValue) \(value) \(unit), AQI \(r.aqi) (\(r.category))")
                }
                return 0
            }
        }
    }

    /// The list's items, newest first: a number, or empty for a missing hour. Bounded: at most 12
    /// items of at most 32 characters (a longer list is refused by `NowCast.compute` with its count).
    static func parse(_ text: String) throws -> [Double?] {
        guard text.utf8.count <= 1_024 else { throw ValidationError("--hourly is longer than 1024 characters") }
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
        guard !(items.count == 1 && items[0].allSatisfy(\.isWhitespace)) else {
            throw ValidationError("--hourly needs at least one hourly value")
        }
        return try items.enumerated().map { i, raw in
            let item = raw.trimmingCharacters(in: .whitespaces)
            if item.isEmpty { return nil }
            guard item.count <= 32, let v = Double(item), v.isFinite else {
                throw ValidationError(
                    "--hourly item \(i + 1) \"\(TerminalText.safe(String(item.prefix(32))))\" is not a number "
                        + "(give µg/m³, or leave the item empty for a missing hour)")
            }
            return v
        }
    }
}
