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
import Synchronization
import Testing

/// Alerts as an on-call team expects them (issue 29): one id for an alert's whole episode, the
/// present sent and the past recorded, Alertmanager's grouping timing.
@Suite("alert episodes: one identity, the present sent, the past recorded", .serialized, .timeLimit(.minutes(10)))
struct EpisodeTests {
    static let ladder = [
        LevelsRule.Level(name: "action", at: 9), LevelsRule.Level(name: "minor", at: 11),
        LevelsRule.Level(name: "moderate", at: 13), LevelsRule.Level(name: "major", at: 16),
    ]
    let rules = [
        Rule(name: "flood-stage", kind: LevelsRule(metric: "gage_height", levels: ladder), severity: .critical)
    ]

    /// Fast retries, short leases.
    static func fastSettings() -> Dispatcher.Settings {
        var s = Dispatcher.Settings()
        s.backoff = Backoff(initial: 0.02, cap: 0.1, retryAfterCap: 3600)
        s.lease = 5_000
        return s
    }

    static func reading(_ time: Int64, _ value: Double) -> Reading {
        Reading(station: "01646500", metric: "gage_height", time: time, value: value, unit: "ft")
    }

    /// The first alert's footer line in a Slack message: its context block.
    static func footer(_ slack: [String: Any]) -> String {
        let context = (slack["blocks"] as? [[String: Any]])?.first { $0["type"] as? String == "context" }
        return ((context?["elements"] as? [[String: Any]])?.first?["text"] as? String) ?? ""
    }

    /// A chat webhook (Slack's format) and an Alertmanager consumer, both on `sink`.
    static func notifiers(_ sink: HTTPSink) throws -> [String: any Notifier] {
        [
            "chat": try WebhookNotifier(config: .init(name: "chat", url: Secret(sink.url + "/chat"), preset: .slack)),
            "hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/hook"))),
        ]
    }

    @Test(
        "a 5-hour-old burst (action → minor → moderate in one evaluation): one message per receiver, at moderate, saying how it got there and that it is late; group_interval holds for the next change"
    )
    func burstIsOneMessage() async throws {
        try await HTTPSink.with { sink in try await burstIsOneMessage(sink: sink) }
    }

    func burstIsOneMessage(sink: HTTPSink) async throws {
        let store = try tempStore()
        let now = Int64(Date().timeIntervalSince1970)
        let routing = Routing(routes: [
            Route(
                receivers: ["chat", "hook"], groupBy: ["rule", "station"], groupWait: 10, groupInterval: 300,
                notifyMaxAge: 3600)
        ])
        let burst = now - 5 * 3600
        try await store.write(
            SourceBatch(readings: [
                Self.reading(burst, 9.5), Self.reading(burst + 600, 11.5), Self.reading(burst + 1200, 13.5),
            ]), at: now)
        let r = try await Evaluate.run(store: store, rules: rules, now: now, routing: routing, queuedAt: now * 1000)
        #expect(r.transitionCount == 3, "every transition is recorded")

        let clock = Mutex<Int64>((now + 11) * 1000)
        let dispatcher = Dispatcher(
            store: store, notifiers: try Self.notifiers(sink), routing: routing, settings: Self.fastSettings(),
            clock: { clock.withLock { $0 } })
        _ = try await dispatcher.runUntilEmpty(deadline: Int64.max)
        let first = await sink.requests()
        #expect(first.count == 2, "one message per receiver")
        let chat = try #require(first.first { $0.path == "/chat" }?.json)
        let text = chat["text"] as? String ?? ""
        #expect(text.contains("01646500: moderate flood stage (via action → minor)"), "\(text)")
        let footer = Self.footer(chat)
        // Late: the time the value is from, then the data time as before (issue 39, item 7).
        #expect(
            footer.hasPrefix("late: ") && footer.contains(" UTC on ") && footer.contains("(data as of "), "\(footer)")
        let hook = try #require(first.first { $0.path == "/hook" }?.json)
        let alerts = try #require(hook["alerts"] as? [[String: Any]])
        #expect(alerts.count == 1)
        let annotations = try #require(alerts[0]["annotations"] as? [String: String])
        #expect(annotations["level"] == "moderate")
        #expect(annotations["path"] == "action → minor → moderate")
        #expect(annotations["late"] == "true")
        #expect(alerts[0]["status"] as? String == "firing")
        #expect(alerts[0]["startsAt"] as? String == Timestamp.format(burst))
        let id = try #require(annotations["alert_id"])

        // A new level a minute later waits for the group's interval from the last message.
        try await store.write(SourceBatch(readings: [Self.reading(now + 60, 16.5)]), at: now + 60)
        _ = try await Evaluate.run(
            store: store, rules: rules, now: now + 60, routing: routing, queuedAt: (now + 60) * 1000)
        clock.withLock { $0 = (now + 120) * 1000 }
        _ = try await dispatcher.dispatchOnce()
        #expect(await sink.requests().count == 2, "not before group_interval")
        clock.withLock { $0 = (now + 11 + 300) * 1000 }
        _ = try await dispatcher.runUntilEmpty(deadline: Int64.max)
        let later = await sink.requests().dropFirst(2)
        #expect(later.count == 2)
        let next = try #require(later.first { $0.path == "/hook" }?.json?["alerts"] as? [[String: Any]])
        #expect((next.first?["annotations"] as? [String: String])?["level"] == "major")
        #expect((next.first?["annotations"] as? [String: String])?["alert_id"] == id, "the same alert")
        #expect(next.first?["startsAt"] as? String == Timestamp.format(burst), "the same start")
    }

    @Test("a firing and its resolve that go out together: the resolve of an alert nobody heard firing is not sent")
    func unheardResolveIsNotSent() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let now = Int64(Date().timeIntervalSince1970)
            let routing = Routing(routes: [Route(receivers: ["chat", "hook"], groupWait: 30)])
            try await store.write(
                SourceBatch(readings: [Self.reading(now - 120, 9.5), Self.reading(now - 60, 5)]), at: now)
            _ = try await Evaluate.run(store: store, rules: rules, now: now, routing: routing, queuedAt: now * 1000)
            let dispatcher = Dispatcher(
                store: store, notifiers: try Self.notifiers(sink), routing: routing, settings: Self.fastSettings(),
                clock: { (now + 31) * 1000 })
            let pass = try await dispatcher.runUntilEmpty(deadline: Int64.max)
            #expect(pass.sent == 0 && pass.skipped == 2)
            #expect(await sink.requests().isEmpty)
            #expect(try await store.outbox().allSatisfy { $0.state == .skipped })
        }
    }

    @Test(
        "a flood that rises two levels: every message shows the first one's id; ack with it works from Slack, Mattermost, the site and the API; one start time everywhere"
    )
    func oneIdentityEverywhere() async throws {
        try await HTTPSink.with { sink in try await oneIdentityEverywhere(sink: sink) }
    }

    func oneIdentityEverywhere(sink: HTTPSink) async throws {
        let store = try tempStore()
        let now = Int64(Date().timeIntervalSince1970)
        let start = now - 1800
        let routing = Routing(routes: [Route(receivers: ["chat", "hook"])])
        let dispatcher = Dispatcher(
            store: store, notifiers: try Self.notifiers(sink), routing: routing, settings: Self.fastSettings())
        var ids: [String] = []
        var starts: [String] = []
        for (i, value) in [9.5, 11.5, 13.5].enumerated() {
            let t = start + Int64(i) * 900
            try await store.write(SourceBatch(readings: [Self.reading(t, value)]), at: t)
            _ = try await Evaluate.run(store: store, rules: rules, now: t, routing: routing)
            _ = try await dispatcher.runUntilEmpty(deadline: Int64.max)
            let posted = await sink.requests()
            #expect(posted.count == 2 * (i + 1))
            let chat = try #require(posted.last { $0.path == "/chat" }?.json)
            let footer = Self.footer(chat)
            let ack = try #require(footer.range(of: #"ack \d+"#, options: .regularExpression).map { footer[$0] })
            ids.append(String(ack.dropFirst(4)))
            if i > 0 { #expect(footer.contains("firing since \(Timestamp.format(start))"), "\(footer)") }
            let alert = try #require((posted.last { $0.path == "/hook" }?.json?["alerts"] as? [[String: Any]])?.first)
            starts.append(alert["startsAt"] as? String ?? "")
            #expect((alert["annotations"] as? [String: String])?["alert_id"] == ids.last)
        }
        #expect(Set(ids).count == 1, "one id: \(ids)")
        #expect(starts == Array(repeating: Timestamp.format(start), count: 3))
        let id = try #require(Int64(ids[0]))

        let server = await ChatServer.serve(store: store, rules: rules)
        let port = server.port
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let outcome = await Result {
            // The site: sign in, take the CSRF token from the alerts page, ack.
            let base = "http://127.0.0.1:\(port)"
            let origin = ("Origin", base)
            let signIn = try await SiteActionHTTPTests.request(
                client, base + "/signin", method: "POST", body: "token=team-token&name=Ops", headers: [origin])
            let cookie = ("Cookie", String((signIn.header("Set-Cookie") ?? "").prefix { $0 != ";" }))
            let page = try await SiteActionHTTPTests.request(client, base + "/alerts?refresh=off", headers: [cookie])
            #expect(page.body.contains("action=\"/alerts/\(id)/ack\""))
            let token = try #require(
                page.body.range(of: #"name="csrf" value="([A-Za-z0-9_-]+)""#, options: .regularExpression).map {
                    String(page.body[$0].dropFirst(#"name="csrf" value=""#.count).dropLast())
                })
            let acked = try await SiteActionHTTPTests.request(
                client, base + "/alerts/\(id)/ack", method: "POST", body: "csrf=\(token)&back=%2Falerts",
                headers: [cookie, origin])
            #expect(acked.status == 303)
            #expect(try await store.acks().values.map(\.by) == ["web:Ops"])
            // Slack and Mattermost: the first ack holds, and the answer says whose it is (issue 39).
            let already = "flood-stage at 01646500 (#\(id)) was already acked by web:Ops at "
            let slack = try server.text(try await server.slack("ack \(id)"))
            #expect(slack.contains(already) && slack.contains("unchanged") && !slack.contains("Acked"), "\(slack)")
            let mm = try await server.post(
                "/chat/mattermost", body: "token=mm-token&user_id=u-bob&user_name=bob&text=ack%20\(id)")
            #expect(mm.0 == 200 && mm.1.contains(already) && !mm.1.contains("Acked"), "\(mm)")
            // The API: the same, in its fields.
            var api = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/v1/alerts/\(id)/ack")
            api.method = .POST
            api.headers.add(name: "Authorization", value: "Bearer team-token")
            api.body = .bytes(ByteBuffer(string: #"{"by":"carol"}"#))
            let reply = try await HTTPClient.shared.execute(api, deadline: .now() + .seconds(30))
            #expect(reply.status.code == 200)
            let answer = try #require(
                try JSONSerialization.jsonObject(with: Data(buffer: try await reply.body.collect(upTo: 1 << 20)))
                    as? [String: Any])
            #expect(answer["already"] as? Bool == true, "\(answer)")
            #expect(answer["acked_by"] as? String == "web:Ops", "\(answer)")
            #expect(answer["acked_at"] as? String != nil, "\(answer)")
            // The first ack of the episode holds (issue 39): the later ones do not replace who acked.
            #expect(try await store.acks().values.map(\.by) == ["web:Ops"])

            // One start time: the API, chat's list and the alert's page.
            var list = HTTPClientRequest(url: base + "/api/v1/alerts")
            list.headers.add(name: "Authorization", value: "Bearer team-token")
            let body = try await HTTPClient.shared.execute(list, deadline: .now() + .seconds(30)).body.collect(
                upTo: 1 << 20)
            let listed = try #require(
                ((try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any])?["alerts"]
                    as? [[String: Any]])?.first)
            #expect(listed["id"] as? Int64 == id || (listed["id"] as? Int).map(Int64.init) == id)
            #expect(listed["since"] as? String == Timestamp.format(start))
            #expect(listed["level"] as? String == "moderate")
            #expect(listed["level_since"] as? String == Timestamp.format(start + 1800))
            let alertsText = try server.text(try await server.slack("alerts"))
            #expect(alertsText.contains("#\(id)") && alertsText.contains("firing since \(Timestamp.format(start))"))
            let episode = try await SiteActionHTTPTests.request(client, base + "/alerts/\(id)?refresh=off")
            #expect(episode.status == 200)
            #expect(episode.body.components(separatedBy: "data-transition=").count - 1 == 3)
        }
        try await client.shutdown()
        #expect(await server.stop())
        try outcome.get()
    }

    @Test(
        "6-day-old readings pushed into a running daemon: every transition recorded and on the site, no message sent"
    )
    func oldReadingsAreNotNews() async throws {
        try await HTTPSink.with { hook in
            let s = try Scratch()
            try s.write(
                "rules/flood.yaml",
                """
                rules:
                  - name: flood-stage
                    kind: levels
                    metric: gage_height
                    levels: [{name: action, at: 9}, {name: minor, at: 11}, {name: moderate, at: 13}]
                """)
            let cfg = try s.write(
                "klaxon.yaml",
                """
                database: k.sqlite
                rules: [rules]
                listen: 127.0.0.1:0
                api: {token: s3cret}
                receivers:
                  - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
                routes:
                  - {receivers: [hook]}
                """)
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                let old = Int64(Date().timeIntervalSince1970) - 6 * 86_400
                let csv =
                    "station,metric,time,value\n"
                    + [8.0, 9.5, 11.5, 13.5, 11.5, 9.5, 5].enumerated().map { i, v in
                        "01646500,gage_height,\(Timestamp.format(old + Int64(i) * 1800)),\(v)"
                    }.joined(separator: "\n") + "\n"
                #expect(try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret").0 == 200)
                // Evaluated (firing, four changes, resolved) and every row decided: nothing waits.
                try await poll(until: "the six transitions are recorded and nothing waits", every: .milliseconds(50)) {
                    let m = try await http("GET", daemon.base + "/metrics").1
                    let transitions = ["firing", "changed", "resolved"].compactMap {
                        metric(m, "klaxon_transitions_total", #"rule="flood-stage",state="\#($0)""#)
                    }.reduce(0, +)
                    let waiting = ["pending", "sending", "held"].compactMap {
                        metric(m, "klaxon_outbox_depth", #"state="\#($0)""#)
                    }.reduce(0, +)
                    return transitions == 6 && waiting == 0
                }
                #expect(await hook.requests().isEmpty, "the past is not news")
                // The site shows the episode: every transition, and why none was sent.
                let overview = try await http("GET", daemon.base + "/?refresh=off").1
                let link = try #require(
                    overview.range(of: #"/alerts/\d+"#, options: .regularExpression).map { String(overview[$0]) })
                let page = try await http("GET", daemon.base + link + "?refresh=off").1
                #expect(page.components(separatedBy: "data-transition=").count - 1 == 6)
                #expect(page.contains("older than notify_max_age"))
                #expect(await daemon.stop() == 0)
            }
        }
    }
}
