import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

/// The daemon's config over `database`, with the push API on and one rule.
private func daemonConfig(_ s: Scratch, database: String = "k.sqlite") throws -> String {
    try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
    return try s.write(
        "klaxon.yaml",
        """
        database: \(database)
        rules: [rules]
        listen: 127.0.0.1:0
        api: {token: s3cret}
        """)
}

/// `count` readings of a few stations, as push CSV (some 40 bytes each).
private func readingsCSV(_ count: Int, station: String = "S") -> String {
    var out = "station,metric,time,value\n"
    out.reserveCapacity(count * 48)
    for i in 0..<count {
        let t = Timestamp.format(Int64(1_767_225_600 + (i / 20) * 60))  // 2026-01-01, a minute apart
        out += "\(station)\(i % 20),gage_height,\(t),\(Double(i % 97) + 0.5)\n"
    }
    return out
}

private func push(_ daemon: DaemonProcess, _ csv: String) async throws -> (Int, String) {
    try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret")
}

/// Lines of the daemon's log that contain `text`.
private func logLines(_ daemon: DaemonProcess, containing text: String) -> [String] {
    daemon.logText.split(separator: "\n").map(String.init).filter { $0.contains(text) }
}

/// Runs a program to its end; its status and what it said on stderr.
@discardableResult
private func run(_ path: String, _ arguments: [String]) async throws -> (status: Int32, stderr: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: path)
    p.arguments = arguments
    p.standardOutput = FileHandle.nullDevice
    let errURL = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-run-\(UUID().uuidString).err")
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: errURL) }
    let err = try FileHandle(forWritingTo: errURL)
    p.standardError = err
    let exit = ProcessExit(p)
    try await launchProcess(p)
    if await !exit.wait(within: .seconds(60)) {
        kill(p.processIdentifier, SIGKILL)
        _ = await exit.wait(within: .seconds(60))
    }
    try err.close()
    return (p.terminationStatus, (try? String(contentsOf: errURL, encoding: .utf8)) ?? "")
}

@Suite("the database file under a running daemon", .serialized, .timeLimit(.minutes(10)))
struct DatabaseFileTests {
    enum Change: String, CaseIterable {
        /// `rm k.sqlite*`.
        case deleteAll
        /// `mv k.sqlite elsewhere` (the WAL stays).
        case moveAway
        /// `rm k.sqlite-wal` alone.
        case deleteLog
        /// Another Klaxon database moved into place (`mv other.sqlite k.sqlite`).
        case replace
        /// Truncated in place (`truncate -s 0 k.sqlite`).
        case truncate
    }

    @Test(
        "deleting, moving away, replacing or truncating the database file under the daemon: /readyz fails naming it, one error line, the metric, pushes refused",
        arguments: Change.allCases)
    func fileChangedUnderTheDaemon(_ change: Change) async throws {
        let s = try Scratch()
        let cfg = try daemonConfig(s)
        let db = s.path("k.sqlite")
        if change == .replace {
            try s.write("r.csv", "station,metric,time,value\nOTHER,gage_height,2026-01-01T00:00:00Z,1\n")
            let made = await InProcess.ingest(db: s.path("other.sqlite"), s.path("r.csv"))
            #expect(made.status == 0, "\(made.stderr)")
        }
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            let first = try await push(daemon, readingsCSV(10))
            #expect(first.0 == 200, "\(first.1)")
            try await poll(until: "/readyz says ready", every: .milliseconds(100)) {
                try await http("GET", daemon.base + "/readyz").0 == 200
            }
            #expect(FileManager.default.fileExists(atPath: db + "-wal"))
            let expected: (state: String, words: String)
            switch change {
            case .deleteAll:
                for suffix in ["", "-wal", "-shm"] { try FileManager.default.removeItem(atPath: db + suffix) }
                expected = ("deleted", "was deleted or moved away")
            case .moveAway:
                try FileManager.default.moveItem(atPath: db, toPath: s.path("moved.sqlite"))
                expected = ("deleted", "was deleted or moved away")
            case .deleteLog:
                try FileManager.default.removeItem(atPath: db + "-wal")
                expected = ("deleted", "write-ahead log")
            case .replace:
                #expect(rename(s.path("other.sqlite"), db) == 0)
                expected = ("replaced", "was replaced by another file")
            case .truncate:
                let handle = try #require(FileHandle(forWritingAtPath: db))
                try handle.truncate(atOffset: 0)
                try handle.close()
                expected = ("truncated", "was truncated while klaxon runs")
            }
            try await poll(until: "/readyz says the database was \(expected.state)", every: .milliseconds(100)) {
                let (status, body) = try await http("GET", daemon.base + "/readyz")
                return status == 503 && body.contains("\"database\":\"\(expected.state)\"")
            }
            let ready = try await http("GET", daemon.base + "/readyz").1
            #expect(ready.contains(expected.words), "\(ready)")
            #expect(ready.contains(db), "\(ready)")

            try await poll(until: "the daemon logs it", every: .milliseconds(100)) {
                !logLines(daemon, containing: "database file \(expected.state)").isEmpty
            }
            // A push is refused with the reason (it would be written where nobody reads it), not stored.
            // (On a truncated file SQLite may find the pages it reads gone before the commit is refused.)
            let refused = try await push(daemon, readingsCSV(5, station: "LATE"))
            #expect(refused.0 == 503, "\(refused.1)")
            if change != .truncate { #expect(refused.1.contains(expected.words), "\(refused.1)") }

            try await poll(until: "the metric says the file is lost", every: .milliseconds(100)) {
                try await http("GET", daemon.base + "/metrics").1.contains("klaxon_database_file_ok 0")
            }
            // Nothing made a new file at the path behind the operator's back.
            if change == .deleteAll || change == .moveAway {
                #expect(!FileManager.default.fileExists(atPath: db))
            }
            #expect(await daemon.stop() == 0)
            let errors = logLines(daemon, containing: "database file \(expected.state)")
            #expect(errors.count == 1, "\(daemon.logText)")
            #expect(errors.first?.contains(" level=error ") == true, "\(errors)")
            // One error line in all: the refused push does not log the same news again.
            #expect(logLines(daemon, containing: " level=error ").count == 1, "\(daemon.logText)")
        }
    }

    enum Damage: String, CaseIterable {
        /// Emptied (`truncate -s 0`) with its `-wal` and `-shm` left beside it.
        case emptiedWithLog
        /// Cut to its first page (the header says more), no log beside it.
        case cutToFirstPage
        /// Some other file, not a SQLite database.
        case notSQLite
    }

    @Test(
        "klaxon run refuses a database file that was truncated or is not SQLite, says what it found, and changes nothing",
        arguments: Damage.allCases)
    func startRefusesATruncatedFile(_ damage: Damage) async throws {
        let s = try Scratch()
        let cfg = try daemonConfig(s)
        let db = s.path("k.sqlite")
        try s.write("r.csv", readingsCSV(2_000))
        let made = await InProcess.ingest(db: db, s.path("r.csv"))
        #expect(made.status == 0, "\(made.stderr)")
        let words: String
        switch damage {
        case .emptiedWithLog:
            let handle = try #require(FileHandle(forWritingAtPath: db))
            try handle.truncate(atOffset: 0)
            try handle.close()
            try s.write("k.sqlite-wal", "")
            try s.write("k.sqlite-shm", String(repeating: "x", count: 32_768))
            words = "the file is empty (0 bytes) but"
        case .cutToFirstPage:
            let handle = try #require(FileHandle(forWritingAtPath: db))
            try handle.truncate(atOffset: 4096)
            try handle.close()
            words = "it was truncated"
        case .notSQLite:
            try FileManager.default.removeItem(atPath: db)
            try s.write("k.sqlite", "these are my notes, not a database\n")
            words = "is not a SQLite database"
        }
        let before = ["", "-wal", "-shm"].map { FileManager.default.contents(atPath: db + $0) }
        let r = try await klaxonAsync(["run", "--config", cfg], in: s.dir)
        #expect(r.status != 0, "\(r.stdout) \(r.stderr)")
        #expect(r.stderr.contains(db), "\(r.stderr)")
        #expect(r.stderr.contains(words), "\(r.stderr)")
        #expect(r.stderr.contains("klaxon changed nothing"), "\(r.stderr)")
        #expect(["", "-wal", "-shm"].map { FileManager.default.contents(atPath: db + $0) } == before)
    }

    @Test("a new path, or an empty file with nothing beside it, still makes a database")
    func newDatabasesStillStart() async throws {
        let s = try Scratch()
        try s.write("r.csv", readingsCSV(10))
        let empty = try s.write("empty.sqlite", "")
        for path in [s.path("new.sqlite"), empty] {
            let r = await InProcess.ingest(db: path, s.path("r.csv"))
            #expect(r.status == 0, "\(path): \(r.stderr)")
            let again = await InProcess.ingest(db: path, s.path("r.csv"))
            #expect(again.status == 0, "\(path): \(again.stderr)")
        }
    }

    @Test("commands that expect a database never create one: a missing or foreign file is an error naming the path")
    func commandsNeverCreateADatabase() async throws {
        let s = try Scratch()
        let empty = try s.write("empty.sqlite", "")
        let text = try s.write("notes.sqlite", "these are my notes, not a database\n")
        try FileManager.default.createDirectory(atPath: s.path("folder.sqlite"), withIntermediateDirectories: true)
        let paths: [(path: String, exists: Bool, words: String)] = [
            (s.path("missing.sqlite"), false, "no such file"),
            (s.path("no/such/folder/k.sqlite"), false, "no such file"),
            (empty, true, "not a Klaxon database"),
            (text, true, "not a Klaxon database"),
            (s.path("folder.sqlite"), true, "it is a folder"),
        ]
        let commands: [[String]] = [
            ["silence", "add", "--match", "rule=high", "--for", "2h", "--comment", "x"],
            ["silence", "list"],
            ["silence", "expire", "abc"],
            ["outbox", "list"],
            ["outbox", "retry", "abc"],
            ["prune"],
            ["prune", "--dry-run"],
            ["trip", "list", "--owner", "alice"],
            ["trip", "remove", "denver", "--owner", "alice"],
            ["quakes"],
            ["aqi", "Delhi"],
        ]
        for (path, exists, words) in paths {
            let before = exists ? FileManager.default.contents(atPath: path) : nil
            for command in commands {
                let r = try await klaxonAsync(command + ["--db", path], in: s.dir)
                #expect(r.status == 1, "\(command) \(path): \(r.stdout) \(r.stderr)")
                #expect(r.stderr.contains(path), "\(command): \(r.stderr)")
                #expect(r.stderr.contains(words), "\(command): \(r.stderr)")
                if !exists { #expect(!FileManager.default.fileExists(atPath: path), "\(command) created \(path)") }
                if exists, before != nil {
                    #expect(FileManager.default.contents(atPath: path) == before, "\(command) changed \(path)")
                }
                for suffix in ["-wal", "-shm", "-journal"] {
                    #expect(!FileManager.default.fileExists(atPath: path + suffix), "\(command) made \(suffix)")
                }
            }
        }
        // The message says what to do.
        let told = try await klaxonAsync(["silence", "list", "--db", s.path("missing.sqlite")], in: s.dir)
        #expect(told.stderr.contains("start `klaxon run` or `klaxon ingest` first"), "\(told.stderr)")
        #expect(told.stderr.contains("or check --db/--config"), "\(told.stderr)")

        // `dispatch` through a config whose database: is missing.
        let cfg = try s.write(
            "klaxon.yaml",
            "database: gone.sqlite\nreceivers:\n  - {name: console, type: stdout}\ndefault_receiver: console\n")
        let dispatch = try await klaxonAsync(["dispatch", "--config", cfg, "--until-empty"], in: s.dir)
        #expect(dispatch.status == 1, "\(dispatch.stderr)")
        #expect(dispatch.stderr.contains("no such file"), "\(dispatch.stderr)")
        #expect(dispatch.stderr.contains("gone.sqlite"), "\(dispatch.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("gone.sqlite")))

        // Commands that store readings (or trips) still make the first database, and then the others work.
        try s.write("r.csv", "station,metric,time,value\nS1,gage_height,2026-01-01T00:00:00Z,5\n")
        let fresh = s.path("fresh.sqlite")
        let ingest = try await klaxonAsync(["ingest", "--db", fresh, s.path("r.csv")], in: s.dir)
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let add = try await klaxonAsync(
            ["silence", "add", "--db", fresh, "--match", "rule=high", "--for", "2h", "--comment", "x"], in: s.dir)
        #expect(add.status == 0, "\(add.stderr)")
        #expect(try await klaxonAsync(["silence", "list", "--db", fresh], in: s.dir).stdout.contains("rule=high"))
    }

    @Test(
        "a file-size limit reached by a push: 507 with the reason, /readyz failing, the daemon alive; ready again once there is room"
    )
    func fileSizeLimit() async throws {
        let s = try Scratch()
        let cfg = try daemonConfig(s)
        // Room for the schema and small pushes, not for a push of 60,000 readings. A soft limit (the
        // hard one stays unlimited), so that the test can lift it without privileges.
        let daemon = try await DaemonProcess.start(
            config: cfg, in: s.dir, prefix: ["/usr/bin/prlimit", "--fsize=\(1_500_000):unlimited"])
        let outcome = await Result {
            let small = try await push(daemon, readingsCSV(10))
            #expect(small.0 == 200, "\(small.1)")
            let big = readingsCSV(60_000, station: "BIG")
            let refused = try await push(daemon, big)
            #expect(refused.0 == 507, "\(refused.1)")
            #expect(refused.1.contains("could not be written"), "\(refused.1)")
            #expect(refused.1.contains("file-size limit"), "\(refused.1)")
            #expect(!daemon.exit.hasExited, "killed by SIGXFSZ? \(daemon.logText)")
            let (status, ready) = try await http("GET", daemon.base + "/readyz")
            #expect(status == 503, "\(ready)")
            #expect(ready.contains("\"database\":\"failing\""), "\(ready)")
            #expect(ready.contains("file-size limit"), "\(ready)")
            // Still failing a few checks later: a tiny write fitting in the log's space is not "working".
            try await poll(until: "a second push is refused too") {
                try await push(daemon, big).0 == 507
            }
            #expect(try await http("GET", daemon.base + "/readyz").0 == 503)

            // Room again (the limit lifted): ready, and the push is stored.
            let lifted = try await run(
                "/usr/bin/prlimit", ["--pid", "\(daemon.process.processIdentifier)", "--fsize=unlimited"])
            #expect(lifted.status == 0, "\(lifted.stderr)")
            try await poll(until: "/readyz is ready again", every: .milliseconds(100)) {
                let (status, body) = try await http("GET", daemon.base + "/readyz")
                return status == 200 && body.contains("\"database\":\"ok\"")
            }
            let stored = try await push(daemon, big)
            #expect(stored.0 == 200, "\(stored.1)")
            #expect(await daemon.stop() == 0)
            let failures = logLines(daemon, containing: "database write failed")
            #expect(failures.count == 1, "\(daemon.logText)")
            #expect(daemon.logText.contains("database usable again"))
        }
        await daemon.killIfRunning()
        try outcome.get()
    }

    @Test(
        "a full disk (a small tmpfs filled up): pushes get 507 'disk full', /readyz failing; ready again once room is made",
        .enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func fullDisk() async throws {
        let s = try Scratch()
        let disk = s.path("disk")
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        guard try await run("/bin/mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", disk]).status == 0 else {
            // A container without the capability: the file-size test covers the same path.
            return
        }
        let outcome = await Result {
            let cfg = try daemonConfig(s, database: "disk/k.sqlite")
            try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                let small = try await push(daemon, readingsCSV(10))
                #expect(small.0 == 200, "\(small.1)")
                // Fill the disk but for 64 KiB.
                let filler = disk + "/filler"
                var vfs = statvfs()
                #expect(statvfs(disk, &vfs) == 0)
                let free = Int(vfs.f_bavail) * Int(vfs.f_frsize)
                _ = FileManager.default.createFile(atPath: filler, contents: nil)
                let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: filler))
                let chunk = Data(repeating: 0x55, count: 64 << 10)
                for _ in 0..<(max(0, free - (64 << 10)) / chunk.count) { try handle.write(contentsOf: chunk) }
                try handle.close()

                let big = readingsCSV(60_000, station: "BIG")
                let refused = try await push(daemon, big)
                #expect(refused.0 == 507, "\(refused.1)")
                #expect(refused.1.contains("disk full"), "\(refused.1)")
                let (status, ready) = try await http("GET", daemon.base + "/readyz")
                #expect(status == 503, "\(ready)")
                #expect(ready.contains("\"database\":\"failing\""), "\(ready)")
                #expect(ready.contains("disk full"), "\(ready)")

                try FileManager.default.removeItem(atPath: filler)
                try await poll(until: "/readyz is ready again", every: .milliseconds(100)) {
                    let (status, body) = try await http("GET", daemon.base + "/readyz")
                    return status == 200 && body.contains("\"database\":\"ok\"")
                }
                let stored = try await push(daemon, big)
                #expect(stored.0 == 200, "\(stored.1)")
                #expect(await daemon.stop() == 0)
            }
        }
        try await run("/bin/umount", ["-l", disk])
        try outcome.get()
    }
}
