import Foundation
import KlaxonRegex
import Testing

/// Issue 27, item 5: matchers' regular expressions are RE2 (linear time, anchored), compiled once and
/// size-limited. These pin the engine's language, its refusals and its work bound.
@Suite("Linear regex: RE2 matchers")
struct LinearRegexTests {
    // MARK: what matches

    static let table: [(pattern: String, text: String, expected: Bool)] = [
        ("", "", true), ("", "a", false),
        ("abc", "abc", true), ("abc", "abcd", false), ("abc", "xabc", false),
        ("a.c", "abc", true), ("a.c", "a\nc", false), ("(?s)a.c", "a\nc", true), ("a.c", "a日c", true),
        ("日本", "日本", true), ("日.", "日本", true), (".{3}", "日本語", true), (".{3}", "abcd", false),
        ("é", "e\u{301}", false), ("e\u{301}", "e\u{301}", true), ("😀+", "😀😀", true),
        ("[a-z0-9_]+", "river_01", true), ("[a-z0-9_]+", "River", false), ("[^a-z]+", "ABC1", true),
        ("[^a-z]", "\n", true), ("[]a]+", "]a]", true), ("[a-]+", "a-a", true), ("[-a]", "-", true),
        (#"[\]]"#, "]", true), ("[.]", ".", true), ("[.]", "a", false), (#"\."#, ".", true), (#"\."#, "x", false),
        (#"\d+"#, "0123", true), (#"\d"#, "٣", false), (#"\D"#, "a", true), (#"\D"#, "5", false),
        (#"\w+"#, "abc_9", true), (#"\w"#, "é", false), (#"\W"#, "-", true), (#"\s"#, " ", true),
        (#"\s"#, "\t", true), (#"\s"#, "\u{0B}", false), (#"\S+"#, "ab", true), (#"[\d\s]+"#, "1 2", true),
        ("[[:alpha:]]+", "abcXYZ", true), ("[[:^digit:]]", "a", true), ("[[:digit:]]", "a", false),
        (#"\pL+"#, "héllo日本", true), (#"\p{Lu}"#, "É", true), (#"\p{Lu}"#, "é", false), (#"\PL"#, "1", true),
        (#"\p{^N}"#, "x", true), (#"\p{N}+"#, "12٣", true), (#"[\p{Lu}\d]+"#, "AB12", true),
        ("a|b", "b", true), ("a|b", "ab", false), ("a|", "", true), ("|a", "a", true), ("a||b", "", true),
        ("(|x)y", "y", true), ("(a|ab)(c|bcd)(d*)", "abcd", true), ("((a)|b)+", "abab", true),
        ("(a(b(c)))", "abc", true), ("(?:ab)+", "ababab", true), ("(?:ab)+", "aba", false),
        ("a*", "", true), ("a+", "", false), ("a?", "a", true), ("a?", "aa", false),
        ("a{3}", "aaa", true), ("a{3}", "aa", false), ("a{2,}", "aaaaa", true), ("a{2,}", "a", false),
        ("a{2,3}", "aaaa", false), ("a{0,2}", "", true), ("a{0}", "", true), ("(ab){2}", "abab", true),
        ("(ab){2}", "ab", false), ("a{,2}", "a{,2}", true), ("a{", "a{", true), ("{", "{", true),
        ("x{a}", "x{a}", true), ("a*?", "aaa", true), ("a+?b", "aab", true), ("a{2}?", "aa", true),
        ("^abc$", "abc", true), ("^abc$", "xabc", false), ("a^b", "ab", false), ("a$|b", "a", true),
        (#"(?m)a$\n^b"#, "a\nb", true), (#"\Aab\z"#, "ab", true), (#"a\b"#, "a", true), (#"a\bb"#, "ab", false),
        (#"a\Bb"#, "ab", true), (#"\bfoo\b"#, "foo", true),
        ("(?i)river", "RiVeR", true), ("(?i)é", "É", true), ("(?i)[a-c]+", "AbC", true), ("(?i)[^a]", "A", false),
        ("a(?i)b", "aB", true), ("a(?i)b", "AB", false), ("(?i:a)b", "Ab", true), ("(?i:a)b", "AB", false),
        ("(?i)σ", "Σ", true), ("(?i)σ", "ς", true), ("(?-i)a", "A", false), ("(?i)a|b", "B", true),
        (#"\x41"#, "A", true), (#"\x{65E5}"#, "日", true), (#"\x{1F600}"#, "😀", true), (#"\t"#, "\t", true),
        (#"\n"#, "\n", true), (#"\0"#, "\u{0}", true), (#"\101"#, "A", true), (#"\Qa.b*\E"#, "a.b*", true),
        (#"\Qa.b"#, "a.b", true), (#"\Qa.b"#, "axb", false), (#"(?P<st>[A-Z]+)-\d+"#, "ST-12", true),
        ("(?<st>x)", "x", true), ("(a+)+", "aaaa", true), ("(a+)+b", "aaaa", false), ("(a*)*", "", true),
        ("(a|a)*b", "aaab", true), ("river-.*", "river-gage", true), ("[a-c]{2}|x+", "xx", true),
        (#"\-\[\]\{\}\(\)\*\+\?\|\^\$\\"#, #"-[]{}()*+?|^$\"#, true), (#"[\x{4E00}-\x{9FFF}]+"#, "日本語", true),
        (#"[^\n]*"#, "abc", true), (#"[^\n]*"#, "a\nb", false), ("()", "", true), ("(?:)", "", true),
        ("()+", "", true), ("(a|)+", "aa", true), ("(?U)a+", "aaa", true), ("x*y*z*", "xxzz", true),
        ("(a|b|c)*abc", "cbaabc", true), ("0164(65|70)00", "01646500", true), ("0164(65|70)00", "01646600", false),
    ]

    @Test("a table of patterns and values (Unicode, classes, counts, alternation, groups, flags)")
    func table() throws {
        #expect(Self.table.count >= 60)
        for (pattern, text, expected) in Self.table {
            let re = try LinearRegex(pattern)
            #expect(re.fullMatch(text) == expected, "\(pattern) on \(text.debugDescription)")
        }
    }

    // MARK: what is refused

    static let refused: [(pattern: String, kind: LinearRegexError.Kind, says: String)] = [
        ("a(?=b)", .unsupported, "lookahead `(?=` at character 2 is not supported (matchers are RE2: linear time)"),
        ("(?!x)y", .unsupported, "negative lookahead `(?!` at character 1 is not supported"),
        ("(?<=x)y", .unsupported, "lookbehind `(?<=` at character 1"),
        ("(?<!x)y", .unsupported, "negative lookbehind `(?<!`"),
        (#"(a)\1"#, .unsupported, #"backreference `\1` at character 4 is not supported"#),
        ("(?P<n>a)(?P=n)", .unsupported, "backreference `(?P=` at character 9"),
        (#"(?<n>x)\k<n>"#, .unsupported, #"backreference `\k`"#),
        ("a*+", .unsupported, "possessive quantifier `*+` at character 2"),
        ("a{2}+", .unsupported, "possessive quantifier `{2}+`"),
        ("(?>a)", .unsupported, "atomic group `(?>`"), ("(?R)", .unsupported, "recursion"),
        (#"\p{Greek}"#, .unsupported, #"Unicode class `\p{Greek}`"#), ("(?x)a", .unsupported, "flag `x`"),
        ("a**", .syntax, "invalid nested repetition operator `**` at character 3"),
        ("a*??", .syntax, "invalid nested repetition operator"),
        ("*a", .syntax, "missing argument to repetition operator `*` at character 1"),
        ("{2}", .syntax, "missing argument to repetition operator `{2}`"),
        ("(ab", .syntax, "missing closing `)` for the group at character 1"),
        ("ab)", .syntax, "unmatched `)` at character 3"), ("[ab", .syntax, "missing closing `]`"),
        ("[z-a]", .syntax, "invalid character class range `z-a` at character 2"),
        ("a{3,2}", .syntax, "invalid repeat count `{3,2}`"),
        ("a{1001}", .tooLarge, "repeat count `{1001}` at character 2 is over 1000"),
        ("a{0,1001}", .tooLarge, "is over 1000"), ("a{2000000000000}", .tooLarge, "is over 1000"),
        (#"ab\"#, .syntax, "trailing backslash at character 3"), (#"\y"#, .syntax, #"invalid escape `\y`"#),
        (#"\Z"#, .syntax, #"`\Z`"#), ("[[:foo:]]", .syntax, "invalid character class `[:foo:]`"),
        ("(?i", .syntax, "missing closing `)`"), ("(?)", .syntax, "invalid flags"),
        (#"\x{110000}"#, .syntax, "invalid escape"), (#"\u0041"#, .syntax, #"write `\x{263A}`"#),
    ]

    @Test("backtracking-only constructs and malformed syntax are refused with the position and construct")
    func refusals() {
        for (pattern, kind, says) in Self.refused {
            do {
                _ = try LinearRegex(pattern)
                Issue.record("\(pattern) was accepted")
            } catch let error as LinearRegexError {
                #expect(error.kind == kind, "\(pattern): \(error)")
                #expect(error.message.contains(says), "\(pattern): \(error)")
            } catch {
                Issue.record("\(pattern): \(error)")
            }
        }
    }

    // MARK: sizes

    @Test("a 480 KB alternation is refused at parse; a 4 KiB pattern is accepted, 4 KiB + 1 is not")
    func patternSize() throws {
        let big = (0..<61_000).map { String(format: "S%06d", $0) }.joined(separator: "|")
        #expect(big.utf8.count > 480_000)
        let error = #expect(throws: LinearRegexError.self) { try LinearRegex(big) }
        #expect(error?.kind == .tooLarge)
        #expect(error?.message == "the regular expression is \(big.utf8.count) bytes; at most 4096 are allowed")

        // 455 station ids of eight characters plus separators: 4,094 bytes, then padded to exactly 4,096.
        var ids = (0..<455).map { String(format: "ST%06d", $0) }.joined(separator: "|")
        ids += String(repeating: "x", count: LinearRegex.maxPatternBytes - ids.utf8.count)
        #expect(ids.utf8.count == 4096)
        let re = try LinearRegex(ids)
        #expect(re.fullMatch("ST000017"))
        #expect(!re.fullMatch("ST000455"))
        #expect(throws: LinearRegexError.self) { try LinearRegex(ids + "y") }
    }

    @Test("counted repetition is bounded: per count (1000) and after expansion (10,000 instructions)")
    func countedRepetition() throws {
        let thousand = try LinearRegex("a{1000}")
        #expect(thousand.fullMatch(String(repeating: "a", count: 1000)))
        #expect(!thousand.fullMatch(String(repeating: "a", count: 999)))
        let upTo = try LinearRegex(".{0,1000}")
        #expect(upTo.fullMatch(String(repeating: "日", count: 1000)))
        #expect(!upTo.fullMatch(String(repeating: "日", count: 1001)))
        for pattern in ["(a{100}){100}", "((a{1000}){1000}){1000}", "(x{1000}){11}", "(a{10}|b{10}){1000}"] {
            let error = #expect(throws: LinearRegexError.self) { try LinearRegex(pattern) }
            #expect(error?.kind == .tooLarge)
            #expect(error?.message.contains("more than 10000 instructions") == true, "\(pattern)")
        }
        let nested = String(repeating: "(", count: 101) + "a" + String(repeating: ")", count: 101)
        let deep = #expect(throws: LinearRegexError.self) { try LinearRegex(nested) }
        #expect(deep?.message == "groups nest more than 100 deep at character 101")
        #expect(
            try LinearRegex(String(repeating: "(", count: 100) + "a" + String(repeating: ")", count: 100))
                .fullMatch("a"))
    }

    // MARK: linear time

    @Test(
        "hostile patterns on 30 KB values take at most 2 × instructions × (length + 1) steps",
        arguments: [
            ("(a+)+", "a", "", true), ("(a+)+", "a", "!", false), ("(a|a)*b", "a", "", false),
            ("(a|a)*b", "a", "b", true), ("(a*)*$", "a", "", true), ("(x+x+)+y", "x", "", false),
            ("(x+x+)+y", "x", "y", true), ("(a|aa)*c", "a", "", false), ("(.*a){20}", "a", "", true),
            ("(a?){30}a{30}", "a", "", false), ("(\\w+\\s?)*$", "a", "!", false), ("((a+)+)+b", "a", "", false),
            ("(?i)(A|a)*(a|A)*b", "a", "", false),
        ])
    func hostile(pattern: String, unit: String, tail: String, expected: Bool) throws {
        let re = try LinearRegex(pattern)
        let text = String(repeating: unit, count: 30_000) + tail
        var steps = 0
        #expect(re.fullMatch(text, steps: &steps) == expected)
        let length = text.unicodeScalars.count
        #expect(steps > 0)
        #expect(steps <= 2 * re.instructionCount * (length + 1), "\(steps) steps for \(re.instructionCount)")
    }

    @Test("the work bound holds for wide programs too: 1,500 live alternatives on a 1 KiB value")
    func wideProgram() throws {
        let re = try LinearRegex("(" + Array(repeating: "a", count: 1500).joined(separator: "|") + ")*")
        let text = String(repeating: "a", count: 1024)
        var steps = 0
        #expect(re.fullMatch(text, steps: &steps))
        #expect(steps <= 2 * re.instructionCount * 1025)
        #expect(!re.fullMatch(text + "b"))
        // The second time, every DFA state and transition is known: one step per scalar.
        var again = 0
        #expect(re.fullMatch(text, steps: &again))
        #expect(again <= text.unicodeScalars.count + 1, "\(again)")
        var vm = 0
        #expect(re.fullMatchOnVM(text, steps: &vm))
        #expect(vm > 100 * again, "the VM alone pays for every live alternative: \(vm)")
    }

    @Test("a pattern whose DFA explodes overflows the state cache and still answers right, within the bound")
    func exponentialDFA() throws {
        // The 13th scalar from the end is `a`: 2^12 DFA states, far over the cache.
        let re = try LinearRegex("(a|b)*a(a|b){12}")
        var rng = SplitMix64(seed: 0xDFA)
        for round in 0..<600 {
            let length = Int.random(in: 13...60, using: &rng)
            let text = String((0..<length).map { _ in Bool.random(using: &rng) ? Character("a") : "b" })
            let expected = Array(text)[length - 13] == "a"
            var steps = 0
            #expect(re.fullMatch(text, steps: &steps) == expected, "round \(round): \(text)")
            #expect(steps <= 2 * re.instructionCount * (length + 1))
            var vmSteps = 0
            #expect(re.fullMatchOnVM(text, steps: &vmSteps) == expected)
        }
    }

    @Test("matches of one program from many tasks at once agree (the DFA states are shared under a lock)")
    func concurrentMatches() async throws {
        let re = try LinearRegex("(?i)st[0-9]{3}|(a|b)*a(a|b){6}")
        let texts = (0..<400).map { i in
            i % 3 == 0 ? "ST\(100 + i)" : String(i, radix: 2).map { $0 == "1" ? "a" : "b" }.joined()
        }
        let expected = texts.map { t in
            var steps = 0
            return re.fullMatchOnVM(t, steps: &steps)
        }
        let results = await withTaskGroup(of: [Bool].self) { group in
            for _ in 0..<8 { group.addTask { texts.map { re.fullMatch($0) } } }
            var all: [[Bool]] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.count == 8)
        for r in results { #expect(r == expected) }
    }

    // MARK: differential

    @Test("random patterns agree with a backtracking reference and with ICU on small values")
    func differential() throws {
        var rng = SplitMix64(seed: 0x27_05)
        var compared = 0
        var positives = 0
        for round in 0..<900 {
            let fold = round % 5 == 0
            let tree = Gen.random(&rng, depth: 3, fold: fold)
            let re2 = (fold ? "(?i)" : "") + tree.re2
            let icu = (fold ? "(?i)" : "") + tree.icu
            let engine = try LinearRegex(re2)
            let reference = try NSRegularExpression(pattern: "\\A(?:\(icu))\\z")
            for k in 0..<14 {
                var text = tree.sample(&rng)
                if k % 2 == 1 { Gen.mutate(&text, &rng) }
                if k == 13 {
                    text = (0..<Int.random(in: 0...5, using: &rng)).map { _ in Gen.alphabet.randomElement(using: &rng)!
                    }
                }
                let t = String(String.UnicodeScalarView(text))
                let mine = engine.fullMatch(t)
                var vmSteps = 0
                #expect(engine.fullMatchOnVM(t, steps: &vmSteps) == mine, "\(re2) on \(t.debugDescription): VM")
                let backtracking = tree.matches(text, fold: fold)
                let ns = reference.firstMatch(in: t, range: NSRange(t.startIndex..., in: t)) != nil
                #expect(
                    mine == backtracking, "\(re2) on \(t.debugDescription): engine \(mine), reference \(backtracking)")
                #expect(mine == ns, "\(re2) (ICU \(icu)) on \(t.debugDescription): engine \(mine), ICU \(ns)")
                compared += 1
                if mine { positives += 1 }
            }
        }
        #expect(compared == 900 * 14)
        #expect(positives > compared / 5, "the samples exercise matches, not only misses: \(positives)")
    }
}

/// A seeded generator, so a failure reproduces.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The test's own pattern tree: rendered as RE2 (for the engine) and ICU (for NSRegularExpression),
/// matched by a plain backtracking reference, and sampled for values in (or near) its language.
indirect enum Gen {
    case lit(Unicode.Scalar)
    case cls([ClosedRange<Unicode.Scalar>], negated: Bool)
    case perl(Character)
    case dot
    case cat([Gen])
    case alt([Gen])
    case star(Gen)
    case plus(Gen)
    case quest(Gen)
    case count(Gen, Int, Int?)
    case group(Gen, capture: Bool)
    case empty

    static let alphabet: [Unicode.Scalar] = [
        "a", "b", "c", "A", "B", "1", "7", "_", "-", " ", "é", "É", "日", "\n", ".",
    ]
    static let classRanges: [ClosedRange<Unicode.Scalar>] = [
        "a"..."c", "A"..."C", "0"..."9", "é"..."é", "日"..."日", "_"..."_", "-"..."-", "b"..."b", "."...".",
    ]

    static func random(_ rng: inout SplitMix64, depth: Int, fold: Bool) -> Gen {
        let leafOnly = depth == 0
        switch Int.random(in: 0..<(leafOnly ? 4 : 11), using: &rng) {
        case 0: return .lit(alphabet.filter { $0 != "\n" }.randomElement(using: &rng)!)
        case 1:
            let n = Int.random(in: 1...3, using: &rng)
            let ranges = (0..<n).map { _ in classRanges.randomElement(using: &rng)! }
            return .cls(ranges, negated: !fold && Bool.random(using: &rng))
        case 2: return .perl((fold ? ["d", "w", "s"] : ["d", "D", "w", "W", "s", "S"]).randomElement(using: &rng)!)
        case 3: return Bool.random(using: &rng) ? .dot : .lit("a")
        case 4, 5:
            return .cat(
                (0..<Int.random(in: 2...3, using: &rng)).map { _ in random(&rng, depth: depth - 1, fold: fold) })
        case 6:
            return .alt(
                (0..<Int.random(in: 2...3, using: &rng)).map { _ in
                    Int.random(in: 0..<6, using: &rng) == 0 ? .empty : random(&rng, depth: depth - 1, fold: fold)
                })
        case 7: return .star(random(&rng, depth: depth - 1, fold: fold))
        case 8:
            return Bool.random(using: &rng)
                ? .plus(random(&rng, depth: depth - 1, fold: fold)) : .quest(random(&rng, depth: depth - 1, fold: fold))
        case 9:
            let lo = Int.random(in: 0...2, using: &rng)
            let hi: Int? = Bool.random(using: &rng) ? nil : lo + Int.random(in: 0...2, using: &rng)
            return .count(random(&rng, depth: depth - 1, fold: fold), lo, hi)
        default: return .group(random(&rng, depth: depth - 1, fold: fold), capture: Bool.random(using: &rng))
        }
    }

    static func escaped(_ c: Unicode.Scalar) -> String {
        ".^$|?*+()[]{}\\".unicodeScalars.contains(c) ? "\\\(c)" : String(c)
    }

    static func classEscaped(_ c: Unicode.Scalar) -> String {
        "]\\^-[".unicodeScalars.contains(c) ? "\\\(c)" : String(c)
    }

    var isAtom: Bool {
        switch self {
        case .lit, .cls, .perl, .dot, .group: return true
        default: return false
        }
    }

    func render(icu: Bool) -> String {
        func sub(_ g: Gen) -> String { g.isAtom ? g.render(icu: icu) : "(?:\(g.render(icu: icu)))" }
        switch self {
        case .lit(let c): return Self.escaped(c)
        case .cls(let ranges, let negated):
            let items = ranges.map { r in
                r.lowerBound == r.upperBound
                    ? Self.classEscaped(r.lowerBound)
                    : "\(Self.classEscaped(r.lowerBound))-\(Self.classEscaped(r.upperBound))"
            }
            return "[" + (negated ? "^" : "") + items.joined() + "]"
        case .perl(let c):
            guard icu else { return "\\\(c)" }
            let base = ["d": "0-9", "w": "0-9A-Za-z_", "s": "\\t\\n\\f\\r "][c.lowercased()]!
            return c.isUppercase ? "[^\(base)]" : "[\(base)]"
        case .dot: return "."
        case .cat(let items): return items.map(sub).joined()
        case .alt(let items): return items.map { $0.render(icu: icu) }.joined(separator: "|")
        case .star(let g): return sub(g) + "*"
        case .plus(let g): return sub(g) + "+"
        case .quest(let g): return sub(g) + "?"
        case .count(let g, let lo, let hi):
            return sub(g) + "{\(lo)" + (hi.map { $0 == lo ? "}" : ",\($0)}" } ?? ",}")
        case .group(let g, let capture): return (capture ? "(" : "(?:") + g.render(icu: icu) + ")"
        case .empty: return ""
        }
    }

    var re2: String { render(icu: false) }
    var icu: String { render(icu: true) }

    // The reference: continuation-passing backtracking, plain and slow, fine on values of a few scalars.

    static func perlContains(_ c: Character, _ s: Unicode.Scalar) -> Bool {
        let v = s.value
        let hit: Bool
        switch c.lowercased() {
        case "d": hit = (0x30...0x39).contains(v)
        case "w": hit = (0x30...0x39).contains(v) || (0x41...0x5A).contains(v) || (0x61...0x7A).contains(v) || v == 0x5F
        default: hit = [0x09, 0x0A, 0x0C, 0x0D, 0x20].contains(v)
        }
        return hit != c.isUppercase
    }

    static func variants(_ s: Unicode.Scalar, fold: Bool) -> [Unicode.Scalar] {
        guard fold else { return [s] }
        return [s]
            + [String(s).lowercased(), String(s).uppercased()].compactMap { t in
                t.unicodeScalars.count == 1 ? t.unicodeScalars.first : nil
            }
    }

    func m(_ t: [Unicode.Scalar], _ i: Int, _ fold: Bool, _ k: (Int) -> Bool) -> Bool {
        switch self {
        case .empty: return k(i)
        case .lit(let c):
            return i < t.count && Self.variants(t[i], fold: fold).contains(c) && k(i + 1)
        case .cls(let ranges, let negated):
            guard i < t.count else { return false }
            let hit = Self.variants(t[i], fold: fold).contains { v in ranges.contains { $0.contains(v) } }
            return hit != negated && k(i + 1)
        case .perl(let c): return i < t.count && Self.perlContains(c, t[i]) && k(i + 1)
        case .dot: return i < t.count && t[i] != "\n" && k(i + 1)
        case .group(let g, _): return g.m(t, i, fold, k)
        case .cat(let items):
            guard let first = items.first else { return k(i) }
            let rest = Gen.cat(Array(items.dropFirst()))
            return first.m(t, i, fold) { j in rest.m(t, j, fold, k) }
        case .alt(let items): return items.contains { $0.m(t, i, fold, k) }
        case .star(let g): return k(i) || g.m(t, i, fold) { j in j > i && Gen.star(g).m(t, j, fold, k) }
        case .plus(let g): return Gen.cat([g, .star(g)]).m(t, i, fold, k)
        case .quest(let g): return k(i) || g.m(t, i, fold, k)
        case .count(let g, let lo, let hi):
            if lo > 0 { return g.m(t, i, fold) { j in Gen.count(g, lo - 1, hi.map { $0 - 1 }).m(t, j, fold, k) } }
            guard let hi else { return Gen.star(g).m(t, i, fold, k) }
            return k(i) || (hi > 0 && g.m(t, i, fold) { j in Gen.count(g, 0, hi - 1).m(t, j, fold, k) })
        }
    }

    func matches(_ t: [Unicode.Scalar], fold: Bool) -> Bool { m(t, 0, fold) { $0 == t.count } }

    /// A value in the language, most of the time (negated classes and the like may miss).
    func sample(_ rng: inout SplitMix64) -> [Unicode.Scalar] {
        switch self {
        case .empty: return []
        case .lit(let c): return [c]
        case .cls(let ranges, let negated):
            let pool =
                negated
                ? Self.alphabet.filter { c in !ranges.contains { $0.contains(c) } }
                : Self.alphabet.filter { c in ranges.contains { $0.contains(c) } } + ranges.map(\.upperBound)
            return pool.randomElement(using: &rng).map { [$0] } ?? []
        case .perl(let c):
            return Self.alphabet.filter { Self.perlContains(c, $0) }.randomElement(using: &rng).map { [$0] } ?? []
        case .dot: return [Self.alphabet.filter { $0 != "\n" }.randomElement(using: &rng)!]
        case .group(let g, _): return g.sample(&rng)
        case .cat(let items): return items.flatMap { $0.sample(&rng) }
        case .alt(let items): return items.randomElement(using: &rng)!.sample(&rng)
        case .star(let g): return (0..<Int.random(in: 0...2, using: &rng)).flatMap { _ in g.sample(&rng) }
        case .plus(let g): return (0..<Int.random(in: 1...2, using: &rng)).flatMap { _ in g.sample(&rng) }
        case .quest(let g): return Bool.random(using: &rng) ? g.sample(&rng) : []
        case .count(let g, let lo, let hi):
            let n = lo + Int.random(in: 0...((hi ?? lo + 2) - lo), using: &rng)
            return (0..<n).flatMap { _ in g.sample(&rng) }
        }
    }

    static func mutate(_ t: inout [Unicode.Scalar], _ rng: inout SplitMix64) {
        let c = alphabet.randomElement(using: &rng)!
        switch Int.random(in: 0..<3, using: &rng) {
        case 0: t.insert(c, at: Int.random(in: 0...t.count, using: &rng))
        case 1 where !t.isEmpty: t.remove(at: Int.random(in: 0..<t.count, using: &rng))
        default: if !t.isEmpty { t[Int.random(in: 0..<t.count, using: &rng)] = c } else { t.append(c) }
        }
    }
}
