import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import NIOCore
import Testing

/// The daemon's HTTP server with chat buttons on, over `store`: Slack's signing secret `shh`,
/// Mattermost's token `mm-token`, `response_url`s allowed under `responsePrefix` (a local sink),
/// and `chat.may_act: [U-ALICE, u-alice]`; presses are answered through the app's own HTTP client.
final class ButtonServer: Sendable {
    let store: any Store
    let port: Int
    let task: Task<Void, any Error>
    var base: String { "http://127.0.0.1:\(port)" }

    init(store: any Store, port: Int, task: Task<Void, any Error>) {
        self.store = store
        self.port = port
        self.task = task
    }

    /// `chat.telegram.secret_token`.
    static let telegramSecret = "tg-secret_0123456789"

    static func config(externalURL: String? = nil) -> Config {
        var config = Config()
        config.slackSigningSecret = Secret("shh")
        config.mattermostToken = Secret("mm-token")
        config.chatUsers = ["u-bob": "bob"]
        config.chatMayAct = ["U-ALICE", "u-alice", "4242"]
        config.telegramSecretToken = Secret(telegramSecret)
        config.externalURL = externalURL
        return config
    }

    static func start(store: any Store, rules: [Rule], responsePrefix: String) async -> ButtonServer {
        var config = Self.config()
        config.slackResponseURLPrefixes = [responsePrefix]
        let chat = ChatCommands(store: store, config: config, rules: rules)
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test.buttons")
        logger.logLevel = .critical
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
        return ButtonServer(store: store, port: port, task: task)
    }

    func stop() async -> Bool {
        task.cancel()
        return await Bounded.wait(for: task, within: TestServers.stopLimit)
    }

    func post(_ path: String, body: String, contentType: String, headers: [(String, String)] = []) async throws -> (
        Int, String
    ) {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: contentType)
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// A signed Slack request as Slack sends it: `X-Slack-Request-Timestamp` and `X-Slack-Signature`.
    func slack(_ body: String, path: String = "/chat/slack/actions", secret: String = "shh", age: Int64 = 0)
        async throws -> (Int, String)
    {
        let ts = Int64(Date().timeIntervalSince1970) - age
        return try await post(
            path, body: body, contentType: "application/x-www-form-urlencoded",
            headers: [
                ("X-Slack-Request-Timestamp", String(ts)),
                ("X-Slack-Signature", ChatEndpoints.slackSignature(secret: secret, timestamp: ts, body: body)),
            ])
    }
}

/// Slack's `block_actions` interaction for a press of `button` (an element of the message's
/// blocks) by `user`, as the form body Slack posts: `payload=` and the JSON, URL-encoded.
func slackPress(
    message: [String: Any], blockID: String, button: [String: Any], user: String, team: String = "T1",
    responseURL: String
) throws -> String {
    let payload: [String: Any] = [
        "type": "block_actions", "api_app_id": "A1", "token": "verification-token-unused",
        "user": ["id": user, "username": user.lowercased(), "name": user.lowercased(), "team_id": team],
        "team": ["id": team, "domain": "flood-team"],
        "container": ["type": "message", "message_ts": "1767225600.000100", "channel_id": "C1", "is_ephemeral": false],
        "trigger_id": "1.2.3", "channel": ["id": "C1", "name": "floods"],
        "message": [
            "type": "message", "subtype": "bot_message", "text": message["text"] ?? "", "ts": "1767225600.000100",
            "bot_id": "B1", "blocks": message["blocks"] ?? [],
        ],
        "response_url": responseURL,
        "actions": [
            [
                "action_id": button["action_id"] ?? "", "block_id": blockID, "value": button["value"] ?? "",
                "type": "button", "action_ts": "1767225700.000200", "text": button["text"] ?? [:],
            ]
        ],
    ]
    let json = String(decoding: try JSONSerialization.data(withJSONObject: payload), as: UTF8.self)
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return "payload=" + (json.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")
}

struct NoButton: Error {
    var action: ChatAction
}

@Suite(
    "chat buttons: Slack Block Kit and Mattermost message buttons, end to end", .serialized, .timeLimit(.minutes(10)))
struct ChatButtonTests {
    let rules = [
        Rule(
            name: "flood-stage",
            kind: LevelsRule(
                metric: "gage_height",
                levels: [.init(name: "action", at: 9), .init(name: "minor", at: 11), .init(name: "moderate", at: 13)]),
            severity: .critical)
    ]

    /// A flood fires at 01646500 and is delivered to `receiver` on `sink`; the body the sink got.
    func floodFires(store: any Store, receiver: Receiver.Webhook, sink: HTTPSink, config: Config) async throws
        -> [String: Any]
    {
        let now = Int64(Date().timeIntervalSince1970)
        try await store.write(
            SourceBatch(readings: [
                Reading(station: "01646500", metric: "gage_height", time: now - 60, value: 12.2, unit: "ft")
            ]), at: now)
        let routing = Routing(routes: [Route(receivers: [receiver.name])])
        _ = try await Evaluate.run(store: store, rules: rules, now: now, routing: routing)
        var settings = Dispatcher.Settings()
        settings.externalURL = config.externalURL ?? ""
        settings.chatActions = ChatWiring.signer(config)
        let dispatcher = Dispatcher(
            store: store, notifiers: [receiver.name: try WebhookNotifier(config: receiver)], routing: routing,
            settings: settings)
        let pass = try await dispatcher.runUntilEmpty(deadline: Int64.max)
        #expect(pass.sent == 1)
        let path = URL(string: receiver.url.value)?.path ?? ""
        return try #require(await sink.requests().first { $0.path == path }?.json)
    }

    /// The first button of `message` whose action is `action`, with the id of its actions block.
    func button(_ action: ChatAction, in message: [String: Any]) throws -> (blockID: String, button: [String: Any]) {
        for block in message["blocks"] as? [[String: Any]] ?? [] {
            for element in block["elements"] as? [[String: Any]] ?? []
            where ChatAction.named(actionID: element["action_id"] as? String ?? "") == action {
                return (try #require(block["block_id"] as? String), element)
            }
        }
        throw NoButton(action: action)
    }

    func reply(_ sink: HTTPSink, path: String) async throws -> [String: Any] {
        try await poll(until: "a post to \(path)") { await sink.requests().contains { $0.path == path } }
        return try #require(await sink.requests().first { $0.path == path }?.json)
    }

    @Test(
        "a flood fires; its Slack message's Ack, pressed as Slack sends it, acks the alert and updates the message through response_url; forged, 10-minute-old and replayed presses get 401; a user chat.may_act does not name gets an ephemeral answer and changes nothing"
    )
    func slackAck() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let server = await ButtonServer.start(store: store, rules: rules, responsePrefix: sink.url + "/")
            let outcome = await Result {
                let config = ButtonServer.config(externalURL: "https://klaxon.example.org")
                let message = try await floodFires(
                    store: store,
                    receiver: .init(name: "chat", url: Secret(sink.url + "/services/T1/B1/hook"), preset: .slack),
                    sink: sink, config: config)
                #expect(ChatPayloadShape.slackProblems(message) == [])
                let (blockID, ack) = try button(.ack, in: message)
                let id = try #require(Int64(ack["value"] as? String ?? ""))
                #expect(try await store.firingAlerts().first?.transitionID == id)

                // Mallory may not act: an ephemeral answer to her alone, nothing changed.
                let mallory = try slackPress(
                    message: message, blockID: blockID, button: ack, user: "U-MALLORY",
                    responseURL: sink.url + "/actions/mallory")
                #expect(try await server.slack(mallory).0 == 200)
                let refused = try await reply(sink, path: "/actions/mallory")
                #expect(refused["response_type"] as? String == "ephemeral")
                #expect(refused["replace_original"] as? Bool == false)
                #expect((refused["text"] as? String)?.contains("may not ack or silence") == true)
                #expect(try await store.acks().isEmpty)

                // Alice's press, forged (another secret) or 10 minutes old: 401, nothing changed.
                let alice = try slackPress(
                    message: message, blockID: blockID, button: ack, user: "U-ALICE",
                    responseURL: sink.url + "/actions/alice")
                #expect(try await server.slack(alice, secret: "not-the-secret").0 == 401)
                #expect(try await server.slack(alice, age: 600).0 == 401)
                #expect(try await store.acks().isEmpty)

                // Alice's press as Slack sends it: acked, and the message updated in place.
                let ts = String(Int64(Date().timeIntervalSince1970))
                let headers = [
                    ("X-Slack-Request-Timestamp", ts),
                    (
                        "X-Slack-Signature",
                        ChatEndpoints.slackSignature(secret: "shh", timestamp: ts, body: Data(alice.utf8))
                    ),
                ]
                let pressed = try await server.post(
                    "/chat/slack/actions", body: alice, contentType: "application/x-www-form-urlencoded",
                    headers: headers)
                #expect(pressed.0 == 200)
                let update = try await reply(sink, path: "/actions/alice")
                #expect(update["replace_original"] as? Bool == true)
                // The message's blocks went through Klaxon and back as JSON: booleans stay booleans.
                let raw = await sink.requests().first { $0.path == "/actions/alice" }?.text ?? ""
                #expect(raw.contains(#""verbatim":true"#) && !raw.contains(#""verbatim":1"#), "\(raw.prefix(300))")
                #expect(ChatPayloadShape.slackProblems(update) == [])
                let blocks = try #require(update["blocks"] as? [[String: Any]])
                let buttons = blocks.flatMap { $0["elements"] as? [[String: Any]] ?? [] }.compactMap {
                    $0["action_id"] as? String
                }
                #expect(!buttons.contains(ack["action_id"] as? String ?? "?"), "the Ack button is gone")
                #expect(buttons.contains { ChatAction.named(actionID: $0) == .silence1h }, "Silence stays")
                let texts = ChatPayloadShape.slackTexts(update)
                #expect(
                    texts.contains {
                        $0.range(of: #"^Acked by <@U-ALICE>, \d\d:\d\d UTC$"#, options: .regularExpression) != nil
                    }, "\(texts)")
                let acks = try await store.acks()
                #expect(acks.values.map(\.by) == ["slack:U-ALICE"] && acks.values.first?.transitionID == id)

                // The very same request again: a replay, refused.
                let replay = try await server.post(
                    "/chat/slack/actions", body: alice, contentType: "application/x-www-form-urlencoded",
                    headers: headers)
                #expect(replay.0 == 401 && replay.1.contains("replayed"))

                // Silence 1h: the flood's rule at its station, for an hour, recorded as Alice's.
                let (silenceBlock, silence) = try button(.silence1h, in: message)
                let silencePress = try slackPress(
                    message: update, blockID: silenceBlock, button: silence, user: "U-ALICE",
                    responseURL: sink.url + "/actions/silence")
                #expect(try await server.slack(silencePress).0 == 200)
                let silenced = try await reply(sink, path: "/actions/silence")
                #expect(
                    ChatPayloadShape.slackTexts(silenced).contains { $0.hasPrefix("Silenced for 1h by <@U-ALICE>") })
                let now = Int64(Date().timeIntervalSince1970)
                let silences = try await store.silences(now: now)
                #expect(silences.count == 1)
                #expect(silences.first?.createdBy == "slack:U-ALICE")
                #expect(silences.first.map { $0.ends - $0.starts } == 3600)
                #expect(
                    silences.first?.matchers.map(\.description).sorted() == ["rule=flood-stage", "station=01646500"])
            }
            #expect(await server.stop())
            try outcome.get()
        }
    }

    @Test(
        "hostile presses: no payload, not JSON, deep nesting, another type, no user, a value that is not an id, a response_url elsewhere, a huge body: a clear 400 or 413, no request made, nothing changed; Open is a no-op"
    )
    func hostileSlackPresses() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let server = await ButtonServer.start(store: store, rules: rules, responsePrefix: sink.url + "/")
            let outcome = await Result {
                func form(_ json: String) -> String {
                    "payload=" + (json.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
                }
                let press = { (action: String, value: String, url: String) in
                    form(
                        #"{"type":"block_actions","user":{"id":"U-ALICE"},"team":{"id":"T1"},"response_url":"\#(url)","actions":[{"action_id":"\#(action)","block_id":"b","value":"\#(value)","type":"button"}]}"#
                    )
                }
                let cases: [(String, Int, String)] = [
                    ("text=hello", 400, "no payload"),
                    (form("{not json"), 400, "not JSON"),
                    (form(String(repeating: "[", count: 100_000)), 400, "not JSON"),
                    (form(#"["block_actions"]"#), 400, "not a JSON object"),
                    (form(#"{"type":"view_submission","user":{"id":"U1"}}"#), 400, "not a block_actions"),
                    (form(#"{"type":"block_actions","user":{"id":"<@U1>"}}"#), 400, "names no user"),
                    (press("ack.0", "12abc", sink.url + "/x"), 400, "not an alert id"),
                    (press("ack.0", "-1", sink.url + "/x"), 400, "not an alert id"),
                    (press("ack.0", "1", "https://evil.example/steal"), 400, "response_url"),
                    (press("ack.0", "1", sink.url + "@evil.example/"), 400, "response_url"),
                ]
                for (body, status, says) in cases {
                    let r = try await server.slack(body)
                    #expect(r.0 == status && r.1.contains(says), "\(body.prefix(80)): \(r)")
                }
                let huge = try await server.slack("payload=" + String(repeating: "x", count: 2 << 20))
                #expect(huge.0 == 413)
                // An Open button (a link) is reported too: answered, nothing done.
                #expect(try await server.slack(press("open.0", "", sink.url + "/open")).0 == 200)
                #expect(try await store.acks().isEmpty)
                #expect(await sink.requests().isEmpty, "no request to any response_url")
            }
            #expect(await server.stop())
            try outcome.get()
        }
    }

    @Test(
        "Mattermost: a flood's message carries signed Ack and Silence buttons; a press as Mattermost posts it acks and updates the post; a tampered or replayed context gets 401; a user chat.may_act does not name gets an ephemeral answer, and the button still works for the next"
    )
    func mattermostAck() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let server = await ButtonServer.start(store: store, rules: rules, responsePrefix: sink.url + "/")
            let outcome = await Result {
                let config = ButtonServer.config(externalURL: server.base)
                let message = try await floodFires(
                    store: store, receiver: .init(name: "mm", url: Secret(sink.url + "/hooks/mm"), preset: .mattermost),
                    sink: sink, config: config)
                #expect(ChatPayloadShape.mattermostProblems(message) == [])
                let attachment = try #require((message["attachments"] as? [[String: Any]])?.first)
                let ack = try #require((attachment["actions"] as? [[String: Any]])?.first)
                #expect(ack["name"] as? String == "Ack")
                let integration = try #require(ack["integration"] as? [String: Any])
                let url = try #require(integration["url"] as? String)
                #expect(url == server.base + "/chat/mattermost/actions")
                let context = try #require(integration["context"] as? [String: Any])
                let id = try #require(Int64(context["episode"] as? String ?? ""))

                func press(_ user: String, context: [String: Any]) async throws -> (Int, [String: Any]) {
                    // Mattermost's PostActionIntegrationRequest.
                    let body: [String: Any] = [
                        "user_id": user, "user_name": user.replacingOccurrences(of: "u-", with: ""),
                        "channel_id": "c1", "channel_name": "floods", "team_id": "t1", "team_domain": "flood-team",
                        "post_id": "p1", "trigger_id": "tr1", "type": "button", "data_source": "", "context": context,
                    ]
                    let json = String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
                    let r = try await server.post(
                        String(url.dropFirst(server.base.count)), body: json, contentType: "application/json")
                    return (r.0, (try? JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [String: Any]) ?? [:])
                }

                let mallory = try await press("u-mallory", context: context)
                #expect(mallory.0 == 200 && mallory.1["update"] == nil)
                #expect((mallory.1["ephemeral_text"] as? String)?.contains("may not ack or silence") == true)
                #expect(try await store.acks().isEmpty)

                var tampered = context
                tampered["episode"] = String(id + 1)
                #expect(try await press("u-alice", context: tampered).0 == 401)
                var unsigned = context
                unsigned["sig"] = nil
                #expect(try await press("u-alice", context: unsigned).0 == 401)
                #expect(try await store.acks().isEmpty)

                let alice = try await press("u-alice", context: context)
                #expect(alice.0 == 200)
                let line = try #require((alice.1["update"] as? [String: Any])?["message"] as? String)
                #expect(
                    line.contains("Acked by @") && line.contains("alice") && line.contains("flood-stage at 01646500"))
                #expect(alice.1["ephemeral_text"] as? String == line)
                #expect(try await store.acks().values.map(\.by) == ["mattermost:u-alice"])

                let replay = try await press("u-alice", context: context)
                #expect(replay.0 == 401)
                #expect(
                    ((replay.1["error"] as? [String: Any])?["message"] as? String)?.contains("already used") == true)
            }
            #expect(await server.stop())
            try outcome.get()
        }
    }

    @Test(
        "issue 38: a used Slack request and a used Mattermost button are refused by a second daemon on the same store (as after a restart)"
    )
    func replaysAreRememberedInTheStore() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let first = await ButtonServer.start(store: store, rules: rules, responsePrefix: sink.url + "/")
            let second = await ButtonServer.start(store: store, rules: rules, responsePrefix: sink.url + "/")
            let outcome = await Result {
                // Slack: a signed request, taken by the first daemon, is a replay at the second.
                let body = "payload=%7B%7D"
                let ts = Int64(Date().timeIntervalSince1970)
                let headers = [
                    ("X-Slack-Request-Timestamp", String(ts)),
                    ("X-Slack-Signature", ChatEndpoints.slackSignature(secret: "shh", timestamp: ts, body: body)),
                ]
                let form = "application/x-www-form-urlencoded"
                #expect(
                    try await first.post("/chat/slack/actions", body: body, contentType: form, headers: headers).0
                        == 400)
                let replay = try await second.post(
                    "/chat/slack/actions", body: body, contentType: form, headers: headers)
                #expect(replay.0 == 401 && replay.1.contains("replayed"), "\(replay)")

                // Mattermost: a button that acted at the first daemon is used at the second.
                let config = ButtonServer.config(externalURL: first.base)
                let message = try await floodFires(
                    store: store, receiver: .init(name: "mm", url: Secret(sink.url + "/hooks/mm"), preset: .mattermost),
                    sink: sink, config: config)
                let attachment = try #require((message["attachments"] as? [[String: Any]])?.first)
                let ack = try #require((attachment["actions"] as? [[String: Any]])?.first)
                let context = try #require((ack["integration"] as? [String: Any])?["context"] as? [String: Any])
                let press: [String: Any] = [
                    "user_id": "u-alice", "user_name": "alice", "team_id": "t1", "post_id": "p1", "context": context,
                ]
                let json = String(decoding: try JSONSerialization.data(withJSONObject: press), as: UTF8.self)
                let acted = try await first.post(
                    "/chat/mattermost/actions", body: json, contentType: "application/json")
                #expect(acted.0 == 200 && acted.1.contains("Acked by"), "\(acted)")
                let again = try await second.post(
                    "/chat/mattermost/actions", body: json, contentType: "application/json")
                #expect(again.0 == 401 && again.1.contains("already used"), "\(again)")
            }
            #expect(await first.stop())
            #expect(await second.stop())
            try outcome.get()
        }
    }

    @Test(
        "an Ack pressed after someone else acked: the first ack holds, the presser is told who acked, the message stays (issue 39)"
    )
    func ackAfterAnotherAck() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let server = await ButtonServer.start(store: store, rules: rules, responsePrefix: sink.url + "/")
            let outcome = await Result {
                let config = ButtonServer.config(externalURL: "https://klaxon.example.org")
                let message = try await floodFires(
                    store: store,
                    receiver: .init(name: "chat", url: Secret(sink.url + "/services/T1/B1/hook"), preset: .slack),
                    sink: sink, config: config)
                let (blockID, ack) = try button(.ack, in: message)
                let id = try #require(Int64(ack["value"] as? String ?? ""))
                try await store.ack(transitionID: id, by: "web:Ops", at: Int64(Date().timeIntervalSince1970))
                let press = try slackPress(
                    message: message, blockID: blockID, button: ack, user: "U-ALICE",
                    responseURL: sink.url + "/actions/late")
                #expect(try await server.slack(press).0 == 200)
                let answer = try await reply(sink, path: "/actions/late")
                #expect(answer["response_type"] as? String == "ephemeral")
                #expect(answer["replace_original"] as? Bool == false)
                let text = answer["text"] as? String ?? ""
                #expect(text.contains("flood-stage at 01646500 (#\(id)) was already acked by web:Ops at "), "\(text)")
                #expect(!text.contains("Acked by"), "\(text)")
                #expect(try await store.acks().values.map(\.by) == ["web:Ops"])
            }
            #expect(await server.stop())
            try outcome.get()
        }
    }

    @Test("a response_url that answers 503 or 500 is tried again, with the same body, until it takes it")
    func responseRetried() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let server = await ButtonServer.start(store: store, rules: rules, responsePrefix: sink.url + "/")
            let outcome = await Result {
                let config = ButtonServer.config(externalURL: "https://klaxon.example.org")
                let message = try await floodFires(
                    store: store,
                    receiver: .init(name: "chat", url: Secret(sink.url + "/services/T1/B1/hook"), preset: .slack),
                    sink: sink, config: config)
                await sink.script([.respond(status: 503), .respond(status: 500)])
                let (blockID, ack) = try button(.ack, in: message)
                let press = try slackPress(
                    message: message, blockID: blockID, button: ack, user: "U-ALICE",
                    responseURL: sink.url + "/actions/retried")
                #expect(try await server.slack(press).0 == 200)
                try await poll(until: "three posts to the response_url") {
                    await sink.requests().filter { $0.path == "/actions/retried" }.count == 3
                }
                let posts = await sink.requests().filter { $0.path == "/actions/retried" }
                #expect(Set(posts.map(\.body)).count == 1, "the same answer each time")
                #expect(posts.last?.json?["replace_original"] as? Bool == true)
                #expect(try await store.acks().count == 1, "acted once")
            }
            #expect(await server.stop())
            try outcome.get()
        }
    }

    @Test("chat.may_act applies to the commands too: ack and silence refused, other commands answered")
    func mayActCommands() async throws {
        let store = try tempStore()
        var config = Config()
        config.chatUsers = ["T1:U2": "bob"]
        config.chatMayAct = ["U1", "bob"]
        let chat = ChatCommands(store: store, config: config, rules: rules)
        let mallory = ChatEndpoints.User(platform: "slack", team: "T1", user: "U9", name: "U1")
        #expect(!chat.mayAct(mallory), "a display name is never an identity")
        #expect(await chat.answer(mallory, text: "ack 1").contains("may not ack or silence"))
        #expect(await chat.answer(mallory, text: "silence flood-stage 2h").contains("may not ack or silence"))
        #expect(await chat.answer(mallory, text: "help").contains("Klaxon commands"))
        #expect(try await store.silences(now: Int64(Date().timeIntervalSince1970)).isEmpty)
        #expect(chat.mayAct(.init(platform: "slack", team: "T1", user: "U1", name: "x")))
        #expect(chat.mayAct(.init(platform: "slack", team: "T1", user: "U2", name: "x")), "bob, by chat.users")
        #expect(!chat.mayAct(.init(platform: "slack", team: "T2", user: "U2", name: "x")), "another team's U2")
        // An owner name is not a chat id: a user whose platform id is `bob` (or `T1:bob`) is not bob.
        #expect(!chat.mayAct(.init(platform: "mattermost", team: nil, user: "bob", name: "bob")))
        #expect(!chat.mayAct(.init(platform: "slack", team: "T1", user: "bob", name: "x")))
        #expect(
            await chat.answer(.init(platform: "mattermost", team: nil, user: "bob", name: "bob"), text: "ack 1")
                .contains("may not ack or silence"))
        // Without chat.may_act, anyone the platform vouches for.
        #expect(ChatCommands(store: store, config: Config(), rules: rules).mayAct(mallory))
        #expect(
            await chat.answer(
                .init(platform: "slack", team: "T1", user: "U1", name: "x"), text: "silence flood-stage 2h"
            ).contains("Silenced"))
    }
}

@Suite("chat buttons: configuration")
struct ChatButtonConfigTests {
    @Test(
        "chat.may_act and chat.slack.response_url_prefix are read; absent, anyone may act and Slack's hosts are allowed"
    )
    func keys() throws {
        let scratch = try Scratch()
        let plain = try Config.load(path: try scratch.write("plain.yaml", "chat:\n  slack: {signing_secret: shh}\n"))
        #expect(plain.chatMayAct == nil)
        #expect(
            ChatWiring.settings(plain).slackResponseURLPrefixes
                == ["https://hooks.slack.com/", "https://hooks.slack-gov.com/"])
        let path = try scratch.write(
            "klaxon.yaml",
            """
            chat:
              slack:
                signing_secret: shh
                response_url_prefix: http://127.0.0.1:8080/
              users: {U1: alice}
              may_act: [alice, "T1:U2"]
            """)
        let config = try Config.load(path: path)
        #expect(config.chatMayAct == ["alice", "T1:U2"])
        let settings = ChatWiring.settings(config)
        #expect(settings.slackResponseURLPrefixes == ["http://127.0.0.1:8080/"])
        #expect(settings.allowsResponseURL("http://127.0.0.1:8080/actions/T1/1/x"))
        #expect(!settings.allowsResponseURL("https://hooks.slack.com/actions/T1/1/x"))
        #expect(!settings.allowsResponseURL("http://127.0.0.1:8080/a b"))
        let list = try Config.load(
            path: try scratch.write(
                "list.yaml",
                "chat:\n  slack:\n    signing_secret: shh\n    response_url_prefix: [\"https://hooks.slack.com/\", \"https://x.example/\"]\n"
            ))
        #expect(list.slackResponseURLPrefixes == ["https://hooks.slack.com/", "https://x.example/"])
    }

    @Test("a prefix that could match another host, a blank may_act entry, an unknown key: errors at their place")
    func errors() throws {
        let scratch = try Scratch()
        for (yaml, expected) in [
            (
                "chat:\n  slack:\n    signing_secret: shh\n    response_url_prefix: https://hooks.slack.com\n",
                ":4:26: error: chat.slack.response_url_prefix \"https://hooks.slack.com\" must end with /"
            ),
            (
                "chat:\n  slack:\n    signing_secret: shh\n    response_url_prefix: \"ftp://x/\"\n",
                ":4:26: error: chat.slack.response_url_prefix \"ftp://x/\" must be an absolute http"
            ),
            (
                "chat:\n  slack:\n    signing_secret: shh\n    response_url_prefix: \"https://u:p@x.example/\"\n",
                "must not hold credentials"
            ),
            (
                "chat:\n  may_act: [alice, \" \"]\n",
                ":2:12: error: chat.may_act: \" \" is not a chat id or an owner name"
            ),
            ("chat:\n  may_act: alice\n", ":2:12: error:"),
            (
                "chat:\n  slack:\n    signing_secret: shh\n    response_url: x\n",
                "unknown key \"response_url\" in chat.slack"
            ),
        ] {
            let path = try scratch.write("bad.yaml", yaml)
            #expect(throws: (any Error).self) { try Config.load(path: path) }
            do {
                _ = try Config.load(path: path)
            } catch {
                #expect("\(error)".contains(expected), "\(yaml): \(error)")
                #expect(!"\(error)".contains("shh"))
            }
        }
    }
}
