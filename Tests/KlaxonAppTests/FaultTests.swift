import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import Testing

/// A `klaxon run` process and the port it listens on (read from its log).
struct DaemonProcess {
    let process: Process
    let log: URL
    let port: Int

    var base: String { "http://127.0.0.1:\(port)" }
    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    static func start(config: String, in dir: URL) async throws -> DaemonProcess {
        let p = Process()
        p.executableURL = klaxonBinary
        p.arguments = ["run", "--config", config]
        p.currentDirectoryURL = dir
        let log = dir.appendingPathComponent("daemon-\(UUID().uuidString.prefix(8)).log")
        FileManager.default.createFile(atPath: log.path, contents: nil)
        p.standardError = try FileHandle(forWritingTo: log)
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        // The port comes from the log line `klaxon: listening on 127.0.0.1:PORT`; the daemon's exit ends the wait.
        while p.isRunning {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let r = text.range(of: "klaxon: listening on 127.0.0.1:"),
                let port = Int(text[r.upperBound...].prefix { $0.isNumber })
            {
                return DaemonProcess(process: p, log: log, port: port)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw SinkError(message: "klaxon run exited: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }

    /// SIGTERM, then waits for the exit; returns the status.
    func stop() async throws -> Int32 {
        process.terminate()
        while process.isRunning { try await Task.sleep(for: .milliseconds(50)) }
        return process.terminationStatus
    }
}

@Suite("faults: a busy database", .serialized, .timeLimit(.minutes(3)))
struct BusyDatabaseTests {
    @Test(
        "another process holds the write lock for 30 s while alerts are due: the daemon stays up, says so, and delivers them all after"
    )
    func lockHeldWhileAlertsAreDue() async throws {
        let hook = try await HTTPSink.start()
        let s = try Scratch()
        try s.write("rules/flow.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
        // group_wait holds the notifications 3 s after their transitions: they fall due while the lock is held.
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
              - {receivers: [hook], group_by: [station], group_wait: 3s}
            """)
        let daemon = try await DaemonProcess.start(config: cfg, in: s.dir)
        let csv =
            "station,metric,time,value\n"
            + (1...5).map { "S\($0),gage_height,2026-01-01T00:00:00Z,500" }.joined(separator: "\n") + "\n"
        #expect(try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret").0 == 200)
        // Evaluated and queued (one transaction): all five are firing.
        while try await http("GET", daemon.base + "/api/v1/alerts", token: "s3cret").1.components(
            separatedBy: "\"rule\":\"high\""
        ).count < 6 {
            try await Task.sleep(for: .milliseconds(50))
        }

        let lockedAt = ContinuousClock.now
        let lock = try await WriteLock.hold(s.path("k.sqlite"), seconds: 30)
        // While it is held (30 s), /readyz answers and says the database is busy, and /healthz answers.
        var sawBusy = false
        while ContinuousClock.now - lockedAt < .seconds(29) && !sawBusy {
            let (status, body) = try await http("GET", daemon.base + "/readyz")
            if status == 503 && body.contains("\"database\":\"busy\"") { sawBusy = true }
            #expect(try await http("GET", daemon.base + "/healthz").0 == 200)
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(sawBusy)
        #expect(await hook.requests().isEmpty)
        while ContinuousClock.now - lockedAt < .seconds(30) { try await Task.sleep(for: .milliseconds(100)) }
        await lock.release()

        // After the lock is released, everything that was due goes out: the daemon never stopped.
        let posts = await hook.waitForRequests(5, timeout: 60)
        #expect(posts.count == 5)
        #expect(daemon.process.isRunning)
        var ready = try await http("GET", daemon.base + "/readyz")
        while ready.0 != 200 {
            try await Task.sleep(for: .milliseconds(100))
            ready = try await http("GET", daemon.base + "/readyz")
        }
        #expect(ready.1.contains("\"database\":\"ok\""))
        #expect(try await daemon.stop() == 0)
        let log = daemon.logText
        // Said once when it started, once when it ended (per service), not once per retry.
        let waits = log.components(separatedBy: "database busy").count - 1
        #expect(waits >= 1 && waits <= 3, "\(log)")
        #expect(log.contains("database usable again"))
        await hook.stop()
    }
}
