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
        let ingest = await InProcess.ingest(config: config, s.path("r.csv"))
        #expect(ingest.status == 0, "\(ingest.stderr)")
        let eval = await InProcess.evaluate(config: config, now: "2026-01-01T00:05:00Z")
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
        let add = await InProcess.silenceAdd(config: config, match: ["station=~(a+)+"], for: "2h", comment: "works")
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains("station=~(a+)+"))
        let list = await InProcess.silenceList(config: config)
        #expect(list.stdout.contains("station=~(a+)+"))

        let dispatch = try await klaxonAsync(["dispatch", "--config", config, "--until-empty"])
        #expect(dispatch.status == 0, "\(dispatch.stderr)")
        #expect(!dispatch.killed)
        let muted = await InProcess.outboxList(config: config, state: "muted")
        let mutedStations = muted.lines.map(tokens).reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(mutedStations.contains(Self.all), "\(muted.stdout)")
        #expect(!mutedStations.contains(Self.near), "\(muted.stdout)")
        #expect(!mutedStations.contains("G1"), "\(muted.stdout)")
        let sent = await InProcess.outboxList(config: config, state: "sent")
        let sentStations = sent.lines.map(tokens).reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(sentStations.isSuperset(of: [Self.near, "G1"]), "\(sent.stdout)")
    }

    @Test(
        "silence add names what it matches: a rule or station nothing knows is a warning with the near names, and it says how many firing alerts it mutes now"
    )
    func addSaysWhatItMatches() async throws {
        let s = try Scratch()
        let config = try await prepare(s)
        func add(_ matchers: [String], db: Bool = false) async throws -> Run {
            let run = await InProcess.silenceAdd(
                db: db ? s.path("k.sqlite") : nil, config: db ? nil : config, match: matchers, for: "2h", comment: "x")
            #expect(run.status == 0, "\(matchers): \(run.stderr)")
            // The id still comes first: scripts take it from there.
            #expect(run.lines.first?.split(separator: " ").first?.count == 36, "\(run.stdout)")
            return run
        }
        // A mistyped rule: added, muting nothing, with a warning naming the rule near it.
        let typo = try await add(["rule=hihg"])
        #expect(typo.lines.last == "mutes no firing alert now", "\(typo.stdout)")
        #expect(typo.errorLines == [#"warning: no rule named "hihg"; near: high"#], "\(typo.stderr)")
        // A mistyped station, with the rule right.
        let station = try await add(["rule=high", "station=G2"])
        #expect(station.lines.last == "mutes no firing alert now")
        #expect(station.errorLines == [#"warning: no station named "G2"; near: G1"#], "\(station.stderr)")
        // Names the store and rules know: no warning; the count of what fires now.
        let all = try await add(["rule=high"])
        #expect(all.lines.last == "mutes 3 firing alerts now", "\(all.stdout)")
        #expect(all.errorLines.isEmpty, "\(all.stderr)")
        let one = try await add(["alertname=high", "station=G1"])
        #expect(one.lines.last == "mutes 1 firing alert now")
        #expect(one.errorLines.isEmpty, "\(one.stderr)")
        // A regex names nothing: counted, not checked.
        let regex = try await add(["rule=~hi.*", "station=~G.*"])
        #expect(regex.lines.last == "mutes 1 firing alert now")
        #expect(regex.errorLines.isEmpty, "\(regex.stderr)")
        // Without --config, the rules are those the store has alerts of.
        let bare = try await add(["rule=hgh"], db: true)
        #expect(bare.errorLines == [#"warning: no rule named "hgh"; near: high"#], "\(bare.stderr)")
        // A hostile name is shown escaped, not obeyed by the terminal.
        let hostile = try await add(["rule=\u{1B}[2Jx"])
        #expect(!hostile.stderr.contains("\u{1B}"), "\(hostile.stderr)")
        #expect(hostile.stderr.hasPrefix("warning: no rule named"), "\(hostile.stderr)")
        let list = await InProcess.silenceList(config: config)
        #expect(list.lines.count == 7, "\(list.stdout)")
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
            let add = await InProcess.silenceAdd(
                config: config, match: ["rule=high", matcher], for: "2h", comment: "x")
            #expect(add.status == 1, "\(matcher.prefix(40)): \(add.stderr)")
            #expect(add.stderr.contains(says), "\(matcher.prefix(40)): \(add.stderr)")
            #expect(add.stderr.utf8.count < 1000, "the refusal does not echo a huge pattern")
        }
        let list = await InProcess.silenceList(config: config)
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
        let run = await InProcess.check(config: config, rules: [repoPath("Rules/water.yaml")])
        #expect(run.status == 1)
        #expect(run.stderr.contains("klaxon.yaml:4:"), "\(run.stderr)")
        #expect(run.stderr.contains("lookahead `(?=` at character 2 is not supported"), "\(run.stderr)")
        #expect(run.stderr.contains("klaxon.yaml:5:"), "\(run.stderr)")
        #expect(run.stderr.contains("is over 1000"), "\(run.stderr)")
        #expect(run.errorLines.filter { $0.contains("error:") }.count == 2, "\(run.stderr)")
    }

    @Test("issue 38: --match 'station=\"~.*\"' is the station named ~.*, kept so in the store: it mutes nothing here")
    func quotedValueStaysEquality() async throws {
        let s = try Scratch()
        let config = try await prepare(s)
        let add = await InProcess.silenceAdd(
            config: config, match: ["rule=high", "station=\"~.*\""], for: "2h", comment: "literal")
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains("mutes no firing alert now"), "\(add.stdout)")
        let dispatch = try await klaxonAsync(["dispatch", "--config", config, "--until-empty"])
        #expect(dispatch.status == 0, "\(dispatch.stderr)")
        let muted = await InProcess.outboxList(config: config, state: "muted")
        #expect(muted.lines.filter { $0.contains("high") }.isEmpty, "\(muted.stdout)")
        let far = await InProcess.silenceAdd(config: config, match: ["rule=high"], for: "3651d", comment: "x")
        #expect(far.status != 0, "longer than 3650d: \(far.stdout)")
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
