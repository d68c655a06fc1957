import Foundation
import KlaxonCore
import KlaxonRegex
import Testing

/// Issue 38, item 9: heavy regex silences within the limits (20 silences × 64 matchers) made a page,
/// the v2 API and delivery match for minutes. Matching is bounded by a `MatchBudget` per request or
/// batch, costly results are memoized per compiled program, and equality matchers decide first.
/// These assert work (regex steps), never time.
@Suite("Match budget: bounded silence matching")
struct MatchBudgetTests {
    /// A legal pattern (2,000 instructions) that matches every label value, and whose DFA states (two
    /// thousand counters each, one per position) overflow the state cache until the DFA is given up:
    /// each match then costs thousands of steps a scalar. `k` makes each pattern distinct.
    static func heavy(_ k: Int) -> String { "(?:.?){1000}|z\(k)" }

    /// Label values no two alike, of `a` and `b`.
    static func values(_ n: Int, length: Int, seed: UInt64) -> [String] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { i in
            "s\(i)" + String((0..<length).map { _ in Bool.random(using: &rng) ? Character("a") : "b" })
        }
    }

    static func silences(_ count: Int, matchers: Int, first: Int = 0) throws -> [Silence] {
        try (0..<count).map { s in
            let ms = try (0..<matchers).map { m in
                try Matcher(name: "station", op: .regex, value: heavy(first + s * matchers + m))
            }
            return Silence(id: "s\(s)", matchers: ms, starts: 0, ends: 100, comment: "", createdBy: "t")
        }
    }

    /// The most a budget may be overrun: one match's unchecked work (its start, one scalar, its end).
    static let overrun = 4 * LinearRegex.maxInstructions

    @Test("20 silences of 64 heavy matchers against 200 alerts spend at most one budget, and say so")
    func boundedRequest() throws {
        let silences = try Self.silences(20, matchers: 64)
        let alerts = Self.values(200, length: 60, seed: 38).map { ["station": $0, "rule": "r"] }
        var budget = MatchBudget(steps: 2_000_000)
        var undecided = 0
        for labels in alerts {
            let (_, decided) = Silence.muting(silences, labels, at: 10, budget: &budget)
            if !decided { undecided += 1 }
        }
        #expect(budget.ranOut)
        #expect(undecided > 0)
        #expect(budget.spent <= budget.limit + Self.overrun, "\(budget.spent) steps")
        // Once out, nothing more runs: at most one match was started after the budget was spent.
        #expect(budget.regexMatches <= 20 * 64 * 200)
    }

    @Test("a request that runs out leaves its work to the next: results are memoized per program")
    func memoCarriesOver() throws {
        let silences = try Self.silences(2, matchers: 3, first: 10_000)
        let alerts = Self.values(10, length: 40, seed: 9).map { ["station": $0] }
        var answers: [Bool?] = Array(repeating: nil, count: alerts.count)
        var requests = 0
        var total = 0
        while answers.contains(where: { $0 == nil }) {
            requests += 1
            #expect(requests < 200, "no progress")
            if requests >= 200 { return }
            var budget = MatchBudget(steps: 1_000_000)
            for (i, labels) in alerts.enumerated() where answers[i] == nil {
                let (found, decided) = Silence.muting(silences, labels, at: 10, budget: &budget)
                if decided { answers[i] = !found.isEmpty }
            }
            #expect(budget.spent <= budget.limit + Self.overrun)
            total += budget.spent
        }
        #expect(requests > 1, "the budget is small enough to need several requests")
        // Now every costly result is known: a whole pass costs next to nothing.
        var again = MatchBudget(steps: MatchBudget.requestSteps)
        for (i, labels) in alerts.enumerated() {
            let (found, decided) = Silence.muting(silences, labels, at: 10, budget: &again)
            #expect(decided)
            #expect(!found.isEmpty == answers[i])
        }
        #expect(again.memoHits == 2 * 3 * alerts.count)
        #expect(again.spent * 100 < total, "\(again.spent) of \(total)")
        // And the answers are those of unbounded matching: every silence mutes every alert.
        for (i, labels) in alerts.enumerated() {
            #expect(answers[i] == silences.contains { $0.mutes(labels, at: 10) })
            #expect(answers[i] == true)
        }
    }

    @Test("an equality matcher that fails decides before any regex runs")
    func equalityFirst() throws {
        let heavy = try Matcher(name: "station", op: .regex, value: Self.heavy(20_000))
        let rule = try Matcher(name: "rule", op: .equal, value: "other")
        let silence = Silence(id: "x", matchers: [heavy, rule], starts: 0, ends: 100, comment: "", createdBy: "t")
        var budget = MatchBudget(steps: 1_000_000)
        for station in Self.values(50, length: 50, seed: 1) {
            #expect(silence.mutes(["station": station, "rule": "r"], at: 10, budget: &budget) == false)
        }
        #expect(budget.regexMatches == 0)
        #expect(budget.spent == 50)
    }

    @Test("fullMatch within a budget: nil once over it, the overrun bounded; a memoized value is free")
    func regexBudget() throws {
        let re = try LinearRegex(Self.heavy(30_000))
        let text = Self.values(1, length: 400, seed: 3)[0]
        var small = MatchBudget(steps: 1000)
        #expect(re.fullMatch(text, budget: &small) == nil)
        #expect(small.ranOut)
        #expect(small.spent <= 1000 + Self.overrun)
        var empty = MatchBudget(steps: 0)
        #expect(re.fullMatch(text, budget: &empty) == nil)
        #expect(empty.spent == 0)
        var enough = MatchBudget(steps: 100_000_000)
        let hit = re.fullMatch(text, budget: &enough)
        var vm = 0
        #expect(hit == re.fullMatchOnVM(text, steps: &vm))
        #expect(enough.spent >= 256, "costly enough to be memoized")
        var again = MatchBudget(steps: 0)
        #expect(re.fullMatch(text, budget: &again) == hit)
        #expect(again.spent == 0 && again.memoHits == 1)
    }
}

/// A seeded generator, so a failure reproduces (the regex tests' own, now in `KlaxonRegexTests`).
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
