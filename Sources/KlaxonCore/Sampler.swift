/// Thins a fast stream per key (a city of an AQI feed): the first two samples of each key are kept
/// (so a trend exists at once), then at most one per `every` seconds.
public struct Sampler: Sendable {
    public var every: Int64
    private var seen: [String: (count: Int, lastKept: Int64)] = [:]

    public init(every: Int64) {
        self.every = every
    }

    /// Whether to keep a sample of `key` taken at `time` (seconds); records it when kept.
    public mutating func keep(_ key: String, at time: Int64) -> Bool {
        guard let s = seen[key] else {
            seen[key] = (1, time)
            return true
        }
        if s.count < 2 || time - s.lastKept >= every {
            seen[key] = (s.count + 1, time)
            return true
        }
        return false
    }
}
