import Foundation
import GRDB
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

/// `klaxon evaluate`: evaluates readings that arrived since the last evaluation and records
/// transitions. With a config, each transition's outbox rows (one per receiver) are written in the
/// same transaction as the transition itself.
public enum Evaluate {
    /// - Parameters:
    ///   - now: the evaluation time (seconds): stale checks run up to it.
    ///   - queuedAt: the wall-clock time (ms) outbox rows are queued at. Delivery timing (group waits,
    ///     give-up) runs on the real clock even when `now` replays the past.
    ///   - renderer: the rules' compiled templates (compiled here when not given; the daemon keeps
    ///     one for all its evaluations).
    public static func run(
        store: Store, rules: [Rule], now: Int64, routing: Routing? = nil,
        queuedAt: Int64 = Int64(Date().timeIntervalSince1970 * 1000), renderer: MessageRenderer? = nil
    ) throws -> EvaluationResult {
        let engine = try WaterContext.engine(rules: rules, store: store)
        let renderer = try renderer ?? MessageRenderer(rules: rules)
        let notify = Dictionary(rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a })
        var unrouted: [Transition] = []
        // Outbox rows for logged transitions, written inside the transaction that logged them.
        func enqueue(_ db: Database, _ logged: [(transition: Transition, message: String, id: Int64)]) throws {
            guard let routing else { return }
            for (t, _, id) in logged {
                let deliveries = routing.deliveries(for: t, notify: notify[t.rule] ?? [])
                if deliveries.isEmpty && !(t.state == .resolved) { unrouted.append(t) }
                let rows = try deliveries.map { d -> (receiver: String, route: Int?, groupKey: String, dueAt: Int64) in
                    let route = routing.route(d.route)
                    let group = route.groupKey(t)
                    return (
                        d.receiver, d.route, group,
                        try dueTime(
                            db, receiver: d.receiver, route: d.route, group: group, timing: route, now: queuedAt)
                    )
                }
                try Store.enqueue(db, transitionID: id, transition: t, deliveries: rows, now: queuedAt)
            }
        }
        var result = try store.evaluate(engine: engine, now: now, render: renderer.render, record: enqueue)
        // Quake rules: events that are new or revised since the last evaluation.
        let quakes = try store.evaluateQuakes(rules: rules, now: now, render: renderer.render, record: enqueue)
        result.transitions += quakes
        // Trip-packing rules: every trip still ahead, against its stored weather.
        result.transitions += try store.evaluateTrips(rules: rules, now: now, render: renderer.render, record: enqueue)
        result.unrouted = unrouted
        return result
    }

    /// Group timing, after Alertmanager: a new group waits `group_wait` to collect alerts; a group
    /// already waiting is joined; a group notified recently waits until `group_interval` has passed.
    static func dueTime(_ db: Database, receiver: String, route: Int?, group: String, timing: Route, now: Int64) throws
        -> Int64
    {
        if timing.groupWait == 0 && timing.groupInterval == 0 { return now }
        let routeKey = route.map { Int64($0) } ?? -1
        if let waiting = try Int64.fetchOne(
            db,
            sql:
                "SELECT min(due_at) FROM outbox WHERE receiver = ? AND coalesce(route, -1) = ? AND group_key = ? AND state = 'pending' AND batch IS NULL AND due_at >= ?",
            arguments: [receiver, routeKey, group, now])
        {
            return waiting
        }
        if let lastSent = try Int64.fetchOne(
            db,
            sql:
                "SELECT max(sent_at) FROM outbox WHERE receiver = ? AND coalesce(route, -1) = ? AND group_key = ? AND state = 'sent'",
            arguments: [receiver, routeKey, group]),
            lastSent.addingClamped(timing.groupInterval.multipliedClamped(by: 1000)) > now
        {
            return lastSent.addingClamped(timing.groupInterval.multipliedClamped(by: 1000))
        }
        return now.addingClamped(timing.groupWait.multipliedClamped(by: 1000))
    }
}
