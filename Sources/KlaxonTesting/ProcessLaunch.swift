import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Starts `p` while no other test starts a process, and makes sure it does not outlive the test
/// process.
///
/// One at a time: Foundation's `Process.run()` on Linux sets up the child's file actions and
/// environment from process-wide state; a soak crashed inside it (a bad read in `memcpy`) while many
/// tests spawned `klaxon`, `python3` and `postgres` at once. Launches are quick, so taking them one at
/// a time costs nothing measurable; waiting for the child stays concurrent.
///
/// Not outliving the tests: when a test process crashes, the daemons, `postgres` servers and browsers
/// it started used to keep running, holding ports and cores, and the next run of the suite failed
/// beside them. Each child is told to a `Reaper`, which kills what is left when the test process is
/// gone, however it ended.
public func launchProcess(_ p: Process) throws {
    try launchLock.withLock { reaper in
        try p.run()
        if reaper == nil { reaper = Reaper.start() }
        reaper?.watch(p.processIdentifier)
    }
}

private let launchLock = Mutex<Reaper?>(nil)

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
