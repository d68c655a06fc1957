import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Testing

/// Issue 38, items 1, 8, 15 and 22b, through every path that makes a silence: a silence mutes what
/// it names and nothing more (a station named `~.*` is that station, `"S2"` is not `S2`); updates
/// of one silence at once leave one silence; silences end within 3650d; amtool updates a silence
/// made from chat.
@Suite("silences do not widen", .serialized, .timeLimit(.minutes(10)))
struct SilenceWideningTests {
    static let token = "widen-token"
    static let stations = ["~.*", "S1", "S2", "\"S2\""]
    static let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10))
    ]

    /// `high` fires at every station of `stations`; the HTTP server (v1 and v2 APIs) runs over the store.
    static func with(_ body: (any Store, Int, Int64) async throws -> Void) async throws {
        let store = try tempStore()
        let now = Int64(Date().timeIntervalSince1970)
        _ = try await store.readingWriter().write(
            stations.map { Reading(station: $0, metric: "gage_height", time: now - 60, value: 20, unit: "ft") })
        _ = try await Evaluate.run(store: store, rules: rules, now: now)
        let (port, task) = await startHTTP(
            store: store,
            settings: KlaxonHTTP.Settings(port: 0, apiToken: token).with(
                alertmanager: AlertmanagerAPISettings(receivers: ["team"], startedAt: now)))
        let outcome = await Result { try await body(store, port, now) }
        task.cancel()
        #expect(await Bounded.wait(for: task, within: TestServers.stopLimit), "the server should stop")
        try outcome.get()
    }

    /// The stations whose `high` alert the active silences mute now.
    static func muted(_ store: any Store, now: Int64) async throws -> [String] {
        let silences = try await store.activeSilences(now: now)
        return try await store.firingAlerts().map(\.transition)
            .filter { t in silences.contains { $0.mutes(t.matchLabels, at: now) } }.map(\.station).sorted()
    }

    static func expireAll(_ store: any Store, now: Int64) async throws {
        for s in try await store.activeSilences(now: now) { _ = try await store.expireSilence(id: s.id, now: now) }
    }

    @Test("the Silence 1h button and the chat command name a station or rule literally, as the site does")
    func chatAndButtons() async throws {
        try await Self.with { store, _, now in
            let chat = ChatCommands(store: store, config: Config(), rules: Self.rules)
            let user = ChatEndpoints.User(platform: "slack", team: "T1", user: "U1", name: "u")
            // The button on the alert of the station named `~.*` mutes that station only.
            let page = try await store.firingAlerts(limit: 10, after: nil)
            let wild = try #require(page.alerts.first { $0.key.station == "~.*" })
            let pressed = await chat.act(.init(user: user, action: .silence1h, episode: wild.episode), now: now)
            guard case .done = pressed else {
                Issue.record("\(pressed)")
                return
            }
            #expect(try await Self.muted(store, now: now) == ["~.*"])
            try await Self.expireAll(store, now: now)

            // `silence ~.* 1h` silences the rule named `~.*` (none), not every rule.
            #expect(await chat.answer(user, text: "silence ~.* 1h", now: now).contains("Silenced"))
            #expect(try await Self.muted(store, now: now) == [])
            try await Self.expireAll(store, now: now)

            // `silence high "S2" 1h` silences the station `"S2"`, not `S2`.
            #expect(await chat.answer(user, text: "silence high \"S2\" 1h", now: now).contains("Silenced"))
            #expect(try await Self.muted(store, now: now) == ["\"S2\""])
        }
    }

    @Test("POST /api/v1/silences with station=\"~S.*\" is the equality it says, not a regex")
    func apiV1() async throws {
        try await Self.with { store, port, now in
            let (status, body) = try await http(
                "POST", "http://127.0.0.1:\(port)/api/v1/silences",
                body: #"{"matchers": ["station=\"~S.*\""], "for": "1h"}"#, token: Self.token)
            #expect(status == 201, "\(body)")
            #expect(try await Self.muted(store, now: now) == [])
            let s = try #require(try await store.activeSilences(now: now).first)
            #expect(s.matchers == [try Matcher(name: "station", op: .equal, value: "~S.*")])
            // A silence longer than 3650d is refused.
            let long = try await http(
                "POST", "http://127.0.0.1:\(port)/api/v1/silences",
                body: #"{"matchers": ["station=S1"], "for": "3651d"}"#, token: Self.token)
            #expect(long.0 == 400, "\(long.1)")
        }
    }

    static func v2Silence(_ id: String?, ends: String, by: String = "ops") -> String {
        """
        {\(id.map { "\"id\":\"\($0)\"," } ?? "")"matchers":[{"name":"station","value":"S1","isRegex":false}],
         "startsAt":"\(Timestamp.format(Int64(Date().timeIntervalSince1970)))","endsAt":"\(ends)",
         "createdBy":"\(by)","comment":"c"}
        """
    }

    @Test("v2: 40 updates of one silence at once leave one active silence, and its id is the one returned")
    func concurrentUpdates() async throws {
        try await Self.with { store, port, now in
            let url = "http://127.0.0.1:\(port)/api/v2/silences"
            let ends = Timestamp.format(now + 3600)
            let created = try await http("POST", url, body: Self.v2Silence(nil, ends: ends), token: Self.token)
            let id = try #require(
                (try JSONSerialization.jsonObject(with: Data(created.1.utf8)) as? [String: Any])?["silenceID"]
                    as? String)
            let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                for _ in 0..<40 {
                    group.addTask {
                        try await http("POST", url, body: Self.v2Silence(id, ends: ends), token: Self.token)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let ok = answers.filter { $0.0 == 200 }
            #expect(ok.count == 1, "\(answers.map(\.0))")
            #expect(answers.filter { $0.0 == 400 && $0.1.contains("has ended") }.count == 39)
            let newID = try #require(
                (try JSONSerialization.jsonObject(with: Data(ok[0].1.utf8)) as? [String: Any])?["silenceID"] as? String)
            let t = Int64(Date().timeIntervalSince1970)
            #expect(try await store.activeSilences(now: t).map(\.id) == [newID])
            #expect(try await Self.muted(store, now: t) == ["S1"])
            #expect(
                try await http("DELETE", "http://127.0.0.1:\(port)/api/v2/silence/\(newID)", token: Self.token).0 == 200
            )
            #expect(try await Self.muted(store, now: Int64(Date().timeIntervalSince1970)) == [])
        }
    }

    @Test("v2: an end in year 9999 is refused; an update keeps the chat author it got back")
    func endsAndAuthors() async throws {
        try await Self.with { store, port, now in
            let url = "http://127.0.0.1:\(port)/api/v2/silences"
            let far = try await http(
                "POST", url, body: Self.v2Silence(nil, ends: "9999-12-31T23:59:59Z"), token: Self.token)
            #expect(far.0 == 400 && far.1.contains("3650d"), "\(far.1)")
            // A client may not claim a chat identity for a new silence…
            let claimed = try await http(
                "POST", url, body: Self.v2Silence(nil, ends: Timestamp.format(now + 60), by: "slack:U1"),
                token: Self.token)
            #expect(claimed.0 == 400 && claimed.1.contains("reserved"), "\(claimed.1)")
            let s = try Silence.forAlert(
                rule: "high", station: "S1", duration: 3600, now: now, comment: "from chat", createdBy: "slack:U1")
            try await store.addSilence(s, now: now)
            // …but an update carries over the author of the silence it replaces.
            let updated = try await http(
                "POST", url, body: Self.v2Silence(s.id, ends: Timestamp.format(now + 7200), by: "slack:U1"),
                token: Self.token)
            #expect(updated.0 == 200, "\(updated.1)")
            let other = try await http(
                "POST", url, body: Self.v2Silence(nil, ends: Timestamp.format(now + 60), by: "\u{A0}web:alice"),
                token: Self.token)
            #expect(other.0 == 400 && other.1.contains("reserved"), "\(other.1)")
        }
    }

    @Test("amtool silence update works on a silence made from chat; amtool -d 100000h is refused")
    func amtoolUpdate() async throws {
        try await Self.with { store, port, now in
            let s = try Scratch()
            let httpConfig = try AmtoolTests.httpConfig(in: s, token: Self.token)
            let base = ["--alertmanager.url=http://127.0.0.1:\(port)/", "--http.config.file=\(httpConfig)"]
            let chat = ChatCommands(store: store, config: Config(), rules: Self.rules)
            let user = ChatEndpoints.User(platform: "slack", team: "T1", user: "U1", name: "u")
            #expect(await chat.answer(user, text: "silence high ~.* 1h", now: now).contains("Silenced"))
            let id = try #require(try await store.activeSilences(now: now).first?.id)
            let updated = try await amtool(base + ["silence", "update", id, "-d", "3h"])
            #expect(updated.status == 0 && !updated.killed, "\(updated.stdout) \(updated.stderr)")
            let active = try await store.activeSilences(now: Int64(Date().timeIntervalSince1970))
            #expect(active.count == 1 && active.first?.id != id && active.first?.createdBy == "slack:U1")
            #expect(
                active.first?.matchers == [
                    try Matcher(name: "rule", op: .equal, value: "high"),
                    try Matcher(name: "station", op: .equal, value: "~.*"),
                ])
            let far = try await amtool(
                base + ["silence", "add", "station=S1", "-a", "ops", "-c", "x", "-d", "100000h"])
            #expect(far.status != 0 && !far.killed, "\(far.stdout)")
            #expect(far.stderr.contains("3650d"), "\(far.stderr)")
            #expect(try await store.activeSilences(now: Int64(Date().timeIntervalSince1970)).count == 1)
        }
    }
}
