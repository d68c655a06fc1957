import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Firing alerts, acks, silences, reminders and retries: the same on every backend.
@Suite(.timeLimit(.minutes(10))) struct AlertConformanceTests {
    let rules = [Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10))]

    @Test("firing alerts, acks that hold until the alert's state changes", arguments: Backend.allCases)
    func firingAlertsAndAcks(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T00:00:00Z", 50), reading("B", "2026-01-01T00:00:00Z", 50),
            ])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"))
            let firing = try await store.firingAlerts()
            #expect(firing.map(\.key.station) == ["A", "B"])
            let a = try #require(firing.first)
            #expect(try await store.ack(transitionID: 999_999, by: "nobody", at: 1) == nil)
            let acked = try await store.ack(transitionID: a.transitionID, by: "ops:ann", at: 100)
            #expect(acked?.key == a.key && acked?.transition.station == "A")
            #expect(try await store.acks()[a.key]?.by == "ops:ann")
            #expect(try await store.acks()[a.key]?.at == 100)
            // A resolves: its ack no longer holds.
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:15:00Z", 1)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:15:00Z"))
            #expect(try await store.acks().isEmpty)
            #expect(try await store.firingAlerts().map(\.key.station) == ["B"])
        }
    }

    @Test("chat replay keys: taken once until they expire, given back on release", arguments: Backend.allCases)
    func chatSeenOnce(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            #expect(try await store.claimOnce(key: "slack:v0=aa", expires: 400, now: 100))
            #expect(try await !store.claimOnce(key: "slack:v0=aa", expires: 400, now: 100))
            #expect(try await !store.claimOnce(key: "slack:v0=aa", expires: 500, now: 400))
            // Another key is its own.
            #expect(try await store.claimOnce(key: "mattermost:n1", expires: 200, now: 100))
            // Past its expiry, a key may be taken again (and is remembered anew).
            #expect(try await store.claimOnce(key: "slack:v0=aa", expires: 700, now: 401))
            #expect(try await !store.claimOnce(key: "slack:v0=aa", expires: 700, now: 600))
            // Released, it may be taken again at once.
            try await store.releaseOnce(key: "mattermost:n1")
            #expect(try await store.claimOnce(key: "mattermost:n1", expires: 200, now: 150))
            // Expired keys are pruned as new ones come: more expired than one claim prunes (`pruneBatch`), then
            // claims later on. (Each claim is a round trip: on a starved machine 500 of them took minutes.)
            let expired = ChatSeenSQL.pruneBatch + 20
            for i in 0..<expired { #expect(try await store.claimOnce(key: "k\(i)", expires: 1000, now: 900)) }
            for i in 0..<3 { #expect(try await store.claimOnce(key: "late\(i)", expires: 5000, now: 2000)) }
            for i in 0..<expired { #expect(try await store.claimOnce(key: "k\(i)", expires: 6000, now: 2001)) }
        }
    }

    @Test("silences: active and scheduled, expired by id or by a unique prefix", arguments: Backend.allCases)
    func silences(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let matcher = try Matcher.parse("station=A")
            let windows: [(String, Int64, Int64)] = [("abc-1", 0, 1_000), ("abc-2", 500, 2_000), ("xyz", 0, 50)]
            for (id, starts, ends) in windows {
                try await store.addSilence(
                    Silence(id: id, matchers: [matcher], starts: starts, ends: ends, comment: "c", createdBy: "me"),
                    now: 0)
            }
            #expect(try await store.silences(now: 100).map(\.id) == ["abc-1", "abc-2"])
            #expect(try await store.silences(now: 100, includeExpired: true).count == 3)
            #expect(try await store.activeSilences(now: 100).first?.matchers == [matcher])
            #expect(try await store.expireSilence(id: "abc", now: 100) == .ambiguous(["abc-1", "abc-2"]))
            #expect(try await store.expireSilence(id: "xyz", now: 100) == .notFound)
            #expect(try await store.expireSilence(id: "abc-2", now: 100) == .expired("abc-2"))
            #expect(try await store.expireSilence(id: "abc", now: 100) == .expired("abc-1"))
            #expect(try await store.silences(now: 100).isEmpty)
        }
    }

    @Test("reminders: last notified, first queued, has a notification, a repeat queued", arguments: Backend.allCases)
    func reminders(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let now: Int64 = 1_772_000_000_000
            let firing = transition(station: "A")
            try await store.queue([firing], receivers: ["ops"], now: now)
            let alert = OutboxRecord.alertKey(firing)
            let id = try #require(try await store.transitions().first?.id)
            var last = try await store.lastNotified(alert: alert, receiver: "ops")
            #expect(last.sentAt == nil && last.queued)
            #expect(try await store.firstQueued(alert: alert, transitionID: id) == now)
            #expect(try await store.hasNotification(alert: alert, receiver: "ops", transitionID: id))
            #expect(!(try await store.hasNotification(alert: alert, receiver: "chat", transitionID: id)))
            let batch = try #require(try await store.claim(now: now, lease: 1_000, limit: 10, instance: nil).first)
            try await store.apply([.finish(batch, state: .sent, now: now + 5, retryAt: nil, error: nil)])
            last = try await store.lastNotified(alert: alert, receiver: "ops")
            #expect(last.sentAt == now + 5 && !last.queued)
            try await store.enqueueRepeat(
                transitionID: id, transition: firing, receiver: "ops", route: nil, groupKey: "g", now: now + 10)
            let repeated = try await store.claim(now: now + 10, lease: 1_000, limit: 10, instance: nil)
            #expect(repeated.first?.rows.map(\.purpose) == ["repeat"])
            #expect(repeated.first?.transitions.map(\.id) == [id])
        }
    }

    @Test("a dead row is retried under its id; a pending one is not", arguments: Backend.allCases)
    func retryDead(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let now: Int64 = 1_772_000_000_000
            try await store.queue([transition(station: "A")], receivers: ["ops"], now: now)
            let batch = try #require(try await store.claim(now: now, lease: 1_000, limit: 10, instance: nil).first)
            let id = batch.rows[0].id
            #expect(!(try await store.retryOutbox(id: id, now: now + 1)))
            try await store.apply([.finish(batch, state: .dead, now: now + 1, retryAt: nil, error: "HTTP 400")])
            #expect(try await store.metrics().outbox["dead"] == 1)
            #expect(try await store.retryOutbox(id: id, now: now + 2))
            #expect(try await store.metrics().outbox["dead"] == 0)
            let again = try await store.outbox(state: .pending)
            #expect(again.map(\.id) == [id] && again.first?.attempts == 0 && again.first?.dueAt == now + 2)
        }
    }

    @Test("metrics count readings by source, transitions, outcomes and latency", arguments: Backend.allCases)
    func metrics(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let now: Int64 = 1_772_000_000_000
            _ = try await store.write(
                SourceBatch(readings: [
                    reading("A", "2026-01-01T00:00:00Z", 1), reading("A", "2026-01-01T00:15:00Z", 2),
                ]),
                source: "usgs-iv", cursor: nil, at: 0)
            try await store.queue([transition(station: "A")], receivers: ["ops"], now: now)
            let batch = try #require(try await store.claim(now: now, lease: 1_000, limit: 10, instance: nil).first)
            try await store.apply([.finish(batch, state: .sent, now: now + 200, retryAt: nil, error: nil)])
            let m = try await store.metrics()
            #expect(m.readingsBySource == ["usgs-iv": 2])
            #expect(m.transitions == ["river-levels": ["firing": 1]])
            #expect(m.deliveries == ["ops": ["sent": 1]])
            #expect(m.outbox["sent"] == 1 && m.outbox["pending"] == 0)
            #expect(m.latencyCount == 1 && abs(m.latencySum - 0.2) < 1e-9)
            #expect(m.latencyBuckets.first { $0.le == 0.25 }?.count == 1)
            #expect(m.sources.map(\.source) == ["usgs-iv"])
        }
    }

    @Test("a series' summary leaves suspect readings out", arguments: Backend.allCases)
    func summary(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            // gage_height of 99,999 ft is out of any river's range: stored, marked suspect.
            _ = try await store.readingWriter().write([
                reading("A", "2026-01-01T00:00:00Z", 1), reading("A", "2026-01-01T00:15:00Z", 3),
                reading("A", "2026-01-01T00:30:00Z", 99_999),
            ])
            let s = try #require(
                try await store.summary(
                    station: "A", metric: "gage_height", from: t("2025-12-31T00:00:00Z"), to: t("2026-01-02T00:00:00Z"))
            )
            #expect(s.count == 2 && s.min == 1 && s.max == 3 && s.mean == 2 && s.sum == 4 && s.suspect == 1)
            #expect(s.first == t("2026-01-01T00:00:00Z") && s.last == t("2026-01-01T00:15:00Z"))
            let suspect = try await store.suspectReadings(
                station: "A", metric: "gage_height", from: 0, to: .max, limit: 10)
            #expect(suspect.count == 1 && suspect.newest.map(\.value) == [99_999])
            #expect(try await store.latest(station: "A", metric: "gage_height")?.value == 3)
            #expect(
                try await store.latest(station: "A", metric: "gage_height", at: .max, includingSuspect: true)?.value
                    == 99_999)
            #expect(try await store.summary(station: "Z", metric: "gage_height", from: 0, to: .max) == nil)
        }
    }
}
