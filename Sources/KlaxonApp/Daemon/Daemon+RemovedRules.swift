import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Logging
import Synchronization

/// Rules a reload removed whose firing alerts are still to be resolved, each with the receivers its
/// `notify` named (the resolve goes where the firing went).
final class RemovedRulesQueue: Sendable {
    private let pending = Mutex<[String: [String]]>([:])

    /// Adds the rules of `old` that `new` no longer has; forgets those `new` has again.
    func note(old: [Rule], new: [Rule]) {
        let kept = Set(new.map(\.name))
        pending.withLock { p in
            for rule in old where !kept.contains(rule.name) { p[rule.name] = rule.notify }
            for name in kept { p[name] = nil }
        }
    }

    /// Adds rules by name with the receivers their `notify` named (people's watches gone while no
    /// daemon ran: their resolves go to the receivers that heard them firing).
    func note(gone: [String: [String]]) {
        pending.withLock { p in for (name, notify) in gone where p[name] == nil { p[name] = notify } }
    }

    var current: [String: [String]] { pending.withLock { $0 } }

    /// Forgets the rules resolved (a rule noted again meanwhile stays).
    func done(_ resolved: [String: [String]]) {
        pending.withLock { p in for (name, notify) in resolved where p[name] == notify { p[name] = nil } }
    }
}

extension Daemon {
    /// Resolves the firing alerts of the rules a reload removed (`removedRules`), through the store
    /// as any resolve (state, transition and outbox rows in one transaction), each saying why. Runs
    /// between evaluations (`evaluations`), so no evaluation with the old rules steps them again.
    /// A store that cannot answer leaves them pending: the next reload or evaluation tries again.
    /// Returns, per rule, how many alerts it resolved.
    @discardableResult
    func resolveRemovedRules(trigger: String) async -> [(rule: String, alerts: Int)] {
        let pending = removedRules.current
        guard !pending.isEmpty else { return [] }
        let set = running.withLock { $0 }
        let receivers = Set(set.config.receivers.map(\.name))
        let e = Evaluation(
            engine: RuleEngine(rules: []), quakes: QuakeRunner(rules: []), trips: TripRunner(rules: []),
            now: clock.now(), queuedAt: Int64(Date().timeIntervalSince1970 * 1000),
            planner: RemovedRulesPlanner(routing: set.routing, notify: pending, receivers: receivers))
        let logged: [Logged]
        do {
            logged = try await store.resolveRemoved(rules: Set(pending.keys), e)
        } catch {
            logger.error(
                "could not resolve the firing alerts of rules the reload removed; will try again",
                metadata: ["trigger": "\(trigger)", "rules": "\(pending.keys.sorted())", "error": "\(error)"])
            return []
        }
        removedRules.done(pending)
        if set.routing == nil {
            let out = StdoutNotifier(format: .text)
            for l in logged { out.write(l.transition, message: l.message) }
        } else if !logged.isEmpty {
            queued.value?()
        }
        var counts: [String: Int] = [:]
        for l in logged { counts[l.transition.rule, default: 0] += 1 }
        let result = counts.sorted { $0.key < $1.key }.map { (rule: $0.key, alerts: $0.value) }
        for (rule, n) in result {
            logger.notice(
                "resolved the firing alerts of a rule the reload removed",
                metadata: [
                    "trigger": "\(trigger)", "rule": "\(rule)", "alerts": .stringConvertible(n),
                    "reason": "\(RemovedRules.reason(rule: rule))",
                ])
        }
        return result
    }
}

/// The plan of a removed rule's resolves: the message is the resolve's summary, and it goes where
/// the rule's `notify` sent the firing, to the receivers the config still has.
struct RemovedRulesPlanner: TransitionPlanner {
    let routing: Routing?
    /// Each removed rule's `notify`, by rule name.
    let notify: [String: [String]]
    let receivers: Set<String>

    var routes: Bool { routing != nil }

    func plan(_ t: inout Transition) -> TransitionPlan {
        TransitionPlan(
            message: t.summary,
            deliveries: routing?.plan(for: t, notify: notify[t.rule] ?? []).filter { configured($0.receiver) } ?? [])
    }

    /// A receiver the config has: one of its own, or a person's direct messages through one (a
    /// removed watch's `BASE+dm:USER`).
    func configured(_ receiver: String) -> Bool {
        receivers.contains(receiver) || DirectReceiver(name: receiver).map { receivers.contains($0.base) } == true
    }

    /// The resolve also goes to each receiver that heard the firing and that the routing leaves out
    /// (one a reload removed is recorded as such by the dispatcher).
    func resolvePlan(_ t: Transition, heardBy: [String]) -> [PlannedDelivery] {
        routing?.resolvePlan(for: t, notify: notify[t.rule] ?? [], heardBy: heardBy) ?? []
    }
}
