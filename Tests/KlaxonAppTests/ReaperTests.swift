import Foundation
import KlaxonTesting
import Synchronization
import Testing

/// The reaper that `launchProcess` starts so that a crashed test process leaves no daemon, `postgres`
/// or browser running (issue 38: a soak's crashed run left them holding ports for the next run).
@Suite struct ReaperTests {
    @Test(
        "once the test process's end closes its pipe, the reaper kills each listed child that is still the same process"
    )
    func reaperKillsListedChildrenAtEndOfFile() async throws {
        let victim = sleeper()
        let victimExit = ProcessExit(victim)
        let reused = sleeper()
        let reusedExit = ProcessExit(reused)
        try await launchProcess(victim)
        try await launchProcess(reused)

        let reaper = Process()
        reaper.executableURL = URL(fileURLWithPath: "/bin/sh")
        reaper.arguments = ["-c", Reaper.script]
        let input = Pipe()
        reaper.standardInput = input
        let reaperExit = ProcessExit(reaper)
        try await launchProcess(reaper)

        let start = try #require(Reaper.startTime(of: victim.processIdentifier))
        // The second line names a live pid with another start time: a pid the system gave again to
        // an unrelated process, which the reaper must spare.
        let lines = "\(victim.processIdentifier) \(start)\n\(reused.processIdentifier) 1\n"
        try input.fileHandleForWriting.write(contentsOf: Data(lines.utf8))
        try input.fileHandleForWriting.close()

        // Bounds for a failure report only: each exit comes as soon as the reaper has read its input.
        #expect(await reaperExit.wait(within: .seconds(600)))
        #expect(await victimExit.wait(within: .seconds(600)))
        #expect(victim.terminationReason == .uncaughtSignal)
        #expect(victim.terminationStatus == SIGKILL)
        #expect(reused.isRunning)
        // SIGKILL, not `terminate()`: a test process may ignore SIGTERM (a service's signal source
        // does), and its children inherit that.
        kill(reused.processIdentifier, SIGKILL)
        #expect(await reusedExit.wait(within: .seconds(600)))
    }

    private func sleeper() -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sleep")
        p.arguments = ["600"]
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        return p
    }
}

/// Foundation's `Process.run()` over-reads its `/proc/self/fd` buffer when the test process holds more
/// than about 1,350 descriptors (two soak runs died in it): `launchProcess` waits for room first.
@Suite struct DescriptorRoomTests {
    @Test("the count follows the descriptors the process opens and closes")
    func countFollowsOpenDescriptors() throws {
        let fds = (0..<40).map { _ in open("/dev/null", O_RDONLY | O_CLOEXEC) }
        #expect(fds.allSatisfy { $0 >= 0 })
        let with = DescriptorRoom.count()
        for fd in fds where fd >= 0 { close(fd) }
        // Other tests open and close descriptors meanwhile: only what this test holds is certain.
        #expect(with >= 40)
    }

    @Test("a launch waits while the count is at the limit and goes as soon as it falls below")
    func launchWaitsForRoom() async {
        let counts = Mutex([1_300, 1_250, 1_210, 1_199])
        let seen = Mutex(0)
        await DescriptorRoom.wait(limit: 1_200, patience: .seconds(600)) {
            seen.withLock { $0 += 1 }
            return counts.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
        }
        #expect(seen.withLock { $0 } == 4)
    }

    @Test("a count that never falls stops the wait after its patience, counted from the last fall")
    func patienceEndsTheWait() async {
        let seen = Mutex(0)
        await DescriptorRoom.wait(limit: 1_200, patience: .milliseconds(100)) {
            seen.withLock { $0 += 1 }
            return 5_000
        }
        #expect(seen.withLock { $0 } >= 2)
    }
}
