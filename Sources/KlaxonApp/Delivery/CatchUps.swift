import Foundation
import KlaxonCore
import KlaxonStore

/// What the catch-up scheduler reads and queues: the firing alerts, the silences in force, and the
/// outbox's record of the news that silences and quiet hours kept from receivers.
public typealias CatchUpStore = AlertReads & SilenceStore & RepeatQueue & CatchUpQueue

/// What a receiver last heard converges to the truth (the resolve contract, docs/receivers.md): when
/// a silence ends (it expired, or was expired) or quiet hours end, a receiver whose newest
/// notification of a still-firing alert was muted or dropped, and that believes something other than
/// what it missed, is told the alert's present state at its group's next turn (`group_interval`
/// after it was last sent anything of the alert). A river that rose minor → moderate under a silence
/// is "moderate" in chat once the silence is gone, with no new transition needed.
public enum CatchUps {
    /// What ended since the last look: looked at after every evaluation, the outbox is read only
    /// when a silence or a quiet period ended since (and at the first look: a daemon that starts, or
    /// takes the evaluator over, reads it once).
    public struct Watch: Sendable {
        /// The silences active at the last look (nil: none yet).
        var silences: Set<String>?
        /// The last look (seconds).
        var at: Int64 = 0

        public init() {}

        /// Whether a silence active at the last look is no longer, or a quiet period of `routing`
        /// ended, by `now` (seconds).
        public func due(silences active: [Silence], routing: Routing, now: Int64) -> Bool {
            guard let before = silences else { return true }
            if !before.isSubset(of: active.map(\.id)) { return true }
            return (routing.routes + [routing.defaults]).contains { route in
                guard let quiet = route.quietHours, let end = quiet.end(of: at) else { return false }
                return end <= now
            }
        }

        /// Notes a look at `now` (seconds), made with `active` in force.
        public mutating func looked(silences active: [Silence], now: Int64) {
            silences = Set(active.map(\.id))
            at = now
        }
    }

    /// Looks (`watch`) and, when a silence or a quiet period ended since the last look, queues the
    /// catch-ups due at `now` (ms). Returns how many were queued.
    @discardableResult
    public static func afterEvaluation(
        store: any CatchUpStore, rules: [Rule], routing: Routing, watch: inout Watch, now: Int64
    ) async throws -> Int {
        let silences = try await store.activeSilences(now: now / 1000)
        var queued = 0
        if watch.due(silences: silences, routing: routing, now: now / 1000) {
            queued = try await enqueue(store: store, rules: rules, routing: routing, silences: silences, now: now)
        }
        watch.looked(silences: silences, now: now / 1000)
        return queued
    }

    /// Queues, for each receiver a silence or quiet hours kept news from, a notification of the
    /// alert's present state, unless the alert is still muted for it at `now` (ms), or the routing no
    /// longer sends the alert to it. Due `group_interval` after the receiver was last sent anything of
    /// the alert, or now. Returns how many were queued.
    public static func enqueue(
        store: any CatchUpStore, rules: [Rule], routing: Routing, silences: [Silence], now: Int64
    ) async throws -> Int {
        let firing = try await store.firingAlerts()
        guard !firing.isEmpty else { return 0 }
        var byAlert: [String: (transitionID: Int64, transition: Transition)] = [:]
        for a in firing { byAlert[OutboxRecord.alertKey(a.transition)] = (a.transitionID, a.transition) }
        let missed = try await store.missed(alerts: Array(byAlert.keys)).filter(\.isNews)
        guard !missed.isEmpty else { return 0 }
        let notify = Dictionary(rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a })
        let seconds = now / 1000
        var queued = 0
        for m in missed {
            guard let (transitionID, t) = byAlert[m.alert],
                let d = routing.deliveries(for: t, notify: notify[t.rule] ?? []).first(where: {
                    $0.receiver == m.receiver
                })
            else { continue }
            let route = routing.route(d.route)
            if let quiet = route.quietHours, quiet.mutes(t.severity, at: seconds) { continue }
            if Silence.anyMutes(silences, t.matchLabels, at: seconds) { continue }
            let turn = m.lastSentAt.map { $0.addingClamped(route.groupInterval.multipliedClamped(by: 1000)) } ?? now
            try await store.enqueueRepeat(
                transitionID: transitionID, transition: t, receiver: m.receiver, route: d.route,
                groupKey: route.groupKey(t), now: max(now, turn))
            queued += 1
        }
        return queued
    }
}
