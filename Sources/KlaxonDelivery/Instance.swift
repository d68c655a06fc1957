import Foundation
import KlaxonStore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// This process as an outbox claimant, and a test of whether another claimant's process still runs.
public enum ProcessIdentity {
    /// A new instance record for this process.
    public static func current(now: Int64) -> InstanceRecord {
        let pid = getpid()
        return InstanceRecord(
            id: UUID().uuidString.lowercased(), host: ProcessInfo.processInfo.hostName, pid: pid,
            processStart: startTime(pid: pid) ?? 0, registeredAt: now, heartbeatAt: now)
    }

    /// A process's start time in clock ticks since boot (field 22 of `/proc/PID/stat`), or nil.
    public static func startTime(pid: Int32) -> Int64? {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/stat"),
            let text = String(data: data, encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // After "pid (comm)" come the fields from 3 (state) on: start time is the 20th of them.
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? Int64(fields[19]) : nil
    }

    /// Whether the instance's process is still running on this host (a reused pid does not count).
    public static func isAlive(_ instance: InstanceRecord) -> Bool {
        if let start = startTime(pid: instance.pid) {
            return instance.processStart == 0 || start == instance.processStart
        }
        if FileManager.default.fileExists(atPath: "/proc/self/stat") { return false }
        return kill(instance.pid, 0) == 0 || errno == EPERM
    }
}
