import Foundation
import KlaxonTesting
import Testing

/// A reload that removes or renames a receiver with notifications still queued for it (issue 38,
/// item 10): the rows keep the old name and will go dead, so the reload says so, with the count, in
/// its log and in the answer to `POST /-/reload`.
@Suite("klaxon run: reload warnings", .serialized, .timeLimit(.minutes(10)))
struct ReloadWarningTests {
    @Test("renaming a receiver with 3 notifications in flight: the reload answers 200 with a warning that counts them")
    func renamedReceiverIsCounted() async throws {
        try await TestServers.with { servers in
            let hook = try await servers.sink()
            // The sends never end: the rows stay queued (being sent) while the reload happens.
            await hook.script(Array(repeating: .never, count: 100))
            let s = try Scratch()
            try s.write(
                "rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
            func config(_ name: String) -> String {
                """
                database: k.sqlite
                rules: [rules]
                listen: 127.0.0.1:0
                api: {token: s3cret}
                receivers:
                  - {name: \(name), type: webhook, url: "\(hook.url)/hook", preset: generic, timeout: 60s}
                """
            }
            let cfg = try s.write("klaxon.yaml", config("hook"))
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                let csv =
                    "station,metric,time,value\nS1,gage_height,2026-01-01T00:00:00Z,500\n"
                    + "S2,gage_height,2026-01-01T00:00:00Z,500\nS3,gage_height,2026-01-01T00:00:00Z,500\n"
                #expect(try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret").0 == 200)
                try await poll(until: "a delivery reaches the hook") { await !hook.requests().isEmpty }

                // A reload that changes nothing about receivers warns of nothing.
                let (same, quiet) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
                #expect(same == 200 && quiet == "reloaded\n", "\(quiet)")

                try s.write("klaxon.yaml", config("hook2"))
                try s.write(
                    "rules/high.yaml",
                    "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook2]\n")
                let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
                #expect(status == 200, "\(body)")
                #expect(
                    body
                        == "reloaded\nwarning: receiver hook is no longer in the config: its 3 queued notifications will go dead (a renamed receiver does not take them over)\n",
                    "\(body)")
                #expect(daemon.logText.contains("receiver removed by the reload"), "\(daemon.logText)")
                #expect(daemon.logText.contains("queued=3"), "\(daemon.logText)")
                _ = await daemon.stop()
            }
        }
    }
}
