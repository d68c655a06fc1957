import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import Testing

@Suite("faults: a busy database", .serialized, .timeLimit(.minutes(10)))
struct BusyDatabaseTests {
    @Test(
        "another process holds the write lock while alerts fall due: the daemon stays up, says so, and delivers them all after"
    )
    func lockHeldWhileAlertsAreDue() async throws {
        // The lock must be taken before the notifications fall due. On a loaded machine, posting, polling and
        // starting the lock's process can take longer than group_wait: then the run proves nothing, and it is
        // run again with a longer group_wait, rather than failing or passing by luck (issue 39, item 18).
        for groupWait in [10, 30, 90] {
            if try await Self.lockHeld(groupWait: groupWait) { return }
        }
        Issue.record("the lock could not be taken before the notifications fell due, even with group_wait 90s")
    }

    /// One run; false when the lock came too late for the run to mean anything.
    static func lockHeld(groupWait: Int) async throws -> Bool {
        try await HTTPSink.with { hook in
            let s = try Scratch()
            try s.write(
                "rules/flow.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
            // A lock held longer than the delivery lease lets claims run out, and a row may then rightly go out
            // twice under its key (at least once): that is the outage tests' subject, not this one's.
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
                  - {receivers: [hook], group_by: [station], group_wait: \(groupWait)s}
                delivery_lease: 1h
                """)
            return try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                let posted = ContinuousClock.now
                let csv =
                    "station,metric,time,value\n"
                    + (1...5).map { "S\($0),gage_height,2026-01-01T00:00:00Z,500" }.joined(separator: "\n") + "\n"
                #expect(try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret").0 == 200)
                // Evaluated and queued (one transaction): all five are firing.
                try await poll(until: "the five alerts fire", every: .milliseconds(50)) {
                    let alerts = try await http("GET", daemon.base + "/api/v1/alerts", token: "s3cret").1
                    return alerts.components(separatedBy: "\"rule\":\"high\"").count == 6
                }

                let lock = try await WriteLock.hold(s.path("k.sqlite"), seconds: Double(groupWait + 300))
                // A second of margin: the queue time is stamped after the POST started.
                guard ContinuousClock.now - posted < .seconds(groupWait - 1) else {
                    await lock.release()
                    _ = await daemon.stop()
                    return false
                }
                try await WriteLock.holding(lock) {
                    // While it is held, /readyz comes to say the database is busy (a service waits for it, after
                    // SQLite's 10 s busy timeout), and /healthz answers throughout.
                    try await poll(
                        until: "/readyz says the database is busy", within: .seconds(groupWait + 120),
                        every: .milliseconds(250)
                    ) {
                        #expect(try await http("GET", daemon.base + "/healthz").0 == 200)
                        let (status, body) = try await http("GET", daemon.base + "/readyz")
                        return status == 503 && body.contains("\"database\":\"busy\"")
                    }
                    #expect(await hook.requests().isEmpty)
                }

                // After the lock is released, everything that was due goes out: the daemon never stopped.
                let posts = await hook.waitForRequests(5)
                #expect(posts.count == 5, "\(posts.map(\.text))\n\(daemon.logText)")
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
                return true
            }
        }
    }
}
