import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Issue 38: a silence's matchers come back from every store exactly as they went in (name,
/// operator, value), whatever the value holds; and replacing a silence is one transaction.
@Suite(.timeLimit(.minutes(10))) struct SilenceConformanceTests {
    /// Values the old `name=value` lines could not keep: an equality that reads as a regex, quotes
    /// that were stripped, an operator inside the value, line breaks, spaces, NUL, JSON-looking text.
    static let hostileValues = [
        "~.*", "\"S2\"", "a\nb", "=", "!~x", "=~.*", "!=", "~", " padded ", "\"", "é🌊水位", "[", "[{\"name\":1}]",
        "\\", "\u{0}", "\r\n", "\u{202E}x", "",
    ]

    static func silence(_ id: String, _ matchers: [Matcher], now: Int64 = 100) -> Silence {
        Silence(id: id, matchers: matchers, starts: now, ends: now + 3600, comment: "c", createdBy: "ops")
    }

    @Test(
        "hostile values round-trip through the store unchanged, and mute only what they name",
        arguments: Backend.allCases)
    func hostileValuesRoundTrip(_ backend: Backend) async throws {
        try await backend.withStore { f in
            var written: [String: [Matcher]] = [:]
            for (i, value) in Self.hostileValues.enumerated() {
                let matchers = [
                    try Matcher(name: "station", op: .equal, value: value),
                    try Matcher(name: "rule", op: .notEqual, value: value),
                ]
                written["s\(i)"] = matchers
                try await f.store.addSilence(Self.silence("s\(i)", matchers), now: 100)
            }
            let regex = [try Matcher(name: "station", op: .regex, value: "S.*"), try Matcher.parse("rule!~x|\"y\"")]
            written["r"] = regex
            try await f.store.addSilence(Self.silence("r", regex), now: 100)
            let read = try await f.store.silences(now: 100)
            #expect(read.count == written.count)
            for s in read {
                #expect(s.matchers == written[s.id], "\(s.id)")
                #expect(s.matchers.allSatisfy { $0.problem == nil })
                #expect(s.matchers.map(\.op) == written[s.id]?.map(\.op))
            }
            // The silence of the station `~.*` mutes that station only.
            let wide = try #require(try await f.store.activeSilences(now: 100).first { $0.id == "s0" })
            #expect(wide.mutes(["station": "~.*", "rule": "high"], at: 100))
            #expect(!wide.mutes(["station": "S1", "rule": "high"], at: 100))
            let page = try await f.store.silences(now: 100, includeExpired: true, limit: 100, after: nil)
            #expect(Dictionary(uniqueKeysWithValues: page.silences.map { ($0.id, $0.matchers) }) == written)
        }
    }

    @Test("property: random names, operators and values read back identical", arguments: Backend.allCases)
    func randomMatchersRoundTrip(_ backend: Backend) async throws {
        var rng = SplitMix64(seed: 38)
        // Letters of several scripts, digits, and every character the old text format gave meaning to.
        let pool = Array("aZ09_=!~\"\\\n\r\t '[]{},:é水🌊\u{0}\u{A0}\u{200B}\u{0455}") + ["\u{1F1FA}\u{1F1F8}"]
        let namePool = Array("abcXYZ_019éж水")
        var silences: [Silence] = []
        for i in 0..<60 {
            var matchers: [Matcher] = []
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                let name = String(
                    (0..<Int.random(in: 1...6, using: &rng)).map { _ in namePool.randomElement(using: &rng)! })
                let value = String(
                    (0..<Int.random(in: 0...24, using: &rng)).map { _ in pool.randomElement(using: &rng)! })
                let op = Matcher.Op.allCases.randomElement(using: &rng)!
                let matcher =
                    try (try? Matcher(name: name, op: op, value: value))
                    ?? Matcher(name: name, op: .equal, value: value)
                matchers.append(matcher)
            }
            silences.append(Self.silence(String(format: "p%03d", i), matchers))
        }
        try await backend.withStore { f in
            for s in silences { try await f.store.addSilence(s, now: 100) }
            let read = try await f.store.silences(now: 100)
            #expect(read.map(\.id) == silences.map(\.id))
            for (a, b) in zip(read, silences) {
                #expect(a.matchers == b.matchers, "\(b.id)")
                #expect(a.matchers.map(\.value.unicodeScalars.count) == b.matchers.map(\.value.unicodeScalars.count))
                #expect(a.matchers.allSatisfy { $0.problem == nil })
            }
        }
    }

    @Test(
        "replacing a silence: one of 40 replacements at once wins; the other 39 change nothing",
        arguments: Backend.allCases)
    func concurrentReplacements(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let m = try Matcher.parse("station=S1")
            try await store.addSilence(Self.silence("old", [m]), now: 100)
            #expect(try await store.replaceSilence(id: "none", with: Self.silence("x", [m]), now: 200) == .notFound)
            let outcomes = try await withThrowingTaskGroup(of: (String, ReplaceOutcome).self) { group in
                for i in 0..<40 {
                    let new = Self.silence("new-\(i)", [m], now: 200)
                    group.addTask { ("new-\(i)", try await store.replaceSilence(id: "old", with: new, now: 200)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let winners = outcomes.filter { $0.1 == .replaced }.map(\.0)
            #expect(winners.count == 1)
            #expect(outcomes.filter { $0.1 == .ended }.count == 39)
            #expect(try await store.activeSilences(now: 200).map(\.id) == winners)
            // The id the winner got is the one that mutes: expiring it leaves nothing muting.
            #expect(try await store.expireSilence(id: winners[0], now: 300) == .expired(winners[0]))
            #expect(try await store.activeSilences(now: 300).isEmpty)
            #expect(
                try await store.replaceSilence(id: winners[0], with: Self.silence("y", [m], now: 300), now: 300)
                    == .ended)
        }
    }
}

/// A seeded generator, so a failing property run can be repeated.
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
