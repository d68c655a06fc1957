import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct DryRunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dry-run",
        abstract: "Replay readings through the rules from a clean state and print what would be sent.",
        discussion: """
            Never writes to --db (it is opened read-only) and never delivers.

            With --config, the transitions recorded are followed by what would be sent: the readings \
            are replayed again through a scratch store and the dispatcher, under the config's receivers \
            and routes (grouping, group_wait and group_interval, folding of unsent notifications, \
            resolves only to receivers that heard the alert firing). The replay is as if live: each \
            evaluation runs at its readings' own time, so notify_max_age never holds old data back. \
            Reminders (repeat_interval), escalations, silences and quake and trip rules are not \
            replayed. With --format json, each notification is one more line, with "type":"notification".
            """)

    @OptionGroup var rules: RulesOption

    @Option(
        name: .long, parsing: .upToNextOption, help: "Readings files to replay (CSV or JSON Lines).",
        completion: .file(extensions: ["csv", "jsonl", "json"]))
    var readings: [String] = []

    @Option(
        name: .long, parsing: .upToNextOption,
        help: "USGS earthquake GeoJSON files to replay through quake rules (versions in `updated` order).",
        completion: .file(extensions: ["json", "geojson"]))
    var events: [String] = []

    @Option(
        name: .long,
        help: "Replay the readings stored in this database (a SQLite file, opened read-only, or a postgres:// URL).",
        completion: .file(extensions: ["sqlite", "db"]))
    var db: String?

    @Option(name: .long, help: "Only readings at or after this ISO 8601 time.")
    var from: String?

    @Option(name: .long, help: "Only readings at or before this ISO 8601 time.")
    var to: String?

    @Option(help: "Output format: text or json (one object per line).")
    var format: StdoutNotifier.Format = .text

    @Flag(help: "Say why each transition happened.")
    var explain = false

    @Flag(
        name: .customLong("lead-time"),
        help:
            "Per observed flood-category crossing, how many hours earlier the forecast alert fired, or that it did not (forecast: rules; needs --db)."
    )
    var leadTime = false

    @Option(
        help: "Print the exact payloads this receiver would get, as the daemon would send them (needs a config).",
        completion: .custom { words, index, prefix in ConfigCompletion.receivers(words, index, prefix) })
    var render: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file: rules (unless --rules), receivers for --render, and receivers and routes for what would be sent (replayed as if live); default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml if it exists.",
            valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"])
    )
    var config: String?

    func validate() throws {
        if !readings.isEmpty && db != nil {
            throw ValidationError("give exactly one of --readings FILE... or --db PATH, not both")
        }
        if readings.isEmpty && db == nil && events.isEmpty {
            throw ValidationError(
                "give exactly one of --readings FILE... or --db PATH (or --events FILE... for quake rules)")
        }
        if leadTime && db == nil {
            throw ValidationError("--lead-time needs --db (the stored observations and forecasts)")
        }
        if render != nil && resolvedConfigPath(config) == nil {
            throw ValidationError("--render needs a config: --config or KLAXON_CONFIG (receivers are defined there)")
        }
    }

    func run() async throws {
        try await guarded {
            var job = DryRunJob(
                rules: rules.rules, readings: readings, events: events, db: db,
                from: try parseTime(from, option: "--from"), to: try parseTime(to, option: "--to"), format: format,
                explain: explain, render: render, config: resolvedConfigPath(config))
            job.leadTime = leadTime
            return try await job.run()
        }
    }
}
