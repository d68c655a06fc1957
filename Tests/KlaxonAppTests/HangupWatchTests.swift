import Foundation
import KlaxonTesting
import Testing

/// The daemon watches SIGHUP through ServiceLifecycle's `UnixSignalsSequence` (issue 40) and counts
/// that watch as its own, so the executable's watch, which speaks only when no daemon runs, stays quiet.
@Suite("klaxon run: SIGHUP through UnixSignalsSequence", .serialized)
struct HangupWatchTests {
    @Test("a SIGHUP reloads, once; the executable does not also say that no daemon runs; SIGTERM stops with 0")
    func hangupWhileRunning() async throws {
        let s = try Scratch()
        let cfg = try s.write("klaxon.yaml", "database: k.sqlite\nrules: []\nlisten: 127.0.0.1:0\n")
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            kill(daemon.process.processIdentifier, SIGHUP)
            try await poll(until: "the SIGHUP's reload is logged: \(daemon.logText)") {
                daemon.logText.contains("configuration reloaded")
            }
            #expect(daemon.logText.contains("SIGHUP"), "\(daemon.logText)")
            #expect(daemon.logText.components(separatedBy: "configuration reloaded").count - 1 == 1)
            #expect(!daemon.logText.contains("while no daemon runs"), "\(daemon.logText)")
            #expect(await daemon.stop() == 0, "\(daemon.logText)")
            #expect(daemon.logText.contains("klaxon stopping"))
        }
    }
}
