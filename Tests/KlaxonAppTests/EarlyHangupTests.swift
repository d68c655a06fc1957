import Foundation
import KlaxonTesting
import Testing

/// A SIGHUP that comes while `klaxon run` is still starting (issue 38, item 20): it must never end
/// the daemon. The first statement of `main` ignores SIGHUP, before the SIGPIPE that follows it;
/// the daemon's reload handler takes over once it is watching.
@Suite("klaxon run: SIGHUP at start", .serialized)
struct EarlyHangupTests {
    /// The signal mask `field` (`SigIgn`, `SigCgt`) of a process, from /proc; nil once it is gone.
    static func signalMask(_ pid: Int32, _ field: String) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return UInt64(line.dropFirst(field.count + 1).trimmingCharacters(in: .whitespaces), radix: 16)
        }
        return nil
    }

    /// Whether `signo` is in a mask of /proc/PID/status.
    static func has(_ mask: UInt64?, _ signo: Int32) -> Bool { (mask ?? 0) & (UInt64(1) << UInt64(signo - 1)) != 0 }

    @Test("30 times: a SIGHUP sent as soon as main runs leaves the daemon running; it then listens and stops with 0")
    func hangupAtStart() async throws {
        let s = try Scratch()
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        let cfg = try s.write("klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: 127.0.0.1:0\n")
        for round in 1...30 {
            let p = Process()
            p.executableURL = klaxonBinary
            p.arguments = ["run", "--config", cfg]
            p.currentDirectoryURL = s.dir
            let log = s.dir.appendingPathComponent("daemon-\(round).log")
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            p.standardError = try FileHandle(forWritingTo: log)
            p.standardOutput = FileHandle.nullDevice
            let exit = ProcessExit(p)
            try await launchProcess(p)
            let pid = p.processIdentifier
            let text = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
            let outcome = await Result {
                // `main` has begun once SIGPIPE is ignored (its first lines): send SIGHUP then, at
                // once. Before the program runs at all, the loader has the process, and a SIGHUP
                // would take its default action whatever the program does.
                try await poll(until: "klaxon run ignores SIGPIPE (round \(round))", every: .microseconds(200)) {
                    if exit.hasExited { throw SinkError(message: "exited before main: \(text())") }
                    return Self.has(Self.signalMask(pid, "SigIgn"), SIGPIPE)
                }
                kill(pid, SIGHUP)
                try await poll(until: "klaxon run listens after an early SIGHUP (round \(round)): \(text())") {
                    if exit.hasExited { throw SinkError(message: "round \(round): ended by SIGHUP: \(text())") }
                    return DaemonProcess.listeningPort(text()) != nil
                }
                #expect(!exit.hasExited)
                p.terminate()
                #expect(await exit.wait(within: DaemonProcess.stopLimit), "round \(round): \(text())")
                #expect(p.terminationReason == .exit && p.terminationStatus == 0, "round \(round): \(text())")
            }
            if !exit.hasExited {
                kill(pid, SIGKILL)
                _ = await exit.wait(within: .seconds(60))
            }
            try outcome.get()
        }
    }
}
