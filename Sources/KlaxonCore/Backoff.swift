import Foundation

/// Retry timing for deliveries: exponential backoff with full jitter, and `Retry-After` parsing.
public struct Backoff: Sendable, Hashable {
    /// Seconds before the first retry at most.
    public var initial: Double
    /// The longest wait between two attempts.
    public var cap: Double
    /// The longest `Retry-After` honoured.
    public var retryAfterCap: Double

    public init(initial: Double = 1, cap: Double = 300, retryAfterCap: Double = 3600) {
        self.initial = initial
        self.cap = cap
        self.retryAfterCap = retryAfterCap
    }

    /// The upper bound of the wait after `attempt` failed attempts (1 = the first failure).
    public func ceiling(attempt: Int) -> Double {
        let exponent = Double(max(0, min(attempt - 1, 30)))
        return min(cap, initial * pow(2, exponent))
    }

    /// Full jitter: a uniformly random wait in [0, ceiling]. `random` is in [0, 1).
    public func delay(attempt: Int, random: Double) -> Double {
        ceiling(attempt: attempt) * min(max(random, 0), 1)
    }

    /// The wait a `Retry-After` header asks for (seconds or an HTTP date), capped; nil if unreadable.
    public func retryAfter(_ header: String, now: Int64) -> Double? {
        let text = header.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(text), seconds.isFinite, seconds >= 0 {
            return min(seconds, retryAfterCap)
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        return min(max(0, Double(date - now)), retryAfterCap)
    }
}

/// HTTP dates (RFC 9110): the IMF-fixdate form `Sun, 06 Nov 1994 08:49:37 GMT`, plus the obsolete
/// RFC 850 and asctime forms servers still send.
public enum HTTPDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    public static func parse(_ text: String) -> Int64? {
        let parts = text.replacingOccurrences(of: ",", with: " ").split(separator: " ").map { String($0) }
        var day: Int?
        var month: Int?
        var year: Int?
        var clock: [Int]?
        for p in parts {
            let lower = p.lowercased()
            if let m = months.firstIndex(of: String(lower.prefix(3))), lower.count == 3 {
                month = m + 1
            } else if p.contains(":") {
                let c = p.split(separator: ":").compactMap { Int($0) }
                if c.count == 3, c.allSatisfy({ $0 >= 0 }) { clock = c }
            } else if p.contains("-") {
                // RFC 850: 06-Nov-94
                let d = p.split(separator: "-")
                if d.count == 3, let dd = Int(d[0]), let mm = months.firstIndex(of: d[1].lowercased()),
                    let yy = Int(d[2])
                {
                    day = dd
                    month = mm + 1
                    year = yy < 100 ? (yy < 70 ? 2000 + yy : 1900 + yy) : yy
                }
            } else if p.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), p.utf8.count <= 4, let n = Int(p) {
                // Digits only: a zone like `+0000` (an email's Date) is not a year.
                if n > 31 { year = n } else if day == nil { day = n } else if year == nil { year = n }
            }
        }
        // Years outside 1–9999 are refused: a hostile header must not overflow the arithmetic below.
        guard let day, let month, let year, (1...9999).contains(year), let clock,
            (1...Timestamp.daysInMonth(year, month)).contains(day),
            clock[0] < 24, clock[1] < 60, clock[2] < 61
        else { return nil }
        return Int64(Timestamp.daysFromCivil(year, month, day)) * 86400
            + Int64(clock[0] * 3600 + clock[1] * 60 + min(clock[2], 59))
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(_ t: Int64) -> String {
        // Floor division by hand: `t - 86399` and `days * 86400` overflow near Int64.min.
        var days = Int(t / 86400)
        var rem = Int(t % 86400)
        if rem < 0 {
            days -= 1
            rem += 86400
        }
        let (y, m, d) = Timestamp.civilFromDays(days)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return
            "\(weekday), \(two(d)) \(months[m - 1].capitalized) \(y) \(two(rem / 3600)):\(two(rem / 60 % 60)):\(two(rem % 60)) GMT"
    }
}
