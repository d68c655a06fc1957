import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

/// `klaxon evaluate`: evaluates what arrived since the last evaluation and records transitions.
/// With routing, each transition's outbox rows (one per receiver) are written in the same
/// transaction as the transition itself.
public enum Evaluate {
    /// - Parameters:
    ///   - now: the evaluation time (seconds): stale checks run up to it.
    ///   - queuedAt: the wall-clock time (ms) outbox rows are queued at. Delivery timing (group waits,
    ///     give-up) runs on the real clock even when `now` replays the past.
    ///   - committed: called as each transaction that logged transitions commits (with their count).
    ///   - handoff: this process's dispatcher, which each slice claims for (`Dispatcher.handoff`).
    ///   - renderer: the rules' compiled templates (compiled here when not given; the daemon keeps
    ///     one for all its evaluations).
    ///   - engine: the rules' engine with its station metadata and flood categories (built here from
    ///     the store's when not given; a replay into a scratch store brings its own).
    public static func run(
        store: any EvaluationStore & RuleContextReads, rules: [Rule], now: Int64, routing: Routing? = nil,
        queuedAt: Int64 = Int64(Date().timeIntervalSince1970 * 1000), renderer: MessageRenderer? = nil,
        engine: RuleEngine? = nil, sliceReadings: Int = 50_000, sliceTransitions: Int = 1_000,
        committed: (@Sendable (Int) -> Void)? = nil, keepTransitions: Bool = true, handoff: Handoff? = nil
    ) async throws -> EvaluationResult {
        let ruleEngine: RuleEngine
        if let engine {
            ruleEngine = engine
        } else {
            ruleEngine = try await WaterContext.engine(rules: rules, store: store)
        }
        let renderer = try renderer ?? MessageRenderer(rules: rules)
        var evaluation = Evaluation(
            engine: ruleEngine, quakes: QuakeRunner(rules: rules), trips: TripRunner(rules: rules), now: now,
            queuedAt: queuedAt, render: renderer.render, route: routing.map { plan(rules: rules, routing: $0) },
            sliceReadings: sliceReadings, sliceTransitions: sliceTransitions, committed: committed)
        evaluation.keepTransitions = keepTransitions
        evaluation.routeResolve = routing.map { resolvePlan(rules: rules, routing: $0) }
        evaluation.handoff = handoff
        evaluation.annotate = renderer.annotations
        return try await store.evaluate(evaluation)
    }

    /// The routing decision for a rule set: pure, made before the store is touched.
    static func plan(rules: [Rule], routing: Routing) -> @Sendable (Transition) -> [PlannedDelivery] {
        let notify = Dictionary(rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a })
        return { t in routing.plan(for: t, notify: notify[t.rule] ?? []) }
    }

    /// Where a resolve goes beyond `plan`: to the receivers that heard it firing and that the
    /// routing no longer sends it to (the resolve contract, `Routing.resolvePlan`).
    static func resolvePlan(rules: [Rule], routing: Routing) -> @Sendable (Transition, [String]) -> [PlannedDelivery] {
        let notify = Dictionary(rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a })
        return { t, heardBy in routing.resolvePlan(for: t, notify: notify[t.rule] ?? [], heardBy: heardBy) }
    }
}
