import Foundation
import KlaxonDelivery
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// The daemon's open-files limit (RLIMIT_NOFILE). The usual soft limit of 1,024 is far below what a
/// server needs, and below the hard limit it may raise itself to: at start the daemon takes the hard
/// limit, and caps its HTTP connections below it with room for everything else (see `reserve`).
public enum FileLimits {
    /// The soft and hard limits now (`Int.max` for unlimited); nil if they cannot be read.
    public static func current() -> (soft: Int, hard: Int)? {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return nil }
        return (count(limit.rlim_cur), count(limit.rlim_max))
    }

    /// Raises the soft limit to the hard one (an unlimited hard limit to the kernel's per-process
    /// ceiling, which `setrlimit` accepts) and logs both; returns the soft limit in force.
    @discardableResult
    public static func raise(logger: Logger) -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else {
            logger.warning("cannot read the open-files limit", metadata: ["errno": .stringConvertible(errno)])
            return 1024
        }
        let before = limit.rlim_cur
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max == rlim_t.max ? rlim_t(nrOpen()) : limit.rlim_max
            if raised.rlim_cur > limit.rlim_cur, setrlimit(resource, &raised) == 0 {
                limit = raised
            } else {
                logger.warning(
                    "cannot raise the open-files limit",
                    metadata: [
                        "soft": "\(count(before))", "hard": "\(count(limit.rlim_max))",
                        "errno": .stringConvertible(errno),
                    ])
            }
        }
        logger.info(
            "open-files limit",
            metadata: [
                "soft": "\(count(limit.rlim_cur))", "was": "\(count(before))", "hard": "\(count(limit.rlim_max))",
            ])
        return count(limit.rlim_cur)
    }

    /// Descriptors the daemon keeps free of HTTP connections: stdio and logs; the event loops'
    /// epoll, event and timer descriptors; libdispatch's threads (it traps when it cannot open
    /// /proc/self/task/…); the database (SQLite's writer, readers and WAL, or PostgreSQL's pool and a
    /// connection per duty); each source's fetch or stream; each receiver's connections.
    public static func reserve(config: Config) -> Int {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let receivers = config.receivers.reduce(0) { $0 + $1.connections }
        var database = 16
        if case .postgres? = config.store { database += config.sources.count + 2 }
        return 96 + 4 * cores + database + 2 * config.sources.count + receivers
    }

    private static func count(_ value: rlim_t) -> Int {
        value == rlim_t.max ? Int.max : Int(clamping: value)
    }

    /// The kernel's ceiling on a process's open files (/proc/sys/fs/nr_open), 1,048,576 by default.
    private static func nrOpen() -> Int {
        let text = (try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8)) ?? ""
        return Int(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1 << 20
    }

    #if os(Linux)
        private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
        private static let resource = RLIMIT_NOFILE
    #endif
}
