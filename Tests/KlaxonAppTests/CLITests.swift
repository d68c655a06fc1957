import Foundation
import Testing

let thresholdRule = """
    name: high
    kind: threshold
    metric: gage_height
    above: 12
    clear: 11.5
    for: 30m
    """

let levelsRule = """
    name: stages
    kind: levels
    metric: gage_height
    levels: [{name: action, at: 10}, {name: minor, at: 12}]
    """

/// A small river series: rises through 12 and falls back, 15-minute readings.
let riverCSV = """
    station,metric,time,value,unit
    G1,gage_height,2026-01-01T00:00:00Z,9,ft
    G1,gage_height,2026-01-01T00:15:00Z,10.5,ft
    G1,gage_height,2026-01-01T00:30:00Z,12,ft
    G1,gage_height,2026-01-01T00:45:00Z,12.4,ft
    G1,gage_height,2026-01-01T01:00:00Z,12.1,ft
    G1,gage_height,2026-01-01T01:15:00Z,11.6,ft
    G1,gage_height,2026-01-01T01:30:00Z,11.4,ft
    G1,gage_height,2026-01-01T01:45:00Z,9.5,ft

    """

@Suite(.serialized) struct CLITests {
    @Test func ingestReportsBadRowsByFileAndLineAndKeepsTheGoodOnes() async throws {
        let s = try Scratch()
        let csv = try s.write(
            "r.csv",
            """
            station,metric,time,value
            G1,gage_height,2026-01-01T00:00:00Z,1.5
            G1,gage_height,2026-01-01T00:15:00,2
            G1,gage_height,2026-01-01T00:30:00Z,abc
            ,gage_height,2026-01-01T00:45:00Z,3
            G1,gage_height,2026-01-01T01:00:00-05:00,4

            """)
        let jsonl = try s.write(
            "r.jsonl",
            """
            {"station":"G2","metric":"discharge","time":"2026-01-01T00:00:00Z","value":120,"unit":"ft3/s"}
            {"station":"G2","metric":"discharge","time":"2026-01-01T00:15:00Z","value":"121.5"}
            {"station":"G2","metric":"discharge","time":"2026-01-01T00:30:00Z","valu":1}
            not json

            """)
        let db = s.path("k.sqlite")
        let r = try await klaxonAsync(["ingest", "--db", db, csv, jsonl])
        #expect(r.status == 1)
        #expect(
            r.errorLines.contains(
                "\(csv):3: time \"2026-01-01T00:15:00\" is not ISO 8601 with Z or an offset (like 2026-01-01T00:15:00Z)"
            ))
        #expect(r.errorLines.contains("\(csv):4: value \"abc\" is not a finite number"))
        #expect(r.errorLines.contains("\(csv):5: station is empty"))
        #expect(r.errorLines.contains { $0.hasPrefix("\(jsonl):3: unknown key \"valu\"") })
        #expect(r.errorLines.contains { $0.hasPrefix("\(jsonl):4: ") })
        #expect(r.stderr.contains("4 new, 0 revised, 0 unchanged, 5 rejected"))

        // Again: idempotent, nothing new.
        let again = await InProcess.ingest(db: db, csv)
        #expect(again.stderr.contains("0 new, 0 revised, 2 unchanged, 3 rejected"))

        // A file that does not exist is reported, not a crash.
        let missing = await InProcess.ingest(db: db, s.path("nope.csv"))
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("nope.csv: cannot read"))
    }

    @Test func checkReportsEveryProblemWithPosition() async throws {
        let s = try Scratch()
        let bad = try s.write(
            "rules/bad.yaml",
            """
            rules:
              - name: a
                kind: threshold
                metric: gage_height
                above: high
                for: 10 minutes
                colour: red
              - name: b
                kind: levels
                metric: gage_height
                levels: [{name: x, at: 5}, {name: y, at: 3}]
              - kind: stale
                metric: m
                after: 1h
              - name: c
                kind: thresold
            """)
        try s.write("rules/good.yaml", thresholdRule)
        let r = try await klaxonAsync(["check", "--rules", s.path("rules")])
        #expect(r.status == 1)
        let expected = [
            "\(bad):5:12: error: above must be a number, not \"high\"",
            "\(bad):6:10: error: for must be a duration like 30s, 15m, 6h or 2d, not \"10 minutes\"",
            "\(bad):7:5: error: unknown key \"colour\" in rule \"a\"",
            "\(bad):11:46: error: levels must ascend: \"y\" at 3 is not above \"x\" at 5",
            "\(bad):12:5: error: the rule is missing required key \"name\"",
            "\(bad):16:11: error: unknown kind \"thresold\" (kinds are air-forecast, levels, quake, rate, stale, threshold, trip-packing)",
        ]
        for line in expected { #expect(r.errorLines.contains(line), "missing: \(line)\n\(r.stderr)") }

        let ok = await InProcess.check(rules: [s.path("rules/good.yaml")])
        #expect(ok.status == 0)
        #expect(ok.stdout.contains("ok: 1 rules in 1 files"))

        // The shipped example rules are valid.
        #expect(try await klaxonAsync(["check"]).status == 0)
    }

    @Test func dryRunJSONFormatIsExact() async throws {
        let s = try Scratch()
        let rules = try s.write(
            "rules/r.yaml",
            "rules:\n"
                + [thresholdRule, levelsRule].map { rule in
                    rule.split(separator: "\n").enumerated().map { $0 == 0 ? "  - \($1)" : "    \($1)" }.joined(
                        separator: "\n")
                }.joined(separator: "\n"))
        let csv = try s.write("r.csv", riverCSV)
        let r = try await klaxonAsync(["dry-run", "--rules", rules, "--readings", csv, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let objects = try jsonObjects(r.lines)
        let summary = objects.map { "\($0["at"]!) \($0["rule"]!) \($0["state"]!)" }
        #expect(
            summary == [
                "2026-01-01T00:15:00Z stages firing",
                "2026-01-01T00:30:00Z stages changed",
                "2026-01-01T01:00:00Z high firing",  // 12 at 00:30, held 30m
                "2026-01-01T01:15:00Z stages changed",
                "2026-01-01T01:30:00Z high resolved",  // 11.4 < 11.5
                "2026-01-01T01:45:00Z stages resolved",
            ])
        // levels rules carry level/from_level; threshold rules do not.
        #expect(
            Set(objects[1].keys) == [
                "rule", "station", "metric", "state", "level", "from_level", "at", "value", "message",
            ])
        #expect(objects[1]["level"] as? String == "minor" && objects[1]["from_level"] as? String == "action")
        #expect(objects[1]["value"] as? Double == 12)
        #expect(Set(objects[2].keys) == ["rule", "station", "metric", "state", "at", "value", "message"])
        #expect(objects[5]["level"] is NSNull && objects[5]["from_level"] as? String == "action")
        #expect(r.stderr.contains("dry-run: 8 readings replayed, 6 transitions"))

        // --from/--to bound the replay.
        let bounded = await InProcess.dryRun(
            rules: [rules], readings: [csv], from: "2026-01-01T00:30:00Z", to: "2026-01-01T01:00:00Z", format: .json)
        #expect(try jsonObjects(bounded.lines).map { $0["state"] as! String } == ["firing", "firing"])

        // Text with --explain says why.
        let text = await InProcess.dryRun(rules: [rules], readings: [csv], explain: true)
        #expect(text.lines.first?.hasPrefix("AT") == true)
        #expect(text.stdout.contains("why: 12.1 ft is at or above 12 ft for 30m"), "\(text.stdout)")
        #expect(
            text.stdout.contains(
                "engine: gage_height 12.1 ft ≥ 12 (above); pending since 2026-01-01T00:30:00Z, held 30m (for 30m)"))
        #expect(text.stdout.contains("previous level action (10)"))
    }

    @Test func dryRunSortsOutOfOrderAndDuplicateReadings() async throws {
        let s = try Scratch()
        let rules = try s.write("r.yaml", levelsRule)
        var lines = riverCSV.split(separator: "\n").map(String.init)
        let header = lines.removeFirst()
        let sorted = try s.write("sorted.csv", ([header] + lines).joined(separator: "\n") + "\n")
        // Reversed, with a stale duplicate first: the later line for the same time wins, as in ingest.
        let shuffled = try s.write(
            "shuffled.csv",
            ([header, "G1,gage_height,2026-01-01T00:30:00Z,99,ft"] + lines.reversed()).joined(separator: "\n") + "\n")
        let a = await InProcess.dryRun(rules: [rules], readings: [sorted], format: .json)
        let b = await InProcess.dryRun(rules: [rules], readings: [shuffled], format: .json)
        #expect(a.status == 0 && b.status == 0)
        #expect(a.lines.count == 4)
        #expect(a.stdout == b.stdout)
    }

    @Test func dryRunOverTheStoreMatchesEvaluateAndNeverWrites() async throws {
        let s = try Scratch()
        let rules = try s.write("r.yaml", levelsRule)
        let csv = try s.write("r.csv", riverCSV)
        let db = s.path("k.sqlite")
        #expect(await InProcess.ingest(db: db, csv).status == 0)
        let attributes = { try FileManager.default.attributesOfItem(atPath: db)[.modificationDate] as? Date }
        let before = try attributes()
        let dry = await InProcess.dryRun(rules: [rules], db: db, format: .json)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(try attributes() == before)

        let eval = await InProcess.evaluate(db: db, rules: [rules], now: "2026-01-01T02:00:00Z", format: .json)
        #expect(eval.status == 0, "\(eval.stderr)")
        let fromDry = try jsonObjects(dry.lines).map {
            "\($0["at"]!) \($0["state"]!) \($0["level"]!) \($0["message"]!)"
        }
        let fromEval = try jsonObjects(eval.lines).map {
            "\($0["at"]!) \($0["state"]!) \($0["level"]!) \($0["message"]!)"
        }
        #expect(fromDry.count == 4)
        #expect(fromDry == fromEval)

        // Restart-safe: evaluating again creates no new transitions.
        let again = await InProcess.evaluate(db: db, rules: [rules], now: "2026-01-01T02:00:00Z")
        #expect(again.stdout.isEmpty)
        #expect(again.stderr.contains("0 new readings, 0 transitions"))

        // dry-run on a missing database says so.
        let missing = await InProcess.dryRun(rules: [rules], db: s.path("nope.sqlite"))
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cannot open database"))
    }

    @Test func dryRunNeedsExactlyOneInput() async throws {
        let r = try await klaxonAsync(["dry-run", "--rules", "Rules"])
        #expect(r.status != 0)
        #expect(r.stderr.contains("give exactly one of --readings FILE... or --db PATH"))
    }

    @Test func configSuppliesTheDatabaseAndRejectsUnknownKeys() async throws {
        let s = try Scratch()
        let csv = try s.write("r.csv", riverCSV)
        let config = try s.write("klaxon.yaml", "database: data/k.sqlite\nrules: rules\n")
        try FileManager.default.createDirectory(atPath: s.path("data"), withIntermediateDirectories: true)
        try s.write("rules/r.yaml", levelsRule)
        #expect(await InProcess.ingest(config: config, csv).status == 0)
        #expect(FileManager.default.fileExists(atPath: s.path("data/k.sqlite")))
        let eval = await InProcess.evaluate(config: config, now: "2026-01-01T02:00:00Z")
        #expect(eval.lines.count == 4, "\(eval.stderr)")

        let bad = try s.write("bad.yaml", "database: x.sqlite\ndatabse: y\n")
        let r = await InProcess.check(config: bad, rules: [s.path("rules")])
        #expect(r.status == 1)
        #expect(
            r.errorLines.contains(
                "\(bad):2:1: error: unknown key \"databse\" in the config (did you mean \"database\"?)"))
    }

    @Test func ruleTestsPassAndFailuresShowExpectedVersusGot() async throws {
        let shipped = try await klaxonAsync(["test", "Rules/tests"])
        #expect(shipped.status == 0, "\(shipped.stdout)")
        #expect(shipped.lines.last?.hasSuffix(" passed, 0 failed") == true)

        let s = try Scratch()
        try s.write("r.yaml", thresholdRule)
        let test = try s.write(
            "t.yaml",
            """
            rule_files: [r.yaml]
            tests:
              - name: wrong on purpose
                series:
                  - {station: G1, metric: gage_height, values: "12x4"}
                expect:
                  - at: 15m
                    firing: [{rule: high, station: G1}]
              - name: right
                series:
                  - {station: G1, metric: gage_height, values: "12x4"}
                expect:
                  - at: 30m
                    firing: [{rule: high, station: G1}]
            """)
        let r = try await klaxonAsync(["test", test])
        #expect(r.status == 1)
        #expect(r.stdout.contains("FAIL \(test): \"wrong on purpose\""))
        #expect(r.stdout.contains("expected firing: high G1"))
        #expect(r.stdout.contains("got firing:      (none)"))
        #expect(r.lines.last == "1 passed, 1 failed")
    }
}
