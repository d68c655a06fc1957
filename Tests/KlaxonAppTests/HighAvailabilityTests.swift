import Foundation
import KlaxonApp
import KlaxonTesting
import Testing

/// Two `klaxon run` processes on one PostgreSQL database (a throw-away server): one holds the duties
/// (source polling, the evaluator), both deliver; one is killed with SIGKILL in the middle of
/// delivering 1,000 notifications, and the survivor takes its duties over and sends what it had
/// claimed, under the same keys.
@Suite("two daemons, one PostgreSQL database", .serialized, .timeLimit(.minutes(10)))
struct HighAvailabilityTests {
    static let alerts = 1_000

    @Test(
        "SIGKILL one of two daemons mid-dispatch: all 1,000 arrive, duplicates only under one key, the survivor takes over within 15 s, no transition twice"
    )
    func killOneOfTwo() async throws {
        try await PostgresServer.withDatabase { db in
            try await HTTPSink.with { hook in
                try await HTTPSink.with { station in
                    // Every webhook takes 20 ms to answer, with two connections per daemon: the
                    // delivery of 1,000 lasts seconds, so the kill lands in the middle of it.
                    await hook.script(Array(repeating: .hang(seconds: 0.02), count: 4 * Self.alerts))
                    let s = try Scratch()
                    let cfg = try config(
                        s, "klaxon.yaml", db: db, port: db.port, hook: hook, station: station,
                        extra: "delivery_lease: 5s", connections: 2)
                    try await DaemonProcess.with(config: cfg, in: s.dir) { first in
                        // The first daemon takes every duty; it polls the station at once.
                        try await poll(until: "the first daemon holds the evaluator and the source") {
                            let held = try await duties(first).held
                            return held.contains("evaluator") && held.contains("source:probe")
                        }
                        _ = await station.waitForRequests(1)
                        try await DaemonProcess.with(config: cfg, in: s.dir) { second in
                            // The second waits on standby, and is ready all the same: it answers HTTP.
                            try await poll(until: "the second daemon is on standby") {
                                let d = try await duties(second)
                                return d.standby.contains("evaluator") && d.standby.contains("source:probe")
                            }
                            #expect(try await duties(second).held.isEmpty)
                            let (readyStatus, ready) = try await http("GET", second.base + "/readyz")
                            #expect(readyStatus == 200, "\(ready)")
                            let (_, metrics) = try await http("GET", second.base + "/metrics")
                            #expect(metrics.contains("klaxon_duty_held{duty=\"evaluator\"} 0"), "\(metrics)")
                            let (_, firstMetrics) = try await http("GET", first.base + "/metrics")
                            #expect(firstMetrics.contains("klaxon_duty_held{duty=\"evaluator\"} 1"))

                            // 1,000 gauges above the threshold, pushed through the standby's API: the
                            // first daemon evaluates them, both deliver.
                            var csv = "station,metric,time,value\n"
                            for i in 0..<Self.alerts { csv += "G\(i),gage_height,2026-01-01T00:00:00Z,\(200 + i)\n" }
                            let (status, pushed) = try await http(
                                "POST", second.base + "/api/v1/readings", body: csv, token: "s3cret")
                            #expect(status == 200, "\(pushed)")

                            // Mid-dispatch: a fifth delivered, the rest claimed or waiting.
                            _ = await hook.waitForRequests(Self.alerts / 5, timeout: 120)
                            let kill = ContinuousClock.now
                            await first.killIfRunning()
                            let polledBefore = await station.requests().count

                            // The survivor takes the duties over within 15 s of the kill.
                            try await poll(until: "the survivor holds the evaluator and the source") {
                                let held = try await duties(second).held
                                return held.contains("evaluator") && held.contains("source:probe")
                            }
                            let takeover = ContinuousClock.now - kill
                            #expect(takeover <= .seconds(15), "took over after \(takeover)")
                            _ = await station.waitForRequests(polledBefore + 1)
                            #expect(await station.requests().count > polledBefore, "the survivor polls the source")

                            // Every notification arrives: the first's claims come back after their lease.
                            try await poll(until: "every alert's notification arrived", within: .seconds(180)) {
                                Set(await hook.requests().compactMap { $0.headers["idempotency-key"] }).count
                                    >= Self.alerts
                            }
                            let posts = await hook.requests()
                            var keyOfStation: [String: String] = [:]
                            var stationsOfKey: [String: Set<String>] = [:]
                            for post in posts {
                                let key = try #require(post.headers["idempotency-key"])
                                let alerts = try #require(post.json?["alerts"] as? [[String: Any]])
                                for alert in alerts {
                                    let station = try #require(
                                        (alert["labels"] as? [String: Any])?["station"] as? String)
                                    stationsOfKey[key, default: []].insert(station)
                                    if let other = keyOfStation[station] {
                                        #expect(other == key, "\(station) arrived under two keys")
                                    }
                                    keyOfStation[station] = key
                                }
                            }
                            #expect(keyOfStation.count == Self.alerts, "every station's alert arrived")
                            #expect(stationsOfKey.values.allSatisfy { $0.count == 1 })
                            // A duplicate is the same notification again (same key, same alert).
                            let duplicates = posts.count - stationsOfKey.count
                            print(
                                "HA: took over after \(takeover); \(posts.count) requests, \(duplicates) resent under their key"
                            )

                            // No transition recorded twice: one per gauge, one outbox row each.
                            try await poll(until: "the survivor's /metrics counts every delivery") {
                                let (_, text) = try await http("GET", second.base + "/metrics")
                                return text.contains(
                                    "klaxon_deliveries_total{receiver=\"hook\",outcome=\"sent\"} \(Self.alerts)")
                            }
                            let (_, after) = try await http("GET", second.base + "/metrics")
                            #expect(
                                after.contains(
                                    "klaxon_transitions_total{rule=\"high-flow\",state=\"firing\"} \(Self.alerts)"),
                                "\(after)")
                            let (_, alertsText) = try await http("GET", second.base + "/api/v1/alerts", token: "s3cret")
                            let firing = try JSONSerialization.jsonObject(with: Data(alertsText.utf8)) as? [String: Any]
                            #expect((firing?["alerts"] as? [Any])?.count == Self.alerts)
                            #expect(await second.stop() == 0)
                        }
                    }
                    let list = try await klaxonAsync(["outbox", "list", "--config", cfg, "--limit", "5000"], in: s.dir)
                    #expect(list.status == 0, "\(list.stderr)")
                    #expect(list.lines.count == Self.alerts, "one outbox row per transition")
                    #expect(list.lines.allSatisfy { $0.contains(" sent ") })
                }
            }
        }
    }

    @Test(
        "a partition between one daemon and the database: it says unreachable and gives its duties up; the other takes them over and delivers everything once"
    )
    func partition() async throws {
        try await PostgresServer.withDatabase { db in
            try await HTTPSink.with { hook in
                try await HTTPSink.with { station in
                    let proxy = try await TCPProxy.start(to: db.port)
                    defer { Task { await proxy.stop() } }
                    let s = try Scratch()
                    // The first daemon reaches the database through the proxy, the second directly.
                    let cut = try config(s, "cut.yaml", db: db, port: proxy.port, hook: hook, station: station)
                    let direct = try config(s, "direct.yaml", db: db, port: db.port, hook: hook, station: station)
                    try await DaemonProcess.with(config: cut, in: s.dir) { first in
                        try await poll(until: "the first daemon holds the evaluator and the source") {
                            let held = try await duties(first).held
                            return held.contains("evaluator") && held.contains("source:probe")
                        }
                        try await DaemonProcess.with(config: direct, in: s.dir) { second in
                            try await poll(until: "the second daemon is on standby") {
                                try await duties(second).standby.contains("evaluator")
                            }
                            proxy.partition()
                            let cutAt = ContinuousClock.now

                            // The cut-off daemon still answers HTTP, and says so.
                            try await poll(until: "the cut-off daemon's /readyz says unreachable") {
                                let (status, body) = try await http("GET", first.base + "/readyz")
                                return status == 503 && body.contains("\"database\":\"unreachable\"")
                            }
                            #expect(try await http("GET", first.base + "/healthz") == (200, "ok\n"))
                            // The server ended the cut-off sessions: the other daemon takes over.
                            try await poll(until: "the second daemon holds the evaluator and the source") {
                                let held = try await duties(second).held
                                return held.contains("evaluator") && held.contains("source:probe")
                            }
                            let takeover = ContinuousClock.now - cutAt
                            #expect(takeover <= .seconds(15), "took over after \(takeover)")
                            // The cut-off daemon hears nothing from its duties' connections and gives
                            // them up itself (15 s of silence).
                            try await poll(until: "the cut-off daemon holds no duty", within: .seconds(90)) {
                                try await duties(first).held.isEmpty
                            }
                            print(
                                "partition: took over after \(takeover); the cut-off gave up after \(ContinuousClock.now - cutAt)"
                            )

                            // Work goes on through the other daemon, once.
                            var csv = "station,metric,time,value\n"
                            for i in 0..<20 { csv += "P\(i),gage_height,2026-01-01T00:00:00Z,\(300 + i)\n" }
                            let (status, pushed) = try await http(
                                "POST", second.base + "/api/v1/readings", body: csv, token: "s3cret")
                            #expect(status == 200, "\(pushed)")
                            let posts = await hook.waitForRequests(20)
                            let keys = Set(posts.compactMap { $0.headers["idempotency-key"] })
                            #expect(keys.count == 20)
                            try await poll(until: "the deliveries are counted") {
                                let (_, text) = try await http("GET", second.base + "/metrics")
                                return text.contains("klaxon_deliveries_total{receiver=\"hook\",outcome=\"sent\"} 20")
                            }
                            #expect(await hook.requests().count == 20, "nothing sent twice")
                            #expect(await second.stop() == 0)
                        }
                        // Cut off, it still stops when asked (its watchdog ends what hangs on the
                        // silent connections).
                        #expect(await first.stop() != nil)
                    }
                }
            }
        }
    }

    @Test("a duty lost (the server ended its session) is taken again, and the evaluator works as before")
    func dutyTakenAgain() async throws {
        try await PostgresServer.withDatabase { db in
            try await HTTPSink.with { hook in
                try await HTTPSink.with { station in
                    let s = try Scratch()
                    let cfg = try config(s, "klaxon.yaml", db: db, port: db.port, hook: hook, station: station)
                    try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                        try await poll(until: "the daemon holds the evaluator and the source") {
                            let held = try await duties(daemon).held
                            return held.contains("evaluator") && held.contains("source:probe")
                        }
                        // An administrator (or a failover) ends the sessions that hold the duties.
                        let ended = try await db.run(
                            """
                            SELECT pg_terminate_backend(l.pid) FROM pg_locks l
                            WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid()
                            """)
                        #expect(ended >= 2)
                        try await poll(until: "the daemon says it lost the evaluator") {
                            daemon.logText.contains("lost the duty evaluator")
                        }
                        try await poll(until: "the daemon holds the evaluator and the source again") {
                            let held = try await duties(daemon).held
                            return held.contains("evaluator") && held.contains("source:probe")
                        }
                        // The evaluator taken again evaluates what arrives.
                        let (status, pushed) = try await http(
                            "POST", daemon.base + "/api/v1/readings",
                            body: "station,metric,time,value\nR1,gage_height,2026-01-01T00:00:00Z,500\n",
                            token: "s3cret")
                        #expect(status == 200, "\(pushed)")
                        let posts = await hook.waitForRequests(1)
                        #expect(posts.first?.text.contains("\"station\":\"R1\"") == true)
                        #expect(await daemon.stop() == 0)
                    }
                }
            }
        }
    }

    /// A node's config: the database at `port` (the server's, or a proxy's), one source polling
    /// `station`, one rule, one webhook.
    func config(
        _ s: Scratch, _ file: String, db: PostgresServer.Database, port: Int, hook: HTTPSink, station: HTTPSink,
        extra: String = "", connections: Int = 32
    ) throws -> String {
        try s.write(
            "rules/flow.yaml", "name: high-flow\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
        return try s.write(
            file,
            """
            database: "postgres://\(db.user)@127.0.0.1:\(port)/\(db.name)"
            rules: [rules]
            listen: 127.0.0.1:0
            api: {token: s3cret}
            \(extra)
            sources:
              - name: probe
                kind: http-json
                url: \(station.url)/obs
                every: 1h
                time: {pointer: /t}
                station: {id: PROBE}
                metrics: {gage_height: {pointer: /h}}
            receivers:
              - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic, connections: \(connections)}
            """)
    }

    /// `/readyz`'s `duties`: what this instance holds and what it waits for.
    func duties(_ daemon: DaemonProcess) async throws -> (held: [String], standby: [String]) {
        let (_, body) = try await http("GET", daemon.base + "/readyz")
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        let duties = object?["duties"] as? [String: Any]
        return (duties?["held"] as? [String] ?? [], duties?["standby"] as? [String] ?? [])
    }
}
