import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import NIOCore
import Testing

/// GET or POST against the daemon; returns status and body.
func http(_ method: String, _ url: String, body: String? = nil, token: String? = nil) async throws -> (Int, String) {
    var request = HTTPClientRequest(url: url)
    request.method = .init(rawValue: method)
    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
    if let body { request.body = .bytes(ByteBuffer(string: body)) }
    // No deadline of our own: a server that never answers is a hang, bounded by the suite's time limit.
    let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
    let data = try await response.body.collect(upTo: 1 << 20)
    return (Int(response.status.code), String(buffer: data))
}

@Suite("klaxon run: the daemon", .serialized, .timeLimit(.minutes(10)))
struct DaemonTests {
    func config(_ s: Scratch, upstream: HTTPSink, bad: HTTPSink, hook: HTTPSink, listen: String = "127.0.0.1:0") throws
        -> String
    {
        try s.write(
            "rules/flow.yaml",
            """
            name: high-flow
            kind: threshold
            metric: gage_height
            above: 150
            notify: [hook]
            """)
        return try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: [rules]
            listen: \(listen)
            api: {token: s3cret}
            sources:
              - {name: texas, kind: usgs-iv, base_url: "\(upstream.url)/nwis/iv/", sites: ["08055000"], parameters: [gage_height]}
              - {name: broken, kind: usgs-iv, base_url: "\(bad.url)/broken/", sites: ["08055000"]}
            receivers:
              - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
            """)
    }

    func texas() throws -> String {
        ivBody(
            site: "08055000",
            points: [("2021-04-07T10:00:00.000-05:00", "120", ["P"]), ("2021-04-07T10:15:00.000-05:00", "321", ["P"])])
    }

    @Test("--once: each source once, evaluate, deliver until empty; a failing source degrades only itself")
    func once() async throws {
        try await TestServers.with { servers in
            let upstream = try await servers.sink()
            let bad = try await servers.sink()
            let hook = try await servers.sink()
            // The texas fetch gets data; the broken source gets garbage.
            await upstream.script([.respond(status: 200, body: try texas())])
            await bad.script([.respond(status: 200, body: "garbage")])
            let s = try Scratch()
            let cfg = try config(s, upstream: upstream, bad: bad, hook: hook)
            let run = try await klaxonAsync(["run", "--config", cfg, "--once", "--deadline", "30s"], in: s.dir)
            #expect(run.status == 1, "a failed source makes --once exit 1 for cron: \(run.stderr)")
            #expect(run.stderr.contains("texas (usgs-iv): 2 new"))
            #expect(run.stderr.contains("broken (usgs-iv): FAILED"))
            #expect(run.stderr.contains("1 transitions, 1 sent"))
            let posts = await hook.waitForRequests(1)
            #expect(posts.count == 1)
            #expect(posts.first?.text.contains("\"alertname\":\"high-flow\"") == true)
        }
    }

    @Test("run: health, readiness, metrics and the API; SIGTERM exits 0")
    func daemon() async throws {
        try await TestServers.with { servers in
            let upstream = try await servers.sink()
            let bad = try await servers.sink()
            let hook = try await servers.sink()
            await upstream.script([.respond(status: 200, body: try texas())])
            await bad.script(Array(repeating: .respond(status: 500), count: 20))
            let s = try Scratch()
            let cfg = try config(s, upstream: upstream, bad: bad, hook: hook)
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                try await checkRunning(daemon, hook: hook)
            }
        }
    }

    func checkRunning(_ daemon: DaemonProcess, hook: HTTPSink) async throws {
        let base = daemon.base
        #expect(try await http("GET", base + "/healthz") == (200, "ok\n"))
        // Wait until the first delivery went out.
        let posts = await hook.waitForRequests(1)
        #expect(posts.count == 1)
        let (readyStatus, ready) = try await http("GET", base + "/readyz")
        #expect(readyStatus == 200)
        let r = try #require(try JSONSerialization.jsonObject(with: Data(ready.utf8)) as? [String: Any])
        let sources = try #require(r["sources"] as? [[String: Any]])
        #expect(sources.first { $0["name"] as? String == "texas" }?["healthy"] as? Bool == true)
        #expect(sources.first { $0["name"] as? String == "broken" }?["healthy"] as? Bool == false)
        // One machine's store: this daemon holds every duty, and waits for none.
        let duties = try #require(r["duties"] as? [String: [String]])
        #expect(duties["held"]?.contains("evaluator") == true, "\(duties)")
        #expect(duties["held"]?.contains("source:texas") == true && duties["held"]?.contains("source:broken") == true)
        #expect(duties["standby"] == [])
        // Which build answers.
        #expect(r["version"] as? String == BuildInfo.version)
        #expect(r["revision"] as? String == BuildInfo.revision)

        // The delivery's outcome is recorded just after the hook answered: wait for it to be counted.
        var metrics = ""
        try await poll(until: "the delivery is counted") {
            metrics = try await http("GET", base + "/metrics").1
            return metrics.contains("klaxon_deliveries_total{receiver=\"hook\",outcome=\"sent\"} 1")
        }
        // Counted under the configured source that fetched them.
        #expect(metrics.contains("klaxon_readings_total{source=\"texas\"} 2"))
        #expect(metrics.contains("klaxon_duty_held{duty=\"evaluator\"} 1"))
        #expect(metrics.contains("klaxon_transitions_total{rule=\"high-flow\",state=\"firing\"} 1"))
        #expect(metrics.contains("klaxon_deliveries_total{receiver=\"hook\",outcome=\"sent\"} 1"))
        #expect(metrics.contains("klaxon_outbox_depth{state=\"pending\"} 0"))
        #expect(metrics.contains("# TYPE klaxon_notification_queue_seconds histogram"))
        #expect(metrics.contains("klaxon_notification_queue_seconds_bucket{le=\"+Inf\"} 1"))
        #expect(metrics.contains("klaxon_notification_queue_seconds_count 1"))
        #expect(metrics.contains("klaxon_notification_queue_seconds_bucket{le=\"300.0\"} 1"))
        // The send alone, per receiver.
        #expect(metrics.contains("klaxon_notification_latency_seconds_count{receiver=\"hook\"} 1"))

        // The push API: a bearer token, the same validation as ingest.
        #expect(try await http("POST", base + "/api/v1/readings", body: "x").0 == 401)
        let (status, pushed) = try await http(
            "POST", base + "/api/v1/readings",
            body: "station,metric,time,value\nS9,gage_height,2026-01-01T00:00:00Z,500\nS9,gage_height,soon,1\n",
            token: "s3cret")
        #expect(status == 400)
        #expect(pushed.contains("\"inserted\":1"))
        #expect(pushed.contains("line 3"))
        // The pushed reading is evaluated at once and delivered.
        let more = await hook.waitForRequests(2)
        #expect(more.count == 2)
        let (_, alerts) = try await http("GET", base + "/api/v1/alerts", token: "s3cret")
        #expect(alerts.contains("\"station\":\"S9\""))

        #expect(await daemon.stop() == 0, "SIGTERM: exit 0 within the product's limit")
        let log = daemon.logText
        #expect(log.contains("klaxon stopped"))
        #expect(!log.contains("s3cret"))
        // logfmt, the build first; the failing source's state change in one line, in words.
        let lines = log.split(separator: "\n").map(String.init).filter { $0.hasPrefix("time=") }
        #expect(lines.first?.contains(#"level=info msg="klaxon starting""#) == true, "\(log)")
        #expect(lines.first?.contains("version=\(BuildInfo.version)") == true)
        let failing = lines.filter { $0.contains(#"msg="source failing""#) }
        #expect(failing.count == 1, "\(log)")
        #expect(failing.first?.contains("level=warning") == true)
        #expect(failing.first?.contains("source=broken") == true)
        #expect(failing.first?.contains("failures=1") == true)
    }
}

@Suite("klaxon run: logs")
struct DaemonLogTests {
    @Test("a failing source warns when the streak starts, when the error changes and at powers of two")
    func failureLevels() {
        let levels = (1...9).map { Daemon.failureLevel(streak: $0, error: "HTTP 500", previous: "HTTP 500") }
        #expect(levels == [.warning, .warning, .debug, .warning, .debug, .debug, .debug, .warning, .debug])
        #expect(Daemon.failureLevel(streak: 7, error: "timeout", previous: "HTTP 500") == .warning)
        #expect(Daemon.failureLevel(streak: 1, error: "HTTP 500", previous: nil) == .warning)
    }
}

@Suite("klaxon run: shutdown during delivery", .serialized)
struct ShutdownTests {
    @Test("SIGTERM during delivery: exit 0, the outbox consistent, nothing lost after a restart")
    func sigtermDuringDelivery() async throws {
        try await HTTPSink.with { hook in try await sigtermDuringDelivery(hook: hook) }
    }

    func sigtermDuringDelivery(hook: HTTPSink) async throws {
        // Answers slower than the daemon's 10 s drain: the pass in flight is cut off at shutdown.
        await hook.script(Array(repeating: .hang(seconds: 15), count: 30))
        let s = try Scratch()
        try s.write("rules/flow.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
        let cfg = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: [rules]
            listen: 127.0.0.1:0
            api: {token: s3cret}
            receivers:
              - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
            """)
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            var csv = "station,metric,time,value\n"
            for i in 0..<30 { csv += "S\(i),gage_height,2026-01-01T00:00:00Z,500\n" }
            let pushed = try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret")
            #expect(pushed.0 == 200)
            // Deliveries are under way: stop now.
            #expect(await hook.waitForRequests(3).count >= 3)
            #expect(await daemon.stop() == 0)
        }

        // Nothing is left leased: every row is either sent or pending.
        let store = try SQLiteStore.open(path: s.path("k.sqlite"))
        let counts = try await store.outboxCounts()
        #expect(counts[.sending, default: 0] == 0)
        #expect(counts[.sent, default: 0] + counts[.pending, default: 0] == 30)
        #expect(counts[.pending, default: 0] > 0, "the cut-off rows were given back to the outbox")

        // After a restart everything goes out; no notification is lost.
        await hook.script([])
        let again = try await klaxonAsync(
            ["dispatch", "--config", cfg, "--until-empty", "--deadline", "60s"], in: s.dir)
        #expect(again.status == 0, "\(again.stderr)")
        await #expect(try store.outboxCounts()[.sent, default: 0] == 30)
        let keys = Set(await hook.requests().compactMap { $0.headers["idempotency-key"] })
        #expect(keys.count == 30)
    }
}

@Suite("Deploy files")
struct DeployTests {
    @Test("the example config uses every source and receiver kind (but the retiring usgs-iv) and passes check")
    func exampleConfig() async throws {
        let s = try Scratch()
        var text = try String(contentsOf: packageRoot.appendingPathComponent("Deploy/klaxon.yaml"), encoding: .utf8)
        for kind in [
            "usgs-ogc", "nwps", "cwms", "usgs-quakes", "aqi-websocket", "airnow", "openaq", "waqi",
            "open-meteo", "owm", "nws-alerts", "nws-observations", "http-json",
        ] {
            #expect(text.contains("kind: \(kind)\n"), "Deploy/klaxon.yaml lacks a \(kind) source")
        }
        for type in ["webhook", "email", "stdout"] { #expect(text.contains("type: \(type)")) }
        // Point the secret files and rules at test copies; nothing else changes.
        for name in ["api-token", "openaq-key", "automation-url", "automation-hmac", "smtp-password"] {
            try s.write("secrets/\(name)", name == "automation-url" ? "https://hooks.example.org/x\n" : "x\n")
        }
        text = text.replacingOccurrences(of: "/etc/klaxon/secrets", with: s.path("secrets"))
        text = text.replacingOccurrences(
            of: "/etc/klaxon/rules", with: packageRoot.appendingPathComponent("Rules").path)
        let config = try s.write("klaxon.yaml", text)
        let env = [
            "USGS_API_KEY": "k", "AIRNOW_API_KEY": "k", "WAQI_TOKEN": "k", "OWM_API_KEY": "k",
            "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/x",
        ]
        let run = try await klaxonAsync(["check", "--config", config], environment: env)
        #expect(run.status == 0, "\(run.stderr)")
        // The example reads rivers through the OGC API, not the WaterServices USGS retires in 2027 (issue 39).
        #expect(!text.contains("kind: usgs-iv\n") && !run.stderr.contains("usgs-iv"), "\(run.stderr)")
        // Without the environment, the missing variables are named (and no value is printed).
        let missing = try await klaxonAsync(
            ["check", "--config", config],
            environment: ["KLAXON_TEST": "1"])  // the parent environment, which sets none of them
        #expect(missing.status == 1)
        for name in ["AIRNOW_API_KEY", "WAQI_TOKEN", "OWM_API_KEY", "SLACK_WEBHOOK_URL"] {
            #expect(missing.stderr.contains("environment variable \(name) is not set"), "\(missing.stderr)")
        }
    }

    @Test(
        "the systemd unit passes systemd-analyze verify",
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
    func systemdUnit() throws {
        let s = try Scratch()
        var unit = try String(contentsOf: packageRoot.appendingPathComponent("Deploy/klaxon.service"), encoding: .utf8)
        #expect(unit.contains("ProtectSystem=strict"))
        #expect(unit.contains("StateDirectory=klaxon"))
        #expect(unit.contains("Restart=on-failure"))
        unit = unit.replacingOccurrences(of: "/usr/local/bin/klaxon", with: klaxonBinary.path)
        let path = try s.write("klaxon.service", unit)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        p.arguments = ["verify", path]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try launchProcess(p)
        p.waitUntilExit()
        let text = String(decoding: err.fileHandleForReading.readAllRetrying(), as: UTF8.self)
        #expect(p.terminationStatus == 0, "\(text)")
        #expect(!text.contains("klaxon.service:"), "\(text)")
    }
}

@Suite("escalation config")
struct EscalationConfigTests {
    @Test("escalate_after and escalate_to go together and name a defined receiver")
    func checked() async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            receivers: [{name: ops, type: stdout}]
            routes:
              - {receivers: [ops], escalate_after: 30m}
              - {receivers: [ops], escalate_after: 30m, escalate_to: boss}
              - {receivers: [ops], escalate_after: 30m, escalate_to: ops}
            """)
        let run = await InProcess.check(config: config, rules: [repoPath("Rules/water.yaml")])
        #expect(run.status == 1)
        #expect(run.stderr.contains("klaxon.yaml:3:40: error: give escalate_after and escalate_to together"))
        #expect(run.stderr.contains("a route's escalate_to names undefined receiver \"boss\""))
        #expect(run.errorLines.filter { $0.contains("error:") }.count == 2)
    }
}
