import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonStore

/// A temporary database with transitions queued for delivery.
final class OutboxFixture {
    let dir: URL
    let store: any Store

    init() throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-delivery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        store = try SQLiteStore.open(path: dir.appendingPathComponent("k.sqlite").path)
    }

    deinit { try? FileManager.default.removeItem(at: dir) }

    /// Records transitions and queues each for the receivers, due now.
    func queue(_ transitions: [Transition], receivers: [String], route: Int? = nil, now: Int64 = nowMillis())
        async throws
    {
        try await store.record(
            transitions.map { t in
                (
                    t, t.summary,
                    receivers.map {
                        PlannedDelivery(receiver: $0, route: route, groupKey: "rule=\(t.rule),station=\(t.station)")
                    }
                )
            }, now: now)
    }
}

func nowMillis() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

/// A deadline for `runUntilEmpty`, a minute from now. It only says "broken": a pass here ends in well
/// under a second, or seconds on a loaded machine, and never waits for the deadline.
func brokenAfter() -> Int64 { nowMillis() + 60_000 }

func transition(
    rule: String = "river-levels", station: String = "01646500", state: TransitionState = .firing,
    level: String? = "minor",
    from: String? = nil, value: Double = 12.4, severity: Severity = .warning, at: String = "2026-03-01T06:15:00Z"
) -> Transition {
    Transition(
        rule: rule, kind: "levels", station: station, metric: "gage_height", state: state, level: level,
        fromLevel: from,
        at: Timestamp.parse(at)!, value: value, unit: "ft", severity: severity, labels: ["team": "water"],
        summary: "gage_height at \(station) reached \(level ?? "-"): \(value) ft",
        explanation: "gage_height \(value) ft ≥ minor (12); previous level action (10)")
}

func notification(_ ts: [Transition], receiver: String = "r", key: String = "key-1") -> AlertNotification {
    AlertNotification(
        key: key, receiver: receiver,
        alerts: ts.enumerated().map { NotifiedAlert(transition: $1, message: $1.summary, id: Int64($0 + 1)) })
}

/// A lease (ms) no stall of a loaded machine outlasts, for tests about something else than leases: a
/// renewal starved past a 5 s lease would let a held row be claimed and sent again (rightly: at least once).
let longLease: Int64 = 3_600_000

/// Fast retries for tests; a 5 s lease unless the test gives one.
func fastSettings(fallback: String? = nil, lease: Int64 = 5_000) -> Dispatcher.Settings {
    var s = Dispatcher.Settings()
    s.backoff = Backoff(initial: 0.02, cap: 0.1, retryAfterCap: 3600)
    s.fallbackReceiver = fallback
    s.lease = lease
    return s
}
