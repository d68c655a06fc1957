import Foundation
import KlaxonCore
import KlaxonStore

/// What the repeat and escalation schedulers read and queue: the firing alerts and their acks, and
/// the outbox's record of what was sent.
public typealias RepeatStore = AlertReads & AckStore & RepeatQueue

/// `repeat_interval`: re-notifies a still-firing alert when its last notification to a receiver is
/// older than the route's interval, unless it was acknowledged (`ack`) since it last changed. The
/// reminder carries the transition that last announced the alert.
public enum Repeats {
    /// Queues the reminders due at `now` (ms); returns how many.
    @discardableResult
    public static func enqueue(store: any RepeatStore, rules: [Rule], routing: Routing, now: Int64) async throws -> Int
    {
        // No route repeats: nothing to read (the firing alerts are many after a flood of them).
        guard (routing.routes + [routing.defaults]).contains(where: { $0.repeatInterval != nil }) else { return 0 }
        let notify = Dictionary(rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a })
        var queued = 0
        let acked = try await store.acks()
        for alert in try await store.firingAlerts() {
            // An acknowledged alert is not repeated until its state changes.
            if acked[alert.key] != nil { continue }
            let t = alert.transition
            for d in routing.deliveries(for: t, notify: notify[t.rule] ?? []) {
                let route = routing.route(d.route)
                guard let interval = route.repeatInterval else { continue }
                let key = OutboxRecord.alertKey(t)
                let last = try await store.lastNotified(alert: key, receiver: d.receiver)
                guard !last.queued, let sent = last.sentAt,
                    sent.addingClamped(interval.multipliedClamped(by: 1000)) <= now
                else { continue }
                try await store.enqueueRepeat(
                    transitionID: alert.transitionID, transition: t, receiver: d.receiver, route: d.route,
                    groupKey: route.groupKey(t), now: now)
                queued += 1
            }
        }
        return queued
    }
}

/// `escalate_after` / `escalate_to`: an alert still firing and not acked that long after its first
/// notification was queued also goes to the escalation receiver, once per transition.
public enum Escalations {
    /// Queues the escalations due at `now` (ms); returns how many.
    @discardableResult
    public static func enqueue(store: any RepeatStore, rules: [Rule], routing: Routing, now: Int64) async throws -> Int
    {
        guard routing.routes.contains(where: { $0.escalateAfter != nil && $0.escalateTo != nil }) else { return 0 }
        let notify = Dictionary(rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a })
        let acked = try await store.acks()
        var queued = 0
        for alert in try await store.firingAlerts() where acked[alert.key] == nil {
            let t = alert.transition
            let key = OutboxRecord.alertKey(t)
            var routes: Set<Int> = []
            for d in routing.deliveries(for: t, notify: notify[t.rule] ?? []) {
                guard let r = d.route, routes.insert(r).inserted else { continue }
                let route = routing.route(d.route)
                guard let after = route.escalateAfter, let target = route.escalateTo,
                    let first = try await store.firstQueued(alert: key, transitionID: alert.transitionID),
                    first.addingClamped(after.multipliedClamped(by: 1000)) <= now,
                    try await !store.hasNotification(alert: key, receiver: target, transitionID: alert.transitionID)
                else { continue }
                try await store.enqueueRepeat(
                    transitionID: alert.transitionID, transition: t, receiver: target, route: d.route,
                    groupKey: route.groupKey(t), now: now)
                queued += 1
            }
        }
        return queued
    }
}
