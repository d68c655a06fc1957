import Synchronization

/// A linear-time regular expression for label matchers: the RE2 syntax Alertmanager's matchers use,
/// always matched against the whole value (`^(?:re)$`).
///
/// Why hand-written: `NSRegularExpression` (ICU) and Swift's `Regex` both backtrack, so a pattern like
/// `(a+)+` or `(x+x+)+y` costs exponential time on a short value, and no Swift package at hand offers an
/// RE2-class engine. This one parses to a syntax tree, compiles it to a Thompson NFA program and runs it
/// as a Pike VM: one set of program counters per input scalar, each counter visited at most once per
/// scalar, so a match costs at most `2 × instructions × (scalars + 1)` steps, whatever the pattern. Like
/// RE2, it caches the VM's sets as lazily built DFA states (`LazyDFA`), so a wide pattern matched
/// against many values costs about one step per scalar.
///
/// Supported (RE2/Go syntax): literals (Unicode scalars), `.`, classes `[a-z0-9_]`, `[^…]`, POSIX
/// `[[:alpha:]]`, `\d \w \s \D \W \S`, `\pL \p{Lu} \P{N}` (general categories), escapes (`\.`, `\n`,
/// `\x41`, `\x{263A}`, `\0`, `\Q…\E`), `|`, groups `( )`, `(?: )`, `(?P<name> )`, `(?<name> )`,
/// quantifiers `* + ?` (lazy forms accepted: for a yes/no full match they mean the same), `{n}`, `{n,}`,
/// `{n,m}` with counts ≤ 1000, anchors `^ $ \A \z \b \B`, flags `(?i) (?m) (?s) (?U)` and `(?i: … )`.
/// Everything that needs backtracking (backreferences, lookaround, possessive quantifiers, atomic groups)
/// is refused with its position. Sizes are bounded: the pattern, the compiled program (after counted
/// repetitions expand) and the group nesting; `Matcher` bounds the value matched.
public struct LinearRegex: Sendable, CustomStringConvertible {
    /// The longest pattern accepted, in UTF-8 bytes.
    public static let maxPatternBytes = 4096
    /// The most instructions a compiled pattern may have (`a{1000}` is 1,001; `(a{100}){100}` is refused).
    public static let maxInstructions = 10_000
    /// RE2's bound on a repeat count.
    public static let maxRepeat = 1000
    /// How deeply groups may nest (the parser and compiler recurse once per level).
    public static let maxNesting = 100
    public let pattern: String
    let program: Program

    /// Parses and compiles `pattern`; throws a `LinearRegexError` naming the position and construct.
    public init(_ pattern: String) throws {
        let bytes = pattern.utf8.count
        guard bytes <= Self.maxPatternBytes else {
            throw LinearRegexError(
                kind: .tooLarge, position: nil,
                message: "the regular expression is \(bytes) bytes; at most \(Self.maxPatternBytes) are allowed")
        }
        var parser = RegexParser(Array(pattern.unicodeScalars))
        let tree = try parser.parse()
        let size = RegexCompiler.size(tree)
        guard size < Self.maxInstructions else {
            throw LinearRegexError(
                kind: .tooLarge, position: nil,
                message:
                    "the regular expression is too large once counted repetitions expand"
                    + " (more than \(Self.maxInstructions) instructions)")
        }
        var compiler = RegexCompiler()
        compiler.emit(tree)
        compiler.insts.append(.match)
        self.pattern = pattern
        self.program = Program(insts: compiler.insts, classes: parser.classes, literal: Self.literal(tree))
    }

    /// Compiled programs by pattern. Silences are read back from the store on every dispatcher pass and
    /// page view; this keeps each read from compiling its patterns again, and keeps each program's DFA
    /// states and memo of results across reads. Bounded by total instructions (emptied when full; an
    /// instruction is 12 bytes), so hostile patterns cannot grow it: a hundred of the largest patterns fit.
    private static let cache = Mutex<(programs: [String: LinearRegex], instructions: Int)>(([:], 0))
    static let cacheInstructionLimit = 1_000_000

    /// `LinearRegex(pattern)`, or the one already compiled for the same pattern.
    public static func compiled(_ pattern: String) throws -> LinearRegex {
        if let hit = cache.withLock({ $0.programs[pattern] }) { return hit }
        let re = try LinearRegex(pattern)  // outside the lock: compiling is the slow part
        cache.withLock { c in
            if c.instructions + re.instructionCount > cacheInstructionLimit { c = ([:], 0) }
            if c.programs.updateValue(re, forKey: pattern) == nil { c.instructions += re.instructionCount }
        }
        return re
    }

    /// Whether both hold the same compiled program (not merely equal patterns).
    public func sharesProgram(with other: LinearRegex) -> Bool { program === other.program }

    /// The number of instructions in the compiled program (a match costs at most this many steps per scalar).
    public var instructionCount: Int { program.insts.count }

    public var description: String { pattern }

    /// Whether the whole of `text` matches. Linear in `text`: bound its length where it comes from
    /// (`Matcher` matches label values of at most `Matcher.maxValueBytes`).
    public func fullMatch(_ text: String) -> Bool {
        var steps = 0
        return program.run(text, steps: &steps)
    }

    /// `fullMatch`, adding the work done (instructions visited) to `steps`, which never exceeds
    /// `2 × instructionCount × (scalars + 1)`: tests assert that bound instead of timing a match.
    public func fullMatch(_ text: String, steps: inout Int) -> Bool {
        program.run(text, steps: &steps)
    }

    /// `fullMatch` on the Pike VM alone, without the shared DFA states: tests compare the two.
    public func fullMatchOnVM(_ text: String, steps: inout Int) -> Bool {
        var scalars = text.unicodeScalars.makeIterator()
        let c = scalars.next()?.value
        return program.pike(&scalars, at: c, prev: nil, from: nil, steps: &steps, limit: .max) ?? false
    }

    /// `fullMatch` within `budget`: the work done is charged to it, and nil means the budget ran out
    /// before the match was decided (it is then spent). A value already matched at a cost is answered
    /// from the program's memo for free, so a request or pass that runs out leaves its work to the next.
    public func fullMatch(_ text: String, budget: inout MatchBudget) -> Bool? {
        if let known = program.memo.withLock({ $0.results[text] }) {
            budget.memoHits += 1
            return known
        }
        guard budget.remaining > 0 else {
            budget.charge(0, decided: false)
            return nil
        }
        var steps = 0
        let hit = program.run(text, steps: &steps, limit: budget.remaining)
        budget.charge(steps, decided: hit != nil)
        if let hit, steps >= Program.Memo.minSteps {
            program.memo.withLock { $0.insert(text, hit) }
        }
        return hit
    }

    /// A pattern that is a plain scalar sequence (no class, fold, repetition or anchor) is compared directly.
    private static func literal(_ node: RegexNode) -> [UInt32]? {
        switch node {
        case .empty: return []
        case .char(let c, false): return [c]
        case .concat(let items):
            var out: [UInt32] = []
            for item in items {
                guard case .char(let c, false) = item else { return nil }
                out.append(c)
            }
            return out
        default: return nil
        }
    }
}

/// Why a pattern was refused.
public struct LinearRegexError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// A construct RE2 does not have because it needs backtracking (or one this engine leaves out).
        case unsupported
        /// Malformed syntax.
        case syntax
        /// Over a size bound.
        case tooLarge
    }

    public var kind: Kind
    /// 1-based index of the offending character (Unicode scalar) in the pattern, when there is one.
    public var position: Int?
    /// The whole message, position included.
    public var message: String
    public var description: String { message }
}

// MARK: - Syntax tree

enum RegexAssertion: UInt8, Sendable {
    case beginText, endText, beginLine, endLine, wordBoundary, notWordBoundary
}

indirect enum RegexNode {
    case empty
    /// A scalar; `fold`: compared case-insensitively (only set when the scalar has case variants).
    case char(UInt32, Bool)
    /// Index into the parser's classes.
    case set(Int)
    case anyChar
    case anyNotNewline
    case assert(RegexAssertion)
    case concat([RegexNode])
    case alt([RegexNode])
    /// `max` nil: unbounded.
    case rep(RegexNode, min: Int, max: Int?)
}

/// A character class: scalar ranges plus a set of Unicode general categories, plus the negated items
/// (`\W`, `\P{Lu}`, `[:^lower:]`), possibly negated as a whole and case-folded. Folding is RE2's: each
/// item is folded first and a negated item is the complement of its folded self (so `(?i)\W` does not
/// match the Kelvin sign and `(?i)\P{Lu}` does not match `a`), then the whole class is negated.
struct CharClass: Sendable {
    /// Sorted, non-overlapping, non-adjacent.
    var ranges: [ClosedRange<UInt32>]
    var categories: UInt64
    var negated: Bool
    var fold: Bool
    /// Negated items, each held as its positive set (no `excluded`, `negated` or `fold` of its own).
    var excluded: [CharClass] = []

    func contains(_ c: UInt32) -> Bool {
        var lo = 0
        var hi = ranges.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].upperBound < c {
                lo = mid + 1
            } else if ranges[mid].lowerBound > c {
                hi = mid
            } else {
                return true
            }
        }
        guard categories != 0, let s = Unicode.Scalar(c) else { return false }
        return categories & UnicodeCategories.bit(s.properties.generalCategory) != 0
    }

    func matches(_ c: UInt32) -> Bool {
        let hit: Bool
        if fold {
            let variants = CaseFold.variants(c)
            hit =
                variants.contains(where: contains)
                || excluded.contains { item in !variants.contains(where: item.contains) }
        } else {
            hit = contains(c) || excluded.contains { !$0.contains(c) }
        }
        return hit != negated
    }

    /// A class item: the scalars in `ranges` or of a category in `categories`.
    static func item(_ ranges: [ClosedRange<UInt32>], _ categories: UInt64) -> CharClass {
        CharClass(ranges: normalize(ranges), categories: categories, negated: false, fold: false)
    }

    static func normalize(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        let sorted = ranges.sorted { $0.lowerBound < $1.lowerBound }
        var out: [ClosedRange<UInt32>] = []
        for r in sorted {
            if let last = out.last, r.lowerBound <= last.upperBound &+ 1 {
                out[out.count - 1] = last.lowerBound...max(last.upperBound, r.upperBound)
            } else {
                out.append(r)
            }
        }
        return out
    }

    static func complement(_ ranges: [ClosedRange<UInt32>]) -> [ClosedRange<UInt32>] {
        var out: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for r in normalize(ranges) {
            if r.lowerBound > next { out.append(next...(r.lowerBound - 1)) }
            next = r.upperBound + 1
        }
        if next <= 0x10FFFF { out.append(next...0x10FFFF) }
        return out
    }
}

/// Simple (one scalar to one scalar) case folding, as RE2's `(?i)` uses: scalars are equivalent when
/// they fold to the same scalar (Unicode's CaseFolding.txt, statuses C and S), and `(?i)x` matches
/// every scalar of `x`'s orbit (Go's `unicode.SimpleFold`). Derived from Swift's case mappings: the
/// fold key is the lowercase of the uppercase, where each is a single scalar; the one scalar for
/// which that merges more than CaseFolding does is `ı` (U+0131, folded only by the Turkic rule T),
/// which RE2 keeps apart from `i`. `Tests/Fixtures/re2` checks every orbit against Go's.
enum CaseFold {
    private static func single(_ s: String) -> UInt32? {
        var it = s.unicodeScalars.makeIterator()
        guard let first = it.next(), it.next() == nil else { return nil }
        return first.value
    }

    /// The scalar every case variant of `c` folds to.
    static func key(_ c: UInt32) -> UInt32 {
        if c < 0x80 { return (0x41...0x5A).contains(c) ? c + 0x20 : c }
        guard c != 0x131, let s = Unicode.Scalar(c), s.properties.changesWhenCaseMapped else { return c }
        let upper = single(s.properties.uppercaseMapping) ?? c
        guard let u = Unicode.Scalar(upper) else { return upper }
        return single(u.properties.lowercaseMapping) ?? upper
    }

    /// Every scalar whose key is another scalar's, by key (built once: cased scalars end below U+20000).
    private static let orbits: [UInt32: [UInt32]] = {
        var out: [UInt32: [UInt32]] = [:]
        for c in UInt32(0x80)..<0x20000 {
            let k = key(c)
            if k != c { out[k, default: [k]].append(c) }
        }
        for c in UInt32(0x41)...0x5A { out[c + 0x20, default: [c + 0x20]].append(c) }
        return out
    }()

    /// `c` and its simple case variants: its whole orbit.
    static func variants(_ c: UInt32) -> [UInt32] {
        guard let orbit = orbits[key(c)] else { return [c] }
        return orbit
    }
}

enum UnicodeCategories {
    static func bit(_ g: Unicode.GeneralCategory) -> UInt64 {
        let i: Int
        switch g {
        case .uppercaseLetter: i = 0
        case .lowercaseLetter: i = 1
        case .titlecaseLetter: i = 2
        case .modifierLetter: i = 3
        case .otherLetter: i = 4
        case .nonspacingMark: i = 5
        case .spacingMark: i = 6
        case .enclosingMark: i = 7
        case .decimalNumber: i = 8
        case .letterNumber: i = 9
        case .otherNumber: i = 10
        case .connectorPunctuation: i = 11
        case .dashPunctuation: i = 12
        case .openPunctuation: i = 13
        case .closePunctuation: i = 14
        case .initialPunctuation: i = 15
        case .finalPunctuation: i = 16
        case .otherPunctuation: i = 17
        case .mathSymbol: i = 18
        case .currencySymbol: i = 19
        case .modifierSymbol: i = 20
        case .otherSymbol: i = 21
        case .spaceSeparator: i = 22
        case .lineSeparator: i = 23
        case .paragraphSeparator: i = 24
        case .control: i = 25
        case .format: i = 26
        case .surrogate: i = 27
        case .privateUse: i = 28
        case .unassigned: i = 29
        @unknown default: i = 29
        }
        return 1 << UInt64(i)
    }

    /// Masks by name: the one-letter groups and the two-letter categories RE2 knows.
    static let byName: [String: UInt64] = {
        // RE2 (Go's `unicode.Categories`) has no `Cn`, and its `C` is Cc, Cf, Cs and Co: unassigned
        // scalars are in no category but `Any` (and so in every negated one).
        let names = [
            "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf",
            "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co",
        ]
        var out: [String: UInt64] = [:]
        for (i, n) in names.enumerated() {
            out[n] = 1 << UInt64(i)
            out[String(n.prefix(1)), default: 0] |= 1 << UInt64(i)
        }
        out["Any"] = (1 << 30) - 1
        return out
    }()
}

// MARK: - Parser

struct RegexParser {
    struct Flags {
        var fold = false
        var dotNewline = false
        var multiLine = false
    }

    enum ClassItem {
        case scalar(UInt32)
        case set(ranges: [ClosedRange<UInt32>], categories: UInt64)
        /// Every scalar outside the set (`\W`, `\P{L}`, `[:^alpha:]`).
        case excluded(ranges: [ClosedRange<UInt32>], categories: UInt64)
    }

    let s: [Unicode.Scalar]
    var i = 0
    var classes: [CharClass] = []

    init(_ scalars: [Unicode.Scalar]) { s = scalars }

    mutating func parse() throws -> RegexNode {
        var flags = Flags()
        let tree = try parseAlternation(&flags, depth: 0)
        if i < s.count { throw syntax("unmatched `)`", at: i) }
        return tree
    }

    // MARK: errors

    func text(_ from: Int, _ to: Int) -> String {
        var out = String.UnicodeScalarView()
        out.append(contentsOf: s[max(0, from)..<min(to, s.count)])
        return String(out)
    }

    func syntax(_ what: String, at p: Int) -> LinearRegexError {
        LinearRegexError(kind: .syntax, position: p + 1, message: "\(what) at character \(p + 1)")
    }

    func unsupported(_ what: String, at p: Int) -> LinearRegexError {
        LinearRegexError(
            kind: .unsupported, position: p + 1,
            message: "\(what) at character \(p + 1) is not supported (matchers are RE2: linear time)")
    }

    func peek(_ k: Int = 0) -> Unicode.Scalar? { i + k < s.count ? s[i + k] : nil }

    // MARK: structure

    mutating func parseAlternation(_ flags: inout Flags, depth: Int) throws -> RegexNode {
        var alternatives: [RegexNode] = []
        while true {
            alternatives.append(try parseConcatenation(&flags, depth: depth))
            guard peek() == "|" else { break }
            i += 1
        }
        return alternatives.count == 1 ? alternatives[0] : .alt(alternatives)
    }

    mutating func parseConcatenation(_ flags: inout Flags, depth: Int) throws -> RegexNode {
        var items: [RegexNode] = []
        while let c = peek(), c != "|", c != ")" {
            let atom: RegexNode
            switch c {
            case "(":
                guard let group = try parseGroup(&flags, depth: depth) else { continue }  // `(?i)`: flags only
                atom = group
            case "[":
                atom = try parseClass(flags)
            case ".":
                i += 1
                atom = flags.dotNewline ? .anyChar : .anyNotNewline
            case "^":
                i += 1
                atom = .assert(flags.multiLine ? .beginLine : .beginText)
            case "$":
                i += 1
                atom = .assert(flags.multiLine ? .endLine : .endText)
            case "\\":
                atom = try parseEscape(flags)
            case "*", "+", "?":
                throw syntax("missing argument to repetition operator `\(c)`", at: i)
            case "{" where repeatSpec(at: i) != nil:
                let spec = repeatSpec(at: i)!
                throw syntax("missing argument to repetition operator `\(text(i, i + spec.length))`", at: i)
            default:
                i += 1
                atom = literal(c.value, flags)
            }
            items.append(try parseQuantifiers(atom))
        }
        switch items.count {
        case 0: return .empty
        case 1: return items[0]
        default: return .concat(items)
        }
    }

    func literal(_ c: UInt32, _ flags: Flags) -> RegexNode {
        .char(c, flags.fold && CaseFold.variants(c).count > 1)
    }

    /// `{n}`, `{n,}` or `{n,m}` at `p` (counts capped so they cannot overflow); nil if it is not one,
    /// in which case `{` is a literal, as in RE2.
    func repeatSpec(at p: Int) -> (min: Int, max: Int?, length: Int)? {
        var j = p
        guard j < s.count, s[j] == "{" else { return nil }
        j += 1
        func number() -> Int? {
            var n: Int?
            while j < s.count, let d = digit(s[j]) {
                n = min((n ?? 0) * 10 + d, 1_000_000)
                j += 1
            }
            return n
        }
        guard let lo = number() else { return nil }
        var hi: Int? = lo
        if j < s.count, s[j] == "," {
            j += 1
            hi = number()
        }
        guard j < s.count, s[j] == "}" else { return nil }
        return (lo, hi, j + 1 - p)
    }

    func digit(_ c: Unicode.Scalar) -> Int? {
        ("0"..."9").contains(c) ? Int(c.value - 48) : nil
    }

    mutating func parseQuantifiers(_ atom: RegexNode) throws -> RegexNode {
        guard let c = peek() else { return atom }
        let q = i
        var lo = 0
        var hi: Int?
        switch c {
        case "*": i += 1
        case "+":
            lo = 1
            i += 1
        case "?":
            hi = 1
            i += 1
        case "{":
            guard let spec = repeatSpec(at: i) else { return atom }
            let written = text(i, i + spec.length)
            if let m = spec.max, m < spec.min { throw syntax("invalid repeat count `\(written)`", at: i) }
            if spec.min > LinearRegex.maxRepeat || (spec.max ?? 0) > LinearRegex.maxRepeat {
                throw LinearRegexError(
                    kind: .tooLarge, position: i + 1,
                    message:
                        "repeat count `\(written)` at character \(i + 1) is over \(LinearRegex.maxRepeat)"
                        + " (RE2's limit)")
            }
            (lo, hi) = (spec.min, spec.max)
            i += spec.length
        default: return atom
        }
        if peek() == "?" {
            i += 1  // lazy: the same language, and a full match only asks whether the value is in it
        } else if peek() == "+" {
            throw unsupported("possessive quantifier `\(text(q, i + 1))`", at: q)
        }
        if let n = peek(), n == "*" || n == "+" || n == "?" || (n == "{" && repeatSpec(at: i) != nil) {
            throw syntax("invalid nested repetition operator `\(text(q, i + 1))`", at: i)
        }
        return .rep(atom, min: lo, max: hi)
    }

    /// A group, or nil for a flags-only group `(?i)` (which changes `flags` for the rest of this group).
    mutating func parseGroup(_ flags: inout Flags, depth: Int) throws -> RegexNode? {
        let open = i
        guard depth < LinearRegex.maxNesting else {
            throw LinearRegexError(
                kind: .tooLarge, position: open + 1,
                message: "groups nest more than \(LinearRegex.maxNesting) deep at character \(open + 1)")
        }
        var inner = flags
        if peek(1) == "?" {
            guard let c = peek(2) else { throw syntax("missing closing `)` for the group", at: open) }
            let c3 = peek(3)
            switch c {
            case ":":
                i += 3
            case "=": throw unsupported("lookahead `(?=`", at: open)
            case "!": throw unsupported("negative lookahead `(?!`", at: open)
            case "<" where c3 == "=": throw unsupported("lookbehind `(?<=`", at: open)
            case "<" where c3 == "!": throw unsupported("negative lookbehind `(?<!`", at: open)
            case ">": throw unsupported("atomic group `(?>`", at: open)
            case "#": throw unsupported("comment group `(?#`", at: open)
            case "|": throw unsupported("branch reset group `(?|`", at: open)
            case "(": throw unsupported("conditional group `(?(`", at: open)
            case "&", "R", "+", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9":
                throw unsupported("recursion `\(text(open, open + 3))`", at: open)
            case "P" where c3 == "=": throw unsupported("backreference `(?P=`", at: open)
            case "P" where c3 == ">": throw unsupported("recursion `(?P>`", at: open)
            case "P" where c3 == "<":
                i += 4
                try groupName(open)
            case "<":
                i += 3
                try groupName(open)
            default:
                // Flags: `(?i)`, `(?i-s)`, `(?i:…)`.
                i += 2
                var negate = false
                var sawFlag = false
                var sawNegation = false
                while true {
                    guard let f = peek() else { throw syntax("missing closing `)` for the group", at: open) }
                    i += 1
                    switch f {
                    case "i": inner.fold = !negate
                    case "m": inner.multiLine = !negate
                    case "s": inner.dotNewline = !negate
                    case "U": break  // ungreedy: the same language
                    case "-":
                        guard !sawNegation else { throw syntax("invalid flags `\(text(open, i))`", at: open) }
                        negate = true
                        sawNegation = true
                        sawFlag = false
                        continue
                    case ")", ":":
                        guard sawFlag else { throw syntax("invalid flags `\(text(open, i))`", at: open) }
                        if f == ")" {
                            flags = inner
                            return nil
                        }
                    default:
                        if f.properties.isAlphabetic {
                            throw unsupported("flag `\(f)` in `\(text(open, i))`", at: i - 1)
                        }
                        throw syntax("invalid group `\(text(open, i))`", at: open)
                    }
                    if f == ":" { break }
                    sawFlag = true
                }
            }
        } else {
            i += 1
        }
        let body = try parseAlternation(&inner, depth: depth + 1)
        guard peek() == ")" else { throw syntax("missing closing `)` for the group", at: open) }
        i += 1
        return body
    }

    mutating func groupName(_ open: Int) throws {
        let start = i
        while let c = peek(), c.isASCII, c == "_" || c.properties.isAlphabetic || digit(c) != nil { i += 1 }
        guard i > start, peek() == ">" else {
            throw syntax("invalid group name in `\(text(open, i + 1))`", at: open)
        }
        i += 1
    }

    // MARK: escapes

    mutating func parseEscape(_ flags: Flags) throws -> RegexNode {
        let start = i
        guard let c = peek(1) else { throw syntax("trailing backslash", at: start) }
        switch c {
        case "A":
            i += 2
            return .assert(.beginText)
        case "z":
            i += 2
            return .assert(.endText)
        case "b":
            i += 2
            return .assert(.wordBoundary)
        case "B":
            i += 2
            return .assert(.notWordBoundary)
        case "Q":
            i += 2
            var items: [RegexNode] = []
            while let d = peek() {
                if d == "\\", peek(1) == "E" {
                    i += 2
                    break
                }
                items.append(literal(d.value, flags))
                i += 1
            }
            return items.isEmpty ? .empty : items.count == 1 ? items[0] : .concat(items)
        default:
            switch try parseClassEscape() {
            case .scalar(let v): return literal(v, flags)
            case .set(let ranges, let categories):
                return addClass(ranges: ranges, categories: categories, negated: false, flags)
            case .excluded(let ranges, let categories):
                return addClass(
                    ranges: [], categories: 0, excluded: [CharClass.item(ranges, categories)], negated: false, flags)
            }
        }
    }

    /// An escape that stands for one scalar or a set, inside or outside brackets; `i` is at the backslash.
    mutating func parseClassEscape() throws -> ClassItem {
        let start = i
        guard let c = peek(1) else { throw syntax("trailing backslash", at: start) }
        i += 2
        switch c {
        case "a": return .scalar(7)
        case "f": return .scalar(12)
        case "t": return .scalar(9)
        case "n": return .scalar(10)
        case "r": return .scalar(13)
        case "v": return .scalar(11)
        case "d", "D", "s", "S", "w", "W":
            let lower = Character(String(c)).lowercased()
            let base = RegexParser.perl[lower]!
            return c.properties.isLowercase ? .set(ranges: base, categories: 0) : .excluded(ranges: base, categories: 0)
        case "p", "P":
            return try unicodeClass(negated: c == "P", start: start)
        case "x":
            if peek() == "{" {
                var j = i + 1
                var v: UInt32 = 0
                while j < s.count, let h = hexValue(s[j]) {
                    v = min(v * 16 + h, 0x110000)
                    j += 1
                }
                guard j > i + 1, j < s.count, s[j] == "}", v <= 0x10FFFF, Unicode.Scalar(v) != nil else {
                    throw syntax("invalid escape `\(text(start, j + 1))`", at: start)
                }
                i = j + 1
                return .scalar(v)
            }
            guard let h1 = peek().flatMap(hexValue), let h2 = peek(1).flatMap(hexValue) else {
                throw syntax("invalid escape `\(text(start, i + 2))`", at: start)
            }
            i += 2
            return .scalar(h1 * 16 + h2)
        case "0"..."7" where c == "0" || (peek().map { ("0"..."7").contains($0) } ?? false):
            var v = c.value - 48
            var n = 1
            while n < 3, let d = peek(), ("0"..."7").contains(d) {
                v = v * 8 + d.value - 48
                i += 1
                n += 1
            }
            return .scalar(v)
        case "1"..."9":
            throw unsupported("backreference `\\\(c)`", at: start)
        case "k", "g":
            throw unsupported("backreference `\\\(c)`", at: start)
        case "u", "U":
            throw syntax("invalid escape `\\\(c)` (write `\\x{263A}`)", at: start)
        case "Z":
            throw syntax("invalid escape `\\Z` (write `\\z` or `$`)", at: start)
        default:
            if c.isASCII, !c.properties.isAlphabetic, digit(c) == nil {
                return .scalar(c.value)  // escaped punctuation stands for itself
            }
            throw syntax("invalid escape `\\\(c)`", at: start)
        }
    }

    func hexValue(_ c: Unicode.Scalar) -> UInt32? {
        switch c {
        case "0"..."9": return c.value - 48
        case "a"..."f": return c.value - 87
        case "A"..."F": return c.value - 55
        default: return nil
        }
    }

    static let perl: [String: [ClosedRange<UInt32>]] = [
        "d": [0x30...0x39],
        "s": [0x09...0x0A, 0x0C...0x0D, 0x20...0x20],
        "w": [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A],
    ]

    static let posix: [String: [ClosedRange<UInt32>]] = [
        "alnum": [0x30...0x39, 0x41...0x5A, 0x61...0x7A],
        "alpha": [0x41...0x5A, 0x61...0x7A],
        "ascii": [0x00...0x7F],
        "blank": [0x09...0x09, 0x20...0x20],
        "cntrl": [0x00...0x1F, 0x7F...0x7F],
        "digit": [0x30...0x39],
        "graph": [0x21...0x7E],
        "lower": [0x61...0x7A],
        "print": [0x20...0x7E],
        "punct": [0x21...0x2F, 0x3A...0x40, 0x5B...0x60, 0x7B...0x7E],
        "space": [0x09...0x0D, 0x20...0x20],
        "upper": [0x41...0x5A],
        "word": [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A],
        "xdigit": [0x30...0x39, 0x41...0x46, 0x61...0x66],
    ]

    /// `\pL`, `\p{Lu}`, `\p{^L}`, `\PL`; `i` is past the `p`.
    mutating func unicodeClass(negated: Bool, start: Int) throws -> ClassItem {
        var name: String
        if peek() == "{" {
            var j = i + 1
            while j < s.count, s[j] != "}" { j += 1 }
            guard j < s.count else { throw syntax("missing closing `}` in `\(text(start, j))`", at: start) }
            name = text(i + 1, j)
            i = j + 1
        } else {
            guard let c = peek() else { throw syntax("invalid escape `\(text(start, i))`", at: start) }
            name = String(c)
            i += 1
        }
        var negate = negated
        if name.hasPrefix("^") {
            negate.toggle()
            name.removeFirst()
        }
        guard let mask = UnicodeCategories.byName[name] else {
            throw unsupported(
                "Unicode class `\(text(start, i))` (general categories like \\p{L}, \\p{Lu}, \\p{N} are"
                    + " supported; scripts are not)", at: start)
        }
        return negate ? .excluded(ranges: [], categories: mask) : .set(ranges: [], categories: mask)
    }

    // MARK: classes

    mutating func addClass(
        ranges: [ClosedRange<UInt32>], categories: UInt64, excluded: [CharClass] = [], negated: Bool, _ flags: Flags
    ) -> RegexNode {
        var ranges = ranges
        var categories = categories
        var kept: [CharClass] = []
        for item in excluded {
            if !flags.fold, item.categories == 0 {
                ranges += CharClass.complement(item.ranges)  // unfolded, a negated item is its complement
            } else if !flags.fold, item.ranges.isEmpty {
                categories |= UnicodeCategories.byName["Any"]! & ~item.categories
            } else if !kept.contains(where: { $0.ranges == item.ranges && $0.categories == item.categories }) {
                kept.append(item)  // distinct items are few (the named classes), so matching stays cheap
            }
        }
        classes.append(
            CharClass(
                ranges: CharClass.normalize(ranges), categories: categories, negated: negated, fold: flags.fold,
                excluded: kept))
        return .set(classes.count - 1)
    }

    mutating func parseClass(_ flags: Flags) throws -> RegexNode {
        let open = i
        i += 1
        var negated = false
        if peek() == "^" {
            negated = true
            i += 1
        }
        var ranges: [ClosedRange<UInt32>] = []
        var categories: UInt64 = 0
        var excluded: [CharClass] = []
        var first = true
        while true {
            guard let c = peek() else { throw syntax("missing closing `]` for the class", at: open) }
            if c == "]", !first {
                i += 1
                break
            }
            first = false
            if c == "[", peek(1) == ":", let posix = try posixClass() {
                switch posix {
                case .set(let r, _): ranges += r
                case .excluded(let r, _): excluded.append(CharClass.item(r, 0))
                case .scalar: break
                }
                continue
            }
            let itemStart = i
            let item = try classAtom()
            if case .scalar(let lo) = item, peek() == "-", let after = peek(1), after != "]" {
                i += 1
                guard case .scalar(let hi) = try classAtom() else {
                    throw syntax("invalid character class range `\(text(itemStart, i))`", at: itemStart)
                }
                guard lo <= hi else {
                    throw syntax("invalid character class range `\(text(itemStart, i))`", at: itemStart)
                }
                ranges.append(lo...hi)
                continue
            }
            switch item {
            case .scalar(let v): ranges.append(v...v)
            case .set(let r, let m):
                ranges += r
                categories |= m
            case .excluded(let r, let m):
                excluded.append(CharClass.item(r, m))
            }
        }
        return addClass(ranges: ranges, categories: categories, excluded: excluded, negated: negated, flags)
    }

    mutating func classAtom() throws -> ClassItem {
        guard let c = peek() else { throw syntax("missing closing `]` for the class", at: i) }
        if c == "\\" { return try parseClassEscape() }
        i += 1
        return .scalar(c.value)
    }

    /// `[:alpha:]` or `[:^alpha:]` at `i`; nil (nothing consumed) if there is no closing `:]`.
    mutating func posixClass() throws -> ClassItem? {
        var j = i + 2
        while j + 1 < s.count, !(s[j] == ":" && s[j + 1] == "]") { j += 1 }
        guard j + 1 < s.count else { return nil }
        var name = text(i + 2, j)
        let negate = name.hasPrefix("^")
        if negate { name.removeFirst() }
        guard let ranges = RegexParser.posix[name] else {
            throw syntax("invalid character class `\(text(i, j + 2))`", at: i)
        }
        i = j + 2
        return negate ? .excluded(ranges: ranges, categories: 0) : .set(ranges: ranges, categories: 0)
    }
}

// MARK: - Program

enum RegexInst: Sendable {
    case char(UInt32)
    /// A scalar whose `CaseFold.key` is this.
    case fold(UInt32)
    case set(Int32)
    case any
    case anyNotNewline
    case split(Int32, Int32)
    case jmp(Int32)
    case assert(RegexAssertion)
    case match
}

struct RegexCompiler {
    var insts: [RegexInst] = []

    /// The instructions `emit` makes for `node`, saturating (so `((a{1000}){1000}){1000}` is measured,
    /// not built).
    static func size(_ node: RegexNode) -> Int {
        func add(_ a: Int, _ b: Int) -> Int {
            let (r, o) = a.addingReportingOverflow(b)
            return o ? .max : r
        }
        func mul(_ a: Int, _ b: Int) -> Int {
            let (r, o) = a.multipliedReportingOverflow(by: b)
            return o ? .max : r
        }
        switch node {
        case .empty: return 0
        case .char, .set, .anyChar, .anyNotNewline, .assert: return 1
        case .concat(let items): return items.reduce(0) { add($0, size($1)) }
        case .alt(let items): return add(items.reduce(0) { add($0, size($1)) }, mul(2, items.count - 1))
        case .rep(let x, let lo, let hi):
            let s = size(x)
            guard let hi else {
                return lo == 0 ? add(s, 2) : add(mul(lo - 1, s), add(s, 1))
            }
            return add(mul(lo, s), mul(hi - lo, add(s, 1)))
        }
    }

    mutating func emit(_ node: RegexNode) {
        switch node {
        case .empty: break
        case .char(let c, let fold): insts.append(fold ? .fold(CaseFold.key(c)) : .char(c))
        case .set(let k): insts.append(.set(Int32(k)))
        case .anyChar: insts.append(.any)
        case .anyNotNewline: insts.append(.anyNotNewline)
        case .assert(let a): insts.append(.assert(a))
        case .concat(let items): for item in items { emit(item) }
        case .alt(let items):
            var jumps: [Int] = []
            for (k, item) in items.enumerated() {
                guard k < items.count - 1 else {
                    emit(item)
                    break
                }
                let split = insts.count
                insts.append(.match)  // placeholder
                emit(item)
                jumps.append(insts.count)
                insts.append(.match)  // placeholder
                insts[split] = .split(Int32(split + 1), Int32(insts.count))
            }
            for j in jumps { insts[j] = .jmp(Int32(insts.count)) }
        case .rep(let x, let lo, let hi):
            if let hi {
                for _ in 0..<lo { emit(x) }
                var splits: [Int] = []
                for _ in 0..<(hi - lo) {
                    splits.append(insts.count)
                    insts.append(.match)  // placeholder
                    emit(x)
                }
                for sp in splits { insts[sp] = .split(Int32(sp + 1), Int32(insts.count)) }
            } else if lo == 0 {
                let loop = insts.count
                insts.append(.match)  // placeholder
                emit(x)
                insts.append(.jmp(Int32(loop)))
                insts[loop] = .split(Int32(loop + 1), Int32(insts.count))
            } else {
                for _ in 0..<(lo - 1) { emit(x) }
                let body = insts.count
                emit(x)
                insts.append(.split(Int32(body), Int32(insts.count + 1)))
            }
        }
    }
}

/// A compiled pattern: immutable, shared by every copy of the matcher that holds it.
final class Program: Sendable {
    let insts: [RegexInst]
    let classes: [CharClass]
    /// Set when the pattern is a plain scalar sequence.
    let literal: [UInt32]?
    /// States built so far (see `LazyDFA`); used only when `usesDFA` (no line or word assertions).
    let dfa: Mutex<LazyDFA>
    let usesDFA: Bool
    /// Results of matches that cost something (`fullMatch(_:budget:)`), by value.
    let memo = Mutex(Memo())

    /// Values already matched, with their results: a dispatcher pass and a page view match the same
    /// few label values against the same silences again and again. Only matches that cost at least
    /// `minSteps` are kept, and at most `maxBytes` of values (emptied when full).
    struct Memo {
        static let minSteps = 256
        static let maxBytes = 64 << 10
        var results: [String: Bool] = [:]
        var bytes = 0

        mutating func insert(_ text: String, _ hit: Bool) {
            let size = text.utf8.count + 16
            if bytes + size > Self.maxBytes {
                results.removeAll()
                bytes = 0
            }
            if results.updateValue(hit, forKey: text) == nil { bytes += size }
        }
    }

    init(insts: [RegexInst], classes: [CharClass], literal: [UInt32]?) {
        self.insts = insts
        self.classes = classes
        self.literal = literal
        let onlyTextAnchors = insts.allSatisfy { inst in
            guard case .assert(let a) = inst else { return true }
            return a == .beginText || a == .endText
        }
        usesDFA = onlyTextAnchors && literal == nil
        dfa = Mutex(LazyDFA(instructions: insts.count))
    }

    /// A set of program counters with O(1) insert, membership and clear (the sparse-set trick).
    struct PCSet {
        var dense: [Int32]
        var sparse: [Int32]
        var count = 0

        init(_ n: Int) {
            dense = Array(repeating: 0, count: n)
            sparse = Array(repeating: 0, count: n)
        }

        func contains(_ pc: Int32) -> Bool {
            let k = Int(sparse[Int(pc)])
            return k < count && dense[k] == pc
        }

        mutating func insert(_ pc: Int32) {
            sparse[Int(pc)] = Int32(count)
            dense[count] = pc
            count += 1
        }
    }

    static func isWord(_ c: UInt32?) -> Bool {
        guard let c else { return false }
        return (0x30...0x39).contains(c) || (0x41...0x5A).contains(c) || (0x61...0x7A).contains(c) || c == 0x5F
    }

    static func holds(_ a: RegexAssertion, prev: UInt32?, next: UInt32?) -> Bool {
        switch a {
        case .beginText: return prev == nil
        case .endText: return next == nil
        case .beginLine: return prev == nil || prev == 10
        case .endLine: return next == nil || next == 10
        case .wordBoundary: return isWord(prev) != isWord(next)
        case .notWordBoundary: return isWord(prev) == isWord(next)
        }
    }

    /// Adds `start` and everything reachable from it without consuming a scalar (each counter once).
    func addThread(
        _ set: inout PCSet, _ start: Int32, prev: UInt32?, next: UInt32?, stack: inout [Int32], steps: inout Int
    ) {
        stack.append(start)
        while let pc = stack.popLast() {
            if set.contains(pc) { continue }
            set.insert(pc)
            steps += 1
            switch insts[Int(pc)] {
            case .jmp(let t): stack.append(t)
            case .split(let a, let b):
                stack.append(b)
                stack.append(a)
            case .assert(let a):
                if Self.holds(a, prev: prev, next: next) { stack.append(pc + 1) }
            default: break
            }
        }
    }

    func run(_ text: String, steps: inout Int) -> Bool {
        run(text, steps: &steps, limit: .max) ?? false
    }

    /// The match, or nil once `steps` goes over `limit` (checked once a scalar).
    func run(_ text: String, steps: inout Int, limit: Int) -> Bool? {
        if let literal {
            steps += literal.count + 1
            return text.unicodeScalars.lazy.map(\.value).elementsEqual(literal)
        }
        var scalars = text.unicodeScalars.makeIterator()
        if usesDFA {
            switch dfa.withLock({ $0.run(&scalars, program: self, steps: &steps, limit: limit) }) {
            case .unavailable: break
            case .exceeded: return nil
            case .decided(let hit): return hit
            case .resume(let visited, let c, let prev):
                return pike(&scalars, at: c, prev: prev, from: visited, steps: &steps, limit: limit)
            }
        }
        let c = scalars.next()?.value
        return pike(&scalars, at: c, prev: nil, from: nil, steps: &steps, limit: limit)
    }

    /// The Pike VM from scalar `c` on (the rest in `scalars`): from the start, or from `visited`, the
    /// closed set of counters the lazy DFA had reached there when it gave up.
    func pike(
        _ scalars: inout String.UnicodeScalarView.Iterator, at first: UInt32?, prev: UInt32?, from visited: [Int32]?,
        steps: inout Int, limit: Int
    ) -> Bool? {
        let n = insts.count
        let matchPC = Int32(n - 1)
        var current = PCSet(n)
        var next = PCSet(n)
        var stack: [Int32] = []
        stack.reserveCapacity(2 * n + 1)
        var c = first
        if let visited {
            for pc in visited { current.insert(pc) }
        } else {
            addThread(&current, 0, prev: prev, next: c, stack: &stack, steps: &steps)
        }
        while let ch = c {
            if current.count == 0 { return false }
            if steps > limit { return nil }
            let after = scalars.next()?.value
            next.count = 0
            var foldKey: UInt32?
            for k in 0..<current.count {
                let pc = current.dense[k]
                steps += 1
                if consumes(pc, ch, &foldKey) {
                    addThread(&next, pc + 1, prev: ch, next: after, stack: &stack, steps: &steps)
                }
            }
            swap(&current, &next)
            c = after
        }
        return current.contains(matchPC)
    }

    /// Whether the instruction at `pc` consumes `ch` (false for the non-consuming ones).
    @inline(__always)
    func consumes(_ pc: Int32, _ ch: UInt32, _ foldKey: inout UInt32?) -> Bool {
        switch insts[Int(pc)] {
        case .char(let x): return ch == x
        case .fold(let key):
            if foldKey == nil { foldKey = CaseFold.key(ch) }
            return foldKey == key
        case .set(let s): return classes[Int(s)].matches(ch)
        case .any: return true
        case .anyNotNewline: return ch != 10
        default: return false
        }
    }
}
