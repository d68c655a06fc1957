import Foundation
import KlaxonTesting
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
        try launchProcess(victim)
        try launchProcess(reused)

        let reaper = Process()
        reaper.executableURL = URL(fileURLWithPath: "/bin/sh")
        reaper.arguments = ["-c", Reaper.script]
        let input = Pipe()
        reaper.standardInput = input
        let reaperExit = ProcessExit(reaper)
        try launchProcess(reaper)

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
