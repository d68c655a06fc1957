import Foundation
import KlaxonCore
import KlaxonRegex
import Testing

/// Issue 27, item 5, as silences and routes see it: `=~`/`!~` matchers are RE2 (linear, anchored),
/// compiled once when the matcher is made, refused with a clear message, bounded in size.
/// (The operator basics are in `MatcherTests`, DeliveryPolicyTests.swift.)
@Suite("Matchers: RE2 regexes")
struct MatcherRegexTests {
    func refusal(_ text: String) -> String? {
        do {
            _ = try Matcher.parse(text)
            return nil
        } catch {
            return "\(error)"
        }
    }

    @Test("backtracking constructs are refused with the matcher, position and construct")
    func refusedWithMessage() {
        let why = "is not supported (matchers are RE2: linear time)"
        #expect(refusal("station=~a(?=b)") == "matcher station=~a(?=b): lookahead `(?=` at character 2 \(why)")
        #expect(refusal(#"rule!~(x)\1"#) == #"matcher rule!~(x)\1: backreference `\1` at character 4 "# + why)
        for hostile in [
            "station=~(?<!a)b", "station=~(?<n>x)\\k<n>", "station=~a++", "station=~(?>a)", "station=~a{1001}",
            "station=~(a{100}){100}", "station=~\\p{Greek}", "station=~(", "station=~.{0,65535}",
            "rule=~a{99999999}",
        ] {
            let message = refusal(hostile)
            #expect(message?.hasPrefix("matcher ") == true, "\(hostile) was accepted")
        }
    }

    @Test("RE2 accepts what Alertmanager accepts: (a+)+ is fine, and it matches in linear time")
    func catastrophicPatternsAreAcceptedAndCheap() throws {
        let m = try Matcher.parse("station=~(a+)+")
        let regex = try #require(m.regex)
        let near = String(repeating: "a", count: Matcher.maxValueBytes - 1) + "b"
        #expect(!m.matches(["station": near]))
        #expect(m.matches(["station": String(repeating: "a", count: 1000)]))
        var steps = 0
        _ = regex.fullMatch(near, steps: &steps)
        #expect(steps <= 2 * regex.instructionCount * (near.unicodeScalars.count + 1))
        #expect(try Matcher.parse("station!~(a|aa)*c").matches(["station": String(repeating: "a", count: 500)]))
    }

    @Test("a huge pattern is refused, and the message does not echo it back whole")
    func hugePatternShortMessage() {
        let big = "station=~" + (0..<60_000).map { "S\($0)" }.joined(separator: "|")
        let message = refusal(big) ?? ""
        #expect(message.contains("at most 4096 are allowed"))
        #expect(message.utf8.count < 400, "\(message.utf8.count)")
        let control = refusal("station=~a(?=\u{1B}[31m)") ?? ""
        #expect(!control.contains("\u{1B}"))
        #expect(control.contains("\\u{1b}"))
    }

    @Test("compiled once: the matcher holds its program; equality and hashing are on the text only")
    func compiledOnceAndHashable() throws {
        let a = try Matcher.parse("rule=~river-.*")
        let b = try Matcher(name: "rule", op: .regex, value: "river-.*")
        let ra = try #require(a.regex)
        let rb = try #require(b.regex)
        // One program per pattern: a silence read back from the store again does not compile again.
        #expect(ra.sharesProgram(with: rb))
        #expect(try #require(Matcher.parseStored("rule=~river-.*").regex).sharesProgram(with: ra))
        #expect(!ra.sharesProgram(with: try LinearRegex("river-.*")))
        #expect(a == b)
        #expect(Set([a, b]).count == 1)
        #expect(a.hashValue == b.hashValue)
        #expect(try Matcher.parse("rule=river").regex == nil)
        #expect(a != (try Matcher.parse("rule!~river-.*")))
        #expect(a.description == "rule=~river-.*")
    }

    @Test("a value longer than the bound is not evaluated: neither =~ nor !~ matches it")
    func valueBound() throws {
        let long = String(repeating: "a", count: Matcher.maxValueBytes + 1)
        #expect(!(try Matcher.parse("station=~a*").matches(["station": long])))
        #expect(!(try Matcher.parse("station!~b").matches(["station": long])))
        let edge = String(repeating: "a", count: Matcher.maxValueBytes)
        #expect(try Matcher.parse("station=~a*").matches(["station": edge]))
        // `=` and `!=` compare text, whatever its length.
        #expect(try Matcher.parse("station!=b").matches(["station": long]))
    }

    @Test("a stored matcher that no longer parses matches nothing, so its silence mutes nothing")
    func storedUnusable() throws {
        for text in ["station=~a(?=b)", "station!~a(?=b)", "station=~" + String(repeating: "a|", count: 3000) + "a"] {
            let m = Matcher.parseStored(text)
            #expect(m.problem != nil)
            #expect(!m.matches(["station": "a"]))
            #expect(!m.matches(["station": "zzz"]))
            let s = Silence(id: "s", matchers: [m], starts: 0, ends: 100, comment: "", createdBy: "t")
            #expect(!s.mutes(["station": "a"], at: 10))
        }
        let fine = Matcher.parseStored("station=~ST00.")
        #expect(fine.problem == nil && fine.matches(["station": "ST001"]))
        #expect(fine == (try Matcher.parse("station=~ST00.")))
    }

    @Test("silences and routes over many alerts: work is alerts × matchers × value length")
    func manyAlerts() throws {
        let hostile = try Matcher.parse("station=~(a|a)*b")
        let silence = Silence(
            id: "s", matchers: [try Matcher.parse("rule=~hi.*"), hostile], starts: 0, ends: 100, comment: "",
            createdBy: "t")
        let labels = (0..<2000).map { i in
            ["rule": "high", "station": String(repeating: "a", count: 100 + i % 28) + (i % 2 == 0 ? "b" : "")]
        }
        #expect(labels.filter { silence.mutes($0, at: 1) }.count == 1000)
        let regex = try #require(hostile.regex)
        var steps = 0
        for l in labels { _ = regex.fullMatch(l["station"]!, steps: &steps) }
        #expect(steps <= labels.count * 2 * regex.instructionCount * 129)

        let route = Route(matchers: [try Matcher.parse("station=~(x+x+)+y")], receivers: ["pager"])
        let routing = Routing(routes: [route], defaultReceiver: "chat")
        let t = Transition(
            rule: "high", kind: "threshold", station: String(repeating: "x", count: 120), metric: "gage_height",
            state: .firing, at: 0, value: 1, severity: .warning, summary: "", explanation: "")
        #expect(routing.deliveries(for: t, notify: []).map(\.receiver) == ["chat"])
    }
}
