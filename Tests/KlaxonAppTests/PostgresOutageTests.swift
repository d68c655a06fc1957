import Foundation
import KlaxonTesting
import Testing

/// The PostgreSQL server stops under a delivering daemon (a throw-away server of the test's own):
/// crashed (`pg_ctl stop -m immediate`) and started again some seconds later, or restarted
/// (`pg_ctl restart -m fast`). The daemon must say so (`/readyz` 503, requests 503 at once), send
/// nothing more than it can record, and deliver everything once the server is back: each alert at
/// least once, a few times at most, always under its one key; and what arrives later too.
@Suite("PostgreSQL stopped under a delivering daemon", .serialized, .timeLimit(.minutes(10)))
struct PostgresOutageTests {
    static let alerts = 600
    /// The most times one alert may arrive: sent before the stop and not recorded, it goes out once
    /// more after the server is back (and once more if that send's record is cut off too).
    static let atMost = 3

    enum Fault: String, Sendable, CaseIterable, CustomTestStringConvertible {
        /// `pg_ctl stop -m immediate`, down some seconds, then started again.
        case crash
        /// `pg_ctl restart -m fast`.
        case restart
        var testDescription: String { rawValue }
    }

    @Test(
        "the server stopped mid-burst: /readyz 503 while it is down, every alert arrives a bounded number of times under one key, delivery goes on after",
        arguments: Fault.allCases)
    func outage(_ fault: Fault) async throws {
        try await PostgresServer.with { server in
            let db = try await server.createDatabase()
            try await HTTPSink.with { hook in
                // Every webhook takes 20 ms to answer, two at a time: the burst lasts seconds, so
                // the stop lands in the middle of it.
                await hook.script(Array(repeating: .hang(seconds: 0.02), count: 4 * Self.alerts))
                let s = try Scratch()
                try s.write(
                    "rules/flow.yaml",
                    "name: high-flow\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
                let cfg = try s.write(
                    "klaxon.yaml",
                    """
                    database: "postgres://\(db.user)@127.0.0.1:\(db.port)/\(db.name)"
                    rules: [rules]
                    listen: 127.0.0.1:0
                    api: {token: s3cret}
                    delivery_lease: 5s
                    receivers:
                      - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic, connections: 2}
                    """)
                try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                    var csv = "station,metric,time,value\n"
                    for i in 0..<Self.alerts { csv += "G\(i),gage_height,2026-01-01T00:00:00Z,\(200 + i)\n" }
                    let (status, pushed) = try await http(
                        "POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret")
                    #expect(status == 200, "\(pushed)")
                    _ = await hook.waitForRequests(Self.alerts / 5, timeout: 120)

                    switch fault {
                    case .crash:
                        #expect(await server.crash(), "postgres stops at once")
                        // While it is down the daemon says so, and a request answers at once.
                        try await poll(until: "/readyz says 503 while the server is down") {
                            try await http("GET", daemon.base + "/readyz").0 == 503
                        }
                        let asked = ContinuousClock.now
                        let (during, body) = try await http("GET", daemon.base + "/api/v1/alerts", token: "s3cret")
                        let answered = ContinuousClock.now - asked
                        #expect(during == 503, "\(body)")
                        #expect(answered < .seconds(10), "a request during the outage took \(answered)")
                        // Down for a while (the outage itself, not a wait for something to happen).
                        let sentDown = await hook.requests().count
                        try await Task.sleep(for: .seconds(4))
                        let sentWhileDown = await hook.requests().count - sentDown
                        print("outage (\(fault)): \(sentWhileDown) sent while the server was down")
                        try await server.start()
                    case .restart:
                        try await server.restart()
                    }

                    // Everything arrives once the server is back.
                    try await poll(until: "every alert's notification arrived", within: .seconds(240)) {
                        Set(await hook.requests().compactMap { $0.headers["idempotency-key"] }).count >= Self.alerts
                    }
                    try await poll(until: "/readyz says ok again", within: .seconds(60)) {
                        try await http("GET", daemon.base + "/readyz").0 == 200
                    }
                    // Delivery goes on: a new alert after the stop goes out too.
                    let (again, more) = try await http(
                        "POST", daemon.base + "/api/v1/readings",
                        body: "station,metric,time,value\nAFTER,gage_height,2026-01-01T00:00:00Z,999\n",
                        token: "s3cret")
                    #expect(again == 200, "\(more)")
                    try await poll(until: "the alert pushed after the stop arrived", within: .seconds(60)) {
                        await hook.requests().contains { $0.text.contains("\"station\":\"AFTER\"") }
                    }
                    // Everything sent is recorded: nothing goes out again from now on.
                    try await poll(until: "every delivery is recorded", within: .seconds(120)) {
                        let (_, text) = try await http("GET", daemon.base + "/metrics")
                        return text.contains("klaxon_outbox_depth{state=\"pending\"} 0")
                            && text.contains("klaxon_outbox_depth{state=\"sending\"} 0")
                    }
                    let posts = await hook.requests()
                    var keyOfStation: [String: String] = [:]
                    var timesOfStation: [String: Int] = [:]
                    for post in posts {
                        let key = try #require(post.headers["idempotency-key"])
                        for alert in try #require(post.json?["alerts"] as? [[String: Any]]) {
                            let station = try #require((alert["labels"] as? [String: Any])?["station"] as? String)
                            if let other = keyOfStation[station] {
                                #expect(other == key, "\(station) arrived under two keys")
                            }
                            keyOfStation[station] = key
                            timesOfStation[station, default: 0] += 1
                        }
                    }
                    #expect(keyOfStation.count == Self.alerts + 1, "every station's alert arrived")
                    let most = timesOfStation.values.max() ?? 0
                    #expect(most <= Self.atMost, "an alert arrived \(most) times")
                    print(
                        "outage (\(fault)): \(posts.count) deliveries for \(Self.alerts + 1) alerts, at most \(most) of one"
                    )
                    #expect(await daemon.stop() == 0)
                    let log = daemon.logText
                    #expect(log.contains("level=error") || log.contains("level=warning"), "the outage is logged")
                }
            }
        }
    }
}
