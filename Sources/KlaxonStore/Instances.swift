import Foundation
import KlaxonCore

/// A process that claims outbox rows. A claim names its instance; a process that restarts on the
/// same host finds the instances whose process is gone and takes their claims back at once.
public struct InstanceRecord: Codable, Sendable, Equatable {
    public var id: String
    public var host: String
    public var pid: Int32
    /// The process's start time in clock ticks since boot (`/proc/PID/stat`), 0 where unknown.
    public var processStart: Int64
    /// Milliseconds since the epoch.
    public var registeredAt: Int64
    public var heartbeatAt: Int64

    enum CodingKeys: String, CodingKey {
        case id, host, pid
        case processStart = "process_start"
        case registeredAt = "registered_at"
        case heartbeatAt = "heartbeat_at"
    }

    public init(id: String, host: String, pid: Int32, processStart: Int64, registeredAt: Int64, heartbeatAt: Int64) {
        self.id = id
        self.host = host
        self.pid = pid
        self.processStart = processStart
        self.registeredAt = registeredAt
        self.heartbeatAt = heartbeatAt
    }
}
