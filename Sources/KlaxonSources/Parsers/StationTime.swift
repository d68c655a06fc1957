import Foundation
import KlaxonCore

/// How a station's JSON writes its times (`time.format` of `http-json`).
public enum StationTimeFormat: Sendable, Hashable, CustomStringConvertible {
    /// ISO 8601; a time without an offset is in the configured zone.
    case iso8601
    /// Seconds since the epoch (a number or numeric text; a fraction is dropped).
    case unix
    /// Milliseconds since the epoch.
    case unixMilliseconds
    /// A strftime-like pattern: `%Y-%m-%d %H:%M:%S`, `%d/%m/%Y %I:%M %p`, `%Y%m%d%H%M%z`.
    case pattern(TimePattern)

    /// `iso8601`, `unix`, `unix_ms`, or a pattern (anything with a `%`); nil with the reason otherwise.
    public static func read(_ text: String) -> Result<StationTimeFormat, TimePattern.Problem> {
        switch text {
        case "iso8601": return .success(.iso8601)
        case "unix": return .success(.unix)
        case "unix_ms": return .success(.unixMilliseconds)
        default:
            guard text.contains("%") else {
                return .failure(.init("must be iso8601, unix, unix_ms or a pattern like \"%Y-%m-%d %H:%M\""))
            }
            return TimePattern.read(text).map { StationTimeFormat.pattern($0) }
        }
    }

    public var description: String {
        switch self {
        case .iso8601: "iso8601"
        case .unix: "unix"
        case .unixMilliseconds: "unix_ms"
        case .pattern(let p): p.text
        }
    }

    /// Whether times in this format can carry their own offset (else a zone is needed).
    public var mayCarryOffset: Bool {
        switch self {
        case .iso8601: true
        case .unix, .unixMilliseconds: true
        case .pattern(let p): p.hasOffset
        }
    }

    /// UTC seconds for a time field's value, or why it cannot be read. `zone` reads times without
    /// an offset.
    func time(_ value: JSONValue, zone: TimeZone?) -> Result<Int64, TimePattern.Problem> {
        switch self {
        case .unix, .unixMilliseconds:
            let number: Double?
            switch value {
            case .number(let d): number = d
            case .string(let s): number = ParserSupport.number(s)
            default: number = nil
            }
            guard let number else {
                return .failure(.init("is not a number of \(self == .unix ? "seconds" : "milliseconds")"))
            }
            let seconds = self == .unix ? number : number / 1000
            // Years 1800 to 2200: outside them it is no observation (and Int64 could not hold some).
            guard seconds.isFinite, seconds > -5_364_662_400, seconds < 7_258_118_400 else {
                return .failure(.init("is not a time between the years 1800 and 2200"))
            }
            return .success(Int64(seconds.rounded(.down)))
        case .iso8601:
            guard case .string(let s) = value else { return .failure(.init("is not text")) }
            if let t = Timestamp.parse(s) { return .success(t) }
            guard let local = Timestamp.parse(s + "Z") else { return .failure(.init("is not an ISO 8601 time")) }
            guard let zone else { return .failure(.init("has no offset and no time zone is configured (time.zone)")) }
            return .success(Self.utc(local: local, zone: zone))
        case .pattern(let p):
            guard case .string(let s) = value else { return .failure(.init("is not text")) }
            guard let parsed = p.parse(s) else { return .failure(.init("does not match \"\(p.text)\"")) }
            if let offset = parsed.offset { return .success(parsed.local - offset) }
            guard let zone else { return .failure(.init("has no offset and no time zone is configured (time.zone)")) }
            return .success(Self.utc(local: parsed.local, zone: zone))
        }
    }

    /// The UTC time of a wall-clock time in `zone`. In the hour that repeats when clocks fall back,
    /// the first of the two; in the hour skipped when they spring forward, the offset before the change.
    static func utc(local: Int64, zone: TimeZone) -> Int64 {
        func offset(_ t: Int64) -> Int64 { Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(t)))) }
        // The offsets in force a day either side: a wall-clock time is valid under one of them.
        let before = offset(local - 86_400)
        let after = offset(local + 86_400)
        let valid = [before, after].map { local - $0 }.filter { local - offset($0) == $0 }
        return valid.min() ?? local - before
    }
}

/// A strict strftime-like time pattern. Fields: `%Y` (4-digit year), `%y` (2-digit, 2000–2099), `%m`,
/// `%d`, `%H`, `%I` (12-hour, with `%p` AM/PM), `%M`, `%S` (1 or 2 digits each), `%b` (Jan … Dec),
/// `%f` (digits of a fraction, dropped), `%z` (`Z`, `+hh:mm`, `+hhmm`, `+hh`), `%j` is not
/// supported; `%%` is a percent sign; anything else stands for itself.
public struct TimePattern: Sendable, Hashable {
    enum Part: Sendable, Hashable {
        case literal(Character)
        case year4, year2, month, monthName, day, hour24, hour12, ampm, minute, second, fraction, offset
    }

    public let text: String
    let parts: [Part]

    public struct Problem: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    var hasOffset: Bool { parts.contains(.offset) }

    public static func read(_ text: String) -> Result<TimePattern, Problem> {
        guard text.count <= 64 else { return .failure(.init("a pattern is at most 64 characters")) }
        var parts: [Part] = []
        var percent = false
        for ch in text {
            if percent {
                percent = false
                let part: Part
                switch ch {
                case "Y": part = .year4
                case "y": part = .year2
                case "m": part = .month
                case "b": part = .monthName
                case "d": part = .day
                case "H": part = .hour24
                case "I": part = .hour12
                case "p": part = .ampm
                case "M": part = .minute
                case "S": part = .second
                case "f": part = .fraction
                case "z": part = .offset
                case "%": part = .literal("%")
                default:
                    return .failure(
                        .init("unknown field %\(ch) (fields: %Y %y %m %b %d %H %I %p %M %S %f %z %%)"))
                }
                if part != .literal("%"), parts.contains(part) {
                    return .failure(.init("%\(ch) appears twice"))
                }
                parts.append(part)
            } else if ch == "%" {
                percent = true
            } else {
                parts.append(.literal(ch))
            }
        }
        if percent { return .failure(.init("ends with a lone %")) }
        let has = { (p: Part) in parts.contains(p) }
        guard has(.year4) || has(.year2) else { return .failure(.init("needs a year (%Y or %y)")) }
        guard has(.month) || has(.monthName) else { return .failure(.init("needs a month (%m or %b)")) }
        guard has(.day) else { return .failure(.init("needs a day (%d)")) }
        guard has(.hour24) || has(.hour12) else { return .failure(.init("needs an hour (%H, or %I with %p)")) }
        guard has(.hour12) == has(.ampm) else { return .failure(.init("%I and %p go together")) }
        guard !(has(.year4) && has(.year2)), !(has(.month) && has(.monthName)), !(has(.hour24) && has(.hour12))
        else { return .failure(.init("gives the same field twice (%Y and %y, %m and %b, or %H and %I)")) }
        return .success(TimePattern(text: text, parts: parts))
    }

    static func daysIn(_ y: Int, _ m: Int) -> Int {
        switch m {
        case 2: (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// The wall-clock time as if it were UTC, and the offset the text gives (nil: none); nil when the
    /// text does not match or names an impossible date.
    func parse(_ text: String) -> (local: Int64, offset: Int64?)? {
        let chars = Array(text.utf8)
        guard chars.count <= 128 else { return nil }
        var i = 0
        var (year, month, day, hour, minute, second) = (0, 0, 0, 0, 0, 0)
        var pm: Bool? = nil
        var offset: Int64? = nil
        func digits(min: Int, max: Int) -> Int? {
            var v = 0
            var n = 0
            while n < max, i < chars.count, chars[i] >= 48, chars[i] <= 57 {
                v = v * 10 + Int(chars[i] - 48)
                i += 1
                n += 1
            }
            return n >= min ? v : nil
        }
        for part in parts {
            switch part {
            case .literal(let ch):
                let bytes = Array(String(ch).utf8)
                guard i + bytes.count <= chars.count, Array(chars[i..<(i + bytes.count)]) == bytes else { return nil }
                i += bytes.count
            case .year4:
                guard let v = digits(min: 4, max: 4) else { return nil }
                year = v
            case .year2:
                guard let v = digits(min: 2, max: 2) else { return nil }
                year = 2000 + v
            case .month:
                guard let v = digits(min: 1, max: 2) else { return nil }
                month = v
            case .day:
                guard let v = digits(min: 1, max: 2) else { return nil }
                day = v
            case .hour24, .hour12:
                guard let v = digits(min: 1, max: 2) else { return nil }
                hour = v
            case .minute:
                guard let v = digits(min: 1, max: 2) else { return nil }
                minute = v
            case .second:
                guard let v = digits(min: 1, max: 2) else { return nil }
                second = v
            case .fraction: guard digits(min: 1, max: 12) != nil else { return nil }
            case .monthName:
                guard i + 3 <= chars.count else { return nil }
                let name = String(decoding: chars[i..<(i + 3)], as: UTF8.self).lowercased()
                guard let m = Self.months.firstIndex(of: name) else { return nil }
                month = m + 1
                i += 3
            case .ampm:
                guard i + 2 <= chars.count else { return nil }
                switch String(decoding: chars[i..<(i + 2)], as: UTF8.self).uppercased() {
                case "AM": pm = false
                case "PM": pm = true
                default: return nil
                }
                i += 2
            case .offset:
                guard i < chars.count else { return nil }
                if chars[i] == UInt8(ascii: "Z") {
                    offset = 0
                    i += 1
                    continue
                }
                guard chars[i] == UInt8(ascii: "+") || chars[i] == UInt8(ascii: "-") else { return nil }
                let sign: Int64 = chars[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let h = digits(min: 2, max: 2) else { return nil }
                var m = 0
                if i < chars.count, chars[i] == UInt8(ascii: ":") { i += 1 }
                if i < chars.count, chars[i] >= 48, chars[i] <= 57 {
                    guard let v = digits(min: 2, max: 2) else { return nil }
                    m = v
                }
                guard h <= 23, m <= 59 else { return nil }
                offset = sign * Int64(h * 3_600 + m * 60)
            }
        }
        guard i == chars.count else { return nil }
        if let pm {
            guard (1...12).contains(hour) else { return nil }
            hour = hour % 12 + (pm ? 12 : 0)
        }
        guard (1800...2200).contains(year), (1...12).contains(month), day >= 1,
            day <= Self.daysIn(year, month), hour <= 23, minute <= 59, second <= 60
        else { return nil }
        let days = Int64(Timestamp.daysFromCivil(year, month, day))
        return (days * 86_400 + Int64(hour * 3_600 + minute * 60 + min(second, 59)), offset)
    }
}
