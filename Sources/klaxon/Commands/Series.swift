import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore

/// `klaxon series STATION METRIC`: a stored or derived series' readings (issue 42).
struct SeriesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "series",
        abstract: "The readings of one series, stored or derived (pm25.nowcast, aqi.pm25.nowcast), oldest first.",
        discussion: """
            Suspect readings are left out. With -o json: [{"time", "value"}], time in ISO 8601 UTC. At most \
            --limit readings, the newest (default 100000).
            """)

    @Argument(help: "Station id.")
    var station: String

    @Argument(help: "Metric (gage_height, pm25, pm25.nowcast, aqi.pm25.nowcast, …).")
    var metric: String

    @OptionGroup var store: StoreOptions

    @Option(help: "Readings since this long ago (24h, 7d) or this date/time (default: all).")
    var since: String?

    @Option(help: "At most this many readings, the newest (1 to 1000000).")
    var limit: Int = 100_000

    @Option(
        name: [.customShort("o"), .customLong("output"), .customLong("format")],
        help: "Output format: text or json.")
    var output: OutputFormat = .text

    struct Point: Encodable {
        var time: String
        var value: Double
    }

    func validate() throws {
        guard (1...1_000_000).contains(limit) else { throw ValidationError("--limit must be 1 to 1000000") }
    }

    func run() async throws {
        try await guarded {
            let from = try since.map { try QuakesCommand.since($0, now: nowSeconds()) } ?? Int64.min / 2
            let config = try store.loadConfig()
            let values = try await store.withStore(config: config, readOnly: true) { db in
                try await db.values(station: station, metric: metric, from: from, to: Int64.max / 2)
            }
            let shown = values.suffix(limit)
            switch output {
            case .json:
                try printJSON(shown.map { Point(time: Timestamp.format($0.time), value: $0.value) })
            case .text:
                if shown.isEmpty {
                    printError(
                        "no readings of \(TerminalText.safe(station))/\(TerminalText.safe(metric))"
                            + (since == nil ? "" : " since \(TerminalText.safe(since!))"))
                }
                for p in shown { print("\(Timestamp.format(p.time))  \(p.value)") }
            }
            return 0
        }
    }
}
