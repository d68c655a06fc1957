import Foundation
import KlaxonTesting
import Testing

/// A rule removed by a reload (issue 38, item 18): its firing alerts are resolved, saying why, and
/// the receivers that heard them firing get the resolve. A reload refused for a broken file resolves
/// nothing; a renamed rule is a removed one (a name is all an alert knows).
@Suite("klaxon run: a reload that removes a rule", .serialized, .timeLimit(.minutes(10)))
struct ReloadRemovedRuleTests {
    /// The open alerts of `/api/v1/alerts`, as "rule/station".
    func alerts(_ daemon: DaemonProcess) async throws -> Set<String> {
        let (status, body) = try await http("GET", daemon.base + "/api/v1/alerts", token: "s3cret")
        #expect(status == 200, "\(body)")
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        var out: Set<String> = []
        for a in object?["alerts"] as? [[String: Any]] ?? [] {
            if let rule = a["rule"] as? String, let station = a["station"] as? String {
                out.insert("\(rule)/\(station)")
            }
        }
        return out
    }

    /// The alerts the hook was told of, as "status rule/station reason" (reason: the
    /// `resolve_reason` annotation, or "-").
    func told(_ hook: HTTPSink) async -> [String] {
        var out: [String] = []
        for r in await hook.requests() {
            guard let o = try? JSONSerialization.jsonObject(with: r.body) as? [String: Any] else { continue }
            for a in o["alerts"] as? [[String: Any]] ?? [] {
                let labels = a["labels"] as? [String: String] ?? [:]
                let annotations = a["annotations"] as? [String: String] ?? [:]
                out.append(
                    "\(a["status"] ?? "?") \(labels["alertname"] ?? labels["rule"] ?? "?")/\(labels["station"] ?? "?") \(annotations["resolve_reason"] ?? "-")"
                )
            }
        }
        return out
    }

    @Test("removing and renaming rules resolves their alerts with the reason; a refused reload resolves nothing")
    func removedRuleResolves() async throws {
        try await TestServers.with { servers in
            let hook = try await servers.sink()
            let s = try Scratch()
            try s.write(
                "rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
            try s.write(
                "rules/low.yaml", "name: low\nkind: threshold\nmetric: gage_height\nbelow: 10\nnotify: [hook]\n")
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
                let csv =
                    "station,metric,time,value\nS1,gage_height,2026-01-01T00:00:00Z,500\n"
                    + "S2,gage_height,2026-01-01T00:00:00Z,5\n"
                #expect(try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret").0 == 200)
                try await poll(until: "both firings reach the hook") {
                    Set(await told(hook)) == ["firing high/S1 -", "firing low/S2 -"]
                }

                // A broken file refuses the reload: nothing is resolved (the reload does its resolves
                // before it answers, so the alerts are looked at after the answer).
                try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: lots\n")
                let (refused, why) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
                #expect(refused == 500, "\(why)")
                #expect(try await alerts(daemon) == ["high/S1", "low/S2"])

                // The file removed, the other rule renamed: both alerts resolve, saying why.
                try FileManager.default.removeItem(at: s.dir.appendingPathComponent("rules/high.yaml"))
                try s.write(
                    "rules/low.yaml", "name: low2\nkind: threshold\nmetric: gage_height\nbelow: 10\nnotify: [hook]\n")
                let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
                #expect(status == 200, "\(body)")
                #expect(
                    body
                        == "reloaded\nwarning: rule high is no longer in the rules: its 1 firing alert was resolved\nwarning: rule low is no longer in the rules: its 1 firing alert was resolved\n",
                    "\(body)")
                #expect(try await alerts(daemon).isEmpty)
                try await poll(until: "both resolves reach the hook") {
                    await told(hook).filter { $0.hasPrefix("resolved") }.count == 2
                }
                let resolves = await told(hook).filter { $0.hasPrefix("resolved") }.sorted()
                #expect(
                    resolves == [
                        "resolved high/S1 rule high was removed by a reload",
                        "resolved low/S2 rule low was removed by a reload",
                    ])
                #expect(daemon.logText.contains("resolved the firing alerts of a rule the reload removed"))
                #expect(daemon.logText.contains("reason=\"rule high was removed by a reload\""), "\(daemon.logText)")

                // Reloading again resolves nothing more.
                let (again, quiet) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
                #expect(again == 200 && quiet == "reloaded\n", "\(quiet)")
                #expect(await daemon.stop() == 0)
            }
        }
    }
}
