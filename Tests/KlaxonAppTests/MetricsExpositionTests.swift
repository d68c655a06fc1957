import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

/// `/metrics` of a real `klaxon run`, checked by Prometheus' own linter (`promtool check metrics`,
/// Debian's `prometheus` package) and read back series by series.
@Suite("metrics: the exposition of a running daemon", .serialized, .timeLimit(.minutes(10)))
struct MetricsExpositionTests {
    static let promtool = "/usr/bin/promtool"

    /// `promtool check metrics` on `text`: its status and everything it printed.
    static func check(_ text: String) async throws -> (status: Int32, output: String) {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-promtool-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("metrics.txt")
        let output = dir.appendingPathComponent("out.txt")
        try text.write(to: input, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: promtool)
        p.arguments = ["check", "metrics"]
        let stdin = try FileHandle(forReadingFrom: input)
        let out = try FileHandle(forWritingTo: output)
        p.standardInput = stdin
        p.standardOutput = out
        p.standardError = out
        let exit = ProcessExit(p)
        try await launchProcess(p)
        if await !exit.wait(within: .seconds(60)) {
            p.terminate()
            _ = await exit.wait(within: .seconds(10))
        }
        try stdin.close()
        try out.close()
        return (p.terminationStatus, String(decoding: try Data(contentsOf: output), as: UTF8.self))
    }

    /// The samples of an exposition by series, labels in name order: `name{a="1",b="2"}` → value.
    static func samples(_ text: String) -> [String: Double] {
        var out: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            let series = line[..<space]
            guard let open = series.firstIndex(of: "{") else {
                out[String(series)] = value
                continue
            }
            let labels = series[series.index(after: open)..<series.index(before: series.endIndex)]
                .split(separator: ",").sorted().joined(separator: ",")
            out["\(series[..<open]){\(labels)}"] = value
        }
        return out
    }

    @Test("promtool accepts /metrics; build, process, alerts, sources, readings, outbox, latency and reload series")
    func promtoolAndValues() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.promtool), "apt-get install prometheus")
        try await TestServers.with { servers in
            let upstream = try await servers.sink()
            let hook = try await servers.sink()
            let closed = try ClosedPort()
            await upstream.script([
                .respond(
                    status: 200,
                    body: ivBody(
                        site: "08055000",
                        points: [
                            ("2021-04-07T10:00:00.000-05:00", "120", ["P"]),
                            ("2021-04-07T10:15:00.000-05:00", "321", ["P"]),
                        ]))
            ])
            let s = try Scratch()
            try s.write(
                "rules/flow.yaml",
                "name: high-flow\nkind: threshold\nmetric: gage_height\nabove: 150\nseverity: critical\nnotify: [hook]\n"
            )
            // Above 100 since 10:00, but not yet for an hour: pending.
            try s.write(
                "rules/slow.yaml", "name: slow-rise\nkind: threshold\nmetric: gage_height\nabove: 100\nfor: 1h\n")
            let cfg = try s.write(
                "klaxon.yaml",
                """
                database: k.sqlite
                rules: [rules]
                listen: 127.0.0.1:0
                api: {token: s3cret}
                sources:
                  - {name: texas, kind: usgs-iv, base_url: "\(upstream.url)/nwis/iv/", sites: ["08055000"], parameters: [gage_height]}
                  - {name: closed, kind: usgs-iv, base_url: "\(closed.url)/nwis/iv/", sites: ["08055000"]}
                receivers:
                  - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
                """)
            let started = Date().timeIntervalSince1970
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                let base = daemon.base
                // Every configured source is there from the first scrape.
                let first = Self.samples(try await http("GET", base + "/metrics").1)
                #expect(first["klaxon_source_up{source=\"texas\"}"] != nil)
                #expect(first["klaxon_source_up{source=\"closed\"}"] == 0)

                var text = ""
                try await poll(until: "the texas alert is delivered and the closed source has failed") {
                    text = try await http("GET", base + "/metrics").1
                    let m = Self.samples(text)
                    return m["klaxon_deliveries_total{outcome=\"sent\",receiver=\"hook\"}"] == 1
                        && (m["klaxon_source_errors_total{source=\"closed\"}"] ?? 0) >= 1
                }
                // A pushed reading: counted under `api`, fires, is delivered.
                let (status, _) = try await http(
                    "POST", base + "/api/v1/readings",
                    body: "station,metric,time,value\nS9,gage_height,2026-01-01T00:00:00Z,500\n", token: "s3cret")
                #expect(status == 200)
                try await poll(until: "the pushed alert is delivered") {
                    text = try await http("GET", base + "/metrics").1
                    return Self.samples(text)["klaxon_deliveries_total{outcome=\"sent\",receiver=\"hook\"}"] == 2
                }

                let check = try await Self.check(text)
                #expect(check.status == 0, "\(check.output)\n\(text)")
                #expect(check.output.isEmpty, "promtool's lint: \(check.output)")

                let m = Self.samples(text)
                let now = Date().timeIntervalSince1970
                let build =
                    "klaxon_build_info{build_date=\"\(BuildInfo.date)\",revision=\"\(BuildInfo.revision)\","
                    + "swift_version=\"\(BuildInfo.swift)\",version=\"\(BuildInfo.version)\"}"
                #expect(m[build] == 1, "\(text)")
                // This process, from /proc.
                #expect((m["process_resident_memory_bytes"] ?? 0) > 1_048_576)
                #expect((m["process_virtual_memory_bytes"] ?? 0) >= m["process_resident_memory_bytes"] ?? .infinity)
                #expect((m["process_open_fds"] ?? 0) >= 3)
                #expect((m["process_max_fds"] ?? 0) >= m["process_open_fds"] ?? .infinity)
                #expect(m["process_cpu_seconds_total"] != nil)
                let start = try #require(m["process_start_time_seconds"])
                #expect(start >= started - 2 && start <= now + 1, "\(start) in [\(started), \(now)]")
                // Alerts now: high-flow firing at the texas gauge and S9; slow-rise pending at both.
                #expect(m["klaxon_alerts{rule=\"high-flow\",severity=\"critical\",state=\"firing\"}"] == 2, "\(text)")
                #expect(m["klaxon_alerts{rule=\"slow-rise\",severity=\"warning\",state=\"pending\"}"] == 2, "\(text)")
                // Sources: up or not, and when they last succeeded.
                #expect(m["klaxon_source_up{source=\"texas\"}"] == 1)
                #expect(m["klaxon_source_up{source=\"closed\"}"] == 0)
                let success = try #require(m["klaxon_source_last_success_timestamp_seconds{source=\"texas\"}"])
                #expect(success >= started - 2 && success <= now + 1)
                #expect(m["klaxon_source_last_success_timestamp_seconds{source=\"closed\"}"] == 0)
                // Readings by the configured source, and `api` for the push.
                #expect(m["klaxon_readings_total{source=\"texas\"}"] == 2)
                #expect(m["klaxon_readings_total{source=\"api\"}"] == 1)
                // The outbox: depths only for waiting states; nothing waits.
                for state in ["pending", "sending", "held"] {
                    #expect(m["klaxon_outbox_depth{state=\"\(state)\"}"] == 0)
                }
                #expect(!text.contains("klaxon_outbox_depth{state=\"sent\"}"))
                #expect(m["klaxon_outbox_oldest_pending_age_seconds"] == 0)
                // Send time per receiver, and the queue time under its own name.
                #expect(m["klaxon_notification_latency_seconds_count{receiver=\"hook\"}"] == 2, "\(text)")
                #expect((m["klaxon_notification_latency_seconds_sum{receiver=\"hook\"}"] ?? -1) >= 0)
                #expect(m["klaxon_notification_queue_seconds_count"] == 2)
                #expect(!text.contains("klaxon_delivery_latency_seconds"))
                // The configuration the daemon started with.
                #expect(m["klaxon_config_last_reload_successful"] == 1)
                let loaded = try #require(m["klaxon_config_last_reload_success_timestamp_seconds"])
                #expect(loaded >= started - 2 && loaded <= now + 1)
                #expect(await daemon.stop() == 0)
            }
            // The refusing port stays bound (so no other test's server takes it) until the daemon is gone.
            withExtendedLifetime(closed) {}
        }
    }

    /// Issue 39, item 2: a receiver answering 500 shows within seconds: its failures counted by
    /// reason, the oldest pending age growing between retries (docs/metrics.md's example alerts,
    /// thresholds scaled down), and one warning in the log, not one line per retry.
    @Test("a failing receiver: failures counted by reason, the pending age grows between retries, one warning")
    func failingReceiver() async throws {
        try await TestServers.with { servers in
            let hook = try await servers.sink()
            await hook.script(Array(repeating: .respond(status: 500, body: "down"), count: 1000))
            let s = try Scratch()
            try s.write(
                "rules/flow.yaml",
                "name: high-flow\nkind: threshold\nmetric: gage_height\nabove: 150\nseverity: critical\nnotify: [hook]\n"
            )
            let cfg = try s.write(
                "klaxon.yaml",
                """
                database: k.sqlite
                rules: [rules]
                listen: 127.0.0.1:0
                api: {token: s3cret}
                receivers:
                  - {name: hook, type: webhook, url: "\(hook.url)/hook?token=t0psecret", preset: generic}
                """)
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                let base = daemon.base
                let failed = { (reason: String) in
                    "klaxon_notifications_failed_total{integration=\"webhook\",reason=\"\(reason)\",receiver=\"hook\"}"
                }
                // Every reason's series is there at 0 before anything failed (increase() sees the first).
                let first = Self.samples(try await http("GET", base + "/metrics").1)
                for reason in ["clientError", "serverError", "timeout", "connection", "other"] {
                    #expect(first[failed(reason)] == 0, "\(first)")
                }
                let (status, _) = try await http(
                    "POST", base + "/api/v1/readings",
                    body: "station,metric,time,value\nS9,gage_height,2026-01-01T00:00:00Z,500\n", token: "s3cret")
                #expect(status == 200)
                // KlaxonOutboxStuck (age > 600 for 5m) and KlaxonNotificationsFailing, scaled down:
                // the age passes 3 s while the row waits for its retries, and failures keep counting.
                var text = ""
                try await poll(
                    until: "three failures counted and the oldest pending age past 3 s", within: .seconds(120)
                ) {
                    text = try await http("GET", base + "/metrics").1
                    let m = Self.samples(text)
                    return (m[failed("serverError")] ?? 0) >= 3
                        && (m["klaxon_outbox_oldest_pending_age_seconds"] ?? 0) >= 3
                }
                let m = Self.samples(text)
                #expect(m[failed("timeout")] == 0)
                #expect(m["klaxon_deliveries_total{outcome=\"dead\",receiver=\"hook\"}"] == nil)
                let check = try await Self.check(text)
                #expect(check.status == 0, "\(check.output)\n\(text)")
                #expect(check.output.isEmpty, "promtool's lint: \(check.output)")
                #expect(await daemon.stop() == 0)
                let log = daemon.logText.split(separator: "\n")
                let warnings = log.filter { $0.contains("msg=\"receiver failing\"") }
                #expect(warnings.count == 1, "\(daemon.logText)")
                let warning = String(warnings.first ?? "")
                #expect(warning.contains("level=warning"))
                for part in ["receiver=hook", "reason=serverError", "attempt=1", "failures=1", "integration=webhook"] {
                    #expect(warning.contains(part), "\(part) in \(warning)")
                }
                // No retry at info, and never the URL's token.
                #expect(!daemon.logText.contains("delivery failed, will retry"), "\(daemon.logText)")
                #expect(!daemon.logText.contains("t0psecret"))
            }
        }
    }
}
