import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct EvaluateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evaluate",
        abstract: "Evaluate readings that arrived since the last evaluation; record and print transitions.")

    @OptionGroup var store: StoreOptions
    @OptionGroup var rules: RulesOption

    @Option(help: "Output format: text or json.")
    var format: StdoutNotifier.Format = .text

    @Option(help: "Evaluate as of this time (ISO 8601; default: now). For tests and back-fills.")
    var now: String?

    func run() async throws {
        try await guarded {
            let config = try store.loadConfig()
            let ruleList = try loadRules(rules.paths(config))
            let at = try parseTime(now, option: "--now") ?? nowSeconds()
            try Evaluate.check(config: config, rules: ruleList)
            // Nothing to evaluate without a database (readings come from `ingest`, `fetch` or `run`).
            return try await store.withStore(config: config) { db in
                try await Evaluate.command(store: db, rules: ruleList, config: config, now: at, format: format)
            }
        }
    }
}
