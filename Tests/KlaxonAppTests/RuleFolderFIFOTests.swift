import Foundation
import KlaxonTesting
import Testing

/// A FIFO (or a device, a socket) named `*.yaml` where the rules are read (issue 38, item 19): an
/// error naming the file, at once, never a read that waits for a writer. A reload that met one used
/// to hang, holding every later reload while the reload gauge still said 1.
@Suite("rule folders: files only", .serialized, .timeLimit(.minutes(10)))
struct RuleFolderFIFOTests {
    func metric(_ daemon: DaemonProcess, _ name: String) async throws -> Double? {
        let (_, text) = try await http("GET", daemon.base + "/metrics")
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
            Double($0.dropFirst(name.count + 1))
        }
    }

    @Test("klaxon check: a FIFO named evil.yaml in the rules folder is an error with its path, at once")
    func checkRefusesAFIFO() async throws {
        let s = try Scratch()
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        #expect(mkfifo(s.path("rules/evil.yaml"), 0o644) == 0)
        // A hang is killed at the limit (and fails here as `killed`).
        let r = try await klaxonAsync(["check", "--rules", s.path("rules")], in: s.dir, limit: .seconds(60))
        #expect(!r.killed, "klaxon check waited on the FIFO")
        #expect(r.status == 1, "\(r.stderr)")
        #expect(
            r.stderr.contains(
                "\(s.path("rules/evil.yaml")):1:1: error: is a FIFO (named pipe): only regular files are read"),
            "\(r.stderr)")
    }

    @Test("klaxon run: a reload that meets a FIFO fails at once (gauge 0, path in the answer); later reloads still run")
    func reloadRefusesAFIFO() async throws {
        let s = try Scratch()
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        let cfg = try s.write(
            "klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: 127.0.0.1:0\napi: {token: s3cret}\n")
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            #expect(mkfifo(s.path("rules/evil.yaml"), 0o644) == 0)
            kill(daemon.process.processIdentifier, SIGHUP)
            try await poll(until: "the SIGHUP reload fails: \(daemon.logText)") {
                daemon.logText.contains("reload failed")
            }
            #expect(try await metric(daemon, "klaxon_config_last_reload_successful") == 0)
            let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
            #expect(status == 500, "\(body)")
            #expect(body.contains("evil.yaml:1:1: error: is a FIFO (named pipe)"), "\(body)")
            try FileManager.default.removeItem(atPath: s.path("rules/evil.yaml"))
            let (ok, answer) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
            #expect(ok == 200, "\(answer)")
            #expect(try await metric(daemon, "klaxon_config_last_reload_successful") == 1)
            #expect(await daemon.stop() == 0)
        }
    }
}
