import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

extension Evaluate {
    /// `klaxon evaluate`'s check before it opens the store: the rules' `notify:` must name receivers
    /// of the config.
    public static func check(config: Config?, rules: [Rule]) throws {
        guard let config else { return }
        let problems = config.check(rules: rules)
        if !problems.isEmpty { throw DiagnosticsError(diagnostics: problems) }
    }

    /// `klaxon evaluate` over its open store: evaluates at `now` and records the transitions, queued in
    /// the outbox when the config has receivers, else written to standard output in `format`.
    /// People's watches are evaluated with the rules, as the daemon evaluates them (issue 43), and
    /// the firing alerts of watches removed since are resolved first.
    /// Warnings (flood categories missing, a transition that reaches no receiver) and the closing
    /// `evaluate: …` line go to standard error. Returns the exit status.
    public static func command(
        store: any EvaluationStore & RuleContextReads & WatchStore & AlertReads, rules: [Rule], config: Config?,
        now: Int64, format: StdoutNotifier.Format, output: CommandOutput = .standard
    ) async throws -> Int32 {
        // Without receivers there is nowhere to deliver: print the transitions instead.
        let routing = (config?.receivers.isEmpty ?? true) ? nil : config?.routing
        for line in try await WaterContext.missingCategories(rules: rules, store: store) {
            output.error("warning: \(line)")
        }
        var rules = rules
        if let config {
            let watches = try await WatchWiring.storedRules(store: store, config: config)
            let gone = WatchWiring.gone(counts: try await store.alertCounts(), kept: watches)
            if !gone.isEmpty {
                let e = Evaluation(
                    engine: RuleEngine(rules: []), quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []),
                    now: now, queuedAt: Int64(Date().timeIntervalSince1970 * 1000),
                    planner: RemovedRulesPlanner(
                        routing: routing, notify: Dictionary(uniqueKeysWithValues: gone.map { ($0, [String]()) }),
                        receivers: Set(config.receivers.map(\.name))))
                let logged = try await store.resolveRemoved(rules: gone, e)
                if routing == nil {
                    let out = StdoutNotifier(format: format)
                    for l in logged { output.line(out.line(for: l.transition, message: l.message)) }
                }
            }
            rules += watches
        }
        let result = try await run(store: store, rules: rules, now: now, routing: routing)
        for t in result.unrouted {
            output.error(
                "warning: \(t.rule) \(t.station) \(t.state.rawValue) reaches no receiver (give the rule notify:, add a route or default_receiver)"
            )
        }
        if routing == nil {
            // Without a config there are no receivers: print the transitions.
            let out = StdoutNotifier(format: format)
            for (t, message) in result.transitions { output.line(out.line(for: t, message: message)) }
        }
        var line = "evaluate: \(result.newReadings) new readings, \(result.transitions.count) transitions"
        if routing != nil { line += " queued in the outbox" }
        if result.lateReadings > 0 { line += ", \(result.lateReadings) late readings ignored" }
        if result.suspectReadings > 0 { line += ", \(result.suspectReadings) suspect readings skipped" }
        output.error(line)
        return 0
    }
}
