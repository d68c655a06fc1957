import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import NIOCore
import Testing

/// Issue 43: a watch made with `dm` (or in a Telegram private chat) is delivered as direct messages
/// to the person who made it, through the app receiver `watches.direct` names for the platform:
/// made from a request signed as the platform signs, evaluated by the daemon, sent by the
/// dispatcher the daemon wires, to the platform's stand-in, which checks the request shapes.
@Suite("watches by direct message", .serialized, .timeLimit(.minutes(10)))
struct WatchDirectTests {
    static let logger: Logger = {
        var l = Logger(label: "test.watch.dm")
        l.logLevel = .critical
        return l
    }()

    /// A store with the Potomac gauge at 3 ft twenty minutes ago (its NWS stages: action 8, minor
    /// 10, moderate 12), and a config whose defaults group by station: a receiver shared by two
    /// people would put both their alerts of the gauge in one message.
    static func setup(now: Int64) async throws -> (any Store, Config) {
        let store: any Store = try SQLiteStore.inMemory()
        try await store.upsert(station: StationRecord(id: "01646500", name: "Potomac River at Little Falls"))
        try await store.write(
            SourceBatch(
                gauges: [
                    GaugeInfo(
                        lid: "BRKM2", usgsID: "01646500", name: "Potomac River at Little Falls",
                        categories: FloodCategories(stage: ["action": 8, "minor": 10, "moderate": 12]))
                ],
                readings: [Reading(station: "01646500", metric: "gage_height", time: now - 1200, value: 3)]),
            at: now - 1200)
        var config = Config()
        config.receivers = [.stdout(.init(name: "ops"))]
        config.routing = Routing(routes: [], defaultReceiver: "ops", defaults: Route(groupBy: ["station"]))
        config.slackSigningSecret = Secret("shh")
        config.mattermostToken = Secret("mm-token")
        config.telegramSecretToken = Secret(ButtonServer.telegramSecret)
        return (store, config)
    }

    /// The daemon's HTTP server with chat on, as the daemon wires it.
    static func serve(store: any Store, config: Config) async -> ChatServer {
        let chat = ChatCommands(store: store, config: config, rules: [])
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        let app = KlaxonHTTP.application(
            store: store, settings: .init(port: 0), metrics: .init(), logger: logger,
            chat: ChatWiring.settings(config), answer: { user, text in await chat.answer(user, text: text) },
            act: { press, now in await chat.act(press, now: now) }, post: ChatWiring.post,
            onRunning: { port in
                continuation.yield(port)
                continuation.finish()
            })
        let task = Task {
            defer { continuation.finish() }
            try await app.run()
        }
        var port = 0
        for await p in stream { port = p }
        return ChatServer(store: store, port: port, task: task)
    }

    /// Runs `body` with the server of `store` and `config`, stopped before returning.
    static func with(store: any Store, config: Config, _ body: (ChatServer) async throws -> Void) async throws {
        let server = await serve(store: store, config: config)
        let outcome = await Result { try await body(server) }
        #expect(await server.stop(), "the server should stop, not outlive its test")
        try outcome.get()
    }

    /// The gauge reads `value` at `at`, and the daemon evaluates.
    static func gauge(_ value: Double, at: Int64, store: any Store, daemon: Daemon) async throws {
        try await store.write(
            SourceBatch(readings: [Reading(station: "01646500", metric: "gage_height", time: at, value: value)]),
            at: at)
        _ = try await daemon.evaluate(now: at)
    }

    /// What is due goes out through the dispatcher the daemon wires (retries, a 429's wait
    /// included, within a deadline that only says "broken").
    @discardableResult
    static func deliver(store: any Store, config: Config) async throws -> Dispatcher.Pass {
        let dispatcher = try DeliveryWiring.dispatcher(store: store, config: config, logger: logger)
        return try await dispatcher.runUntilEmpty(deadline: Int64(Date().timeIntervalSince1970 * 1000) + 300_000)
    }

    static let added =
        "Watch 1: gauge 01646500 (Potomac River at Little Falls) reaching minor flood stage, sent to you as direct messages. `watching` lists your watches; `unwatch 1` stops this one."

    @Test(
        "Slack: `watch … dm` from a signed slash command is one direct message to that person, edited at the resolve; 429 waited out; two people's messages never mix; the token is in no error"
    )
    func slack() async throws {
        try await SlackStandIn.with { slack in
            let now = Int64(Date().timeIntervalSince1970)
            let (store, base) = try await Self.setup(now: now)
            var config = base
            config.receivers.append(
                .webhook(
                    .init(
                        name: "slack-app", url: Secret(slack.url), preset: .slack, botToken: Secret(slack.token),
                        channel: slack.channel)))
            config.watches.direct = ["slack": "slack-app"]
            try await Self.with(store: store, config: config) { server in
                for user in ["U0ANA", "U0BOB"] {
                    let r = try await WatchChatTests.slack(server, "watch gauge 01646500 minor dm", user: user)
                    #expect(r.0 == 200)
                    #expect(try server.text(r) == Self.added)
                }
                let listed = try server.text(try await WatchChatTests.slack(server, "watching", user: "U0ANA"))
                #expect(listed.hasSuffix("→ direct messages to you"), "\(listed)")
                #expect(
                    try await store.allWatches().map(\.destination.key).sorted() == ["slack:@U0ANA", "slack:@U0BOB"])

                let daemon = Daemon(config: config, store: store, rules: [], logger: Self.logger)
                _ = try await daemon.evaluate(now: now - 1200)
                try await Self.gauge(11, at: now - 600, store: store, daemon: daemon)
                slack.rateLimit(1, retryAfter: 1)
                let fired = try await Self.deliver(store: store, config: config)
                #expect(fired.sent == 2)
                // One message each, in the app's direct message with that person (a user id posted
                // to answers as its `D…` channel), none in the receiver's own channel.
                #expect(slack.topLevel.map(\.channel).sorted() == ["D0ANA", "D0BOB"])
                #expect(slack.topLevel.allSatisfy { $0.text.contains("01646500") && $0.edits == 0 })
                #expect(slack.calls == Array(repeating: "chat.postMessage", count: 3), "one 429, then two posts")
                #expect(slack.problems == [])

                try await Self.gauge(3, at: now - 300, store: store, daemon: daemon)
                try await Self.deliver(store: store, config: config)
                #expect(slack.topLevel.count == 2, "the resolve edits each person's own message")
                #expect(slack.topLevel.allSatisfy { $0.edits == 1 && $0.timeline.contains("resolved") })
                #expect(slack.calls.filter { $0 == "chat.update" }.count == 2)
                let rows = try await store.outbox()
                #expect(Set(rows.map(\.receiver)) == ["slack-app+dm:U0ANA", "slack-app+dm:U0BOB"])
                #expect(rows.allSatisfy { $0.state == .sent })
                #expect(rows.allSatisfy { !($0.lastError ?? "").contains(slack.token) })
                // Each person's living message is their own: both are the group of the gauge (the
                // defaults group by station), and the person's receiver keeps them apart.
                for user in ["U0ANA", "U0BOB"] {
                    let living = try await store.livingMessage(
                        receiver: "slack-app+dm:\(user)",
                        thread: LivingMessage.thread(group: #"{}:{station="01646500"}"#))
                    #expect(living?.messageID.hasPrefix("D" + user.dropFirst() + "/") == true && living?.closed == true)
                }
                #expect(slack.problems == [])
            }
        }
    }

    @Test("Slack: refused clearly without `watches.direct`; the same dm from a channel no watch posts to is kept")
    func refusals() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let (store, config) = try await Self.setup(now: now)
        try await Self.with(store: store, config: config) { server in
            let r = try await WatchChatTests.slack(server, "watch gauge 01646500 minor dm", user: "U0ANA")
            #expect(try server.text(r).hasPrefix("Direct messages on slack aren't set up here"))
            let here = try await WatchChatTests.slack(server, "watch gauge 01646500 minor", user: "U0ANA")
            #expect(try server.text(here).hasPrefix("Watches can't post in this channel"))
            #expect(!(try server.text(here).contains("dm")))
            #expect(try await store.allWatches().isEmpty)
        }
        var withDM = config
        withDM.receivers.append(
            .webhook(
                .init(
                    name: "slack-app", url: Secret("http://127.0.0.1:1/api"), preset: .slack,
                    botToken: Secret("xoxb-1"), channel: "C0123")))
        withDM.watches.direct = ["slack": "slack-app"]
        try await Self.with(store: store, config: withDM) { server in
            let here = try await WatchChatTests.slack(server, "watch gauge 01646500 minor", user: "U0ANA")
            #expect(try server.text(here).hasSuffix("Add `dm` to the command for direct messages instead."))
            // A user id Slack would not take (the request's own text): refused, not kept.
            let odd = try await WatchChatTests.slack(server, "watch gauge 01646500 minor dm", user: "u-ana")
            #expect(try server.text(odd).hasPrefix("I can't send direct messages to your slack user id"))
            let ok = try await WatchChatTests.slack(server, "watch gauge 01646500 minor DM", user: "U0ANA")
            #expect(try server.text(ok) == Self.added)
        }
    }

    @Test(
        "Mattermost: a dm watch is a post in the bot's direct channel with that user, patched at the resolve; 429 waited out"
    )
    func mattermost() async throws {
        try await MattermostStandIn.with { mm in
            let now = Int64(Date().timeIntervalSince1970)
            let (store, base) = try await Self.setup(now: now)
            var config = base
            config.receivers.append(
                .webhook(
                    .init(
                        name: "mm-bot", url: Secret(mm.url), preset: .mattermost, botToken: Secret(mm.token),
                        channel: mm.channel)))
            config.watches.direct = ["mattermost": "mm-bot"]
            let ana = "ana0000000000000000000000a"
            try await Self.with(store: store, config: config) { server in
                let body =
                    "token=mm-token&team_id=t1&user_id=\(ana)&user_name=ana&channel_id=\(mm.channel)&command=%2Fklaxon&text="
                    + WatchChatTests.form("watch gauge 01646500 minor dm")
                let r = try await server.post("/chat/mattermost", body: body)
                #expect(r.0 == 200)
                #expect(try server.text(r) == Self.added)

                let daemon = Daemon(config: config, store: store, rules: [], logger: Self.logger)
                _ = try await daemon.evaluate(now: now - 1200)
                try await Self.gauge(11, at: now - 600, store: store, daemon: daemon)
                mm.rateLimit(1, retryAfter: 1)
                #expect(try await Self.deliver(store: store, config: config).sent == 1)
                let post = try #require(mm.posts.first)
                #expect(mm.posts.count == 1)
                #expect(mm.directUser(of: post.channelID) == ana)
                #expect(post.message.contains("01646500"))

                try await Self.gauge(3, at: now - 300, store: store, daemon: daemon)
                try await Self.deliver(store: store, config: config)
                #expect(mm.posts.count == 1)
                #expect(mm.posts.first?.edits == 1)
                #expect(mm.posts.first?.message.contains("resolved") == true)
                #expect(mm.requests.contains { $0.method == "PUT" && $0.path == "/api/v4/posts/\(post.id)/patch" })
                #expect(mm.problems == [])
                let rows = try await store.outbox()
                #expect(rows.allSatisfy { $0.receiver == "mm-bot+dm:\(ana)" && $0.state == .sent })
            }
        }
    }

    /// A Telegram update with a message, as Telegram posts it to the webhook.
    static func message(
        update: Int, from user: Int64, chat: Int64, type: String = "private", text: String
    ) throws -> String {
        let body: [String: Any] = [
            "update_id": update,
            "message": [
                "message_id": update, "date": 1_772_373_600, "text": text,
                "from": ["id": user, "is_bot": false, "first_name": "Ana", "username": "ana"],
                "chat": ["id": chat, "type": type],
            ],
        ]
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    /// Posts a message update with the webhook's secret token; the reply as JSON.
    static func telegram(
        _ server: ChatServer, update: Int, from user: Int64, chat: Int64? = nil, type: String = "private",
        text: String, secret: String? = ButtonServer.telegramSecret
    ) async throws -> (Int, [String: Any]) {
        let headers = secret.map { [("X-Telegram-Bot-Api-Secret-Token", $0)] } ?? []
        let r = try await server.post(
            "/chat/telegram", body: try message(update: update, from: user, chat: chat ?? user, type: type, text: text),
            headers: headers)
        return (r.0, (try? JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [String: Any]) ?? [:])
    }

    @Test(
        "Telegram: /watch in the private chat is a direct message to that person, edited at the resolve; 429 waited out; a person who never opened the bot is dead, the token in no error"
    )
    func telegram() async throws {
        try await TelegramStandIn.with { tg in
            let now = Int64(Date().timeIntervalSince1970)
            let (store, base) = try await Self.setup(now: now)
            var config = base
            config.receivers.append(
                .telegram(.init(name: "tg", token: Secret(tg.token), chatID: tg.chat, url: tg.url)))
            config.watches.direct = ["telegram": "tg"]
            tg.start(user: 4242)
            try await Self.with(store: store, config: config) { server in
                let r = try await Self.telegram(
                    server, update: 1, from: 4242, text: "/watch@KlaxonBot gauge 01646500 minor")
                #expect(r.0 == 200)
                #expect(r.1["method"] as? String == "sendMessage" && r.1["chat_id"] as? Int == 4242)
                #expect(r.1["parse_mode"] as? String == "HTML")
                let html = try #require(r.1["text"] as? String)
                #expect(
                    try TelegramStandIn.parseHTML(html).get()
                        == Self.added.replacingOccurrences(of: "`", with: ""))
                // Never opened the bot: Telegram refuses the bot's message to them.
                _ = try await Self.telegram(server, update: 2, from: 5151, text: "watch gauge 01646500 minor")

                let daemon = Daemon(config: config, store: store, rules: [], logger: Self.logger)
                _ = try await daemon.evaluate(now: now - 1200)
                try await Self.gauge(11, at: now - 600, store: store, daemon: daemon)
                try await Self.deliver(store: store, config: config)
                #expect(tg.messages.map(\.chat) == ["4242"])
                #expect(tg.messages.first?.text.contains("01646500") == true)
                let dead = try await store.outbox(state: .dead)
                #expect(dead.map(\.receiver) == ["tg+dm:5151"])
                let error = try #require(dead.first?.lastError)
                #expect(error.contains("Forbidden") && !error.contains(tg.token), "\(error)")

                tg.rateLimit(1, retryAfter: 1)
                try await Self.gauge(3, at: now - 300, store: store, daemon: daemon)
                try await Self.deliver(store: store, config: config)
                #expect(tg.messages.count == 1)
                #expect(tg.messages.first?.edits == 1)
                #expect(tg.messages.first?.text.contains("resolved") == true)
                #expect(tg.problems == ["sendMessage: Forbidden: bot can't initiate conversation with a user"])
                let rows = try await store.outbox()
                #expect(rows.allSatisfy { !($0.lastError ?? "").contains(tg.token) })
            }
        }
    }

    @Test(
        "Telegram verbs: the secret token first; /watching, /unwatch, without the slash in private only; a group's watch posts to the group; a resent update answers once"
    )
    func telegramVerbs() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let (store, base) = try await Self.setup(now: now)
        var config = base
        config.receivers.append(.telegram(.init(name: "tg", token: Secret("1:x"), chatID: "-1001")))
        config.watches.direct = ["telegram": "tg"]
        config.watches.channels = ["telegram:-1001": "tg"]
        try await Self.with(store: store, config: config) { server in
            for secret in [nil, "wrong", ""] {
                let r = try await Self.telegram(server, update: 1, from: 4242, text: "/watching", secret: secret)
                #expect(r.0 == 401, "\(secret ?? "none")")
            }
            func say(_ update: Int, _ text: String, chat: Int64? = nil, type: String = "private") async throws
                -> String?
            {
                let r = try await Self.telegram(server, update: update, from: 4242, chat: chat, type: type, text: text)
                #expect(r.0 == 200)
                guard let html = r.1["text"] as? String else { return nil }
                #expect(r.1["chat_id"] as? Int == Int(chat ?? 4242))
                return try TelegramStandIn.parseHTML(html).get()
            }
            #expect(try await say(10, "/start")?.hasPrefix("Klaxon commands:") == true)
            #expect(
                try await say(11, "watch gauge 01646500 minor") == Self.added.replacingOccurrences(of: "`", with: ""))
            #expect(try await say(12, "/watching")?.contains("1. gauge 01646500") == true)
            // Telegram sends an update again when its answer was lost: acted on once.
            #expect(try await say(12, "/watching") == nil)
            // In a group: only what starts with a slash is a command, and a watch posts to the group.
            #expect(try await say(13, "watch gauge 01646500 moderate", chat: -1001, type: "supergroup") == nil)
            let group = try await say(14, "/watch@KlaxonBot gauge 01646500 moderate", chat: -1001, type: "supergroup")
            #expect(group?.hasPrefix("Watch 2:") == true && group?.contains("posted to this channel") == true)
            #expect(
                try await say(15, "/watch@Klaxon-Bot! gauge 01646500 moderate", chat: -1001, type: "supergroup") == nil)
            #expect(try await say(16, "/unwatch 1")?.hasPrefix("Stopped watch 1") == true)
            #expect(try await store.allWatches().map(\.destination.key) == ["telegram:-1001"])
            // Not a person's message: a bot's, no text, an edited message.
            let bot = try await server.post(
                "/chat/telegram",
                body:
                    #"{"update_id": 20, "message": {"text": "/watching", "from": {"id": 9, "is_bot": true}, "chat": {"id": 9, "type": "private"}}}"#,
                headers: [("X-Telegram-Bot-Api-Secret-Token", ButtonServer.telegramSecret)])
            #expect(bot.0 == 200 && bot.1.isEmpty)
        }
    }

    @Test(
        "Telegram verbs: hostile text (huge, markup, mentions, bidi and zero-width tricks) is answered as escaped text within 4,096 characters"
    )
    func telegramHostile() async throws {
        let now = Int64(Date().timeIntervalSince1970)
        let (store, base) = try await Self.setup(now: now)
        var config = base
        config.receivers.append(.telegram(.init(name: "tg", token: Secret("1:x"), chatID: "-1001")))
        config.watches.direct = ["telegram": "tg"]
        try await Self.with(store: store, config: config) { server in
            func say(_ update: Int, _ text: String) async throws -> String? {
                let r = try await Self.telegram(server, update: update, from: 4242, text: text)
                #expect(r.0 == 200)
                guard let html = r.1["text"] as? String else { return nil }
                let shown = try TelegramStandIn.parseHTML(html).get()
                #expect(shown.count <= 4096)
                return shown
            }
            let markup = try #require(try await say(1, "/watch gauge <b>x</b>&amp;@everyone`</pre> minor"))
            #expect(markup.hasPrefix("no gauge <b>x</b>&amp;@\u{2060}everyone"), "\(markup)")
            let bidi = try #require(try await say(2, "/watch gauge 0164\u{202E}6500\u{200B} minor"))
            #expect(bidi.hasPrefix("Watch 1:"), "\(bidi)")
            let huge = try #require(
                try await say(3, "/watch gauge " + String(repeating: "<&>`", count: 1000) + " minor"))
            #expect(huge == "That command is too long (at most 500 characters).")
            // Over what a Telegram message holds: not a command at all.
            #expect(try await say(4, "/watch " + String(repeating: "x", count: 20_000)) == nil)
            let unknown = try #require(try await say(5, "/" + String(repeating: "ü", count: 5000)))
            #expect(unknown.hasPrefix("I don't know"))
            #expect(try await store.allWatches().count == 1)
        }
    }
}

/// Issue 43: buttons under a watch's messages, *Stop watching* and *Mute 24h*, through the same
/// button machinery as Ack and Silence 1h; only the watch's owner may press them.
@Suite("watch buttons", .serialized, .timeLimit(.minutes(10)))
struct WatchButtonTests {
    @Test(
        "a watch's Telegram message has Stop watching and Mute 24h; another person is refused, the owner mutes and stops it"
    )
    func telegram() async throws {
        try await TelegramStandIn.with { tg in
            let now = Int64(Date().timeIntervalSince1970)
            let (store, base) = try await WatchDirectTests.setup(now: now)
            var config = base
            config.receivers.append(
                .telegram(.init(name: "tg", token: Secret(tg.token), chatID: tg.chat, url: tg.url, buttons: true)))
            config.watches.direct = ["telegram": "tg"]
            // 666 may ack and silence; that is not stopping someone else's watch.
            config.chatMayAct = ["666"]
            tg.start(user: 4242)
            try await WatchDirectTests.with(store: store, config: config) { server in
                _ = try await WatchDirectTests.telegram(
                    server, update: 1, from: 4242, text: "watch gauge 01646500 minor")
                let watch = try #require(try await store.allWatches().first)
                let daemon = Daemon(config: config, store: store, rules: [], logger: WatchDirectTests.logger)
                _ = try await daemon.evaluate(now: now - 1200)
                try await WatchDirectTests.gauge(11, at: now - 600, store: store, daemon: daemon)
                try await WatchDirectTests.deliver(store: store, config: config)
                let row = try #require(tg.messages.first?.buttons.first)
                #expect(row.count == 2 && row[0].hasPrefix("unwatch:") && row[1].hasPrefix("mute_24h:"), "\(row)")
                #expect(tg.problems == [])
                let secret = [("X-Telegram-Bot-Api-Secret-Token", ButtonServer.telegramSecret)]
                func press(_ id: String, _ user: Int64, _ data: String) async throws -> String {
                    let r = try await server.post(
                        "/chat/telegram", body: try TelegramCallbackTests.update(id: id, user: user, data: data),
                        headers: secret)
                    #expect(r.0 == 200)
                    let o = try JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [String: Any]
                    return o?["text"] as? String ?? ""
                }
                for (id, data) in [("q1", row[0]), ("q2", row[1])] {
                    let refused = try await press(id, 666, data)
                    #expect(refused.hasPrefix("Only the person who made this watch may stop or mute it"), "\(refused)")
                }
                #expect(try await store.activeSilences(now: now).isEmpty)
                let mute = try await press("q3", 4242, row[1])
                #expect(
                    mute.hasPrefix("Muted for 24h by @ana, ") && mute.contains("watch 1, gauge 01646500"), "\(mute)")
                let silences = try await store.activeSilences(now: now)
                #expect(silences.count == 1)
                #expect(silences.first?.matchers.contains { $0.name == "rule" && $0.value == watch.ruleName } == true)
                #expect(silences.first.map { $0.ends - $0.starts } == ChatAction.muteSeconds)
                let stop = try await press("q4", 4242, row[0])
                #expect(stop.hasPrefix("Stopped watching by @ana, "), "\(stop)")
                #expect(try await store.allWatches().isEmpty)
                #expect(try await press("q5", 4242, row[0]) == "That watch was stopped already: nothing was changed.")
            }
        }
    }

    @Test("Slack and Mattermost messages of a watch carry Stop watching and Mute 24h; other alerts Ack and Silence 1h")
    func rendering() {
        func note(_ labels: [String: String]) -> AlertNotification {
            let t = Transition(
                rule: "watch-1", kind: "levels", station: "01646500", metric: "gage_height", state: .firing,
                at: 1_767_225_600, value: 11, severity: .warning, labels: labels, summary: "minor flood",
                explanation: "11 ft")
            return AlertNotification(
                key: "k", receiver: "r", alerts: [NotifiedAlert(transition: t, message: "m", id: 7)],
                externalURL: "https://klaxon.example.org",
                chatActions: ChatActionSigner { a, e in ["action": a.rawValue, "episode": String(e)] })
        }
        let slack = JSONText.encode(.object(WebhookPayloads.slack(note(["watch": "1"]))))
        #expect(slack.contains("\"unwatch.0\"") && slack.contains("\"mute_24h.0\"") && !slack.contains("\"ack.0\""))
        let plain = JSONText.encode(.object(WebhookPayloads.slack(note([:]))))
        #expect(plain.contains("\"ack.0\"") && plain.contains("\"silence_1h.0\"") && !plain.contains("unwatch"))
        let mm = JSONText.encode(.object(WebhookPayloads.mattermost(note(["watch": "1"]))))
        #expect(mm.contains("\"unwatch0\"") && mm.contains("\"mute0\"") && mm.contains("Stop watching"))
        #expect(!mm.contains("\"ack0\""))
        #expect(TelegramCallbackData.read("mute_24h:12").map { $0.action == .mute24h && $0.episode == 12 } == true)
        #expect(TelegramCallbackData.read("unwatch:12").map { $0.action == .unwatch && $0.episode == 12 } == true)
    }
}

/// Issue 43: `watches.direct` names each platform's direct-message receiver, checked at load.
@Suite("watches.direct config")
struct WatchDirectConfigTests {
    static let receivers = """
        receivers:
          - {name: slack-app, type: webhook, preset: slack, url: "https://slack.com/api", bot_token: "${SLACK_BOT}", channel: C0123}
          - {name: slack-hook, type: webhook, preset: slack, url: "https://hooks.slack.com/services/T/B/x"}
          - {name: mm-bot, type: webhook, preset: mattermost, url: "https://mm.example.org", bot_token: "${MM_BOT}", channel: 4xp9fdt77pncbef59f4k1qe83o}
          - {name: tg, type: telegram, bot_token: "${TG_BOT}", chat_id: "-1001"}

        """
    static let environment = [
        "SLACK_BOT": "xoxb-1", "MM_BOT": "mmtoken", "TG_BOT": "123456789:AAHstandInToken_abcdefghijklmnopqrstu",
    ]

    func load(_ yaml: String) throws -> (Config, [Diagnostic]) {
        let s = try Scratch()
        let diagnostics = Diagnostics()
        let config = Config.load(
            path: try s.write("klaxon.yaml", Self.receivers + yaml), environment: Self.environment,
            diagnostics: diagnostics)
        return (config, diagnostics.items)
    }

    @Test("watches.direct: a receiver per platform; a person's direct receiver is BASE+dm:USER")
    func reads() throws {
        let (config, problems) = try load(
            """
            watches:
              direct: {slack: slack-app, mattermost: mm-bot, telegram: tg}
            """)
        #expect(problems.isEmpty, "\(problems.map(\.message))")
        #expect(config.watches.direct == ["slack": "slack-app", "mattermost": "mm-bot", "telegram": "tg"])
        #expect(
            WatchWiring.receiver(for: .direct(platform: "slack", user: "U024BE7LH"), config: config)
                == "slack-app+dm:U024BE7LH")
        #expect(
            WatchWiring.receiver(
                for: .direct(platform: "mattermost", user: "ana0000000000000000000000a"), config: config)
                == "mm-bot+dm:ana0000000000000000000000a")
        #expect(WatchWiring.receiver(for: .direct(platform: "telegram", user: "4242"), config: config) == "tg+dm:4242")
        // Not a user id of the platform: no receiver (the chat verb refuses such a watch).
        for (platform, user) in [("slack", "C0123"), ("slack", "u1"), ("mattermost", "ANA"), ("telegram", "-1001")] {
            #expect(WatchWiring.receiver(for: .direct(platform: platform, user: user), config: config) == nil)
        }
        #expect(DirectReceiver(name: "slack-app+dm:U024BE7LH") == DirectReceiver(base: "slack-app", user: "U024BE7LH"))
        #expect(DirectReceiver(name: "slack-app") == nil && DirectReceiver(name: "+dm:U1") == nil)
        #expect(DirectReceiver(name: "a+dm:U1 x") == nil)
    }

    @Test("mistakes in watches.direct are errors at their line")
    func mistakes() throws {
        let (_, problems) = try load(
            """
            watches:
              direct:
                slack: slack-hook
                telegram: slack-app
                mattermost: nobody
                discord: slack-app
            """)
        let byLine = Dictionary(grouping: problems, by: \.line).mapValues { $0.map(\.message) }
        #expect(
            byLine[8]?.first?.contains("watches.direct.slack: receiver \"slack-hook\" has no bot_token") == true,
            "\(byLine)")
        #expect(
            byLine[9]?.first?.contains("watches.direct.telegram: receiver \"slack-app\" is not a telegram receiver")
                == true, "\(byLine)")
        #expect(byLine[10]?.first?.contains("undefined receiver \"nobody\"") == true, "\(byLine)")
        #expect(byLine[11]?.first?.contains("watches.direct: unknown platform \"discord\"") == true, "\(byLine)")
    }
}
