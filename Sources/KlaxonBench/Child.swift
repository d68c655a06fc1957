import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fatal benchmark problem: bad arguments, a missing binary, a file that cannot be written.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// What one child process cost.
struct ChildRun {
    /// Wall time from just before spawning to just after reaping, in seconds.
    var seconds: Double
    /// CPU time (user + system), in seconds: steadier than wall time on a busy machine.
    var cpuSeconds: Double
    /// The child's peak resident set size, in bytes.
    var peakRSS: Int
    /// The exit status (128 + signal number when it was killed by a signal).
    var status: Int32
    /// What it wrote to standard error.
    var stderr: String
}

/// Runs programs and measures them.
///
/// Children are started with `posix_spawn` and reaped with `wait4`, which returns the `rusage` of that
/// one child: its `ru_maxrss` is the child's own peak (KiB on Linux, bytes on macOS). Foundation's
/// `Process` reaps children itself, and `getrusage(RUSAGE_CHILDREN)` gives the maximum over every child
/// reaped so far, so neither isolates one run.
///
/// One caveat: on Linux the kernel folds the RSS peak of the address space an `exec` replaces into the
/// new program's `ru_maxrss`, and glibc's `posix_spawn` runs the child in the parent's address space
/// until it execs. The figure is therefore at least this driver's own peak RSS; `floor()` measures it.
enum Child {
    /// Runs `arguments[0]` (a path) with the rest as its arguments; standard output goes to `stdoutPath`,
    /// standard error to `stderrPath` (read back into the result).
    static func run(_ arguments: [String], stdoutPath: String = "/dev/null", stderrPath: String) throws -> ChildRun {
        #if os(Linux)
            var actions = posix_spawn_file_actions_t()
        #else
            var actions: posix_spawn_file_actions_t? = nil
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }

        var pid: pid_t = 0
        let clock = ContinuousClock()
        let start = clock.now
        let rc = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        guard rc == 0 else { throw BenchError("\(arguments[0]): cannot run: \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw BenchError("wait4: \(String(cString: strerror(errno)))") }
        }
        let elapsed = start.duration(to: clock.now)

        #if os(Linux)
            let peak = Int(usage.ru_maxrss) * 1024
        #else
            let peak = Int(usage.ru_maxrss)
        #endif
        let signal = status & 0x7F
        let exitStatus = signal == 0 ? (status >> 8) & 0xFF : 128 + signal
        let errText = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
        let cpu = [usage.ru_utime, usage.ru_stime].reduce(0.0) { $0 + Double($1.tv_sec) + Double($1.tv_usec) / 1e6 }
        return ChildRun(
            seconds: seconds(elapsed), cpuSeconds: cpu, peakRSS: peak, status: exitStatus, stderr: errText)
    }

    /// The smallest peak RSS this driver can report: that of `/bin/true` spawned from here.
    static func floor(scratch: String) -> Int? {
        try? run(["/bin/true"], stderrPath: scratch).peakRSS
    }

    /// A duration in seconds.
    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
