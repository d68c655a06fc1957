import KlaxonCore
import Logging
import Testing

@Suite("a source's run of failures: one line per change")
struct SourceStreakTests {
    @Test("failing at the 1st, still failing at the 2nd, 4th, 8th …; the rest at debug; recovered once")
    func lines() throws {
        var streak = SourceStreak()
        var lines: [SourceStreak.Line] = []
        for n in 1...20 {
            lines.append(streak.failed(source: "feed", error: "connection refused", at: 1_000 + Int64(n)))
        }
        let warned = lines.enumerated().filter { $0.element.level == .warning }.map { $0.offset + 1 }
        #expect(warned == [1, 2, 4, 8, 16])
        #expect(lines.allSatisfy { $0.level == .warning || $0.level == .debug })
        #expect(
            lines[0]
                == SourceStreak.Line(
                    level: .warning, message: "source failing",
                    metadata: ["source": "feed", "error": "connection refused", "failures": .stringConvertible(1)]))
        #expect(
            lines[1]
                == SourceStreak.Line(
                    level: .warning, message: "source still failing",
                    metadata: [
                        "source": "feed", "error": "connection refused", "failures": .stringConvertible(2),
                        "since": "1970-01-01T00:16:41Z",
                    ]))
        let line = streak.succeeded(source: "feed", at: 2_000)
        let recovered = try #require(line)
        #expect(
            recovered
                == SourceStreak.Line(
                    level: .notice, message: "source recovered",
                    metadata: [
                        "source": "feed", "failures": .stringConvertible(20), "since": "1970-01-01T00:16:41Z",
                        "last_error": "connection refused",
                    ]))
        #expect(streak == SourceStreak())
        #expect(streak.succeeded(source: "feed", at: 2_001) == nil)
    }

    @Test("a changed error is a warning whatever the count; a streak seeded from the store counts on")
    func changesAndSeeds() {
        var streak = SourceStreak(failures: 2, lastError: "HTTP 500")
        #expect(streak.failed(source: "s", error: "HTTP 500", at: 10).level == .debug)  // 3rd
        #expect(streak.failed(source: "s", error: "HTTP 500", at: 11).level == .warning)  // 4th
        #expect(streak.failed(source: "s", error: "timed out", at: 12).level == .warning)  // 5th, new error
        #expect(streak.failed(source: "s", error: "timed out", at: 13).level == .debug)  // 6th
        #expect(SourceStreak.level(streak: 1, error: "x", previous: nil) == .warning)
    }
}
