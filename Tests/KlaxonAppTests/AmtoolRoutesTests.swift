import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

/// `amtool config routes show` and `config routes test` read Klaxon's routing from `/api/v2/status`
/// (`config.original`) and must accept it as Alertmanager's own (issue 39): no zero `group_interval`,
/// and matchers on `alertname`, the label the alerts carry, not Klaxon's `rule`.
@Suite("amtool config routes against klaxon run", .serialized, .timeLimit(.minutes(10)))
struct AmtoolRoutesTests {
    @Test("routes show prints the tree; routes test names the receivers Klaxon would choose")
    func routesShowAndTest() async throws {
        let s = try Scratch()
        try s.write("rules/flow.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        let httpConfig = try AmtoolTests.httpConfig(in: s)
        let cfg = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: [rules]
            listen: 127.0.0.1:0
            api: {token: \(AmtoolTests.token)}
            receivers:
              - {name: console, type: stdout}
              - {name: pager, type: stdout}
              - {name: river-team, type: stdout}
            default_receiver: console
            routes:
              - match: {severity: critical}
                receivers: [pager]
              - match: {rule: high, station: "say \\"hi\\""}
                receivers: [river-team]
            """)
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            let base = ["--alertmanager.url=\(daemon.base)/", "--http.config.file=\(httpConfig)"]
            let show = try await amtool(base + ["config", "routes", "show"])
            #expect(show.status == 0 && !show.killed, "\(show.stderr)")
            #expect(show.stdout.contains("console") && show.stdout.contains("pager"), "\(show.stdout)")
            #expect(show.stdout.contains("alertname=\"high\""), "\(show.stdout)")
            #expect(!show.stdout.contains("rule="), "\(show.stdout)")

            func receivers(_ labels: [String]) async throws -> String {
                let r = try await amtool(base + ["config", "routes", "test"] + labels)
                #expect(r.status == 0 && !r.killed, "\(labels): \(r.stderr)")
                return r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            #expect(try await receivers(["alertname=high", "severity=critical"]) == "pager")
            #expect(try await receivers(["alertname=other", "severity=warning"]) == "console")
            #expect(
                try await receivers(["alertname=high", #"station="say \"hi\"""#, "severity=warning"]) == "river-team")
            #expect(await daemon.stop() == 0)
        }
    }
}
