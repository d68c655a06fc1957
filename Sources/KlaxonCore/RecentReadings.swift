/// The readings of one series over a recent span (the last hour for a `rate` rule, the last day for
/// a flood message's sparkline), oldest first. The engine keeps one per series when a rule watching
/// it asks for history; appending is amortized O(1).
public struct RecentReadings: Sendable, Hashable {
    /// How far back readings are kept, in seconds (0 keeps nothing).
    public let span: Int64
    private var times: [Int64] = []
    private var values: [Double] = []
    private var start = 0

    public init(span: Int64) {
        self.span = span
    }

    public var isEmpty: Bool { start == times.count }
    public var count: Int { times.count - start }

    /// The readings kept, oldest first.
    public var readings: [(time: Int64, value: Double)] {
        (start..<times.count).map { (times[$0], values[$0]) }
    }

    public var last: (time: Int64, value: Double)? {
        isEmpty ? nil : (times[times.count - 1], values[values.count - 1])
    }

    /// Adds a reading newer than every reading kept, and forgets those older than `span` before it
    /// (keeping the newest one at or before that edge, so a window always has its starting point).
    /// A revision of the newest reading (same time, new value): its value is replaced.
    public mutating func revise(time: Int64, value: Double) {
        guard span > 0, let last = times.last, last == time else { return append(time: time, value: value) }
        values[values.count - 1] = value
    }

    public mutating func append(time: Int64, value: Double) {
        guard span > 0 else { return }
        times.append(time)
        values.append(value)
        let edge = time.subtractingClamped(span)
        while start + 1 < times.count && times[start + 1] <= edge { start += 1 }
        if start > 64 && start * 2 > times.count {
            times.removeFirst(start)
            values.removeFirst(start)
            start = 0
        }
    }

    /// The change per `per` seconds over the `window` ending at the newest reading: from the newest
    /// reading at or before the window's start (when it is no older than two windows), else from the
    /// oldest reading inside the window if the readings cover at least half of it. Nil when there is
    /// too little data for an honest rate (a gap, or a series just started).
    public func rate(window: Int64, per: Int64) -> (rate: Double, from: (time: Int64, value: Double))? {
        guard let now = last, window > 0 else { return nil }
        let edge = now.time.subtractingClamped(window)
        var base: Int? = nil
        var i = times.count - 1
        while i >= start {
            if times[i] <= edge {
                if now.time.subtractingClamped(times[i]) <= window.multipliedClamped(by: 2) { base = i }
                break
            }
            i -= 1
        }
        if base == nil {
            // Oldest reading inside the window.
            let first = max(i + 1, start)
            if first < times.count - 1, now.time.subtractingClamped(times[first]) >= window / 2 { base = first }
        }
        guard let b = base, now.time > times[b] else { return nil }
        let rate = (now.value - values[b]) / Double(now.time - times[b]) * Double(per)
        return (rate, (times[b], values[b]))
    }

    /// A sparkline (▁▂▃▄▅▆▇█) of the last `over` seconds, one character per bucket (the bucket's
    /// highest value), starting at the first bucket with data; empty buckets after it are spaces.
    /// Empty string with no readings.
    public func sparkline(over: Int64, buckets: Int = 24) -> String {
        guard let now = last else { return "" }
        return Self.sparkline(of: readings, from: now.time - over, to: now.time, buckets: buckets)
    }

    /// A sparkline of the readings in `(from, to]`, `buckets` characters at most (each bucket's highest
    /// value), starting at the first bucket with data; empty buckets after it are spaces.
    public static func sparkline(of readings: [(time: Int64, value: Double)], from: Int64, to: Int64, buckets: Int = 24)
        -> String
    {
        let span = to - from
        guard buckets > 0, span > 0 else { return "" }
        var peaks = [Double?](repeating: nil, count: buckets)
        for (t, v) in readings where t > from && t <= to {
            // (t − from − 1): a reading exactly on a bucket's end belongs to that bucket.
            let b = min(buckets - 1, max(0, Int((t - from - 1) * Int64(buckets) / span)))
            peaks[b] = max(peaks[b] ?? -.infinity, v)
        }
        return sparkline(Array(peaks.drop { $0 == nil }))
    }

    /// Draws values as ▁…█ scaled between their min and max (nil = gap, drawn as a space).
    public static func sparkline(_ values: [Double?]) -> String {
        let bars: [Character] = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        let present = values.compactMap { $0 }
        guard let lo = present.min(), let hi = present.max() else { return "" }
        var out = ""
        for v in values {
            guard let v else {
                out.append(" ")
                continue
            }
            let k = hi > lo ? Int(((v - lo) / (hi - lo) * 7).rounded()) : 3
            out.append(bars[min(7, max(0, k))])
        }
        return out
    }
}
