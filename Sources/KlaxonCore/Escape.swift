/// The one escaper for text from data written into another language: HTML, SVG and XML, JSON,
/// logfmt, a terminal, each chat platform's markup, a mail header, error messages. A destination is
/// a table (`Escape+Destinations.swift`): which scalars are replaced, and by what; whether the
/// result is quoted. The text is read once as UTF-8: runs that need nothing are copied whole, and
/// text that needs nothing is returned as it is (within its quotes, if it has them).
///
/// Rules are tried in order and the first whose scalars hold a scalar decides it. A replacement is
/// written in place of the scalar (`.text("@\u{2060}")` keeps an `@` and adds a word joiner after it).
/// Swift strings hold only Unicode scalars (a lone surrogate cannot be in one, and invalid UTF-8
/// was repaired to U+FFFD when the string was made), so no table needs a rule for them.
public struct Escape: Sendable {
    /// The scalars a rule applies to.
    public enum Scalars: Sendable {
        /// Scalar values in a range.
        case range(ClosedRange<UInt32>)
        /// Scalars of these Unicode general categories (as the running Swift's Unicode data has them).
        case categories([Unicode.GeneralCategory])

        func contains(_ v: UInt32) -> Bool {
            switch self {
            case .range(let r): return r.contains(v)
            case .categories(let c):
                guard let s = Unicode.Scalar(v) else { return false }
                return c.contains(s.properties.generalCategory)
            }
        }
    }

    /// What a rule writes for a scalar.
    public enum Replacement: Sendable {
        /// The scalar is left as it is (a rule that only makes `.whenNeeded` quoting quote).
        case kept
        /// This text instead.
        case text(String)
        /// The scalar's value in hexadecimal, at least `digits` digits (zero-padded), between
        /// `prefix` and `suffix`: `\u001b`, `\x1B`, `\u{202E}`.
        case hex(prefix: String, digits: Int, uppercase: Bool, suffix: String)
        /// Each of the scalar's UTF-8 bytes as `%HH` (uppercase), as in a URL.
        case percent

        func write(_ v: UInt32, into out: inout [UInt8]) {
            switch self {
            case .kept:
                out.append(contentsOf: String(Unicode.Scalar(v)!).utf8)
            case .text(let t):
                out.append(contentsOf: t.utf8)
            case .hex(let prefix, let digits, let uppercase, let suffix):
                out.append(contentsOf: prefix.utf8)
                let hex = String(v, radix: 16, uppercase: uppercase)
                if hex.utf8.count < digits {
                    out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits - hex.utf8.count))
                }
                out.append(contentsOf: hex.utf8)
                out.append(contentsOf: suffix.utf8)
            case .percent:
                for b in String(Unicode.Scalar(v)!).utf8 {
                    out.append(UInt8(ascii: "%"))
                    out.append(Escape.upperHex[Int(b >> 4)])
                    out.append(Escape.upperHex[Int(b & 0xF)])
                }
            }
        }
    }

    /// One line of a table.
    public struct Rule: Sendable {
        public var scalars: Scalars
        public var replacement: Replacement
        /// Whether text holding such a scalar is quoted (`Quoting.whenNeeded`).
        public var quotes: Bool

        public init(_ scalars: Scalars, _ replacement: Replacement, quotes: Bool = false) {
            self.scalars = scalars
            self.replacement = replacement
            self.quotes = quotes
        }

        /// `scalar` becomes `text`.
        public static func map(_ scalar: Unicode.Scalar, _ text: String, quotes: Bool = false) -> Rule {
            Rule(.range(scalar.value...scalar.value), .text(text), quotes: quotes)
        }

        /// Every scalar in `range` becomes `replacement`.
        public static func map(_ range: ClosedRange<UInt32>, _ replacement: Replacement, quotes: Bool = false) -> Rule {
            Rule(.range(range), replacement, quotes: quotes)
        }

        /// Every scalar in `range` becomes `text`.
        public static func map(_ range: ClosedRange<UInt32>, _ text: String, quotes: Bool = false) -> Rule {
            Rule(.range(range), .text(text), quotes: quotes)
        }

        /// Every scalar of `categories` becomes `replacement`.
        public static func map(_ categories: [Unicode.GeneralCategory], _ replacement: Replacement) -> Rule {
            Rule(.categories(categories), replacement)
        }
    }

    /// Whether the escaped text is put between quotes.
    public enum Quoting: Sendable {
        /// Never.
        case none
        /// Always, between these two.
        case always(String, String)
        /// When the text is empty or holds a scalar whose rule `quotes`; other text is left as it
        /// is, replacements and all (logfmt: `a\b` stays bare, `a b\c` becomes `"a b\\c"`).
        case whenNeeded(String, String)
    }

    /// The table's rules, in order.
    public let rules: [Rule]
    public let quoting: Quoting

    /// What each ASCII scalar becomes (nil: itself).
    private let ascii: [[UInt8]?]
    /// Per byte: `changes` (an ASCII scalar that is replaced), `quotes` (an ASCII scalar that makes
    /// `.whenNeeded` quote), `look` (a UTF-8 lead byte of a scalar some rule may apply to).
    private let flags: [UInt8]
    /// The rules that may apply to scalars beyond ASCII.
    private let wide: [Rule]

    private static let changes: UInt8 = 1
    private static let quotesFlag: UInt8 = 2
    private static let look: UInt8 = 4
    static let upperHex = Array("0123456789ABCDEF".utf8)

    public init(_ rules: [Rule], quoting: Quoting = .none) {
        self.rules = rules
        self.quoting = quoting
        var ascii = [[UInt8]?](repeating: nil, count: 128)
        var flags = [UInt8](repeating: 0, count: 256)
        for v in 0..<UInt32(128) {
            guard let rule = rules.first(where: { $0.scalars.contains(v) }) else { continue }
            if rule.quotes { flags[Int(v)] |= Self.quotesFlag }
            if case .kept = rule.replacement { continue }
            var bytes: [UInt8] = []
            rule.replacement.write(v, into: &bytes)
            ascii[Int(v)] = bytes
            flags[Int(v)] |= Self.changes
        }
        var wide: [Rule] = []
        for rule in rules {
            let leads: ClosedRange<UInt8>
            switch rule.scalars {
            case .range(let r):
                guard r.upperBound >= 0x80 else { continue }
                leads = Self.lead(max(r.lowerBound, 0x80))...Self.lead(min(r.upperBound, 0x10FFFF))
            case .categories:
                leads = 0xC2...0xF4
            }
            wide.append(rule)
            for b in leads { flags[Int(b)] |= Self.look }
        }
        self.ascii = ascii
        self.flags = flags
        self.wide = wide
    }

    /// The first byte of `v`'s UTF-8 form (they rise with the scalar value).
    private static func lead(_ v: UInt32) -> UInt8 {
        switch v {
        case ..<0x80: UInt8(v)
        case ..<0x800: UInt8(0xC0 | (v >> 6))
        case ..<0x10000: UInt8(0xE0 | (v >> 12))
        default: UInt8(0xF0 | (v >> 18))
        }
    }

    /// This table's rules followed by `other`'s, quoted as this one. For tables whose scalars and
    /// replacements do not meet (JSON after a chat platform's escaping: no chat replacement holds a
    /// character JSON escapes), the result is the one pass of both in turn.
    public func adding(_ other: Escape) -> Escape { Escape(rules + other.rules, quoting: quoting) }

    /// The same table without quotes.
    public var unquoted: Escape { Escape(rules) }

    /// Whether some rule replaces `scalar` (a `.kept` rule does not).
    public func replaces(_ scalar: Unicode.Scalar) -> Bool {
        let v = scalar.value
        if v < 0x80 { return ascii[Int(v)] != nil }
        guard let rule = wide.first(where: { $0.scalars.contains(v) }) else { return false }
        if case .kept = rule.replacement { return false }
        return true
    }

    /// The first scalar of `text` that would be replaced, if any.
    public func firstReplaced(in text: String) -> Unicode.Scalar? {
        var text = text
        let at = text.withUTF8 { firstChange($0, from: 0) }
        guard let at else { return nil }
        let utf8 = text.utf8
        return text.unicodeScalars[utf8.index(utf8.startIndex, offsetBy: at)]
    }

    /// `text` escaped (and quoted, as the table says).
    public func callAsFunction(_ text: String) -> String {
        var text = text
        let changed: String? = text.withUTF8 { bytes in
            guard let start = escapeStart(bytes) else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + bytes.count / 4 + 16)
            emit(bytes, from: start, into: &out)
            return String(decoding: out, as: UTF8.self)
        }
        if let changed { return changed }
        if case .always(let open, let close) = quoting { return open + text + close }
        return text
    }

    /// Appends `text`, escaped and quoted, to UTF-8 bytes (a writer that builds bytes, not strings).
    public func write(_ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            if let start = escapeStart(bytes) {
                emit(bytes, from: start, into: &out)
            } else if case .always(let open, let close) = quoting {
                out.append(contentsOf: open.utf8)
                out.append(contentsOf: bytes)
                out.append(contentsOf: close.utf8)
            } else {
                out.append(contentsOf: bytes)
            }
        }
    }

    /// Where escaping starts (the bytes before need nothing), or nil when the text comes out as it
    /// is, quotes aside.
    private func escapeStart(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        if case .whenNeeded = quoting {
            guard bytes.isEmpty || needsQuotes(bytes) else { return nil }
            return firstChange(bytes, from: 0) ?? bytes.count
        }
        return firstChange(bytes, from: 0)
    }

    /// Appends the text escaped from `start` on, within its quotes.
    private func emit(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, into out: inout [UInt8]) {
        switch quoting {
        case .none:
            escape(bytes, from: start, into: &out)
        case .always(let open, let close), .whenNeeded(let open, let close):
            out.append(contentsOf: open.utf8)
            escape(bytes, from: start, into: &out)
            out.append(contentsOf: close.utf8)
        }
    }

    /// The offset of the first scalar at or after `from` that a rule replaces.
    private func firstChange(_ bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        first(in: bytes, from: from, flag: Self.changes) { rule in
            if case .kept = rule.replacement { return false }
            return true
        }
    }

    /// Whether some scalar's rule `quotes`.
    private func needsQuotes(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        first(in: bytes, from: 0, flag: Self.quotesFlag) { $0.quotes } != nil
    }

    /// The offset of the first scalar at or after `from` whose byte carries `flag` (ASCII), or whose wide
    /// rule `hits` (beyond ASCII, for bytes marked `look`). One scan for both questions, inlined so the
    /// per-byte loop stays a table lookup.
    @inline(__always)
    private func first(
        in bytes: UnsafeBufferPointer<UInt8>, from: Int, flag: UInt8, hits: (Rule) -> Bool
    ) -> Int? {
        flags.withUnsafeBufferPointer { flags in
            var i = from
            let n = bytes.count
            while i < n {
                let b = bytes[i]
                let f = flags[Int(b)]
                if f & (flag | Self.look) == 0 {
                    i += 1
                } else if b < 0x80 {
                    return i
                } else {
                    let (v, length) = Self.decode(bytes, i)
                    if let rule = wide.first(where: { $0.scalars.contains(v) }), hits(rule) { return i }
                    i += length
                }
            }
            return nil
        }
    }

    /// Appends `bytes` from 0, escaped from `start` on (the bytes before it need nothing).
    private func escape(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, into out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[0..<start]))
        flags.withUnsafeBufferPointer { flags in
            var run = start
            var i = start
            let n = bytes.count
            while i < n {
                let b = bytes[i]
                let f = flags[Int(b)]
                if f & (Self.changes | Self.look) == 0 {
                    i += 1
                } else if b < 0x80 {
                    if f & Self.changes != 0, let r = ascii[Int(b)] {
                        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                        out.append(contentsOf: r)
                        run = i + 1
                    }
                    i += 1
                } else {
                    let (v, length) = Self.decode(bytes, i)
                    if let rule = wide.first(where: { $0.scalars.contains(v) }) {
                        if case .kept = rule.replacement {
                        } else {
                            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<i]))
                            rule.replacement.write(v, into: &out)
                            run = i + length
                        }
                    }
                    i += length
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<n]))
        }
    }

    /// The scalar whose UTF-8 form starts at `i` (a lead byte of valid UTF-8, as a `String`'s
    /// bytes always are), and its length in bytes.
    @inline(__always)
    private static func decode(_ p: UnsafeBufferPointer<UInt8>, _ i: Int) -> (UInt32, Int) {
        let b0 = UInt32(p[i])
        if b0 < 0xE0 { return (((b0 & 0x1F) << 6) | (UInt32(p[i + 1]) & 0x3F), 2) }
        if b0 < 0xF0 {
            return (((b0 & 0x0F) << 12) | ((UInt32(p[i + 1]) & 0x3F) << 6) | (UInt32(p[i + 2]) & 0x3F), 3)
        }
        return (
            ((b0 & 0x07) << 18) | ((UInt32(p[i + 1]) & 0x3F) << 12) | ((UInt32(p[i + 2]) & 0x3F) << 6)
                | (UInt32(p[i + 3]) & 0x3F), 4
        )
    }
}
