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
    ///   - renderer: the rules' compiled templates (compiled here when not given; the daemon keeps
    ///     one for all its evaluations).
    ///   - engine: the rules' engine with its station metadata and flood categories (built here from
    ///     the store's when not given; a replay into a scratch store brings its own).
    ///   - observer: who hears of each transaction as it commits (the daemon's dispatcher: woken,
    ///     and handed what each slice claims for it).
    public static func run(
        store: any EvaluationStore & RuleContextReads, rules: [Rule], now: Int64, routing: Routing? = nil,
        queuedAt: Int64 = Int64(Date().timeIntervalSince1970 * 1000), renderer: MessageRenderer? = nil,
        engine: RuleEngine? = nil, sliceReadings: Int = 50_000, sliceTransitions: Int = 1_000,
        keepTransitions: Bool = true, observer: any EvaluationObserver = NoObserver()
    ) async throws -> EvaluationResult {
        let ruleEngine: RuleEngine
        if let engine {
            ruleEngine = engine
        } else {
            ruleEngine = try await WaterContext.engine(rules: rules, store: store)
        }
        let planner = RulePlanner(
            rules: rules, renderer: try renderer ?? MessageRenderer(rules: rules), routing: routing)
        var evaluation = Evaluation(
            engine: ruleEngine, quakes: QuakeRunner(rules: rules), trips: TripRunner(rules: rules), now: now,
            queuedAt: queuedAt, planner: planner, sliceReadings: sliceReadings, sliceTransitions: sliceTransitions)
        evaluation.keepTransitions = keepTransitions
        return try await store.evaluate(evaluation, observer: observer)
    }
}

/// The rules' plan for a transition, made before the store is touched: its annotations and message
/// from the rules' templates (`MessageRenderer`), its deliveries from the routing and the rule's
/// `notify` (none without routing: transitions are recorded only).
public struct RulePlanner: TransitionPlanner {
    let renderer: MessageRenderer
    let routing: Routing?
    /// Each rule's `notify`, by rule name.
    let notify: [String: [String]]

    public init(rules: [Rule], renderer: MessageRenderer, routing: Routing?) {
        self.renderer = renderer
        self.routing = routing
        notify = Dictionary(rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a })
    }

    public var routes: Bool { routing != nil }

    public func plan(_ t: inout Transition) -> TransitionPlan {
        let annotations = renderer.annotations(t)
        if !annotations.isEmpty { t.annotations = annotations }
        return TransitionPlan(
            message: renderer.render(t), deliveries: routing?.plan(for: t, notify: notify[t.rule] ?? []) ?? [])
    }

    /// The resolve contract: a resolve also goes to the receivers that heard its alert firing and
    /// that the routing no longer sends it to (`Routing.resolvePlan`).
    public func resolvePlan(_ t: Transition, heardBy: [String]) -> [PlannedDelivery] {
        routing?.resolvePlan(for: t, notify: notify[t.rule] ?? [], heardBy: heardBy) ?? []
    }

}
