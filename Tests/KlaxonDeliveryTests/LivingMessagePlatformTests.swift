import Foundation
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import Testing

@testable import KlaxonDelivery

/// Issue 41, living messages beyond Discord: a Slack app (bot token: `chat.postMessage`, then
/// `chat.update` by channel and `ts`) and a Mattermost bot (`POST /api/v4/posts`, then `PUT
/// /api/v4/posts/{id}/patch`) keep one message per episode through the same send stage as Discord
/// (`Dispatcher.sendLiving`), against stand-ins that check the documented request shapes and answer
/// as the platforms do (Slack's `ok: false` codes, 404s, 429 with `Retry-After`).
@Suite(.timeLimit(.minutes(10))) struct LivingMessagePlatformTests {
    static let story = LivingMessageTests.story
    /// The clients' timeout: these tests call the notifiers directly, with no dispatcher to retry a
    /// call that a starved machine (a soak's, both cores hogged) took over 10 s to answer; what a
    /// timeout does is tested elsewhere (`WebhookConformanceTests`).
    static let patient: Double = 600
    static let timeline =
        "firing at action 14:00 · rose to minor 14:05 · rose to moderate 14:20 · acked by ana 14:25 · resolved 16:40 (UTC)"

    static func slack(_ standIn: SlackStandIn, token: String? = nil, threadReplies: Bool = false) throws
        -> WebhookNotifier
    {
        try WebhookNotifier(
            config: Receiver.Webhook(
                name: "slack", url: Secret(standIn.url), preset: .slack, timeout: patient,
                botToken: Secret(token ?? standIn.token),
                channel: standIn.channel, threadReplies: threadReplies))
    }

    static func mattermost(_ standIn: MattermostStandIn) throws -> WebhookNotifier {
        try WebhookNotifier(
            config: Receiver.Webhook(
                name: "mm", url: Secret(standIn.url), preset: .mattermost, timeout: patient,
                botToken: Secret(standIn.token),
                channel: standIn.channel))
    }

    static func dispatcher(_ store: InMemoryDeliveryStore, _ name: String, _ notifier: WebhookNotifier) -> Dispatcher {
        Dispatcher(store: store, notifiers: [name: notifier], routing: Routing(), settings: fastSettings())
    }

    static func deliver(_ t: Transition, to name: String, _ store: InMemoryDeliveryStore, _ d: Dispatcher)
        async throws
    {
        store.queue(t, receivers: [name], dueAt: nowMillis() - 1)
        _ = try await d.runUntilEmpty(deadline: brokenAfter())
    }

    /// The story: action → minor → moderate, acked by ana, resolved.
    static func tellStory(to name: String, _ store: InMemoryDeliveryStore, _ d: Dispatcher) async throws {
        for t in story.prefix(3) { try await deliver(t, to: name, store, d) }
        store.ack(LivingMessageTests.key, episode: 1, by: "ana", at: Timestamp.parse("2026-03-01T14:25:00Z")!)
        try await deliver(story[3], to: name, store, d)
    }

    // MARK: Slack

    @Test("Slack app: action → minor → moderate, acked, resolved: one message, updated, with the whole timeline")
    func slackOneMessage() async throws {
        try await SlackStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let notifier = try Self.slack(standIn)
            #expect(notifier.editsMessages)
            try await Self.tellStory(to: "slack", store, Self.dispatcher(store, "slack", notifier))
            #expect(standIn.problems == [])
            #expect(standIn.calls == ["chat.postMessage", "chat.update", "chat.update", "chat.update"])
            #expect(standIn.messages.count == 1)
            let message = try #require(standIn.messages.first)
            #expect(message.edits == 3 && message.channel == standIn.channel)
            #expect(message.text.contains(Self.timeline), "\(message.text)")
            #expect(message.timeline.contains(Self.timeline), "\(message.timeline)")
            #expect(store.rows().allSatisfy { $0.state == .sent })
            let living = try #require(store.livingMessages().first)
            #expect(living.messageID == "\(standIn.channel)/\(message.ts)" && living.closed)
        }
    }

    @Test("Slack app: an update answered message_not_found posts a new message that names the old")
    func slackDeletedMessage() async throws {
        try await SlackStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Self.dispatcher(store, "slack", try Self.slack(standIn))
            try await Self.deliver(Self.story[0], to: "slack", store, d)
            let old = try #require(standIn.messages.first?.ts)
            standIn.delete(ts: old)
            try await Self.deliver(Self.story[1], to: "slack", store, d)
            try await Self.deliver(Self.story[2], to: "slack", store, d)
            #expect(standIn.problems == [])
            #expect(standIn.calls == ["chat.postMessage", "chat.update", "chat.postMessage", "chat.update"])
            let message = try #require(standIn.messages.first)
            #expect(standIn.messages.count == 1 && message.ts != old && message.edits == 1)
            #expect(
                message.text.contains("posted anew: message \(standIn.channel)/\(old) was deleted"), "\(message.text)")
            #expect(store.rows().allSatisfy { $0.state == .sent })
        }
    }

    @Test("Slack app: an update answered 429 with Retry-After is retried under the same message")
    func slackRateLimited() async throws {
        try await SlackStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Self.dispatcher(store, "slack", try Self.slack(standIn))
            try await Self.deliver(Self.story[0], to: "slack", store, d)
            standIn.rateLimit(1, retryAfter: 0.2)
            try await Self.deliver(Self.story[1], to: "slack", store, d)
            #expect(standIn.problems == [])
            #expect(standIn.calls == ["chat.postMessage", "chat.update", "chat.update"])
            #expect(standIn.messages.count == 1 && standIn.messages.first?.edits == 1)
            #expect(store.rows().allSatisfy { $0.state == .sent && $0.attempts == ($0.transitionID == 2 ? 2 : 1) })
        }
    }

    @Test("Slack app: a revoked or wrong token is dead at once, not retried, and the token is in no error")
    func slackRevokedToken() async throws {
        try await SlackStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Self.dispatcher(store, "slack", try Self.slack(standIn))
            try await Self.deliver(Self.story[0], to: "slack", store, d)
            standIn.revoke()
            try await Self.deliver(Self.story[1], to: "slack", store, d)
            let wrong = InMemoryDeliveryStore()
            let other = Self.dispatcher(wrong, "slack", try Self.slack(standIn, token: "xoxb-wrong-token-0000"))
            try await Self.deliver(Self.story[0], to: "slack", wrong, other)
            let dead = store.rows().filter { $0.state == .dead } + wrong.rows().filter { $0.state == .dead }
            #expect(dead.count == 2 && dead.allSatisfy { $0.attempts == 1 })
            let errors = dead.compactMap(\.lastError)
            #expect(errors.contains { $0.contains("Slack chat.update: token_revoked (not retried)") }, "\(errors)")
            #expect(errors.contains { $0.contains("Slack chat.postMessage: invalid_auth (not retried)") }, "\(errors)")
            #expect(!errors.contains { $0.contains("xoxb-") }, "\(errors)")
        }
    }

    @Test("Slack app with thread_replies: the message is updated and each change is replied in its thread")
    func slackThreadReplies() async throws {
        try await SlackStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Self.dispatcher(store, "slack", try Self.slack(standIn, threadReplies: true))
            try await Self.tellStory(to: "slack", store, d)
            #expect(standIn.problems == [])
            let top = standIn.topLevel
            #expect(top.count == 1 && top.first?.edits == 3)
            #expect(top.first?.text.contains(Self.timeline) == true)
            let replies = standIn.messages.filter { $0.threadTS != nil }
            #expect(replies.count == 3 && replies.allSatisfy { $0.threadTS == top.first?.ts })
            #expect(replies.allSatisfy { !$0.text.contains("(UTC)") }, "\(replies.map(\.text))")
        }
    }

    @Test("Slack incoming webhooks keep today's behaviour: no bot token, no editing")
    func slackWebhookUnchanged() throws {
        let hook = try WebhookNotifier(
            config: Receiver.Webhook(name: "s", url: Secret("https://hooks.slack.com/services/T/B/X"), preset: .slack))
        #expect(!hook.editsMessages)
        let off = try WebhookNotifier(
            config: Receiver.Webhook(
                name: "s", url: Secret("https://slack.com/api"), preset: .slack, edit: false,
                botToken: Secret("xoxb-1"),
                channel: "C1"))
        #expect(!off.editsMessages)
    }

    @Test("Slack app: a direct message to a user id goes to the app's DM, whose reference updates it")
    func slackDirectMessage() async throws {
        try await SlackStandIn.with { standIn in
            let api = SlackWebAPI(
                http: PlatformHTTP(name: "dm", base: standIn.url, timeout: Self.patient), token: Secret(standIn.token))
            let ref = try await api.postMessage(channel: "U0456EFGH", payload: ["text": "hello"], key: "k1")
            #expect(ref.channel == "D0456EFGH")
            try await api.update(ref, payload: ["text": "hello again"], key: "k2")
            #expect(standIn.problems == [])
            #expect(standIn.messages.map(\.text) == ["hello again"])
            #expect(SlackWebAPI.MessageRef(ref.text) == ref)
        }
    }

    @Test("Slack's ok:false codes map to what a retry can do; references are checked")
    func slackRefusals() {
        let limited = SlackWebAPI.refusal("ratelimited", method: "chat.update", receiver: "s", retryAfter: 3)
        #expect(limited.retryable && limited.retryAfter == 3 && !limited.isMessageGone)
        for code in ["message_not_found", "edit_window_closed", "cant_update_message"] {
            let e = SlackWebAPI.refusal(code, method: "chat.update", receiver: "s", retryAfter: nil)
            #expect(e.isMessageGone && !e.retryable, "\(code)")
        }
        for code in ["invalid_auth", "not_authed", "token_revoked", "channel_not_found", "msg_too_long", "zzz"] {
            let e = SlackWebAPI.refusal(code, method: "chat.postMessage", receiver: "s", retryAfter: 9)
            #expect(!e.retryable && !e.isMessageGone && e.retryAfter == nil && e.reason == "clientError", "\(code)")
        }
        let hostile = SlackWebAPI.refusal(
            "<b>\u{1b}[31m" + String(repeating: "x", count: 500), method: "m", receiver: "s", retryAfter: nil)
        #expect(hostile.message.count < 120 && !hostile.message.contains("<"), "\(hostile.message)")
        #expect(SlackWebAPI.MessageRef("C0123ABCD/1772373600.000001") != nil)
        for bad in ["", "1182045590871465985", "C0123/abc", "c0123/1.2", "C1/1.2/3", "C1/../1.2"] {
            #expect(SlackWebAPI.MessageRef(bad) == nil, "\(bad)")
        }
    }

    // MARK: Mattermost

    @Test("Mattermost bot: action → minor → moderate, acked, resolved: one post, patched, with the whole timeline")
    func mattermostOnePost() async throws {
        try await MattermostStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let notifier = try Self.mattermost(standIn)
            #expect(notifier.editsMessages)
            try await Self.tellStory(to: "mm", store, Self.dispatcher(store, "mm", notifier))
            #expect(standIn.problems == [])
            #expect(standIn.posts.count == 1)
            let post = try #require(standIn.posts.first)
            #expect(post.edits == 3 && post.attachments == 1 && post.channelID == standIn.channel)
            #expect(post.message.contains(Self.timeline), "\(post.message)")
            #expect(
                standIn.requests.map { "\($0.method) \($0.path)" }
                    == ["POST /api/v4/posts"] + Array(repeating: "PUT /api/v4/posts/\(post.id)/patch", count: 3))
            #expect(store.rows().allSatisfy { $0.state == .sent })
            #expect(store.livingMessages().first?.messageID == post.id)
        }
    }

    @Test("Mattermost bot: a patch answered 404 posts anew and names the old; a 429 is waited out")
    func mattermostGoneAndLimited() async throws {
        try await MattermostStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Self.dispatcher(store, "mm", try Self.mattermost(standIn))
            try await Self.deliver(Self.story[0], to: "mm", store, d)
            let old = try #require(standIn.posts.first?.id)
            standIn.delete(old)
            try await Self.deliver(Self.story[1], to: "mm", store, d)
            standIn.rateLimit(1, retryAfter: 0.2)
            try await Self.deliver(Self.story[2], to: "mm", store, d)
            #expect(standIn.problems == [])
            #expect(standIn.requests.map(\.method) == ["POST", "PUT", "POST", "PUT", "PUT"])
            let post = try #require(standIn.posts.first)
            #expect(standIn.posts.count == 1 && post.id != old && post.edits == 1)
            #expect(post.message.contains("posted anew: message \(old) was deleted"), "\(post.message)")
            #expect(store.rows().allSatisfy { $0.state == .sent })
        }
    }

    @Test("Mattermost bot: a direct message goes to the bot's direct channel with the user")
    func mattermostDirectMessage() async throws {
        try await MattermostStandIn.with { standIn in
            let api = MattermostAPI(
                http: PlatformHTTP(name: "dm", base: standIn.url, timeout: Self.patient), token: Secret(standIn.token))
            let channel = try await api.directChannel(with: "user0000000000000000000001")
            let id = try await api.createPost(channelID: channel, payload: ["text": "hello"], key: "k")
            #expect(MattermostAPI.isID(channel) && MattermostAPI.isID(id))
            #expect(standIn.problems == [])
            #expect(standIn.posts.map(\.channelID) == [channel])
        }
    }
    // MARK: Telegram

    static func telegram(_ standIn: TelegramStandIn, buttons: Bool = true) -> TelegramNotifier {
        TelegramNotifier(
            config: Receiver.Telegram(
                name: "tg", token: Secret(standIn.token), chatID: standIn.chat, url: standIn.url, timeout: patient,
                buttons: buttons))
    }

    @Test(
        "Telegram: action → minor → moderate, acked, resolved: one message, edited, with the whole timeline; the buttons go at the resolve"
    )
    func telegramOneMessage() async throws {
        try await TelegramStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Dispatcher(
                store: store, notifiers: ["tg": Self.telegram(standIn)], routing: Routing(), settings: fastSettings())
            store.queue(Self.story[0], receivers: ["tg"], dueAt: nowMillis() - 1)
            _ = try await d.runUntilEmpty(deadline: brokenAfter())
            #expect(standIn.messages.first?.buttons == [["ack:1", "silence_1h:1"]])
            for t in Self.story[1...2] { try await Self.deliver(t, to: "tg", store, d) }
            store.ack(LivingMessageTests.key, episode: 1, by: "ana", at: Timestamp.parse("2026-03-01T14:25:00Z")!)
            try await Self.deliver(Self.story[3], to: "tg", store, d)
            #expect(standIn.problems == [])
            #expect(standIn.calls == ["sendMessage", "editMessageText", "editMessageText", "editMessageText"])
            #expect(standIn.messages.count == 1)
            let message = try #require(standIn.messages.first)
            #expect(message.edits == 3 && message.buttons.isEmpty)
            #expect(message.text.contains(Self.timeline), "\(message.text)")
            #expect(message.text.contains("Potomac River at Little Falls"))
            #expect(store.rows().allSatisfy { $0.state == .sent })
            #expect(store.livingMessages().first?.messageID == "\(standIn.chat)/\(message.id)")
        }
    }

    @Test("Telegram: an edit of a deleted message posts anew and names the old; a 429 waits retry_after")
    func telegramGoneAndLimited() async throws {
        try await TelegramStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Dispatcher(
                store: store, notifiers: ["tg": Self.telegram(standIn)], routing: Routing(), settings: fastSettings())
            try await Self.deliver(Self.story[0], to: "tg", store, d)
            let old = try #require(standIn.messages.first?.id)
            standIn.delete(old)
            try await Self.deliver(Self.story[1], to: "tg", store, d)
            standIn.rateLimit(1, retryAfter: 1)
            try await Self.deliver(Self.story[2], to: "tg", store, d)
            #expect(standIn.problems == [])
            #expect(
                standIn.calls == [
                    "sendMessage", "editMessageText", "sendMessage", "editMessageText", "editMessageText",
                ])
            let message = try #require(standIn.messages.first)
            #expect(standIn.messages.count == 1 && message.id != old && message.edits == 1)
            #expect(message.text.contains("posted anew: message \(standIn.chat)/\(old) was deleted"), "\(message.text)")
            #expect(store.rows().allSatisfy { $0.state == .sent })
        }
    }

    @Test("Telegram: a resend of the same edit (not modified) is success; a wrong token is dead and never shown")
    func telegramResendAndToken() async throws {
        try await TelegramStandIn.with { standIn in
            let notifier = Self.telegram(standIn)
            var n = AlertNotification(
                key: "k1", receiver: "tg",
                alerts: [NotifiedAlert(transition: Self.story[0], message: "River high", id: 1)])
            n.living = LivingView(timeline: [TimelineEntry(at: 1, text: "firing at action")])
            let ref = try await notifier.post(n)
            try await notifier.edit(n, messageID: ref)
            #expect(standIn.messages.count == 1 && standIn.messages.first?.edits == 0)
            let wrong = TelegramNotifier(
                config: .init(
                    name: "tg", token: Secret("42:AAwrongTokenwrongTokenwrongToken0000"), chatID: standIn.chat,
                    url: standIn.url, timeout: Self.patient))
            do {
                _ = try await wrong.post(n)
                Issue.record("a wrong token was taken")
            } catch let e as DeliveryError {
                #expect(!e.retryable && e.kind == .httpStatus(401))
                #expect(!e.message.contains("AAwrong") && !e.message.contains(standIn.token), "\(e.message)")
            }
            await #expect(throws: DeliveryError.self) { try await notifier.edit(n, messageID: "1182045590871465985") }
        }
    }

    @Test("Telegram: data is escaped for its HTML; a storm of alerts stays within 4,096 characters")
    func telegramEscapingAndLimits() async throws {
        try await TelegramStandIn.with { standIn in
            var hostile = Self.story[0]
            hostile.place = "<b>Evil & \"co\"</b> <a href=\"https://evil\">x</a>"
            let one = AlertNotification(
                key: "k1", receiver: "tg",
                alerts: [NotifiedAlert(transition: hostile, message: "a < b && c > d &amp;", id: 1)],
                externalURL: "https://klaxon.example.org/?a=\"1\"&b=<2>")
            _ = try await Self.telegram(standIn).post(one)
            let many = AlertNotification(
                key: "k2", receiver: "tg",
                alerts: (1...200).map {
                    NotifiedAlert(
                        transition: hostile, message: String(repeating: "long message ", count: 40), id: Int64($0))
                })
            _ = try await Self.telegram(standIn).post(many)
            #expect(standIn.problems == [])
            let messages = standIn.messages
            #expect(messages.count == 2)
            #expect(messages.first?.text.contains("<b>Evil & \"co\"</b>") == true, "\(messages.first?.text ?? "")")
            #expect(messages.first?.text.contains("a < b && c > d &amp;") == true)
            #expect((messages.last?.text.count ?? 0) <= 4096 && messages.last?.text.contains("more") == true)
            #expect(messages.last?.buttons.count == TelegramNotifier.buttonRows)
        }
    }

    // MARK: Matrix

    static func matrix(_ standIn: MatrixStandIn) -> MatrixNotifier {
        MatrixNotifier(
            config: Receiver.Matrix(
                name: "mx", url: standIn.url, token: Secret(standIn.token), roomID: standIn.room, timeout: patient))
    }

    @Test(
        "Matrix: action → minor → moderate, acked, resolved: one message, replaced (m.replace), with the whole timeline"
    )
    func matrixOneMessage() async throws {
        try await MatrixStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Dispatcher(
                store: store, notifiers: ["mx": Self.matrix(standIn)], routing: Routing(), settings: fastSettings())
            try await Self.tellStory(to: "mx", store, d)
            #expect(standIn.problems == [])
            #expect(standIn.messages.count == 1)
            let message = try #require(standIn.messages.first)
            #expect(message.edits == 3)
            #expect(message.body.contains(Self.timeline), "\(message.body)")
            #expect(message.html.contains("<b>") && message.html.contains(Self.timeline))
            #expect(store.rows().allSatisfy { $0.state == .sent })
            #expect(store.livingMessages().first?.messageID == message.eventID)
        }
    }

    @Test("Matrix: a resend is the same transaction; an edit of a redacted event posts anew; 429 waits retry_after_ms")
    func matrixResendGoneLimited() async throws {
        try await MatrixStandIn.with { standIn in
            let notifier = Self.matrix(standIn)
            let n = AlertNotification(
                key: "k1", receiver: "mx",
                alerts: [NotifiedAlert(transition: Self.story[0], message: "<b>x</b> & y", id: 1)])
            let first = try await notifier.post(n)
            let again = try await notifier.post(n)
            #expect(first == again && standIn.messages.count == 1)
            #expect(standIn.messages.first?.html.contains("&lt;b&gt;x&lt;/b&gt; &amp; y") == true)

            let store = InMemoryDeliveryStore()
            let d = Dispatcher(store: store, notifiers: ["mx": notifier], routing: Routing(), settings: fastSettings())
            try await Self.deliver(Self.story[0], to: "mx", store, d)
            let old = try #require(standIn.messages.last?.eventID)
            standIn.redact(old)
            try await Self.deliver(Self.story[1], to: "mx", store, d)
            standIn.rateLimit(1, retryAfterMs: 200)
            try await Self.deliver(Self.story[2], to: "mx", store, d)
            #expect(standIn.problems == [])
            let message = try #require(standIn.messages.last)
            #expect(standIn.messages.count == 2 && message.eventID != old && message.edits == 1)
            #expect(message.body.contains("posted anew: message \(old) was deleted"), "\(message.body)")
            #expect(store.rows().allSatisfy { $0.state == .sent })
        }
    }

    // MARK: ntfy

    static func ntfy(_ standIn: NtfyStandIn) -> NtfyNotifier {
        NtfyNotifier(
            config: Receiver.Ntfy(
                name: "nt", url: standIn.url, topic: standIn.topic, token: Secret(standIn.token), timeout: patient))
    }

    @Test(
        "ntfy: action → minor → moderate, acked, resolved: one notification, updated by sequence id, with the whole timeline; priority from severity"
    )
    func ntfyOneNotification() async throws {
        try await NtfyStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let d = Dispatcher(
                store: store, notifiers: ["nt": Self.ntfy(standIn)], routing: Routing(), settings: fastSettings())
            try await Self.deliver(Self.story[0], to: "nt", store, d)
            #expect(standIn.notifications.first?.priority == 4)
            for t in Self.story[1...2] { try await Self.deliver(t, to: "nt", store, d) }
            store.ack(LivingMessageTests.key, episode: 1, by: "ana", at: Timestamp.parse("2026-03-01T14:25:00Z")!)
            standIn.rateLimit(1, retryAfter: 1)
            try await Self.deliver(Self.story[3], to: "nt", store, d)
            #expect(standIn.problems == [])
            #expect(standIn.notifications.count == 1 && standIn.publishes == 4)
            let n = try #require(standIn.notifications.first)
            #expect(n.updates == 3 && n.priority == 2)
            #expect(n.message.contains(Self.timeline), "\(n.message)")
            #expect(store.rows().allSatisfy { $0.state == .sent })
            #expect(store.livingMessages().first?.messageID == n.sequence)
            var critical = Self.story[0]
            critical.severity = .critical
            let body = Self.ntfy(standIn).body(
                AlertNotification(
                    key: "k", receiver: "nt", alerts: [NotifiedAlert(transition: critical, message: "m", id: 1)]))
            #expect(body["priority"] == .number(5))
        }
    }
}
