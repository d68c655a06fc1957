/// Readings reduced to what a chart of a given pixel width can show: one column per pixel, each
/// keeping its first, lowest, highest and last value, so a spike of one reading survives however
/// many readings share its column. A gap (no reading for longer than a threshold) ends a segment:
/// the chart draws gaps as gaps, not as a line across the missing time.
enum Downsample {
    struct Column: Equatable {
        /// The pixel column, `0..<width`.
        var x: Int
        var first: Double
        var min: Double
        var max: Double
        var last: Double
        /// Whether the lowest value came before the highest (the order the line visits them).
        var minFirst: Bool
        var count: Int
    }

    /// Runs of readings with no gap, each as its columns in time order.
    typealias Segment = [Column]

    /// The gap threshold for readings at these times: 3 × the median interval between consecutive
    /// readings, and at least `floor` seconds (nil with fewer than 2 readings: nothing to break).
    static func gapThreshold(_ times: [Int64], floor: Int64 = 60) -> Int64? {
        guard times.count >= 2 else { return nil }
        var gaps: [Int64] = []
        gaps.reserveCapacity(min(times.count - 1, 4096))
        // A sample of the intervals is enough for a median (and keeps a year of readings cheap).
        let stride = Swift.max(1, (times.count - 1) / 4096)
        var i = 1
        while i < times.count {
            gaps.append(times[i] - times[i - 1])
            i += stride
        }
        gaps.sort()
        return Swift.max(floor, 3 * gaps[gaps.count / 2])
    }

    /// The readings in `from...to` (time-ordered) bucketed into `width` columns and split at gaps
    /// longer than `gap` seconds (nil: never split). Readings outside the range are left out.
    static func segments(
        _ points: [(time: Int64, value: Double)], from: Int64, to: Int64, width: Int, gap: Int64?
    ) -> [Segment] {
        guard width > 0, to > from else { return [] }
        let span = Double(to - from)
        let w = Double(width)
        var out: [Segment] = []
        var current: Segment = []
        var previous: Int64? = nil
        for p in points {
            guard p.time >= from, p.time <= to, p.value.isFinite else { continue }
            if let prev = previous, let gap, p.time - prev > gap, !current.isEmpty {
                out.append(current)
                current = []
            }
            previous = p.time
            let x = Swift.min(width - 1, Int(Double(p.time - from) / span * w))
            if var c = current.last, c.x == x {
                if p.value < c.min {
                    c.min = p.value
                    c.minFirst = false
                } else if p.value > c.max {
                    c.max = p.value
                    c.minFirst = true
                }
                c.last = p.value
                c.count += 1
                current[current.count - 1] = c
            } else {
                current.append(
                    Column(x: x, first: p.value, min: p.value, max: p.value, last: p.value, minFirst: true, count: 1))
            }
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// The values a line visits in a column, in time order, without repeats.
    static func visits(_ c: Column) -> [Double] {
        var v = [c.first]
        let middle = c.minFirst ? [c.min, c.max] : [c.max, c.min]
        for m in middle + [c.last] where m != v.last { v.append(m) }
        return v
    }
}
