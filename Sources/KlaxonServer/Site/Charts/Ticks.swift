import Foundation
import KlaxonCore

/// Axis ticks: round numbers for values, local clock and calendar boundaries for times.
enum Ticks {
    /// Round-number ticks covering `low...high`: about `count` of them, each a multiple of 1, 2 or
    /// 5 × 10ⁿ. Returns the ticks and the domain they span (the data widened to whole steps).
    static func values(low: Double, high: Double, count: Int = 5) -> (ticks: [Double], domain: ClosedRange<Double>) {
        var lo = low
        var hi = high
        if !lo.isFinite || !hi.isFinite { (lo, hi) = (0, 1) }
        if hi < lo { swap(&lo, &hi) }
        if hi - lo < 1e-9 {
            let pad = Swift.max(abs(lo) * 0.05, 0.5)
            lo -= pad
            hi += pad
        }
        let step = niceStep((hi - lo) / Double(Swift.max(1, count)))
        let start = (lo / step).rounded(.down)
        let end = (hi / step).rounded(.up)
        var ticks: [Double] = []
        var k = start
        while k <= end && ticks.count < 50 {
            ticks.append(clean(k * step, step: step))
            k += 1
        }
        return (ticks, clean(start * step, step: step)...clean(end * step, step: step))
    }

    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        let n = raw / magnitude
        let nice: Double = n <= 1 ? 1 : n <= 2 ? 2 : n <= 5 ? 5 : 10
        return nice * magnitude
    }

    /// `k × step` without the floating-point tail (`0.30000000000000004` → `0.3`).
    static func clean(_ v: Double, step: Double) -> Double {
        let decimals = Swift.max(0, -Int((log10(step)).rounded(.down)))
        let scale = pow(10, Double(Swift.min(decimals, 12)))
        return (v * scale).rounded() / scale
    }

    /// A tick's label: as `formatValue` writes values.
    static func label(_ v: Double) -> String { formatValue(v) }

    /// Time ticks in `from...to` at local boundaries in `zone` (hours, midnights, month starts),
    /// at most `maxCount`, each with its label (`15:00`, `Tue 3`, `Mar 14`, `Mar 2025`).
    static func times(from: Int64, to: Int64, zone: TimeZone, maxCount: Int) -> [(time: Int64, label: String)] {
        guard to > from, maxCount > 0 else { return [] }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let span = Double(to - from)
        // Intervals: one fewer than the ticks.
        let intervals = Double(max(1, maxCount - 1))
        let hour = 3600.0
        let day = 86_400.0
        let hourSteps = [1, 2, 3, 6, 12]
        let daySteps = [1, 2, 7, 14]
        let monthSteps = [1, 2, 3, 6, 12]
        var out: [(time: Int64, label: String)] = []
        let start = Date(timeIntervalSince1970: Double(from))
        let end = Date(timeIntervalSince1970: Double(to))
        if let h = hourSteps.first(where: { span / (Double($0) * hour) <= intervals }) {
            // Every h hours of the local clock (hour by hour, so a DST change keeps the labels on
            // multiples of h), counted from local midnight.
            var d = calendar.startOfDay(for: start)
            var steps = 0
            while d <= end && out.count < 200 && steps < 2000 {
                steps += 1
                let c = calendar.dateComponents([.hour, .minute, .day, .weekday], from: d)
                if d >= start, (c.hour ?? 0) % h == 0 {
                    let label =
                        c.hour == 0 && c.minute == 0
                        ? "\(weekdays[(c.weekday ?? 1) - 1]) \(c.day ?? 1)"
                        : String(format: "%02d:%02d", c.hour ?? 0, c.minute ?? 0)
                    out.append((Int64(d.timeIntervalSince1970), label))
                }
                guard let next = calendar.date(byAdding: .hour, value: 1, to: d) else { break }
                d = next
            }
            return out
        }
        if let n = daySteps.first(where: { span / (Double($0) * day) <= intervals }) {
            var d = calendar.startOfDay(for: start)
            if d < start { d = calendar.date(byAdding: .day, value: 1, to: d) ?? d }
            // Weekly ticks fall on Mondays.
            if n >= 7 {
                while calendar.component(.weekday, from: d) != 2 {
                    d = calendar.date(byAdding: .day, value: 1, to: d) ?? d
                }
            }
            while d <= end && out.count < 200 {
                let c = calendar.dateComponents([.month, .day], from: d)
                out.append((Int64(d.timeIntervalSince1970), "\(months[(c.month ?? 1) - 1]) \(c.day ?? 1)"))
                guard let next = calendar.date(byAdding: .day, value: n, to: d) else { break }
                d = next
            }
            return out
        }
        let m = monthSteps.first(where: { span / (Double($0) * 30.44 * day) <= intervals }) ?? 12
        var c = calendar.dateComponents([.year, .month], from: start)
        c.day = 1
        var d = calendar.date(from: c) ?? start
        if d < start { d = calendar.date(byAdding: .month, value: 1, to: d) ?? d }
        while d <= end && out.count < 200 {
            let parts = calendar.dateComponents([.year, .month], from: d)
            let month = parts.month ?? 1
            if (month - 1) % m == 0 {
                out.append((Int64(d.timeIntervalSince1970), "\(months[month - 1]) \(parts.year ?? 0)"))
            }
            guard let next = calendar.date(byAdding: .month, value: 1, to: d) else { break }
            d = next
        }
        return out
    }

    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
}
