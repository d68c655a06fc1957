import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// Issue 27, item 5, end to end: `klaxon silence add` takes RE2 matchers. A pattern that is
/// catastrophic for a backtracking engine is accepted (RE2 accepts it) and mutes in linear time;
/// lookaround, backreferences and oversized patterns are refused with a message saying why.
@Suite(.serialized) struct MatcherCLITests {
    static let near = String(repeating: "a", count: 40) + "b"
    static let all = String(repeating: "a", count: 40)

    func prepare(_ s: Scratch) async throws -> String {
        var csv = "station,metric,time,value\n"
        for st in [Self.all, Self.near, "G1"] { csv += "\(st),gage_height,2026-01-01T00:00:00Z,20\n" }
        try s.write("r.csv", csv)
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\n")
        let config = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: rules
            receivers:
              - {name: console, type: stdout}
            default_receiver: console
            """)
        let ingest = try await klaxonAsync(["ingest", "--config", config, s.path("r.csv")])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let eval = try await klaxonAsync(["evaluate", "--config", config, "--now", "2026-01-01T00:05:00Z"])
        #expect(eval.status == 0, "\(eval.stderr)")
        return config
    }

    func tokens(_ line: String) -> Set<String> {
        Set(line.split { !$0.isLetter && !$0.isNumber }.map(String.init))
    }

    @Test("station=~(a+)+ is accepted, listed, and mutes only what it matches")
    func catastrophicPatternMutesInLinearTime() async throws {
        let s = try Scratch()
        let config = try await prepare(s)
        let add = try await klaxonAsync([
            "silence", "add", "--config", config, "--match", "station=~(a+)+", "--for", "2h", "--comment", "works",
        ])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains("station=~(a+)+"))
        let list = try await klaxonAsync(["silence", "list", "--config", config])
        #expect(list.stdout.contains("station=~(a+)+"))

        let dispatch = try await klaxonAsync(["dispatch", "--config", config, "--until-empty"])
        #expect(dispatch.status == 0, "\(dispatch.stderr)")
        #expect(!dispatch.killed)
        let muted = try await klaxonAsync(["outbox", "list", "--config", config, "--state", "muted"])
        let mutedStations = muted.lines.map(tokens).reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(mutedStations.contains(Self.all), "\(muted.stdout)")
        #expect(!mutedStations.contains(Self.near), "\(muted.stdout)")
        #expect(!mutedStations.contains("G1"), "\(muted.stdout)")
        let sent = try await klaxonAsync(["outbox", "list", "--config", config, "--state", "sent"])
        let sentStations = sent.lines.map(tokens).reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(sentStations.isSuperset(of: [Self.near, "G1"]), "\(sent.stdout)")
    }

    @Test("lookaround, backreferences, possessive and oversized patterns are refused, nothing is stored")
    func refusedWithReason() async throws {
        let s = try Scratch()
        let config = try await prepare(s)
        let cases: [(String, String)] = [
            (
                "station=~a(?=b)",
                "matcher station=~a(?=b): lookahead `(?=` at character 2 is not supported"
                    + " (matchers are RE2: linear time)"
            ),
            ("station=~(a)\\1", "backreference `\\1` at character 4 is not supported"),
            ("station!~(?<!x)y", "negative lookbehind `(?<!`"),
            ("station=~a*+", "possessive quantifier `*+`"),
            ("station=~a{1001}", "repeat count `{1001}` at character 2 is over 1000"),
            ("station=~(a{100}){100}", "more than 10000 instructions"),
            ("station=~" + (0..<12_000).map { "S\($0)" }.joined(separator: "|"), "at most 4096 are allowed"),
        ]
        for (matcher, says) in cases {
            let add = try await klaxonAsync([
                "silence", "add", "--config", config, "--match", "rule=high", matcher, "--for", "2h", "--comment", "x",
            ])
            #expect(add.status == 1, "\(matcher.prefix(40)): \(add.stderr)")
            #expect(add.stderr.contains(says), "\(matcher.prefix(40)): \(add.stderr)")
            #expect(add.stderr.utf8.count < 1000, "the refusal does not echo a huge pattern")
        }
        let list = try await klaxonAsync(["silence", "list", "--config", config])
        #expect(list.stdout.contains("(no silences)"), "\(list.stdout)")
    }

    @Test("a route's regex is RE2 too: klaxon check says why one is refused, at its line and column")
    func routeRegexRefusedByCheck() async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            receivers: [{name: ops, type: stdout}]
            routes:
              - {receivers: [ops], match: {station: "~(a+)+"}}
              - {receivers: [ops], match: {station: "~a(?=b)"}}
              - {receivers: [ops], match: {rule: "~x{1001}"}}
            """)
        let run = try await klaxonAsync(["check", "--config", config, "--rules", "Rules/water.yaml"])
        #expect(run.status == 1)
        #expect(run.stderr.contains("klaxon.yaml:4:"), "\(run.stderr)")
        #expect(run.stderr.contains("lookahead `(?=` at character 2 is not supported"), "\(run.stderr)")
        #expect(run.stderr.contains("klaxon.yaml:5:"), "\(run.stderr)")
        #expect(run.stderr.contains("is over 1000"), "\(run.stderr)")
        #expect(run.errorLines.filter { $0.contains("error:") }.count == 2, "\(run.stderr)")
    }

    @Test("a stored silence whose regex no longer parses mutes nothing (it is not widened by dropping it)")
    func storedUnparseableSilenceMutesNothing() throws {
        let base = Silence(
            id: "s1", matchers: [try Matcher.parse("rule=high")], starts: 0, ends: 100, comment: "", createdBy: "t")
        for stored in ["station=~a(?=b)", "station=~(a)\\1\nrule=high", "rule=high\nstation=~x{5000}"] {
            var record = SilenceRecord(base, createdAt: 0)
            record.matchers = stored
            let silence = try #require(record.silence)
            #expect(silence.matchers.count == stored.split(separator: "\n").count)
            #expect(!silence.mutes(["rule": "high", "station": "ab"], at: 10))
            #expect(!silence.mutes(["rule": "high", "station": "x"], at: 10))
        }
        var fine = SilenceRecord(base, createdAt: 0)
        fine.matchers = "rule=high\nstation=~a+"
        let read = try #require(fine.silence)
        #expect(read.mutes(["rule": "high", "station": "aaa"], at: 10))
        // Read back again (as every dispatcher pass does): the same compiled program, not a new one.
        let again = try #require(fine.silence)
        #expect(try #require(again.matchers[1].regex).sharesProgram(with: try #require(read.matchers[1].regex)))
    }
}
