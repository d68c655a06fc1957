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
            if let config {
                let problems = config.check(rules: ruleList)
                if !problems.isEmpty { throw DiagnosticsError(diagnostics: problems) }
            }
            // Nothing to evaluate without a database (readings come from `ingest`, `fetch` or `run`).
            return try await store.withStore(config: config) { db in
                // Without receivers there is nowhere to deliver: print the transitions instead.
                let routing = (config?.receivers.isEmpty ?? true) ? nil : config?.routing
                for line in try await WaterContext.missingCategories(rules: ruleList, store: db) {
                    printError("warning: \(line)")
                }
                let result = try await Evaluate.run(store: db, rules: ruleList, now: at, routing: routing)
                for t in result.unrouted {
                    printError(
                        "warning: \(t.rule) \(t.station) \(t.state.rawValue) reaches no receiver (give the rule notify:, add a route or default_receiver)"
                    )
                }
                if routing == nil {
                    // Without a config there are no receivers: print the transitions.
                    let out = StdoutNotifier(format: format)
                    for (t, message) in result.transitions { out.write(t, message: message) }
                }
                var line = "evaluate: \(result.newReadings) new readings, \(result.transitions.count) transitions"
                if routing != nil { line += " queued in the outbox" }
                if result.lateReadings > 0 { line += ", \(result.lateReadings) late readings ignored" }
                if result.suspectReadings > 0 { line += ", \(result.suspectReadings) suspect readings skipped" }
                printError(line)
                return 0
            }
        }
    }
}
