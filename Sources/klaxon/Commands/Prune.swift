import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "Remove history older than retention: (klaxon.yaml) allows; --dry-run counts it first.",
        discussion: """
            Never removes an alert's state, a firing alert's latest transition, an undelivered notification \
            or its transition, a series' newest reading or the readings the rules look back over, or a \
            gauge series' latest forecast issuance.
            """)

    @OptionGroup var store: StoreOptions
    @OptionGroup var rules: RulesOption

    @Flag(help: "Count what would be removed; remove nothing.")
    var dryRun = false

    @Option(help: "Prune as of this time (ISO 8601; default: now). For tests and back-fills.")
    var now: String?

    func run() async throws {
        try await guarded {
            let config = try store.loadConfig()
            // The rules say how far back rate and trend rules look; without rules, nothing looks back.
            let paths = rules.paths(config)
            let explicit = !rules.rules.isEmpty || config?.rules != nil
            let ruleList =
                explicit || paths.contains(where: { FileManager.default.fileExists(atPath: $0) })
                ? try loadRules(paths) : []
            let retention = config?.retention ?? Retention()
            let plan = retention.plan(now: try parseTime(now, option: "--now") ?? nowSeconds(), rules: ruleList)
            return try await store.withStore(config: config, readOnly: dryRun) { db in
                let counts = dryRun ? try await db.prunable(plan) : try await Prune.run(store: db, plan: plan)
                for (key, kind) in Retention.kinds {
                    let keep = retention[kind]
                    guard keep != nil else {
                        print("\(key): kept forever")
                        continue
                    }
                    let verb = dryRun ? "would remove" : "removed"
                    var line = "\(key): \(verb) \(counts[kind]) older than \(Retention.describe(keep))"
                    if kind == .readings, counts[.ingestLog] > 0 {
                        line += " (and fold \(counts[.ingestLog]) ingest-log entries)"
                    }
                    if kind == .forecasts, counts[.airForecasts] > 0 {
                        line += " (and \(counts[.airForecasts]) air-quality forecasts)"
                    }
                    print(line)
                }
                if dryRun { printError("prune: dry run, nothing removed") }
                return 0
            }
        }
    }
}
