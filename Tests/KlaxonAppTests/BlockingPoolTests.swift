import Foundation
import KlaxonCore
import Testing

@testable import KlaxonApp

/// Blocking work runs on NIO's blocking pool (`NIOThreadPool.singleton`), not on Dispatch's global
/// queue (issue 40): `offPool` hands it to `BlockingPool`, which the executable points at NIO.
@Suite("blocking work: NIO's blocking pool")
struct BlockingPoolTests {
    /// The name of the calling thread (NIO names its pool's threads `SGLTN-TP-#N`).
    static func threadName() -> String {
        let name = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)
        return name?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    }

    /// The names of the threads of process `pid`.
    static func threadNames(_ pid: Int32) -> [String] {
        let dir = "/proc/\(pid)/task"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
        return tasks.compactMap { try? String(contentsOfFile: "\(dir)/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    @Test("offPool runs on NIO's blocking pool once it is installed, to the end even if its caller is cancelled")
    func inProcess() async throws {
        BlockingPool.useNIOThreadPool()
        #expect(try await offPool { Self.threadName() }.hasPrefix("SGLTN-TP-#"))
        // Cancelled before and while its work runs: the work still runs and its result comes back,
        // as on a Dispatch worker (NIO's `runIfActive` would skip it).
        let ran = OneShot<Void>()
        let go = OneShot<Void>()
        let task = Task {
            try await offPool { () -> Int in
                ran.set(())
                // Waits on the test below (a bounded wait on the pool, never on the cooperative pool).
                let release = DispatchSemaphore(value: 0)
                Task {
                    await go.value()
                    release.signal()
                }
                release.wait()
                return 7
            }
        }
        task.cancel()
        await ran.value()
        go.set(())
        #expect(try await task.value == 7)
    }

    @Test("klaxon run: offPool's work (the metrics page) runs on NIO's blocking pool's threads")
    func daemon() async throws {
        let s = try Scratch()
        let cfg = try s.write("klaxon.yaml", "database: k.sqlite\nrules: []\nlisten: 127.0.0.1:0\n")
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            // The metrics are gathered and written out on the blocking pool (`offPool`).
            let (status, _) = try await http("GET", daemon.base + "/metrics")
            #expect(status == 200)
            let names = Self.threadNames(daemon.process.processIdentifier)
            #expect(names.contains { $0.hasPrefix("SGLTN-TP-#") }, "\(names)")
            #expect(await daemon.stop() == 0)
        }
    }
}
