/// Times in Klaxon are whole seconds since 1970-01-01T00:00:00Z (UTC), held as `Int64`.
///
/// Parsing and formatting are hand-written: they sit on the hot path of ingest and replay,
/// where Foundation's ISO 8601 formatter would cost more than the rest of the work together.
public enum Timestamp {
    /// Parses ISO 8601 `YYYY-MM-DDTHH:MM[:SS[.fff]](Z|±HH[:MM])` into UTC seconds.
    /// A time without a zone is rejected: it could mean any zone.
    /// Fractions of a second are truncated toward the earlier second.
    public static func parse(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    /// Parses from raw UTF-8 bytes (see `parse(_:)`).
    public static func parse(bytes b: UnsafeBufferPointer<UInt8>) -> Int64? {
        let n = b.count
        guard n >= 17 else { return nil }
        @inline(__always) func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= n else { return nil }
            var v = 0
            for i in at..<(at + count) {
                let c = b[i] &- 48
                guard c < 10 else { return nil }
                v = v * 10 + Int(c)
            }
            return v
        }
        guard let year = digits(0, 4), b[4] == 0x2D, let month = digits(5, 2), b[7] == 0x2D,
            let day = digits(8, 2), b[10] == 0x54 || b[10] == 0x74 || b[10] == 0x20,
            let hour = digits(11, 2), b[13] == 0x3A, let minute = digits(14, 2)
        else { return nil }
        var i = 16
        var second = 0
        if i < n, b[i] == 0x3A {
            guard let s = digits(i + 1, 2) else { return nil }
            second = s
            i += 3
            if i < n, b[i] == 0x2E || b[i] == 0x2C {
                i += 1
                let start = i
                while i < n, b[i] &- 48 < 10 { i += 1 }
                guard i > start else { return nil }
            }
        }
        guard month >= 1, month <= 12, day >= 1, day <= daysInMonth(year, month), hour <= 24, minute <= 59,
            second <= 60
        else { return nil }
        if hour == 24 && (minute != 0 || second != 0) { return nil }
        guard i < n else { return nil }  // no zone designator
        var offset = 0
        switch b[i] {
        case 0x5A, 0x7A:  // Z z
            i += 1
        case 0x2B, 0x2D:  // + -
            let sign = b[i] == 0x2D ? -1 : 1
            guard let oh = digits(i + 1, 2) else { return nil }
            i += 3
            var om = 0
            if i < n {
                if b[i] == 0x3A { i += 1 }
                guard let m = digits(i, 2) else { return nil }
                om = m
                i += 2
            }
            guard oh <= 23, om <= 59 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
        default:
            return nil
        }
        guard i == n else { return nil }
        let days = daysFromCivil(year, month, day)
        let secs = Int64(days) * 86400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offset)
        return secs
    }

    /// Formats as `2026-01-01T00:15:00Z`.
    /// Any `Int64` formats without trapping (years beyond 9999 print with more digits).
    public static func format(_ t: Int64) -> String {
        // Floor division by hand: `t - 86399` and `days * 86400` overflow near Int64.min.
        var days = t / 86400
        var rem = Int(t % 86400)
        if rem < 0 {
            days -= 1
            rem += 86400
        }
        let (y, m, d) = civilFromDays(Int(days))
        if y >= 0 && y <= 9999 {
            // The usual case, written straight into the string's 20 bytes (replays format one per
            // transition; the pieces below cost a dozen small strings).
            return String(unsafeUninitializedCapacity: 20) { b in
                write(year: y, month: m, day: d, second: rem, into: b.baseAddress!)
                return 20
            }
        }
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var year = String(y)
        while year.count < 4 { year = "0" + year }
        return "\(year)-\(two(m))-\(two(d))T\(two(rem / 3600)):\(two(rem / 60 % 60)):\(two(rem % 60))Z"
    }

    /// Appends `format(t)`'s UTF-8 bytes (a writer that builds bytes, not strings).
    public static func append(_ t: Int64, to out: inout [UInt8]) {
        var days = t / 86400
        var rem = Int(t % 86400)
        if rem < 0 {
            days -= 1
            rem += 86400
        }
        let (y, m, d) = civilFromDays(Int(days))
        guard y >= 0 && y <= 9999 else { return out.append(contentsOf: format(t).utf8) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { b in
            write(year: y, month: m, day: d, second: rem, into: b.baseAddress!)
            out.append(contentsOf: b)
        }
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` into 20 bytes, for a year in 0...9999 and a second of the day.
    private static func write(
        year y: Int, month m: Int, day d: Int, second rem: Int, into b: UnsafeMutablePointer<UInt8>
    ) {
        func put(_ v: Int, _ at: Int) {
            b[at] = UInt8(truncatingIfNeeded: 48 + v / 10)
            b[at + 1] = UInt8(truncatingIfNeeded: 48 + v % 10)
        }
        put(y / 100, 0)
        put(y % 100, 2)
        b[4] = 0x2D  // -
        put(m, 5)
        b[7] = 0x2D
        put(d, 8)
        b[10] = 0x54  // T
        put(rem / 3600, 11)
        b[13] = 0x3A  // :
        put(rem / 60 % 60, 14)
        b[16] = 0x3A
        put(rem % 60, 17)
        b[19] = 0x5A  // Z
    }

    static func isLeap(_ y: Int) -> Bool { (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 }

    static func daysInMonth(_ y: Int, _ m: Int) -> Int {
        switch m {
        case 2: return isLeap(y) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
    public static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    public static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }
}

/// Durations as rule authors write them: `30s`, `15m`, `6h`, `2d`, `1w`, or a sum such as `1h30m`.
///
/// Every duration Klaxon reads is at most `maximum` (ten years). With times bounded to years
/// 0001–9999 by `Timestamp.parse`, sums such as `time + duration`, even in milliseconds, then stay far
/// inside `Int64`, so no arithmetic on them can trap.
public enum DurationText {
    /// The longest duration accepted anywhere: ten 365-day years (315 360 000 s, written `3650d`).
    public static let maximum: Int64 = 315_360_000

    /// Why a text is not an acceptable duration.
    public enum Problem: Error, Sendable, Equatable {
        /// Not a duration at all.
        case malformed
        /// A duration, but longer than `maximum`.
        case tooLong
    }

    /// Seconds, or nil when the text is not a duration or is longer than `maximum`.
    public static func parse(_ text: String) -> Int64? {
        try? read(text).get()
    }

    /// Seconds, or why the text cannot be used (so a reader can name the limit).
    public static func read(_ text: String) -> Result<Int64, Problem> {
        var total: Int64 = 0
        var number: Int64 = 0
        var sawDigit = false
        var sawUnit = false
        var tooLong = false
        for c in text.utf8 {
            if c >= 48 && c <= 57 {
                // Leading zeros are harmless; a number past the limit is too long whatever its unit.
                number = number * 10 + Int64(c - 48)
                if number > maximum {
                    tooLong = true
                    number = maximum + 1
                }
                sawDigit = true
                continue
            }
            guard sawDigit else { return .failure(.malformed) }
            let unit: Int64
            switch c {
            case UInt8(ascii: "s"): unit = 1
            case UInt8(ascii: "m"): unit = 60
            case UInt8(ascii: "h"): unit = 3600
            case UInt8(ascii: "d"): unit = 86400
            case UInt8(ascii: "w"): unit = 7 * 86400
            default: return .failure(.malformed)
            }
            // number ≤ maximum + 1 and total ≤ maximum: neither product nor sum comes near Int64.max.
            total += number * unit
            if total > maximum {
                tooLong = true
                total = maximum + 1
            }
            number = 0
            sawDigit = false
            sawUnit = true
        }
        guard sawUnit, !sawDigit else { return .failure(.malformed) }
        return tooLong ? .failure(.tooLong) : .success(total)
    }

    /// The shortest exact text for a number of seconds: `90` → `1m30s`, `0` → `0s`.
    public static func format(_ seconds: Int64) -> String {
        if seconds == 0 { return "0s" }
        var rest = seconds.magnitude  // -Int64.min would trap
        var out = seconds < 0 ? "-" : ""
        for (unit, name) in [(UInt64(86400), "d"), (3600, "h"), (60, "m"), (1, "s")] where rest >= unit {
            out += "\(rest / unit)\(name)"
            rest %= unit
        }
        return out
    }
}

extension Int64 {
    /// `self + other`, pinned to `Int64.min`/`Int64.max` instead of trapping. Times and durations are
    /// bounded where they are read; this keeps arithmetic on them safe whatever their origin.
    public func addingClamped(_ other: Int64) -> Int64 {
        let (v, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : v
    }

    /// `self - other`, pinned to `Int64.min`/`Int64.max` instead of trapping.
    public func subtractingClamped(_ other: Int64) -> Int64 {
        let (v, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : v
    }

    /// `self * other`, pinned to `Int64.min`/`Int64.max` instead of trapping (seconds to milliseconds).
    public func multipliedClamped(by other: Int64) -> Int64 {
        let (v, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? ((self < 0) == (other < 0) ? .max : .min) : v
    }
}
