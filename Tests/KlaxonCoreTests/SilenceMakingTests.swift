import Foundation
import KlaxonCore
import Testing

/// Issue 38: every path makes its silence with `Silence.make` (`forAlert` for the chat, its buttons
/// and the site), which takes names literally and bounds what a silence may be; and an author a
/// client names cannot pass for one the server verified, however it is spelled.
@Suite("Silences: one constructor, literal names, reserved authors")
struct SilenceMakingTests {
    let now: Int64 = 1_767_225_600

    @Test("forAlert takes rule and station literally: `~.*`, quotes, operators and spaces are the name itself")
    func forAlertIsLiteral() throws {
        for (rule, station) in [("~.*", "S1"), ("high", "~.*"), ("high", "\"S2\""), ("a!~b", "=x"), (" r ", "s t")] {
            let s = try Silence.forAlert(
                rule: rule, station: station, duration: 3600, now: now, comment: "c", createdBy: "slack:U1")
            #expect(s.matchers.map(\.op) == [.equal, .equal])
            #expect(s.matchers.map(\.value) == [rule, station])
            #expect(s.mutes(["rule": rule, "station": station], at: now))
            #expect(!s.mutes(["rule": "high", "station": "S2"], at: now) || (rule == "high" && station == "S2"))
            #expect(!s.mutes(["rule": rule, "station": "elsewhere"], at: now), "\(rule) \(station)")
        }
    }

    @Test("make refuses no matchers, too many, only empty-matching ones, a bad time span, more than 3650d")
    func makeRefuses() throws {
        let m = try Matcher(name: "rule", op: .equal, value: "high")
        func refusal(_ matchers: [Matcher], starts: Int64? = nil, ends: Int64, author: String = "ops") -> String? {
            do {
                _ = try Silence.make(
                    matchers: matchers, starts: starts ?? now, ends: ends, now: now, comment: "", createdBy: author)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal([], ends: now + 60)?.contains("at least one matcher") == true)
        #expect(refusal(Array(repeating: m, count: 65), ends: now + 60)?.contains("at most 64") == true)
        #expect(refusal([try Matcher.parse("station=~.*")], ends: now + 60)?.contains("empty string") == true)
        #expect(refusal([try Matcher.parse("station!=x")], ends: now + 60)?.contains("empty string") == true)
        #expect(refusal([m], ends: now)?.contains("after the start") == true)
        #expect(refusal([m], starts: now + 100, ends: now + 50)?.contains("after the start") == true)
        #expect(refusal([m], ends: now + DurationText.maximum + 1)?.contains("3650d") == true)
        #expect(refusal([m], ends: 253_402_300_799)?.contains("3650d") == true, "year 9999")
        #expect(refusal([m], ends: now + 60, author: "\u{1B}[2Jx")?.contains("control character") == true)
        #expect(refusal([m], ends: now + DurationText.maximum) == nil)
        #expect(refusal([m, try Matcher.parse("station=~.*")], ends: now + 60) == nil)
        // A start in the past is now.
        let s = try Silence.make(
            matchers: [m], starts: now - 500, ends: now + 60, now: now, comment: "", createdBy: "o")
        #expect(s.starts == now)
    }

    @Test("a reserved author prefix is refused behind spaces, invisible characters and look-alike letters")
    func reservedAuthorLookAlikes() {
        for author in [
            "slack:U1", "Slack:U1", " web:bob", "\u{A0}web:bob", "\u{200B}slack:U1", "sl\u{200B}ack:U1",
            "\u{0455}lack:U1",  // Cyrillic dze
            "w\u{0435}b:bob",  // Cyrillic ie
            "m\u{0430}tterm\u{043E}st:x", "\u{FF53}lack:U1",  // full-width s
            "slack\u{A789}U1",  // modifier letter colon
            "\u{2060}api:x", "s\u{0301}lack:U1", "web\u{FF1A}bob",
        ] {
            let problem = Silence.claimedAuthorProblem(author)
            #expect(
                problem?.contains("reserved") == true, "\(author.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        for author in ["ops", "alice", "José", "slacker", "web-team", "Ωmega: on call", "webmaster"] {
            #expect(Silence.claimedAuthorProblem(author) == nil, "\(author)")
        }
    }
}
