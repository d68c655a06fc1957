import Foundation
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Testing

@testable import KlaxonDelivery

/// Issue 41, living messages on Discord: one message per episode, posted with `?wait=true` and then
/// edited in place (`PATCH …/messages/{id}`) on every level change and the resolve, showing the
/// episode's timeline; the reference survives a restart; a deleted message is replaced; a 429 is
/// waited out; `edit: false` sends as before. Against the Discord stand-in, which checks the
/// documented request shapes.
@Suite(.timeLimit(.minutes(10))) struct LivingMessageTests {
    static let key = AlertKey(rule: "river-levels", station: "01646500", metric: "gage_height")

    /// The flood of the story: action at 14:00, minor at 14:05, moderate at 14:20, resolved at 16:40.
    static func flood(_ state: TransitionState, _ level: String?, from: String? = nil, at clock: String) -> Transition {
        var t = transition(state: state, level: level, from: from, at: "2026-03-01T\(clock):00Z")
        t.place = "Potomac River at Little Falls"
        t.headline =
            switch (state, level, from) {
            case (.resolved, _, _): "below action stage again"
            case (_, let l?, let f?): "\(l) flood stage, up from \(f)"
            case (_, let l?, nil): "\(l) stage"
            default: nil
            }
        return t
    }

    static let story: [Transition] = [
        flood(.firing, "action", at: "14:00"), flood(.changed, "minor", from: "action", at: "14:05"),
        flood(.changed, "moderate", from: "minor", at: "14:20"), flood(.resolved, nil, from: "moderate", at: "16:40"),
    ]

    static func discord(_ standIn: DiscordStandIn, edit: Bool = true) throws -> WebhookNotifier {
        try WebhookNotifier(
            config: Receiver.Webhook(name: "discord", url: Secret(standIn.url), preset: .discord, edit: edit))
    }

    /// Queues `t` in the in-memory store and delivers everything due.
    static func deliver(_ t: Transition, _ store: InMemoryDeliveryStore, _ dispatcher: Dispatcher) async throws {
        store.queue(t, receivers: ["discord"], dueAt: nowMillis() - 1)
        _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
    }

    @Test(
        "a flood rises action → minor → moderate, is acked and resolves: one message, edited, with the whole timeline")
    func oneMessageWithTheTimeline() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["discord": try Self.discord(standIn)], routing: Routing(),
                settings: fastSettings())
            for t in Self.story.prefix(3) { try await Self.deliver(t, store, dispatcher) }
            store.ack(Self.key, episode: 1, by: "ana", at: Timestamp.parse("2026-03-01T14:25:00Z")!)
            try await Self.deliver(Self.story[3], store, dispatcher)

            #expect(standIn.problems == [])
            #expect(standIn.messages.count == 1)
            let message = try #require(standIn.messages.first)
            #expect(message.edits == 3)
            #expect(
                message.content.contains(
                    "firing at action 14:00 · rose to minor 14:05 · rose to moderate 14:20 · acked by ana 14:25 · resolved 16:40 (UTC)"
                ), "\(message.content)")
            let requests = standIn.requests
            #expect(requests.map(\.method) == ["POST", "PATCH", "PATCH", "PATCH"])
            #expect(requests.first?.query == "wait=true")
            #expect(requests.dropFirst().allSatisfy { $0.path.hasSuffix("/messages/\(message.id)") })
            #expect(store.rows().allSatisfy { $0.state == .sent })
            let living = try #require(store.livingMessages().first)
            #expect(living.messageID == message.id && living.closed && living.timeline.count == 5)
        }
    }

    @Test("the message survives a restart: a new store and dispatcher on the same database edit it")
    func survivesARestart() async throws {
        try await DiscordStandIn.with { standIn in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
                "klaxon-living-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("k.sqlite").path
            // One daemon's life per level: the store and the dispatcher are opened anew each time.
            for t in Self.story {
                let store = try SQLiteStore.open(path: path)
                let dispatcher = Dispatcher(
                    store: store, notifiers: ["discord": try Self.discord(standIn)], routing: Routing(),
                    settings: fastSettings())
                try await store.record(
                    [(t, t.summary, [PlannedDelivery(receiver: "discord", route: nil, groupKey: "g")])],
                    now: nowMillis() - 1)
                _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            }
            #expect(standIn.problems == [])
            #expect(standIn.messages.count == 1)
            #expect(standIn.requests.map(\.method) == ["POST", "PATCH", "PATCH", "PATCH"])
            let content = try #require(standIn.messages.first?.content)
            #expect(
                content.contains(
                    "firing at action 14:00 · rose to minor 14:05 · rose to moderate 14:20 · resolved 16:40"),
                "\(content)")
        }
    }

    @Test(
        "an edit of a deleted message (404, code 10008) posts a new one that names the old, and edits that from then on"
    )
    func deletedMessageIsReplaced() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["discord": try Self.discord(standIn)], routing: Routing(),
                settings: fastSettings())
            try await Self.deliver(Self.story[0], store, dispatcher)
            let old = try #require(standIn.messages.first?.id)
            standIn.delete(old)
            try await Self.deliver(Self.story[1], store, dispatcher)
            try await Self.deliver(Self.story[2], store, dispatcher)
            #expect(standIn.problems == [])
            #expect(standIn.requests.map(\.method) == ["POST", "PATCH", "POST", "PATCH"])
            #expect(standIn.requests.filter { $0.method == "POST" }.allSatisfy { $0.query == "wait=true" })
            let message = try #require(standIn.messages.first)
            #expect(standIn.messages.count == 1 && message.id != old && message.edits == 1)
            #expect(message.content.contains("posted anew: message \(old) was deleted"), "\(message.content)")
            #expect(message.content.contains("firing at action 14:00 · rose to minor 14:05 · rose to moderate 14:20"))
            #expect(store.livingMessages().first?.messageID == message.id)
            #expect(store.rows().allSatisfy { $0.state == .sent })
        }
    }

    @Test("an edit answered 429 is retried after Retry-After, under the same message")
    func rateLimitedEditIsRetried() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["discord": try Self.discord(standIn)], routing: Routing(),
                settings: fastSettings())
            try await Self.deliver(Self.story[0], store, dispatcher)
            standIn.rateLimit(1, retryAfter: 0.2)
            try await Self.deliver(Self.story[1], store, dispatcher)
            #expect(standIn.problems == [])
            #expect(standIn.requests.map(\.method) == ["POST", "PATCH", "PATCH"])
            #expect(standIn.messages.count == 1 && standIn.messages.first?.edits == 1)
            #expect(store.rows().allSatisfy { $0.state == .sent && $0.attempts == ($0.transitionID == 2 ? 2 : 1) })
        }
    }

    @Test("a route that groups alerts keeps one message per group until everything in it has resolved")
    func oneMessagePerGroup() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["discord": try Self.discord(standIn)],
                routing: Routing(defaults: Route(groupBy: ["rule"])), settings: fastSettings())
            func at(_ station: String, _ state: TransitionState, _ clock: String) -> Transition {
                var t = Self.flood(state, state == .resolved ? nil : "action", at: clock)
                t.station = station
                t.place = "Gauge \(station)"
                return t
            }
            for t in [at("A", .firing, "14:00"), at("B", .firing, "14:10"), at("A", .resolved, "15:00")] {
                try await Self.deliver(t, store, dispatcher)
            }
            #expect(store.livingMessages().first?.closed == false)
            try await Self.deliver(at("B", .resolved, "15:30"), store, dispatcher)
            #expect(store.livingMessages().first?.closed == true)
            // The group fires again: a new message.
            try await Self.deliver(at("A", .firing, "18:00"), store, dispatcher)
            #expect(standIn.problems == [])
            #expect(standIn.requests.map(\.method) == ["POST", "PATCH", "PATCH", "PATCH", "POST"])
            let messages = standIn.messages
            #expect(messages.count == 2 && messages.first?.edits == 3)
            #expect(
                messages.first?.content.contains(
                    "Gauge A: firing at action 14:00 · Gauge B: firing at action 14:10 · Gauge A: resolved 15:00 · Gauge B: resolved 15:30"
                ) == true, "\(messages.first?.content ?? "")")
            #expect(messages.last?.content.contains("Gauge A: firing at action 18:00 (UTC)") == true)
            #expect(store.livingMessages().count == 1 && store.livingMessages().first?.messageID == messages.last?.id)
        }
    }

    @Test("edit: false sends a new message every time, as before")
    func editOff() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["discord": try Self.discord(standIn, edit: false)], routing: Routing(),
                settings: fastSettings())
            for t in Self.story { try await Self.deliver(t, store, dispatcher) }
            #expect(standIn.problems == [])
            #expect(standIn.messages.count == 4)
            #expect(standIn.requests.allSatisfy { $0.method == "POST" && $0.query.isEmpty })
            #expect(store.livingMessages().isEmpty)
        }
    }

    @Test("the edit URL keeps the webhook's query (thread_id) without wait; ids must be snowflakes")
    func urls() throws {
        let base = "https://discord.com/api/webhooks/1/tok?thread_id=9"
        #expect(WebhookNotifier.waiting(base)?.absoluteString == base + "&wait=true")
        #expect(
            WebhookNotifier.message(base + "&wait=true", id: "123")?.absoluteString
                == "https://discord.com/api/webhooks/1/tok/messages/123?thread_id=9")
        #expect(
            WebhookNotifier.message("https://discord.com/api/webhooks/1/tok/", id: "5")?.absoluteString
                == "https://discord.com/api/webhooks/1/tok/messages/5")
        #expect(WebhookNotifier.isSnowflake("1182045590871465985"))
        for bad in ["", "12a", "../x", "1/2", String(repeating: "9", count: 21), "１２"] {
            #expect(!WebhookNotifier.isSnowflake(bad), "\(bad)")
        }
        #expect(WebhookNotifier.messageID(in: Array(#"{"id":"42","content":"x"}"#.utf8)) == "42")
        #expect(WebhookNotifier.messageID(in: Array(#"{"id":42}"#.utf8)) == nil)
        #expect(WebhookNotifier.messageID(in: Array(#"{"id":"4/2"}"#.utf8)) == nil)
    }

    @Test("a timeline keeps each entry once, in time order, the first and the newest within its bound")
    func timelineBounds() {
        let a = TimelineEntry(at: 10, text: "firing at action")
        let b = TimelineEntry(at: 20, text: "rose to minor")
        let ack = TimelineEntry(at: 15, text: "acked by ana")
        #expect(TimelineEntry.merge([a, b], [b, ack]) == [a, ack, b])
        // Ended once every alert it tells of has resolved (acks and notes aside).
        let fa = TimelineEntry(at: 1, text: "A: firing", alert: "r|A|m", state: .firing)
        let fb = TimelineEntry(at: 2, text: "B: firing", alert: "r|B|m", state: .firing)
        let ra = TimelineEntry(at: 3, text: "A: resolved", alert: "r|A|m", state: .resolved)
        let rb = TimelineEntry(at: 4, text: "B: resolved", alert: "r|B|m", state: .resolved)
        #expect(!TimelineEntry.ended([ack]) && !TimelineEntry.ended([fa, fb, ra]))
        #expect(TimelineEntry.ended([fa, fb, ra, ack, rb]))
        #expect(LivingMessage.decode(LivingMessage.encode([fa, ack, rb])) == [fa, ack, rb])
        let many = (0..<100).map { TimelineEntry(at: Int64($0), text: "e\($0)") }
        let kept = TimelineEntry.merge([], many)
        #expect(kept.count == LivingMessage.timelineLimit && kept.first == many[0] && kept.last == many[99])
        // The line fits its limit, keeping the first entry and the newest.
        let text = LivingView(timeline: kept).text(limit: 120)
        #expect(text.count <= 120 && text.hasPrefix("e0 00:00 · … · ") && text.hasSuffix("e99 00:01"), "\(text)")
    }
}
