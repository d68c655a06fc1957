import Foundation

/// The `process_*` metrics of client_golang's process collector (same names, types, help and units),
/// read from `/proc/self` at each scrape. Hand-written: swift-prometheus has no process collector,
/// and these are a few small files. A file that cannot be read or parsed leaves its series out
/// rather than reporting a made-up value.
public struct ProcessMetrics: Sendable, Equatable {
    /// User plus system CPU time (seconds).
    public var cpuSeconds: Double?
    public var residentBytes: Double?
    public var virtualBytes: Double?
    public var openFDs: Double?
    public var maxFDs: Double?
    /// Seconds since the epoch.
    public var startTime: Double?

    public init() {}

    /// The figures of `/proc/self/stat` (fields after the command name), by their 1-based field number.
    public struct Stat: Sendable, Equatable {
        public var utime: Double
        public var stime: Double
        /// Clock ticks after boot.
        public var startTime: Double
        public var vsize: Double
        /// Pages.
        public var rss: Double
    }

    /// Parses `/proc/self/stat`: `pid (comm) state ppid …`. The command name may hold spaces and
    /// parentheses (`(klax on) )`), so the fields start after the *last* `)`, as procfs advises.
    public static func parseStat(_ text: String) -> Stat? {
        guard let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // fields[0] is field 3 (state): field n is fields[n - 3].
        func field(_ n: Int) -> Double? {
            let i = n - 3
            guard fields.indices.contains(i), let v = Double(fields[i].trimmingCharacters(in: .whitespacesAndNewlines))
            else { return nil }
            return v >= 0 ? v : nil
        }
        guard let utime = field(14), let stime = field(15), let start = field(22), let vsize = field(23),
            let rss = field(24)
        else { return nil }
        return Stat(utime: utime, stime: stime, startTime: start, vsize: vsize, rss: rss)
    }

    /// The boot time (`btime` line of `/proc/stat`), seconds since the epoch.
    public static func parseBootTime(_ text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// The soft limit of `Max open files` in `/proc/self/limits`; nil when unlimited or unreadable.
    public static func parseMaxFDs(_ text: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix("Max open files") {
            let words = line.dropFirst("Max open files".count).split(separator: " ")
            return words.first.flatMap { Double($0) }
        }
        return nil
    }

    /// The figures from the texts of the three files and the count of `/proc/self/fd`.
    public static func make(
        stat: String?, procStat: String?, limits: String?, openFDs: Int?, ticks: Double, pageSize: Double
    ) -> ProcessMetrics {
        var m = ProcessMetrics()
        if let s = stat.flatMap(parseStat), ticks > 0 {
            m.cpuSeconds = (s.utime + s.stime) / ticks
            m.residentBytes = s.rss * pageSize
            m.virtualBytes = s.vsize
            if let boot = procStat.flatMap(parseBootTime) { m.startTime = boot + s.startTime / ticks }
        }
        m.maxFDs = limits.flatMap(parseMaxFDs)
        m.openFDs = openFDs.map(Double.init)
        return m
    }

    /// The start time never changes: `/proc/stat` (large on a machine with many CPUs) is read once.
    private static let startTime: Double? = {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard ticks > 0, let s = read("/proc/self/stat").flatMap(parseStat),
            let boot = read("/proc/stat").flatMap(parseBootTime)
        else { return nil }
        return boot + s.startTime / ticks
    }()

    /// This process now (blocking reads of small /proc files: call it off the cooperative pool).
    public static func current() -> ProcessMetrics {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
        var m = make(
            stat: read("/proc/self/stat"), procStat: nil, limits: read("/proc/self/limits"),
            openFDs: (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")).map(\.count),
            ticks: ticks, pageSize: pageSize)
        m.startTime = startTime
        return m
    }

    /// A /proc file's text, at most 64 KiB (they report size 0, so read to the end).
    static func read(_ path: String) -> String? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: 64 << 10), !data.isEmpty else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The exposition of the series present: client_golang's names, types and help.
    public func emit(into out: inout String) {
        func family(_ name: String, _ type: String, _ help: String, _ value: Double?) {
            guard let value, value.isFinite else { return }
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(Exposition.number(value))\n"
        }
        family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", cpuSeconds)
        family("process_open_fds", "gauge", "Number of open file descriptors.", openFDs)
        family("process_max_fds", "gauge", "Maximum number of open file descriptors.", maxFDs)
        family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", virtualBytes)
        family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", residentBytes)
        family(
            "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", startTime)
    }
}

/// Text exposition details shared by the hand-written families.
enum Exposition {
    /// A sample value as Go's `strconv.FormatFloat(v, 'g', -1, 64)` would accept it back: integers
    /// without a fraction, others in Swift's shortest round-trip form.
    static func number(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }

}
