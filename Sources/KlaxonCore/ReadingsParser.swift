import Foundation

/// One line's outcome when parsing a readings file.
public enum ParsedRow: Sendable {
    case reading(Reading, line: Int)
    /// The line could not be read; `reason` says why, for `FILE:LINE: reason`.
    case rejected(line: Int, reason: String)
}

/// Streams readings out of CSV (header row; `station,metric,time,value`, optional `unit,source,quality`)
/// or JSON Lines (objects with the same keys). Fed in chunks of any size, so memory stays flat however
/// large the file; every line is accounted for as a reading or a rejection.
///
/// What a line may hold is bounded (see `Limits`): a line is at most 64 KiB (a longer one is skipped
/// as it streams past, never buffered whole), text fields are short single-line UTF-8 without control
/// characters, values are finite and times fall in the years 1800–2199.
public struct ReadingsParser {
    /// Bounds on one line and its fields. The text fields end up in the database, in messages and
    /// in chat, so they are short, printable, single-line text.
    public enum Limits {
        /// Bytes in one line, without its line ending.
        public static let lineBytes = 64 * 1024
        public static let stationBytes = 128
        public static let metricBytes = 128
        public static let unitBytes = 32
        public static let sourceBytes = 128
        public static let qualityBytes = 64
        /// The earliest reading time accepted: 1800-01-01T00:00:00Z.
        public static let earliestTime: Int64 = -5_364_662_400
        /// Reading times must be before 2200-01-01T00:00:00Z.
        public static let timeEnd: Int64 = 7_258_118_400
    }

    public enum Format: String, Sendable {
        case csv
        case jsonLines = "jsonl"

        /// Chooses by file extension, else by the first byte (`{` = JSON Lines).
        public static func guess(path: String, firstByte: UInt8?) -> Format {
            let lower = path.lowercased()
            if lower.hasSuffix(".csv") { return .csv }
            if lower.hasSuffix(".jsonl") || lower.hasSuffix(".ndjson") || lower.hasSuffix(".json") { return .jsonLines }
            return firstByte == UInt8(ascii: "{") ? .jsonLines : .csv
        }
    }

    public static let columns = ["station", "metric", "time", "value", "unit", "source", "quality"]

    public let format: Format
    private var carry: [UInt8] = []
    private var lineNumber = 0
    // CSV header: the field index of each known column (-1 = absent).
    private var columnIndex: [Int] = []
    private var fieldCount = 0
    private var headerError: String?
    private var fields: [Range<Int>] = []
    /// Skipping the rest of a line longer than `Limits.lineBytes` until its newline.
    private var skippingLongLine = false

    public init(format: Format) {
        self.format = format
        fields.reserveCapacity(8)
    }

    /// Feeds the next chunk of the file; `emit` receives each complete line's outcome.
    public mutating func feed(_ chunk: UnsafeBufferPointer<UInt8>, _ emit: (ParsedRow) -> Void) {
        guard let base = chunk.baseAddress, chunk.count > 0 else { return }
        var start = 0
        while start < chunk.count {
            guard let hit = memchr(base + start, 0x0A, chunk.count - start) else {
                // No newline yet: keep the start of the line, but never more than a line may hold.
                if !skippingLongLine {
                    if carry.count + (chunk.count - start) > Limits.lineBytes + 1 {  // + 1: a CR before the LF
                        carry.removeAll()
                        skippingLongLine = true
                    } else {
                        carry.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[start...]))
                    }
                }
                return
            }
            let end = base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
            if skippingLongLine || carry.count + (end - start) > Limits.lineBytes + 1 {
                carry.removeAll(keepingCapacity: true)
                skippingLongLine = false
                longLine(emit)
            } else if carry.isEmpty {
                line(UnsafeBufferPointer(rebasing: chunk[start..<end]), emit)
            } else {
                carry.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[start..<end]))
                let whole = carry
                carry.removeAll(keepingCapacity: true)
                whole.withUnsafeBufferPointer { line($0, emit) }
            }
            start = end + 1
        }
    }

    /// Ends the file: a last line without a newline is parsed too.
    public mutating func finish(_ emit: (ParsedRow) -> Void) {
        if skippingLongLine {
            skippingLongLine = false
            longLine(emit)
        } else if !carry.isEmpty {
            let whole = carry
            carry.removeAll()
            whole.withUnsafeBufferPointer { line($0, emit) }
        }
    }

    /// Parses a whole in-memory text (tests, HTTP bodies).
    public static func parseAll(_ text: String, format: Format) -> [ParsedRow] {
        var parser = ReadingsParser(format: format)
        var rows: [ParsedRow] = []
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBufferPointer { parser.feed(UnsafeBufferPointer($0)) { rows.append($0) } }
        parser.finish { rows.append($0) }
        return rows
    }

    /// A line longer than `Limits.lineBytes`, skipped without being read (or kept).
    private mutating func longLine(_ emit: (ParsedRow) -> Void) {
        lineNumber += 1
        let reason = "the line is longer than \(Limits.lineBytes) bytes; not read"
        if format == .csv && columnIndex.isEmpty && headerError == nil {
            headerError = "header: \(reason)"
            emit(.rejected(line: lineNumber, reason: headerError!))
        } else {
            emit(.rejected(line: lineNumber, reason: reason))
        }
    }

    private mutating func line(_ raw: UnsafeBufferPointer<UInt8>, _ emit: (ParsedRow) -> Void) {
        var n = raw.count
        if n > 0 && raw[n - 1] == 0x0D { n -= 1 }
        if n > Limits.lineBytes { return longLine(emit) }
        lineNumber += 1
        var s = 0
        if lineNumber == 1 && n >= 3 && raw[0] == 0xEF && raw[1] == 0xBB && raw[2] == 0xBF { s = 3 }  // BOM
        let text = UnsafeBufferPointer(rebasing: raw[s..<n])
        if isBlank(text) { return }
        // Text that is not UTF-8 would be stored with replacement characters, merging distinct ids.
        if text.contains(where: { $0 >= 0x80 }) && String(validating: text, as: UTF8.self) == nil {
            var reason = "the line is not valid UTF-8"
            if format == .csv && columnIndex.isEmpty && headerError == nil {
                reason = "header: \(reason)"
                headerError = reason
            }
            emit(.rejected(line: lineNumber, reason: reason))
            return
        }
        switch format {
        case .csv: csvLine(text, emit)
        case .jsonLines: jsonLine(text, emit)
        }
    }

    private func isBlank(_ b: UnsafeBufferPointer<UInt8>) -> Bool {
        for c in b where c != 0x20 && c != 0x09 { return false }
        return true
    }

    // MARK: CSV

    private mutating func csvLine(_ b: UnsafeBufferPointer<UInt8>, _ emit: (ParsedRow) -> Void) {
        if columnIndex.isEmpty && headerError == nil {
            header(b)
            if let headerError { emit(.rejected(line: lineNumber, reason: headerError)) }
            return
        }
        if headerError != nil {
            emit(.rejected(line: lineNumber, reason: "not read: the header on line 1 is invalid"))
            return
        }
        var unquoted: [String]? = nil
        fields.removeAll(keepingCapacity: true)
        // One pass finds the commas, or the first quote.
        var start = 0
        var quoted = false
        for i in 0..<b.count {
            let c = b[i]
            if c == 0x2C {
                fields.append(start..<i)
                start = i + 1
            } else if c == 0x22 {
                quoted = true
                break
            }
        }
        if quoted {  // a quote: take the careful path
            fields.removeAll(keepingCapacity: true)
            switch Self.splitQuoted(b) {
            case .success(let values): unquoted = values
            case .failure(let reason):
                emit(.rejected(line: lineNumber, reason: reason.message))
                return
            }
        } else {
            fields.append(start..<b.count)
        }
        /// Whether column `column`'s unquoted bytes are at most `limit` bytes of printable ASCII, so
        /// `textProblem` would find nothing in them (it is asked only about other text).
        func plain(_ column: Int, limit: Int) -> Bool {
            guard unquoted == nil else { return false }
            let t = Self.trim(UnsafeBufferPointer(rebasing: b[fields[columnIndex[column]]]))
            guard t.count <= limit else { return false }
            for c in t where c < 0x20 || c >= 0x7F { return false }
            return true
        }
        let count = unquoted?.count ?? fields.count
        guard count == fieldCount else {
            emit(.rejected(line: lineNumber, reason: "expected \(fieldCount) fields as in the header, found \(count)"))
            return
        }
        func text(_ column: Int) -> String? {
            let i = columnIndex[column]
            guard i >= 0 else { return nil }
            if let unquoted { return Self.trimmed(unquoted[i]) }
            return Self.trimmedString(UnsafeBufferPointer(rebasing: b[fields[i]]))
        }
        guard let station = text(0), !station.isEmpty else {
            emit(.rejected(line: lineNumber, reason: "station is empty"))
            return
        }
        if !plain(0, limit: Limits.stationBytes),
            let problem = Self.textProblem("station", station, limit: Limits.stationBytes)
        {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        guard let metric = text(1), !metric.isEmpty else {
            emit(.rejected(line: lineNumber, reason: "metric is empty"))
            return
        }
        if !plain(1, limit: Limits.metricBytes),
            let problem = Self.textProblem("metric", metric, limit: Limits.metricBytes)
        {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        // time and value: parse straight from the bytes when unquoted (the hot path).
        let time: Int64?
        let value: Double?
        if unquoted == nil {
            time = Timestamp.parse(bytes: Self.trim(UnsafeBufferPointer(rebasing: b[fields[columnIndex[2]]])))
            value = NumberParser.parse(Self.trim(UnsafeBufferPointer(rebasing: b[fields[columnIndex[3]]])))
        } else {
            time = text(2).flatMap(Timestamp.parse)
            value = text(3).flatMap(NumberParser.parse)
        }
        guard let time else {
            emit(.rejected(line: lineNumber, reason: Self.badTime(text(2) ?? "")))
            return
        }
        if let problem = Self.timeProblem(time) {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        guard let value else {
            emit(.rejected(line: lineNumber, reason: Self.badValue(text(3) ?? "")))
            return
        }
        let unit = text(4).flatMap { $0.isEmpty ? nil : $0 }
        let source = text(5).flatMap { $0.isEmpty ? nil : $0 }
        let quality = text(6).flatMap { $0.isEmpty ? nil : $0 }
        if let problem = Self.optionalProblem(unit: unit, source: source, quality: quality) {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        emit(
            .reading(
                Reading(
                    station: station, metric: metric, time: time, value: value, unit: unit, source: source,
                    quality: quality), line: lineNumber))
    }

    private mutating func header(_ b: UnsafeBufferPointer<UInt8>) {
        let names: [String]
        switch Self.splitQuoted(b) {
        case .success(let v): names = v.map { Self.trimmed($0).lowercased() }
        case .failure(let e):
            headerError = "header: \(e.message)"
            return
        }
        var index = [Int](repeating: -1, count: Self.columns.count)
        for (i, name) in names.enumerated() {
            guard let c = Self.columns.firstIndex(of: name) else {
                headerError =
                    "header: unknown column \"\(name)\" (columns are \(Self.columns.joined(separator: ", ")))"
                return
            }
            guard index[c] < 0 else {
                headerError = "header: column \"\(name)\" appears twice"
                return
            }
            index[c] = i
        }
        let missing = (0..<4).filter { index[$0] < 0 }.map { Self.columns[$0] }
        guard missing.isEmpty else {
            headerError =
                "header: missing column\(missing.count > 1 ? "s" : "") \(missing.joined(separator: ", ")) (the header row must name station, metric, time, value)"
            return
        }
        columnIndex = index
        fieldCount = names.count
    }

    struct SplitError: Error {
        var message: String
    }

    /// RFC 4180 fields of one line (quotes, doubled quotes inside quotes).
    static func splitQuoted(_ b: UnsafeBufferPointer<UInt8>) -> Result<[String], SplitError> {
        var out: [String] = []
        var field: [UInt8] = []
        var i = 0
        var quoted = false
        var atFieldStart = true
        while i < b.count {
            let c = b[i]
            if quoted {
                if c == 0x22 {
                    if i + 1 < b.count && b[i + 1] == 0x22 {
                        field.append(0x22)
                        i += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(c)
                }
            } else if c == 0x22 && atFieldStart {
                quoted = true
                atFieldStart = false
            } else if c == 0x2C {
                out.append(String(decoding: field, as: UTF8.self))
                field.removeAll(keepingCapacity: true)
                atFieldStart = true
            } else if c == 0x22 {
                return .failure(SplitError(message: "a quote inside an unquoted field"))
            } else {
                if c != 0x20 && c != 0x09 { atFieldStart = false }
                field.append(c)
            }
            i += 1
        }
        if quoted { return .failure(SplitError(message: "unterminated quoted field")) }
        out.append(String(decoding: field, as: UTF8.self))
        return .success(out)
    }

    static func trim(_ b: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8> {
        var s = 0
        var e = b.count
        while s < e && (b[s] == 0x20 || b[s] == 0x09) { s += 1 }
        while e > s && (b[e - 1] == 0x20 || b[e - 1] == 0x09) { e -= 1 }
        return UnsafeBufferPointer(rebasing: b[s..<e])
    }

    static func trimmedString(_ b: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: trim(b), as: UTF8.self)
    }

    static func trimmed(_ s: String) -> String {
        s.trimmingCharacters(in: .whitespaces)
    }

    static func badTime(_ t: String) -> String {
        if t.isEmpty { return "time is empty" }
        return "time \"\(Self.shown(t))\" is not ISO 8601 with Z or an offset (like 2026-01-01T00:15:00Z)"
    }

    static func badValue(_ v: String) -> String {
        if v.isEmpty { return "value is empty" }
        return "value \"\(Self.shown(v))\" is not a finite number"
    }

    // MARK: Bounds

    /// Why a text field cannot be stored, or nil: it must fit `limit` bytes of UTF-8 and hold no
    /// control character (U+0000–U+001F, U+007F–U+009F), line or paragraph separator (U+2028, U+2029)
    /// or bidirectional formatting character (U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which
    /// could cut an id short in C APIs or disguise it in a message.
    public static func textProblem(_ name: String, _ text: String, limit: Int) -> String? {
        let count = text.utf8.count
        if count > limit { return "\(name) is \(count) bytes long; the limit is \(limit)" }
        var ascii = true
        for b in text.utf8 {
            if b < 0x20 || b == 0x7F { return "\(name) contains the control character \(hex(UInt32(b)))" }
            if b >= 0x80 { ascii = false }
        }
        if ascii { return nil }
        for u in text.unicodeScalars {
            switch u.value {
            case 0x80...0x9F: return "\(name) contains the control character \(hex(u.value))"
            case 0x2028, 0x2029: return "\(name) contains the line separator \(hex(u.value))"
            case 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                return "\(name) contains the bidirectional formatting character \(hex(u.value))"
            default: continue
            }
        }
        return nil
    }

    static func hex(_ v: UInt32) -> String {
        let digits = String(v, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    static func optionalProblem(unit: String?, source: String?, quality: String?) -> String? {
        if let unit, let p = textProblem("unit", unit, limit: Limits.unitBytes) { return p }
        if let source, let p = textProblem("source", source, limit: Limits.sourceBytes) { return p }
        if let quality, let p = textProblem("quality", quality, limit: Limits.qualityBytes) { return p }
        return nil
    }

    static func timeProblem(_ t: Int64) -> String? {
        guard t < Limits.earliestTime || t >= Limits.timeEnd else { return nil }
        return "time \(Timestamp.format(t)) is outside the years 1800 to 2199"
    }

    /// A field's text for a message: at most 40 characters, control characters escaped.
    static func shown(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let cut = scalars.index(scalars.startIndex, offsetBy: 40, limitedBy: scalars.endIndex),
            cut != scalars.endIndex
        else { return Escape.controlsShown(text) }
        return Escape.controlsShown(String(scalars[..<cut])) + "…"
    }

    // MARK: JSON Lines

    private enum Scalar: Decodable {
        case string(String)
        case number(Double)
        case bool(Bool)
        case null, other

        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if c.decodeNil() {
                self = .null
            } else if let s = try? c.decode(String.self) {
                self = .string(s)
            } else if let d = try? c.decode(Double.self) {
                self = .number(d)
            } else if let b = try? c.decode(Bool.self) {
                self = .bool(b)
            } else {
                self = .other
            }
        }
    }

    private mutating func jsonLine(_ b: UnsafeBufferPointer<UInt8>, _ emit: (ParsedRow) -> Void) {
        guard let dict = try? JSONDecoder().decode([String: Scalar].self, from: Data(buffer: b)) else {
            emit(.rejected(line: lineNumber, reason: "not a JSON object with scalar values"))
            return
        }
        for key in dict.keys.sorted() where !Self.columns.contains(key) {
            emit(
                .rejected(
                    line: lineNumber,
                    reason: "unknown key \"\(key)\" (keys are \(Self.columns.joined(separator: ", ")))"))
            return
        }
        var strings: [String: String] = [:]
        for key in ["station", "metric", "time", "unit", "source", "quality"] {
            switch dict[key] {
            case nil, .null?: break
            case .string(let s)?: strings[key] = s
            default:
                emit(.rejected(line: lineNumber, reason: "\(key) must be a string"))
                return
            }
        }
        guard let station = strings["station"], !station.isEmpty else {
            emit(.rejected(line: lineNumber, reason: "station is missing or empty"))
            return
        }
        if let problem = Self.textProblem("station", station, limit: Limits.stationBytes) {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        guard let metric = strings["metric"], !metric.isEmpty else {
            emit(.rejected(line: lineNumber, reason: "metric is missing or empty"))
            return
        }
        if let problem = Self.textProblem("metric", metric, limit: Limits.metricBytes) {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        guard let timeText = strings["time"], let time = Timestamp.parse(timeText) else {
            emit(.rejected(line: lineNumber, reason: Self.badTime(strings["time"] ?? "")))
            return
        }
        if let problem = Self.timeProblem(time) {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        if let problem = Self.optionalProblem(
            unit: strings["unit"], source: strings["source"], quality: strings["quality"])
        {
            emit(.rejected(line: lineNumber, reason: problem))
            return
        }
        let value: Double?
        let shown: String
        switch dict["value"] {
        case .number(let d)?:
            value = d.isFinite ? d : nil
            shown = "\(d)"
        case .string(let s)?:
            value = NumberParser.parse(s)
            shown = s
        case nil, .null?:
            emit(.rejected(line: lineNumber, reason: "value is missing"))
            return
        default:
            value = nil
            shown = "(not a number)"
        }
        guard let value else {
            emit(.rejected(line: lineNumber, reason: Self.badValue(shown)))
            return
        }
        emit(
            .reading(
                Reading(
                    station: station, metric: metric, time: time, value: value, unit: strings["unit"],
                    source: strings["source"], quality: strings["quality"]), line: lineNumber))
    }
}

/// Decimal numbers from bytes without allocating: exact for the usual sensor values
/// (up to 15 significant digits), falling back to `strtod` for anything else.
public enum NumberParser {
    private static let powers: [Double] = [
        1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18,
        1e19, 1e20, 1e21, 1e22,
    ]

    public static func parse(_ text: String) -> Double? {
        var t = text.trimmingCharacters(in: .whitespaces)
        return t.withUTF8 { parse($0) }
    }

    public static func parse(_ b: UnsafeBufferPointer<UInt8>) -> Double? {
        let n = b.count
        guard n > 0 else { return nil }
        var i = 0
        var negative = false
        if b[0] == 0x2D || b[0] == 0x2B {
            negative = b[0] == 0x2D
            i = 1
        }
        var mantissa: UInt64 = 0
        var digits = 0
        var fraction = 0
        var sawDot = false
        var sawDigit = false
        var simple = true
        while i < n {
            let c = b[i]
            if c &- 48 < 10 {
                sawDigit = true
                if digits < 18 {
                    mantissa = mantissa * 10 + UInt64(c - 48)
                    if mantissa != 0 { digits += 1 }
                    if sawDot { fraction += 1 }
                } else {
                    simple = false
                }
            } else if c == 0x2E && !sawDot {
                sawDot = true
            } else {
                simple = false
                break
            }
            i += 1
        }
        guard sawDigit || !simple else { return nil }  // "", "-", ".", "-." are not numbers
        if simple && digits <= 15 && fraction <= 22 {
            var v = Double(mantissa) / powers[fraction]
            if negative { v = -v }
            return v
        }
        // Exponents, long mantissas, anything unusual: let strtod decide, then insist on a finite number.
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: n + 1) { buf -> Double? in
            for k in 0..<n { buf[k] = CChar(bitPattern: b[k]) }
            buf[n] = 0
            var end: UnsafeMutablePointer<CChar>? = nil
            let v = strtod(buf.baseAddress!, &end)
            guard let end, end == buf.baseAddress! + n, v.isFinite else { return nil }
            // strtod accepts "inf", "nan" and hex; a finite result from letters is still not a plain number.
            for k in 0..<n
            where !(b[k] &- 48 < 10 || b[k] == 0x2E || b[k] == 0x2D || b[k] == 0x2B || b[k] == 0x65 || b[k] == 0x45) {
                return nil
            }
            return v
        }
    }
}
