import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import NIOCore
import Testing

/// The daemon's HTTP server in-process with chat turned on, over a store with one firing alert.
final class ChatServer: Sendable {
    let store: any Store
    let port: Int
    let task: Task<Void, any Error>

    init(store: any Store, port: Int, task: Task<Void, any Error>) {
        self.store = store
        self.port = port
        self.task = task
    }

    static func start() async throws -> ChatServer {
        // In memory: the server takes the roles it serves, and this store is the same store as a file's.
        let store: any Store = try SQLiteStore.inMemory()
        let rules = [
            Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10))
        ]
        try await store.write(
            SourceBatch(readings: [Reading(station: "S1", metric: "gage_height", time: 1_767_225_600, value: 12)]),
            at: 1_767_225_600)
        _ = try await Evaluate.run(store: store, rules: rules, now: 1_767_225_600)
        try await store.save(
            trip: Trip(
                name: "denver", owner: "alice",
                stops: [.init(place: "Denver", latitude: 39.74, longitude: -104.99, arrive: "2026-12-01", nights: 2)]),
            at: 1_767_225_600)
        return await serve(store: store, rules: rules)
    }

    /// The HTTP server with chat on (Slack secret `shh`, Mattermost token `mm-token`, the team API
    /// token `team-token`, owners alice and bob; Slack's U-ALICE is alice) over `store`.
    static func serve(store: any Store, rules: [Rule]) async -> ChatServer {
        var config = Config()
        config.chatUsers = ["U-ALICE": "alice"]
        let chat = ChatCommands(store: store, config: config, rules: rules)
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test.chat")
        logger.logLevel = .critical
        let app = KlaxonHTTP.application(
            store: store,
            settings: .init(port: 0, apiToken: "team-token", ownerTokens: ["alice": "a-token", "bob": "b-token"]),
            metrics: .init(), logger: logger,
            chat: .init(slackSigningSecret: "shh", mattermostToken: "mm-token"),
            answer: { user, text in await chat.answer(user, text: text) },
            onRunning: { port in
                continuation.yield(port)
                continuation.finish()
            })
        let task = Task {
            defer { continuation.finish() }  // a server that fails to start must not leave us waiting
            try await app.run()  // not runService(): the test runner's SIGTERM and SIGINT stay its own
        }
        var port = 0
        for await p in stream { port = p }
        return ChatServer(store: store, port: port, task: task)
    }

    /// Starts a server, runs `body` with it, and stops it (awaited) before returning, also on failure.
    static func with(_ body: (ChatServer) async throws -> Void) async throws {
        let server = try await start()
        let outcome = await Result { try await body(server) }
        #expect(await server.stop(), "the server should stop, not outlive its test")
        try outcome.get()
    }

    /// Stops the server; true if it stopped within a bound that only says "broken" (a stop takes
    /// milliseconds).
    func stop() async -> Bool {
        task.cancel()
        return await Bounded.wait(for: task, within: TestServers.stopLimit)
    }

    func post(_ path: String, body: String, headers: [(String, String)] = [], method: String = "POST") async throws
        -> (Int, String)
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .init(rawValue: method)
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        request.body = .bytes(ByteBuffer(string: body))
        // No deadline of our own: a server that never answers is a hang, bounded by the suite's time limit.
        let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    /// A Slack slash command, signed (or not) as Slack would.
    func slack(
        _ text: String, secret: String = "shh", age: Int64 = 0, sign: Bool = true, userID: String = "U-ALICE",
        userName: String = "U-ALICE", team: String = "T1"
    ) async throws -> (Int, String) {
        let body =
            "token=x&team_id=\(team)&user_id=\(userID)&user_name=\(userName)&command=%2Fklaxon&text="
            + (text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text)
        let ts = Int64(Date().timeIntervalSince1970) - age
        var headers = [("X-Slack-Request-Timestamp", String(ts))]
        if sign {
            headers.append(
                ("X-Slack-Signature", ChatEndpoints.slackSignature(secret: secret, timestamp: ts, body: body)))
        }
        return try await post("/chat/slack", body: body, headers: headers)
    }

    func text(_ r: (Int, String)) throws -> String {
        let o = try JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [String: Any]
        return o?["text"] as? String ?? ""
    }
}

@Suite("chat commands", .serialized, .timeLimit(.minutes(10)))
struct ChatTests {
    @Test("a valid Slack signature gets an answer; every command parses, bad arguments get usage")
    func commands() async throws {
        try await ChatServer.with { chat in
            let help = try await chat.slack("help")
            #expect(help.0 == 200)
            #expect(try chat.text(help).contains("`gauge ID`"))
            #expect(try chat.text(try await chat.slack("frobnicate")).contains("I don't know `frobnicate`"))
            #expect(try chat.text(try await chat.slack("")).contains("Klaxon commands"))
            #expect(try chat.text(try await chat.slack("gauge")).contains("usage: `gauge ID`"))
            #expect(try chat.text(try await chat.slack("gauge S1")).contains("height         12"))
            #expect(try chat.text(try await chat.slack("gauge NOPE")).contains("I know no gauge \"NOPE\""))
            #expect(try chat.text(try await chat.slack("aqi Delhi")).contains("no AQI readings"))
            #expect(try chat.text(try await chat.slack("quakes since 2d")).contains("No earthquakes"))
            #expect(try chat.text(try await chat.slack("quakes near Narnia")).contains("don't know the place"))
            // The Slack user U-ALICE is the trip owner alice (chat.users).
            #expect(try chat.text(try await chat.slack("trip denver")).contains("denver (alice)"))
            #expect(try chat.text(try await chat.slack("trip paris")).contains("trip \"paris\" not found for alice"))

            let alerts = try chat.text(try await chat.slack("alerts"))
            #expect(alerts.contains("high S1"))
            let id = try await #require(try chat.store.firingAlerts().first?.transitionID)
            #expect(alerts.contains("#\(id)"))
            #expect(try chat.text(try await chat.slack("ack x")).contains("usage: `ack ALERT_ID`"))
            #expect(try chat.text(try await chat.slack("ack 999")).contains("No firing alert has id 999"))
            #expect(try chat.text(try await chat.slack("ack \(id)")).contains("Acked high at S1"))
            #expect(try chat.text(try await chat.slack("alerts")).contains("(acked by slack:U-ALICE)"))
            await #expect(try chat.store.acks().count == 1)

            #expect(try chat.text(try await chat.slack("silence high")).contains("usage: `silence RULE"))
            #expect(try chat.text(try await chat.slack("silence high S1 2h")).contains("Silenced high S1 for 2h"))
            let silences = try await chat.store.silences(now: Int64(Date().timeIntervalSince1970))
            #expect(silences.count == 1)
            #expect(silences.first?.createdBy == "slack:U-ALICE")
        }
    }

    @Test("replies carry data and the user's words escaped: no mention, link or markup from them")
    func hostileReplies() async throws {
        try await ChatServer.with { chat in
            let hostile = ["<!channel>", "<!here|x>", "<@u1>", "<https://evil.example|ack>", "a&b<c>d"]
            for word in hostile {
                for command in ["gauge \(word)", "frobnicate\(word)", "trip \(word)", "aqi \(word)"] {
                    let reply = try chat.text(try await chat.slack(command))
                    #expect(!reply.contains("<") && !reply.contains(">"), "\(command): \(reply)")
                    // Slack shows the entities as the characters: the user reads what was written.
                    let shown = reply.replacingOccurrences(of: "&lt;", with: "<")
                        .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
                    #expect(shown.contains(word), "\(command): \(reply)")
                }
            }
        }
    }

    @Test("bad signature, stale timestamp or missing header: 401 and nothing changed")
    func rejected() async throws {
        try await ChatServer.with { chat in
            #expect(try await chat.slack("silence high 2h", secret: "wrong").0 == 401)
            #expect(try await chat.slack("silence high 2h", age: 301).0 == 401)
            #expect(try await chat.slack("silence high 2h", sign: false).0 == 401)
            #expect(try await chat.post("/chat/slack", body: "text=silence%20high%202h").0 == 401)
            await #expect(try chat.store.silences(now: Int64(Date().timeIntervalSince1970)).isEmpty)
            // A timestamp within five minutes is fine.
            #expect(try await chat.slack("silence high 2h", age: 200).0 == 200)

            let mm = try await chat.post(
                "/chat/mattermost", body: "token=mm-token&user_id=u-bob&user_name=bob&text=help")
            #expect(mm.0 == 200)
            #expect(try chat.text(mm).contains("Klaxon commands"))
            #expect(try await chat.post("/chat/mattermost", body: "token=nope&user_name=bob&text=help").0 == 401)
        }
    }
}

extension ChatTests {
    @Test("a hostile timestamp is refused without a trap: digits in a sane range, before the body is read")
    func hostileTimestamps() async throws {
        try await ChatServer.with { chat in
            let body = "team_id=T1&user_id=U-ALICE&user_name=U-ALICE&text=silence%20high%202h"
            for ts in [
                "-9223372036854775808", "9223372036854775807", "-1", "+1700000000", " 1700000000", "1e9", "0x10", "",
                "١٧٠٠٠٠٠٠٠٠", String(repeating: "9", count: 400),
            ] {
                // Unsigned (a made-up signature) and signed over the very text sent: both refused, nothing trapped.
                let forged = try await chat.post(
                    "/chat/slack", body: body,
                    headers: [
                        ("X-Slack-Request-Timestamp", ts),
                        ("X-Slack-Signature", "v0=" + String(repeating: "0", count: 64)),
                    ])
                #expect(forged.0 == 401, "\(ts)")
                let signed = try await chat.post(
                    "/chat/slack", body: body,
                    headers: [
                        ("X-Slack-Request-Timestamp", ts),
                        (
                            "X-Slack-Signature",
                            ChatEndpoints.slackSignature(secret: "shh", timestamp: ts, body: Data(body.utf8))
                        ),
                    ])
                #expect(signed.0 == 401, "\(ts)")
            }
            await #expect(try chat.store.silences(now: Int64(Date().timeIntervalSince1970)).isEmpty)
            #expect(try await chat.slack("help").0 == 200)
        }
    }

    @Test("identity is the platform's user id (and team), never the display name")
    func identity() async throws {
        try await ChatServer.with { chat in
            // Mallory calls herself "alice" and "U-ALICE": no trips of alice's.
            let spoof = try chat.text(try await chat.slack("trip denver", userID: "U-MALLORY", userName: "alice"))
            #expect(!spoof.contains("denver (alice)"))
            #expect(spoof.contains("not linked to a trip owner"))
            let spoof2 = try chat.text(try await chat.slack("trip denver", userID: "U-MALLORY", userName: "U-ALICE"))
            #expect(!spoof2.contains("denver (alice)"))
            // Alice is recognised by her id whatever name she shows.
            let real = try chat.text(try await chat.slack("trip denver", userID: "U-ALICE", userName: "Alice Liddell"))
            #expect(real.contains("denver (alice)"))
            // A request without a user id is refused.
            let signedNoUser = "team_id=T1&user_name=alice&text=help"
            let ts = String(Int64(Date().timeIntervalSince1970))
            let noUser = try await chat.post(
                "/chat/slack", body: signedNoUser,
                headers: [
                    ("X-Slack-Request-Timestamp", ts),
                    (
                        "X-Slack-Signature",
                        ChatEndpoints.slackSignature(secret: "shh", timestamp: ts, body: Data(signedNoUser.utf8))
                    ),
                ])
            #expect(noUser.0 == 400)
            // Mattermost likewise: user_name "alice" is nobody's owner.
            let mm = try await chat.post(
                "/chat/mattermost", body: "token=mm-token&user_id=u-mallory&user_name=alice&text=trip%20denver")
            #expect(try chat.text(mm).contains("not linked to a trip owner"))
        }
    }

    @Test("chat.users keys may name the team: TEAM:USER is matched before USER")
    func teamQualified() throws {
        var config = Config()
        config.chatUsers = ["T2:U1": "carol", "U1": "dave"]
        let chat = ChatCommands(store: try SQLiteStore.inMemory(), config: config, rules: [])
        #expect(chat.owner(for: .init(platform: "slack", team: "T2", user: "U1", name: "x")) == "carol")
        #expect(chat.owner(for: .init(platform: "slack", team: "T9", user: "U1", name: "x")) == "dave")
        #expect(chat.owner(for: .init(platform: "slack", team: "T2", user: "U2", name: "U1")) == nil)
    }
}

@Suite("silence ids", .serialized, .timeLimit(.minutes(10)))
struct SilenceIDTests {
    @Test("expiring by id: exact, or a literal prefix naming one silence; `_` and `%` are not wildcards")
    func expireByPrefix() async throws {
        try await ChatServer.with { server in
            let store = server.store
            let now = Int64(Date().timeIntervalSince1970)
            for id in ["abc-1", "abd-2", "x_y"] {
                try await store.addSilence(
                    Silence(
                        id: id, matchers: [try Matcher.parse("rule=high")], starts: now, ends: now + 3600, comment: "",
                        createdBy: "t"), now: now)
            }
            let auth = [("Authorization", "Bearer team-token")]
            #expect(try await server.post("/api/v1/silences/_", body: "", headers: auth, method: "DELETE").0 == 404)
            #expect(try await server.post("/api/v1/silences/%25", body: "", headers: auth, method: "DELETE").0 == 404)
            let ambiguous = try await server.post("/api/v1/silences/ab", body: "", headers: auth, method: "DELETE")
            #expect(ambiguous.0 == 409)
            #expect(ambiguous.1.contains("abc-1") && ambiguous.1.contains("abd-2"))
            await #expect(try store.silences(now: now).count == 3)
            let one = try await server.post("/api/v1/silences/abd", body: "", headers: auth, method: "DELETE")
            #expect(one.0 == 200)
            #expect(one.1.contains("abd-2"))
            await #expect(try store.expireSilence(id: "x_", now: now) == .expired("x_y"))
            await #expect(try store.expireSilence(id: "_", now: now) == .notFound)
            // Expired ones ended at the API's own clock, a moment after `now`.
            await #expect(try store.silences(now: now + 60).map(\.id) == ["abc-1"])
        }
    }
}

@Suite("HTTP API: silences and trips", .serialized, .timeLimit(.minutes(10)))
struct APITests {
    @Test("silences: create, list, expire; the team token is required")
    func silences() async throws {
        try await ChatServer.with { server in
            let auth = [("Authorization", "Bearer team-token")]
            #expect(try await server.post("/api/v1/silences", body: "{}").0 == 401)
            let bad = try await server.post(
                "/api/v1/silences", body: #"{"matchers":["rule=high"],"for":"soon"}"#, headers: auth)
            #expect(bad.0 == 400)
            #expect(bad.1.contains("for: a duration"))
            let created = try await server.post(
                "/api/v1/silences", body: #"{"matchers":["rule=high","station=S1"],"for":"2h","comment":"works"}"#,
                headers: auth)
            #expect(created.0 == 201, "\(created.1)")
            let o = try #require(try JSONSerialization.jsonObject(with: Data(created.1.utf8)) as? [String: Any])
            let id = try #require(o["id"] as? String)
            let list = try await server.post("/api/v1/silences", body: "", headers: auth, method: "GET")
            #expect(list.1.contains(id))
            #expect(try await server.post("/api/v1/silences/\(id)", body: "", headers: auth, method: "DELETE").0 == 200)
            #expect(try await server.post("/api/v1/silences/\(id)", body: "", headers: auth, method: "DELETE").0 == 404)
            await #expect(try server.store.silences(now: Int64(Date().timeIntervalSince1970)).isEmpty)
        }
    }

    @Test("trips: an owner token sees only its owner's trips; another owner's trip is 404")
    func trips() async throws {
        try await ChatServer.with { server in
            let alice = [("Authorization", "Bearer a-token")]
            let bob = [("Authorization", "Bearer b-token")]
            #expect(try await server.post("/api/v1/trips", body: "", method: "GET").0 == 401)
            #expect(
                try await server.post(
                    "/api/v1/trips", body: "", headers: [("Authorization", "Bearer team-token")], method: "GET"
                ).0 == 401)
            let mine = try await server.post("/api/v1/trips", body: "", headers: alice, method: "GET")
            #expect(mine.0 == 200)
            #expect(mine.1.contains("\"name\":\"denver\""))
            let theirs = try await server.post("/api/v1/trips", body: "", headers: bob, method: "GET")
            #expect(!theirs.1.contains("denver"))
            #expect(try await server.post("/api/v1/trips/denver", body: "", headers: bob, method: "GET").0 == 404)
            let one = try await server.post("/api/v1/trips/denver", body: "", headers: alice, method: "GET")
            #expect(one.0 == 200)
            let body = try #require(try JSONSerialization.jsonObject(with: Data(one.1.utf8)) as? [String: Any])
            let items = try #require(body["items"] as? [[String: Any]])
            #expect(body["owner"] as? String == "alice")
            #expect(items.contains { $0["item"] as? String == "toiletries" && $0["quantity"] as? Int == 1 })
            #expect(items.allSatisfy { ($0["reason"] as? String)?.isEmpty == false })
            #expect(try await server.post("/api/v1/trips/denver", body: "", headers: bob, method: "DELETE").0 == 404)
            #expect(try await server.post("/api/v1/trips/denver", body: "", headers: alice, method: "DELETE").0 == 200)
            await #expect(try server.store.trips(owner: "alice").isEmpty)
        }
    }
}
