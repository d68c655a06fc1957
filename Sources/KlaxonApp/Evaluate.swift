import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

/// `klaxon evaluate`: evaluates readings that arrived since the last evaluation and records transitions.
public enum Evaluate {
    public static func run(store: Store, rules: [Rule], now: Int64) throws -> EvaluationResult {
        let engine = RuleEngine(rules: rules)
        let renderer = try MessageRenderer(rules: rules)
        return try store.evaluate(engine: engine, now: now, render: renderer.render)
    }
}
