import Foundation
import KlaxonTesting
import Testing

/// Reload (issue 31): SIGHUP and `POST /-/reload` re-read the config and rules whole or not at all.
@Suite("klaxon run: reload", .serialized)
struct ReloadTests {
    /// The open alerts of `/api/v1/alerts`, by "rule/station": their ids.
    func alerts(_ daemon: DaemonProcess) async throws -> [String: Int] {
        let (status, body) = try await http("GET", daemon.base + "/api/v1/alerts", token: "s3cret")
        #expect(status == 200, "\(body)")
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        var out: [String: Int] = [:]
        for a in object?["alerts"] as? [[String: Any]] ?? [] {
            if let rule = a["rule"] as? String, let station = a["station"] as? String, let id = a["id"] as? Int {
                out["\(rule)/\(station)"] = id
            }
        }
        return out
    }

    func metric(_ daemon: DaemonProcess, _ name: String) async throws -> Double? {
        let (_, text) = try await http("GET", daemon.base + "/metrics")
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
            Double($0.dropFirst(name.count + 1))
        }
    }

    func push(_ daemon: DaemonProcess, _ station: String, _ value: Double) async throws {
        let csv = "station,metric,time,value\n\(station),gage_height,2026-01-01T00:00:00Z,\(value)\n"
        let (status, body) = try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret")
        #expect(status == 200, "\(body)")
    }

    @Test(
        "a broken rule file keeps the running rules (logged with FILE:LINE:COL, gauge 0); a good one takes, states carry over"
    )
    func reloadKeepsOrTakes() async throws {
        let s = try Scratch()
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        let cfg = try s.write(
            "klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: 127.0.0.1:0\napi: {token: s3cret}\n")
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            #expect(try await metric(daemon, "klaxon_config_last_reload_successful") == 1)
            try await push(daemon, "S1", 200)
            var first: [String: Int] = [:]
            try await poll(until: "high fires for S1") {
                first = try await alerts(daemon)
                return first["high/S1"] != nil
            }

            // A broken file: SIGHUP and POST both keep the running rules.
            try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: lots\n")
            kill(daemon.process.processIdentifier, SIGHUP)
            try await poll(until: "the failed reload is logged: \(daemon.logText)") {
                daemon.logText.contains("reload failed")
            }
            #expect(daemon.logText.contains("high.yaml:4:"), "\(daemon.logText)")
            #expect(try await metric(daemon, "klaxon_config_last_reload_successful") == 0)
            let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
            #expect(status == 500)
            #expect(body.hasPrefix("failed to reload config:\n") && body.contains("high.yaml:4:"), "\(body)")
            // A bad config too: the reload reports its errors and the rules' errors, as `check` does
            // (issue 39: it used to stop at the config's).
            let good = try String(contentsOfFile: cfg, encoding: .utf8)
            try s.write("klaxon.yaml", good + "bogus: 1\n")
            let (both, bothBody) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
            #expect(both == 500)
            #expect(bothBody.contains("klaxon.yaml:5:") && bothBody.contains("high.yaml:4:"), "\(bothBody)")
            let check = try await klaxonAsync(["check", "--config", cfg], in: s.dir)
            let checkErrors = check.errorLines.filter { $0.contains(": error: ") }
            let reloadErrors = bothBody.split(separator: "\n").filter { $0.contains(": error: ") }.map(String.init)
            #expect(checkErrors.count >= 2 && reloadErrors == checkErrors, "\(checkErrors) vs \(reloadErrors)")
            try s.write("klaxon.yaml", good)
            // The old rule still runs.
            try await push(daemon, "S2", 200)
            try await poll(until: "the running rule fires for S2") { try await alerts(daemon)["high/S2"] != nil }

            // Fixed, with a second rule: the reload takes, the alerts keep their ids.
            try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 100\n")
            try s.write("rules/low.yaml", "name: low\nkind: threshold\nmetric: gage_height\nbelow: 10\n")
            let (ok, answer) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
            #expect(ok == 200, "\(answer)")
            #expect(try await metric(daemon, "klaxon_config_last_reload_successful") == 1)
            #expect(daemon.logText.contains("configuration reloaded"))
            try await push(daemon, "S3", 5)
            try await poll(until: "the new rule fires for S3") { try await alerts(daemon)["low/S3"] != nil }
            let now = try await alerts(daemon)
            #expect(now["high/S1"] == first["high/S1"], "the alert carried over with its id")

            // The endpoint is the API's: no token, no reload.
            let (denied, _) = try await http("POST", daemon.base + "/-/reload")
            #expect(denied == 401)
            #expect(await daemon.stop() == 0)
        }
    }

    @Test("a reload that changes listen: says it needs a restart and keeps listening where it was")
    func restartOnlySettings() async throws {
        let s = try Scratch()
        let text = "database: k.sqlite\nrules: []\nlisten: 127.0.0.1:0\napi: {token: s3cret}\n"
        let cfg = try s.write("klaxon.yaml", text)
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            try s.write("klaxon.yaml", text.replacingOccurrences(of: "127.0.0.1:0", with: "127.0.0.1:1"))
            let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
            #expect(status == 200, "\(body)")
            #expect(daemon.logText.contains("takes effect at a restart"), "\(daemon.logText)")
            #expect(daemon.logText.contains("listen"))
            #expect(await daemon.stop() == 0)
        }
    }

    @Test("a reload swaps receivers: the next alert goes to the new one only")
    func receiversSwap() async throws {
        try await HTTPSink.with { first in
            try await HTTPSink.with { second in
                let s = try Scratch()
                try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
                func config(_ url: String) -> String {
                    """
                    database: k.sqlite
                    rules: [rules]
                    listen: 127.0.0.1:0
                    api: {token: s3cret}
                    receivers:
                      - {name: hook, type: webhook, url: "\(url)/hook", preset: generic}
                    routes:
                      - {receivers: [hook], group_wait: 0s}
                    """
                }
                let cfg = try s.write("klaxon.yaml", config(first.url))
                try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                    try await push(daemon, "S1", 200)
                    #expect(await first.waitForRequests(1).count == 1)
                    try s.write("klaxon.yaml", config(second.url))
                    let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
                    #expect(status == 200, "\(body)")
                    try await push(daemon, "S2", 200)
                    let got = await second.waitForRequests(1)
                    #expect(got.count == 1)
                    #expect(got.first.map { String(decoding: $0.body, as: UTF8.self).contains("S2") } == true)
                    #expect(await first.requests().count == 1, "the old receiver hears nothing more")
                    #expect(await daemon.stop() == 0)
                }
            }
        }
    }

    @Test("a reload starts the poller of a source added and leaves the others alone")
    func sourceAdded() async throws {
        try await HTTPSink.with { upstream in
            let s = try Scratch()
            let base = "database: k.sqlite\nrules: []\nlisten: 127.0.0.1:0\napi: {token: s3cret}\n"
            let one =
                "sources:\n  - {name: a, kind: usgs-iv, base_url: \"\(upstream.url)/a/\", sites: [\"08055000\"]}\n"
            let two = one + "  - {name: b, kind: usgs-iv, base_url: \"\(upstream.url)/b/\", sites: [\"08055000\"]}\n"
            let cfg = try s.write("klaxon.yaml", base + one)
            // Answers that parse: a fetch that failed would be retried within seconds, not a minute.
            let body = ivBody(site: "08055000", points: [("2021-04-07T10:00:00.000-05:00", "120", ["P"])])
            await upstream.script(Array(repeating: .respond(status: 200, body: body), count: 10))
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                #expect(await upstream.waitForRequests(1).count >= 1)
                try s.write("klaxon.yaml", base + two)
                let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
                #expect(status == 200, "\(body)")
                try await poll(until: "source b is fetched") {
                    await upstream.requests().contains { $0.path.hasPrefix("/b/") }
                }
                // /readyz and /metrics know the new source.
                let (_, ready) = try await http("GET", daemon.base + "/readyz")
                #expect(ready.contains("\"b\""), "\(ready)")
                let (_, metrics) = try await http("GET", daemon.base + "/metrics")
                #expect(metrics.contains("klaxon_source_up{source=\"b\"}"))
                // Source a was not restarted: polled once a minute, it has not been fetched again.
                #expect(await upstream.requests().filter { $0.path.hasPrefix("/a/") }.count == 1)
                #expect(await daemon.stop() == 0)
            }
        }
    }
}
