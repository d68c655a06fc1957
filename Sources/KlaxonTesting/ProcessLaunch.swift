import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Starts `p` while no other test starts a process, once the test process holds few enough
/// descriptors for Foundation to start it safely, and makes sure it does not outlive the test process.
///
/// One at a time: Foundation's `Process.run()` on Linux sets up the child's file actions and
/// environment from process-wide state; launches are quick, so taking them one at a time costs nothing
/// measurable; waiting for the child stays concurrent.
///
/// Few descriptors: see `DescriptorRoom`. In an async context this overload waits without holding a
/// thread; the synchronous one (for code on a thread of its own) waits on its thread.
///
/// Not outliving the tests: when a test process crashes, the daemons, `postgres` servers and browsers
/// it started used to keep running, holding ports and cores, and the next run of the suite failed
/// beside them. Each child is told to a `Reaper`, which kills what is left when the test process is
/// gone, however it ended.
public func launchProcess(_ p: Process) async throws {
    await DescriptorRoom.wait()
    try launchNow(p)
}

/// `launchProcess` for synchronous code on a thread of its own (a Dispatch or NIO pool thread).
public func launchProcess(_ p: Process) throws {
    DescriptorRoom.waitOnThisThread()
    try launchNow(p)
}

private func launchNow(_ p: Process) throws {
    try launchLock.withLock { reaper in
        try p.run()
        if reaper == nil { reaper = Reaper.start() }
        reaper?.watch(p.processIdentifier)
    }
}

private let launchLock = Mutex<Reaper?>(nil)

/// Foundation's `Process.run()` on Linux (swift-corelibs-foundation as shipped with Swift 6.3) finds
/// the highest open descriptor by reading `/proc/self/fd` and copying each `readdir(3)` record as a
/// whole `struct dirent` (280 bytes), though glibc packs the records at their `d_reclen` (24 bytes
/// for these names) into a 32 KiB buffer. When the process holds more than about 1,350 descriptors
/// the buffer fills, the last record's copy reads up to 256 bytes past its end, and when the buffer
/// is the last thing in its malloc arena's mapping the read faults: two soak runs died so, `memcpy`
/// in `Process.run()` at a page boundary with the descriptor "1362" in a register (the suite's
/// parallel start peaks above 1,500 descriptors). Upstream has since fixed it ("Don't bulk-copy
/// `pointee.d_name`" in `findMaximumOpenFromProcSelfFD`). Until the toolchain carries the fix, a
/// launch waits while the process holds `limit` descriptors or more: below that the buffer never
/// fills, and the over-read stays inside it. The wait is bounded (`patience`, counted while the number
/// does not fall) so that tests that hold descriptors while they wait for a launch cannot hang the
/// suite; past it the launch goes ahead, as it did before. `klaxon` itself never runs `Process`.
package enum DescriptorRoom {
    /// 32 KiB of 24-byte records is 1,365 entries, `.` and `..` among them; 150 to spare for what
    /// other threads open between the count and the launch.
    package static let limit = 1_200
    package static let patience: Duration = .seconds(120)

    /// How many descriptors this process holds: the entries of `/proc/self/fd` (less `.`, `..` and
    /// the directory's own), counted without reading a record (reading one whole is the bug above).
    package static func count() -> Int {
        guard let dir = opendir("/proc/self/fd") else { return 0 }
        defer { closedir(dir) }
        var n = 0
        while readdir(dir) != nil { n += 1 }
        return max(0, n - 3)
    }

    package static func wait(
        limit: Int = limit, patience: Duration = patience, count: () -> Int = count
    ) async {
        var best = count()
        var since = ContinuousClock.now
        while best >= limit && ContinuousClock.now - since < patience {
            try? await Task.sleep(for: .milliseconds(20))
            let now = count()
            if now < best { (best, since) = (now, ContinuousClock.now) }
            if now < limit { return }
        }
    }

    package static func waitOnThisThread(
        limit: Int = limit, patience: Duration = patience, count: () -> Int = count
    ) {
        var best = count()
        var since = ContinuousClock.now
        while best >= limit && ContinuousClock.now - since < patience {
            usleep(20_000)
            let now = count()
            if now < best { (best, since) = (now, ContinuousClock.now) }
            if now < limit { return }
        }
    }
}

/// A `/bin/sh` child that reads "pid starttime" lines on its standard input until end of file, which
/// the kernel gives it when the test process is gone (the pipe's only writer is this process, and the
/// write end is close-on-exec, so no other child holds it). It then kills each listed process that is
/// still the same process: the start time from `/proc/PID/stat` guards against a reused pid.
///
/// Not `PR_SET_PDEATHSIG`: that signal follows the *thread* that forked the child, and the
/// cooperative pool's threads come and go, so a live daemon would be killed when its launching
/// thread retires. A pipe's end of file follows the process.
package struct Reaper: Sendable {
    let fd: Int32

    static func start() -> Reaper? {
        var fds: [Int32] = [-1, -1]
        // `pipe2` is not in Glibc's Swift overlay; `fcntl` right after is as good here, since every
        // test launch waits for the lock this runs under.
        guard pipe(&fds) == 0 else { return nil }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let sh = Process()
        sh.executableURL = URL(fileURLWithPath: "/bin/sh")
        sh.arguments = ["-c", script]
        sh.standardInput = FileHandle(fileDescriptor: fds[0], closeOnDealloc: false)
        sh.standardOutput = FileHandle.nullDevice
        sh.standardError = FileHandle.nullDevice
        do {
            try sh.run()
        } catch {
            close(fds[0])
            close(fds[1])
            return nil
        }
        close(fds[0])
        return Reaper(fd: fds[1])
    }

    func watch(_ pid: Int32) {
        guard pid > 0, let start = Reaper.startTime(of: pid) else { return }
        FileHandle(fileDescriptor: fd, closeOnDealloc: false).writeAllRetrying(Data("\(pid) \(start)\n".utf8))
    }

    /// Field 22 of `/proc/PID/stat`, counted after the command name, which may hold spaces and ends at
    /// the last ')'.
    package static func startTime(of pid: Int32) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? String(fields[19]) : nil
    }

    // Ignores the signals a terminal sends its foreground group, so that ^C on `swift test` still
    // leaves the reaper to clean up after it.
    package static let script = #"""
        trap '' INT HUP TERM
        list=""
        while read -r pid start; do list="$list $pid:$start"; done
        for entry in $list; do
          pid=${entry%%:*}; start=${entry#*:}
          stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
          set -- ${stat##*) }
          [ "${20}" = "$start" ] && kill -9 "$pid" 2>/dev/null
        done
        exit 0
        """#
}
