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

/// Issue 43: watches made, listed and removed from Slack and Mattermost (requests signed or
/// tokened as the platforms do), evaluated by the daemon's engine and queued to the receiver of the
/// channel they were made in, and nowhere else.
@Suite("watches from chat", .serialized, .timeLimit(.minutes(10)))
struct WatchChatTests {
    static let t0: Int64 = 1_767_225_600

    /// A store with one gauge (stage readings, a name) and one air station, and the config that
    /// lets watches post to Slack's C-RIVER and Mattermost's mm-river through `team-river`.
    static func setup(maxPerPerson: Int = 20) async throws -> (any Store, Config) {
        let store: any Store = try SQLiteStore.inMemory()
        try await store.upsert(station: StationRecord(id: "01646500", name: "Potomac River at Little Falls"))
        try await store.upsert(station: StationRecord(id: "IN-DL-1", name: "Delhi"))
        try await store.write(
            SourceBatch(
                gauges: [
                    GaugeInfo(
                        lid: "BRKM2", usgsID: "01646500", name: "Potomac River at Little Falls",
                        categories: FloodCategories(stage: ["action": 8, "minor": 10, "moderate": 12]))
                ],
                readings: [
                    Reading(station: "01646500", metric: "gage_height", time: t0, value: 3),
                    Reading(station: "IN-DL-1", metric: "aqi", time: t0, value: 80),
                ]), at: t0)
        var config = Config()
        config.receivers = [.stdout(.init(name: "team-river")), .stdout(.init(name: "ops"))]
        config.routing = Routing(routes: [Route(receivers: ["ops"], continue: true)], defaultReceiver: "ops")
        config.watches.channels = ["slack:C-RIVER": "team-river", "mattermost:mmriver": "team-river"]
        config.watches.maxPerPerson = maxPerPerson
        config.watches.places = [WatchPlace(name: "Tokyo office", latitude: 35.68, longitude: 139.76, radiusKm: 300)]
        return (store, config)
    }

    static func serve(store: any Store, config: Config) async -> ChatServer {
        let chat = ChatCommands(store: store, config: config, rules: [])
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test.watch")
        logger.logLevel = .critical
        let app = KlaxonHTTP.application(
            store: store, settings: .init(port: 0, apiToken: "team-token"), metrics: .init(), logger: logger,
            chat: .init(slackSigningSecret: "shh", mattermostToken: "mm-token"),
            answer: { user, text in await chat.answer(user, text: text) },
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

    static func with(maxPerPerson: Int = 20, _ body: (ChatServer) async throws -> Void) async throws {
        let (store, config) = try await setup(maxPerPerson: maxPerPerson)
        let server = await serve(store: store, config: config)
        let outcome = await Result { try await body(server) }
        #expect(await server.stop(), "the server should stop, not outlive its test")
        try outcome.get()
    }

    static func form(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value
    }

    /// `/klaxon TEXT` from Slack in `channel`, signed as Slack signs.
    static func slack(
        _ chat: ChatServer, _ text: String, user: String = "U-ANA", channel: String = "C-RIVER", sign: Bool = true
    ) async throws -> (Int, String) {
        let body =
            "token=x&team_id=T1&user_id=\(user)&user_name=ana&channel_id=\(channel)&command=%2Fklaxon&text="
            + form(text)
        let ts = Int64(Date().timeIntervalSince1970)
        var headers = [("X-Slack-Request-Timestamp", String(ts))]
        if sign {
            headers.append(
                ("X-Slack-Signature", ChatEndpoints.slackSignature(secret: "shh", timestamp: ts, body: body)))
        }
        return try await chat.post("/chat/slack", body: body, headers: headers)
    }

    static func say(_ chat: ChatServer, _ text: String, channel: String = "C-RIVER") async throws -> String {
        let r = try await slack(chat, text, channel: channel)
        #expect(r.0 == 200, "\(text): \(r.1)")
        return try chat.text(r)
    }

    @Test("a person adds, lists and removes watches from Slack; the answers name the gauge id")
    func slackVerbs() async throws {
        try await Self.with { chat in
            let added = try await Self.say(chat, "watch gauge 01646500 minor")
            #expect(
                added
                    == "Watch 1: gauge 01646500 (Potomac River at Little Falls) reaching minor flood stage, posted to this channel. `watching` lists your watches; `unwatch 1` stops this one."
            )
            #expect(
                try await Self.say(chat, "watch air Delhi moderate").hasPrefix(
                    "Watch 2: air at Delhi reaching Moderate"))
            #expect(
                try await Self.say(chat, "watch quakes near \"Tokyo office\" felt IV").hasPrefix(
                    "Watch 3: quakes felt at Tokyo office at intensity IV or more"))
            #expect(
                try await Self.say(chat, "watch gauge 01646500 minor")
                    == "You already have that watch (1: gauge 01646500 (Potomac River at Little Falls) reaching minor flood stage)."
            )
            let listed = try await Self.say(chat, "watching")
            #expect(
                listed.hasPrefix(
                    "Your watches:\n1. gauge 01646500 (Potomac River at Little Falls) reaching minor flood stage → this channel"
                ))
            #expect(listed.contains("2. air at Delhi reaching Moderate"))
            #expect(listed.contains("3. quakes felt at Tokyo office"))
            // Stored as the Slack user's, by team and user id.
            #expect(try await chat.store.watches(owner: "slack:T1:U-ANA").map(\.number) == [1, 2, 3])
            #expect(try await Self.say(chat, "unwatch 2") == "Stopped watch 2: air at Delhi reaching Moderate.")
            #expect(try await Self.say(chat, "unwatch 2") == "You have no watch 2; `watching` lists yours.")
            #expect(!(try await Self.say(chat, "watching")).contains("Delhi"))
            // Another person's numbers are their own.
            let bob = try chat.text(try await Self.slack(chat, "watching", user: "U-BOB"))
            #expect(bob.hasPrefix("You have no watches."))
            #expect(
                try chat.text(try await Self.slack(chat, "unwatch 1", user: "U-BOB")).hasPrefix("You have no watch 1"))
            #expect(try await chat.store.watches(owner: "slack:T1:U-ANA").count == 2)
        }
    }

    @Test("mistakes get did you mean; a channel watches may not post to and the limit are refused clearly")
    func refusals() async throws {
        try await Self.with(maxPerPerson: 1) { (chat: ChatServer) async throws in
            #expect(
                try await Self.say(chat, "watch gauge 0164650 minor")
                    == "no gauge 0164650; did you mean 01646500 Potomac River at Little Falls?")
            #expect(
                try await Self.say(chat, "watch gauge 01646500 minor", channel: "C-OTHER")
                    == "Watches can't post in this channel: `watches.channels` does not list slack:C-OTHER. An operator can add it."
            )
            #expect(
                try await Self.say(chat, "watch gauge 01646500 major")
                    == "Gauge 01646500 has no NWS major flood stage, so that watch would never fire; watch a stage instead (like `watch gauge 01646500 12.5ft`)."
            )
            #expect(try await Self.say(chat, "watch gauge 01646500 minor").hasPrefix("Watch 1:"))
            #expect(
                try await Self.say(chat, "watch gauge 01646500 moderate")
                    == "You have 1 watches, the most one person may hold (`watches.max_per_person`): `unwatch N` one first."
            )
            #expect(try await chat.store.allWatches().count == 1)
            // Unsigned: 401, nothing stored.
            #expect(try await Self.slack(chat, "unwatch 1", sign: false).0 == 401)
            #expect(try await chat.store.allWatches().count == 1)
        }
    }

    @Test("hostile text: mentions and markup in the person's words come back as text")
    func hostile() async throws {
        try await Self.with { chat in
            for word in ["<!channel>", "<!here|x>", "<@U1>", "<https://evil.example|ack>", "@everyone"] {
                for command in ["watch gauge \(word) minor", "watch air \(word) poor", "watch quakes near \(word) M5"] {
                    let reply = try await Self.say(chat, command)
                    #expect(!reply.contains("<") && !reply.contains(">"), "\(command): \(reply)")
                    #expect(!reply.contains("@everyone"), "\(command): \(reply)")
                }
            }
            let long = try await Self.say(chat, "watch air " + String(repeating: "x", count: 3000) + " poor")
            #expect(long == "That command is too long (at most 500 characters).")
            #expect(try await chat.store.allWatches().isEmpty)
        }
    }

    @Test("the same verbs from Mattermost (its token), posted to the channel they were made in")
    func mattermost() async throws {
        try await Self.with { chat in
            func mm(_ text: String, channel: String = "mmriver") async throws -> String {
                let r = try await chat.post(
                    "/chat/mattermost",
                    body: "token=mm-token&team_id=tm&user_id=ubob&user_name=bob&channel_id=\(channel)&text="
                        + Self.form(text))
                #expect(r.0 == 200)
                return try chat.text(r)
            }
            #expect(
                try await mm("watch gauge 01646500 12.5ft").hasPrefix(
                    "Watch 1: gauge 01646500 (Potomac River at Little Falls) reaching 12.5 ft"))
            #expect(try await mm("watching").contains("1. gauge 01646500"))
            #expect(
                try await mm("watch gauge 01646500 minor", channel: "other").hasPrefix(
                    "Watches can't post in this channel"))
            let stored = try #require(try await chat.store.watches(owner: "mattermost:tm:ubob").first)
            #expect(stored.destination == .channel(platform: "mattermost", channel: "mmriver"))
            #expect(try await mm("unwatch 1").hasPrefix("Stopped watch 1"))
            let wrong = try await chat.post(
                "/chat/mattermost", body: "token=nope&user_id=ubob&channel_id=mmriver&text=watching")
            #expect(wrong.0 == 401)
        }
    }

    @Test("GET /api/v1/watches lists every watch with its owner, in pages, behind the team token")
    func api() async throws {
        try await Self.with { chat in
            _ = try await Self.say(chat, "watch gauge 01646500 minor")
            _ = try await Self.say(chat, "watch gauge 01646500 moderate")
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(chat.port)/api/v1/watches?limit=1")
            request.headers.add(name: "Authorization", value: "Bearer team-token")
            let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
            #expect(response.status.code == 200)
            let body = try await response.body.collect(upTo: 1 << 20)
            let page = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
            #expect(page?["total"] as? Int == 2)
            let rows = page?["watches"] as? [[String: Any]]
            #expect(rows?.count == 1)
            #expect(rows?.first?["owner"] as? String == "slack:T1:U-ANA")
            #expect(rows?.first?["subject"] as? String == "01646500")
            #expect(rows?.first?["destination"] as? String == "slack:C-RIVER")
            #expect(page?["next"] as? String != nil)
            let anonymous = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(chat.port)/api/v1/watches"), deadline: .distantFuture)
            #expect(anonymous.status.code == 401)
        }
    }
}

/// Issue 43: the daemon evaluates stored watches as rules of its engine; a transition of a watch is
/// queued to the watch's receiver only, and a removed watch's firing alert is resolved.
@Suite("watches evaluated", .serialized, .timeLimit(.minutes(10)))
struct WatchEvaluationTests {
    @Test("a watch fires to its channel's receiver, not to the team's route or the default; removing it resolves")
    func evaluated() async throws {
        let (store, config) = try await WatchChatTests.setup()
        let t0 = WatchChatTests.t0
        var logger = Logger(label: "test.watch")
        logger.logLevel = .critical
        let daemon = Daemon(config: config, store: store, rules: [], logger: logger)
        let chat = ChatCommands(store: store, config: config, rules: [])
        let user = ChatEndpoints.User(platform: "slack", team: "T1", user: "U-ANA", name: "ana", channel: "C-RIVER")
        #expect(await chat.answer(user, text: "watch gauge 01646500 10ft").hasPrefix("Watch 1:"))
        // Made from a channel no receiver posts to: kept, never evaluated.
        _ = try await store.addWatch(
            Watch(
                owner: WatchOwner(platform: "slack", id: "T1:U-BOB", name: "bob"),
                target: .gauge(station: "01646500", name: nil, level: .value(5)),
                destination: .direct(platform: "slack", user: "U-BOB"), createdAt: t0), limit: 10)
        _ = try await daemon.evaluate(now: t0)
        try await store.write(
            SourceBatch(readings: [Reading(station: "01646500", metric: "gage_height", time: t0 + 900, value: 11)]),
            at: t0 + 900)
        _ = try await daemon.evaluate(now: t0 + 900)
        let watch = try #require(try await store.watches(owner: "slack:T1:U-ANA").first)
        let rows = try await store.outbox(state: nil, limit: 100)
        #expect(rows.map(\.receiver) == ["team-river"], "\(rows.map { ($0.receiver, $0.alert) })")
        #expect(rows.first?.alert.hasPrefix(watch.ruleName) == true)
        #expect(try await store.firingAlerts().map { $0.key.rule } == [watch.ruleName])
        // Removed (by chat): the next evaluation resolves its alert, to the same receiver.
        #expect(await chat.answer(user, text: "unwatch 1").hasPrefix("Stopped watch 1"))
        _ = try await daemon.evaluate(now: t0 + 1000)
        #expect(try await store.firingAlerts().isEmpty)
        let after = try await store.outbox(state: nil, limit: 100)
        #expect(after.count == 2)
        #expect(after.allSatisfy { $0.receiver == "team-river" })
    }

    @Test("a watch removed while no daemon ran has its firing alert resolved by the next daemon's first evaluation")
    func removedWhileDown() async throws {
        let (store, config) = try await WatchChatTests.setup()
        let t0 = WatchChatTests.t0
        var logger = Logger(label: "test.watch")
        logger.logLevel = .critical
        let owner = WatchOwner(platform: "slack", id: "T1:U-ANA", name: "ana")
        guard
            case .added(let w) = try await store.addWatch(
                Watch(
                    owner: owner, target: .gauge(station: "01646500", name: nil, level: .value(10)),
                    destination: .channel(platform: "slack", channel: "C-RIVER"), createdAt: t0), limit: 10)
        else {
            Issue.record("not added")
            return
        }
        let first = Daemon(config: config, store: store, rules: [], logger: logger)
        _ = try await first.evaluate(now: t0)
        try await store.write(
            SourceBatch(readings: [Reading(station: "01646500", metric: "gage_height", time: t0 + 900, value: 11)]),
            at: t0 + 900)
        _ = try await first.evaluate(now: t0 + 900)
        #expect(try await store.firingAlerts().map { $0.key.rule } == [w.ruleName])
        // The daemon is gone; the operator removes the watch; another daemon starts.
        #expect(try await store.removeWatch(id: w.id) == w)
        let second = Daemon(config: config, store: store, rules: [], logger: logger)
        _ = try await second.evaluate(now: t0 + 1000)
        _ = try await second.evaluate(now: t0 + 1001)
        #expect(try await store.firingAlerts().isEmpty)
        let resolve = try #require(try await store.recentTransitions(limit: 1).first?.transition)
        #expect(resolve.rule == w.ruleName && resolve.state == .resolved)
        #expect(resolve.summary == "resolved: watch \(w.id) was removed")
        // Its receiver never heard the firing (no dispatcher ran): the resolve goes nowhere else either.
        let rows = try await store.outbox(state: nil, limit: 100)
        #expect(rows.allSatisfy { $0.receiver == "team-river" }, "\(rows.map(\.receiver))")
    }
}

/// Issue 43: the operator's bounds (`watches:`) are read strictly, and rule files cannot pose as watches.
@Suite("watches config")
struct WatchConfigTests {
    func load(_ yaml: String) throws -> (Config, [String]) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-watch-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("klaxon.yaml").path
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        let diagnostics = Diagnostics()
        let config = Config.load(path: path, environment: [:], diagnostics: diagnostics)
        return (config, diagnostics.items.map(\.message))
    }

    @Test("watches: kinds, max_per_person, stations, air_places, places and channels")
    func reads() throws {
        let (config, problems) = try load(
            """
            receivers:
              - {name: team-river, type: stdout}
            watches:
              kinds: [gauge, quakes]
              max_per_person: 3
              stations: ["01646500"]
              air_places: [Delhi]
              places:
                - {name: Tokyo office, latitude: 35.68, longitude: 139.76, radius_km: 300}
              channels: {"slack:C0123": team-river}
            """)
        #expect(problems.isEmpty, "\(problems)")
        #expect(config.watches.kinds == [.gauge, .quakes])
        #expect(config.watches.maxPerPerson == 3)
        #expect(config.watches.stations == ["01646500"])
        #expect(config.watches.airPlaces == ["Delhi"])
        #expect(config.watches.places.map(\.name) == ["Tokyo office"])
        #expect(config.watches.channels == ["slack:C0123": "team-river"])
        #expect(
            WatchWiring.receiver(for: .channel(platform: "slack", channel: "C0123"), config: config) == "team-river")
        #expect(WatchWiring.receiver(for: .channel(platform: "slack", channel: "C9"), config: config) == nil)
        #expect(WatchWiring.receiver(for: .direct(platform: "slack", user: "U1"), config: config) == nil)
    }

    @Test("mistakes in watches: are errors with their place")
    func mistakes() throws {
        let (_, problems) = try load(
            """
            watches:
              kinds: [gauge, rivers]
              max_per_person: 100000
              places:
                - {name: X, latitude: 95, longitude: 0, radius_km: 10, colour: red}
              channels: {"C0123": team-river, "slack:C1": nobody}
              wat: 1
            """)
        #expect(problems.contains { $0.contains("watches.kinds: unknown kind \"rivers\"") })
        #expect(problems.contains { $0.contains("watches.max_per_person must be from 0 to 10000") })
        #expect(problems.contains { $0.contains("latitude must be between -90 and 90") })
        #expect(problems.contains { $0.contains("colour") })
        #expect(problems.contains { $0.contains("must be PLATFORM:CHANNEL_ID") })
        #expect(problems.contains { $0.contains("nobody") })
        #expect(problems.contains { $0.contains("wat") })
    }

    @Test("a rule file's rule named watch-… or labelled watch is refused")
    func reservedNames() {
        let kind = ThresholdRule(metric: "gage_height", direction: .above, threshold: 1)
        let config = Config()
        #expect(config.check(rules: [Rule(name: "watch-1", kind: kind, origin: "r.yaml:3:5")]).map(\.line) == [3])
        #expect(config.check(rules: [Rule(name: "x", kind: kind, labels: ["watch": "1"])]).count == 1)
        #expect(config.check(rules: [Rule(name: "watchful", kind: kind)]).isEmpty)
    }
}
