import Foundation
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import Testing

@testable import KlaxonDelivery

/// Issue 41, Google Chat: an incoming webhook cannot edit, so every notification of one episode is
/// a reply in one thread: `messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD` on the URL and
/// the episode's `thread.threadKey` in the body. Against the Google Chat stand-in, which threads as
/// Google does (a key counts only with the reply option) and checks the request's shape.
@Suite(.timeLimit(.minutes(10))) struct GoogleChatThreadTests {
    static func googlechat(_ standIn: GoogleChatStandIn, edit: Bool = true, template: String? = nil) throws
        -> WebhookNotifier
    {
        try WebhookNotifier(
            config: Receiver.Webhook(
                name: "gchat", url: Secret(standIn.url), preset: .googlechat, template: template, edit: edit))
    }

    static func deliver(_ t: Transition, _ store: InMemoryDeliveryStore, _ dispatcher: Dispatcher) async throws {
        store.queue(t, receivers: ["gchat"], dueAt: nowMillis() - 1)
        _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
    }

    static func flood(_ station: String, _ state: TransitionState, _ level: String?, from: String? = nil, at: String)
        -> Transition
    {
        var t = LivingMessageTests.flood(state, level, from: from, at: at)
        t.station = station
        return t
    }

    @Test(
        "a flood rises action → minor → moderate and resolves: four messages in one thread; another gauge's episode has its own"
    )
    func oneThreadPerEpisode() async throws {
        try await GoogleChatStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["gchat": try Self.googlechat(standIn)], routing: Routing(),
                settings: fastSettings())
            let story = LivingMessageTests.story
            try await Self.deliver(story[0], store, dispatcher)
            try await Self.deliver(Self.flood("01594440", .firing, "action", at: "14:02"), store, dispatcher)
            for t in story.dropFirst() { try await Self.deliver(t, store, dispatcher) }

            #expect(standIn.problems == [])
            let threads = standIn.threads
            #expect(threads.map(\.count) == [4, 1], "\(threads)")
            let first = try #require(threads.first)
            #expect(first.map { $0.threadKey } == Array(repeating: first[0].threadKey, count: 4))
            #expect(first[0].threadKey?.hasPrefix("klaxon-episode-") == true)
            #expect(first.last?.text.contains("below action stage again") == true, "\(first.last?.text ?? "")")
            #expect(threads.last?.first?.threadKey != first[0].threadKey)
            // Sent as before otherwise: a message each time, nothing kept to edit.
            #expect(store.livingMessages().isEmpty)
            #expect(store.rows().allSatisfy { $0.state == .sent })
        }
    }

    @Test("the request: the webhook's key and token as written, the reply option added, the key in the body only")
    func requestShape() throws {
        let notifier = try WebhookNotifier(
            config: Receiver.Webhook(
                name: "gchat",
                url: Secret(
                    "https://chat.googleapis.com/v1/spaces/AAAA/messages?key=K&token=abc%3D&threadKey=old&messageReplyOption=REPLY_MESSAGE_OR_FAIL"
                ), preset: .googlechat))
        let url = try #require(notifier.googleChatURL())
        #expect(
            url.absoluteString
                == "https://chat.googleapis.com/v1/spaces/AAAA/messages?key=K&token=abc%3D&messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"
        )
        var n = AlertNotification(
            key: "k1", receiver: "gchat",
            alerts: [NotifiedAlert(transition: LivingMessageTests.story[1], message: "m", id: 42, startedAt: 1000)])
        let body = try #require(JSONValue.parse(Data(try notifier.render(n).utf8))?.object)
        #expect(body["thread"]?.object?["threadKey"]?.string == "klaxon-episode-42-1000")
        // A group's thread: its key hashed (label values never reach the key).
        n.groupBy = ["rule"]
        let grouped = try #require(WebhookNotifier.googleChatThreadKey(n))
        #expect(grouped.hasPrefix("klaxon-group-") && grouped.count == "klaxon-group-".count + 32)
        // A digest or a test message (no logged alert): no thread key, a thread of its own.
        n.alerts[0].id = 0
        #expect(WebhookNotifier.googleChatThreadKey(n) == nil)
        let plain = try #require(JSONValue.parse(Data(try notifier.render(n).utf8))?.object)
        #expect(plain["thread"] == nil)
    }

    @Test("edit: false sends as before: no reply option, no thread key, a thread per message")
    func editOff() async throws {
        try await GoogleChatStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["gchat": try Self.googlechat(standIn, edit: false)], routing: Routing(),
                settings: fastSettings())
            for t in LivingMessageTests.story { try await Self.deliver(t, store, dispatcher) }
            #expect(standIn.problems == [])
            #expect(standIn.threads.count == 4)
            #expect(standIn.messages.allSatisfy { $0.threadKey == nil })
        }
    }
}
