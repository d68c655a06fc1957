import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import Testing

@Suite("faults: a busy database", .serialized, .timeLimit(.minutes(3)))
struct BusyDatabaseTests {
    @Test(
        "another process holds the write lock while alerts fall due: the daemon stays up, says so, and delivers them all after"
    )
    func lockHeldWhileAlertsAreDue() async throws {
        try await HTTPSink.with { hook in
            let s = try Scratch()
            try s.write(
                "rules/flow.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
            // group_wait holds the notifications 10 s after their transitions: they fall due while the lock is held
            // (taken a moment after they are queued).
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
                  - {receivers: [hook], group_by: [station], group_wait: 10s}
                """)
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                let csv =
                    "station,metric,time,value\n"
                    + (1...5).map { "S\($0),gage_height,2026-01-01T00:00:00Z,500" }.joined(separator: "\n") + "\n"
                #expect(try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret").0 == 200)
                // Evaluated and queued (one transaction): all five are firing.
                try await poll(until: "the five alerts fire", every: .milliseconds(50)) {
                    let alerts = try await http("GET", daemon.base + "/api/v1/alerts", token: "s3cret").1
                    return alerts.components(separatedBy: "\"rule\":\"high\"").count == 6
                }

                try await WriteLock.with(s.path("k.sqlite")) {
                    // While it is held, /readyz comes to say the database is busy (a service waits for it, after
                    // SQLite's 10 s busy timeout), and /healthz answers throughout.
                    try await poll(until: "/readyz says the database is busy", every: .milliseconds(250)) {
                        #expect(try await http("GET", daemon.base + "/healthz").0 == 200)
                        let (status, body) = try await http("GET", daemon.base + "/readyz")
                        return status == 503 && body.contains("\"database\":\"busy\"")
                    }
                    #expect(await hook.requests().isEmpty)
                }

                // After the lock is released, everything that was due goes out: the daemon never stopped.
                let posts = await hook.waitForRequests(5)
                #expect(posts.count == 5)
                #expect(!daemon.exit.hasExited)
                try await poll(until: "/readyz says ready", every: .milliseconds(100)) {
                    let (status, body) = try await http("GET", daemon.base + "/readyz")
                    return status == 200 && body.contains("\"database\":\"ok\"")
                }
                #expect(await daemon.stop() == 0)
                let log = daemon.logText
                // Said once when it started, once when it ended (per service), not once per retry.
                let waits = log.components(separatedBy: "database busy").count - 1
                #expect(waits >= 1 && waits <= 3, "\(log)")
                #expect(log.contains("database usable again"))
            }
        }
    }
}
