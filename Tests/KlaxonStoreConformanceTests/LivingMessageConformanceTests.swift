import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Issue 41: a receiver's living message (the platform's id of the one message it edits for an
/// episode or group, and the timeline it shows) is kept by every backend, so a restart or the other
/// daemon edits the same message; and an episode's ack is still found once it has resolved.
@Suite(.timeLimit(.minutes(10))) struct LivingMessageConformanceTests {
    let rules = [Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10))]

    @Test(
        "a living message reads back as saved, per receiver and thread; saving again replaces it",
        arguments: Backend.allCases)
    func roundTrip(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            #expect(try await store.livingMessage(receiver: "discord", thread: "episode:1") == nil)
            // Text a timeline may hold: quotes, backslashes, line breaks, NUL-free Unicode, JSON-looking text.
            let timeline = [
                TimelineEntry(at: 100, text: "firing at action"),
                TimelineEntry(at: 160, text: "acked by \"ana\" \\ o'neil\n水位 🌊 {\"t\":1}"),
                TimelineEntry(at: 200, text: "rose to minor", alert: "high|A|gage_height", state: .changed),
            ]
            let first = LivingMessage(
                receiver: "discord", thread: "episode:1", messageID: "1182045590871465985", timeline: timeline,
                batch: "b-1", createdAt: 1_000, updatedAt: 1_000)
            try await store.saveLivingMessage(first)
            #expect(try await store.livingMessage(receiver: "discord", thread: "episode:1") == first)
            // Another receiver, another thread: their own.
            #expect(try await store.livingMessage(receiver: "other", thread: "episode:1") == nil)
            #expect(try await store.livingMessage(receiver: "discord", thread: "episode:2") == nil)
            let group = LivingMessage(
                receiver: "discord", thread: "group:{}/{team=\"x\"}:{station=\"S\"}", messageID: "7", timeline: [],
                batch: "b-2", createdAt: 5, updatedAt: 5)
            try await store.saveLivingMessage(group)
            #expect(try await store.livingMessage(receiver: "discord", thread: group.thread) == group)
            // Saved again (an edit, a new message in place of a deleted one, the resolve): replaced.
            var later = first
            later.messageID = "1182045590871465999"
            later.timeline.append(TimelineEntry(at: 300, text: "resolved"))
            later.batch = "b-3"
            later.closed = true
            later.updatedAt = 2_000
            try await store.saveLivingMessage(later)
            #expect(try await store.livingMessage(receiver: "discord", thread: "episode:1") == later)
            #expect(try await store.livingMessage(receiver: "discord", thread: group.thread) == group)
        }
    }

    @Test(
        "an episode's ack is found by its alert and episode, also once the episode has resolved",
        arguments: Backend.allCases)
    func episodeAck(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let engine = RuleEngine(rules: rules)
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:00:00Z", 50)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:00:00Z"))
            let a = try #require(try await store.firingAlerts().first)
            let episode = a.transitionID
            #expect(try await store.episodeAck(alert: a.key, episode: episode) == nil)
            _ = try await store.ack(transitionID: episode, by: "ops:ana", at: 540)
            #expect(
                try await store.episodeAck(alert: a.key, episode: episode)
                    == Ack(transitionID: episode, by: "ops:ana", at: 540))
            // Another episode, another alert: none.
            #expect(try await store.episodeAck(alert: a.key, episode: episode + 1000) == nil)
            let other = AlertKey(rule: "high", station: "B", metric: "gage_height")
            #expect(try await store.episodeAck(alert: other, episode: episode) == nil)
            // Resolved: no longer a holding ack, still this episode's.
            _ = try await store.readingWriter().write([reading("A", "2026-01-01T00:15:00Z", 1)])
            _ = try await store.evaluate(engine: engine, now: t("2026-01-01T00:15:00Z"))
            #expect(try await store.acks().isEmpty)
            #expect(try await store.episodeAck(alert: a.key, episode: episode)?.by == "ops:ana")
        }
    }
}
