import Foundation
import Testing

/// Issue 12, item 5: input that hangs or traps `klaxon`. Each file here is a few hundred bytes that
/// once hung a command or killed it with a trap (exit 132); now each gives a `PATH:LINE[:COL]` error.
@Suite(.serialized) struct HostileInputTests {
    /// Nine levels of nine aliases (9⁹ ≈ 387 million nodes once expanded), used as a mapping key:
    /// Yams hashes keys to find duplicates, which visits every copy.
    static let laughs: String = {
        var lines = [#"a: &a ["x","x","x","x","x","x","x","x","x"]"#]
        let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
        for (previous, name) in zip(names, names.dropFirst()) {
            lines.append(
                "\(name): &\(name) [" + Array(repeating: "*\(previous)", count: 9).joined(separator: ",") + "]")
        }
        lines.append("j: {*i: 1}")
        return lines.joined(separator: "\n") + "\n"
    }()

    static let hugeDuration = String(repeating: "999999999w", count: 16)

    @Test func aBillionLaughsFileIsRefusedAtOnceWhereverYAMLIsRead() async throws {
        #expect(Self.laughs.utf8.count < 500)
        let s = try Scratch()
        let bomb = try s.write("laughs.yaml", Self.laughs)
        let aliasError = "error: YAML aliases expand to more than 100000 nodes"

        let rules = try await klaxonAsync(["check", "--rules", bomb])
        #expect(!rules.killed, "klaxon check hung on a billion-laughs rule file")
        #expect(rules.status == 1)
        // The first alias of `f` (line 6, column 8) takes the copies past 100 000.
        #expect(rules.errorLines.contains { $0.hasPrefix("\(bomb):6:8: \(aliasError)") }, "\(rules.stderr)")

        let config = try await klaxonAsync(["check", "--config", bomb, "--rules", bomb])
        #expect(!config.killed, "klaxon check hung on a billion-laughs config")
        #expect(config.status == 1)
        #expect(config.errorLines.filter { $0.contains(aliasError) }.count == 2, "\(config.stderr)")

        let tests = try await klaxonAsync(["test", bomb])
        #expect(!tests.killed, "klaxon test hung on a billion-laughs test file")
        #expect(tests.status != 0)
        #expect(tests.stderr.contains(aliasError) || tests.stdout.contains(aliasError), "\(tests.stderr)")

        let trip = try await klaxonAsync(["trip", "add", bomb, "--db", s.path("k.sqlite"), "--owner", "alice"])
        #expect(!trip.killed, "klaxon trip add hung on a billion-laughs trip file")
        #expect(trip.status != 0)
        #expect(trip.stderr.contains(aliasError), "\(trip.stderr)")
    }

    @Test func deepNestingAndOversizedFilesAreRefusedWithAClearError() async throws {
        let s = try Scratch()
        // The file's mapping is level 1, so the 64th `[` (column 9 + 63) would open level 65.
        let nested = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        let deep = try s.write("deep.yaml", "name: x\nlabels: \(nested)\n")
        let r = try await klaxonAsync(["check", "--rules", deep])
        #expect(!r.killed)
        #expect(r.status == 1)
        #expect(
            r.errorLines.contains("\(deep):2:72: error: YAML nested more than 64 levels deep"), "\(r.stderr)")

        let empty = try s.write("empty.yaml", "")
        let e = await InProcess.check(rules: [empty])
        #expect(e.errorLines.contains("\(empty):1:1: error: the file holds no rule"), "\(e.stderr)")

        let big = try s.write("big.yaml", "name: x\nmessage: \"" + String(repeating: "y", count: 5 << 20) + "\"\n")
        let b = try await klaxonAsync(["check", "--rules", big])
        #expect(!b.killed)
        #expect(b.status == 1)
        #expect(
            b.errorLines.contains("\(big):1:1: error: the file is larger than 4 MiB, the limit for a YAML file"),
            "\(b.stderr)")
    }

    @Test func aHugeGroupWaitIsRefusedByCheckAndTheLongestAllowedCannotTrapEvaluate() async throws {
        let s = try Scratch()
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: stage\nabove: 10\nnotify: [hook]\n")
        try s.write("r.csv", "station,metric,time,value\nS1,stage,2026-01-01T00:00:00Z,20\n")
        func config(_ wait: String) throws -> String {
            try s.write(
                "klaxon-\(wait.count).yaml",
                """
                database: k.sqlite
                rules: rules
                receivers: [{name: hook, type: stdout}]
                routes:
                  - receivers: [hook]
                    group_wait: \(wait)
                    group_interval: \(wait)
                    repeat_interval: \(wait)
                    escalate_after: \(wait)
                    escalate_to: hook

                """)
        }
        let huge = try config(Self.hugeDuration)
        let check = await InProcess.check(config: huge)
        #expect(check.status == 1)
        let shown = "\"\(Self.hugeDuration.prefix(60))…\""
        for (line, column, key) in [
            (6, 17, "group_wait"), (7, 21, "group_interval"), (8, 22, "repeat_interval"), (9, 21, "escalate_after"),
        ] {
            #expect(
                check.errorLines.contains(
                    "\(huge):\(line):\(column): error: \(key) is longer than the limit of 3650d (10 years): \(shown)"),
                "\(check.stderr)")
        }
        let refused = try await klaxonAsync(["evaluate", "--config", huge, "--now", "2026-01-01T00:05:00Z"])
        #expect(refused.status == 1, "\(refused.stderr)")  // refused at load, not a trap (132)

        let longest = try config("3650d")
        #expect(await InProcess.check(config: longest).status == 0)
        #expect(await InProcess.ingest(config: longest, s.path("r.csv")).status == 0)
        let eval = try await klaxonAsync(["evaluate", "--config", longest, "--now", "2026-01-01T00:05:00Z"])
        #expect(eval.status == 0, "\(eval.stderr)")
        let again = try await klaxonAsync(["evaluate", "--config", longest, "--now", "9999-12-31T23:59:59Z"])
        #expect(again.status == 0, "\(again.stderr)")
    }

    @Test func anOversizedRateWindowIsRefusedAndTheLongestCannotTrapDryRun() async throws {
        let s = try Scratch()
        var csv = "station,metric,time,value\n"
        for h in 0..<6 { csv += "S1,stage,2026-01-0\(1 + h % 2)T0\(h):00:00Z,\(h * h)\n" }
        let readings = try s.write("r.csv", csv)
        func rule(_ window: String, per: String = "window") throws -> String {
            try s.write(
                "rate-\(window.count)-\(per.count).yaml",
                "name: fast\nkind: rate\nmetric: stage\nrising: 1\nwindow: \(window)\nper: \(per)\nfor: \(window)\n")
        }
        let huge = try rule(Self.hugeDuration)
        let check = await InProcess.check(rules: [huge])
        #expect(check.status == 1)
        #expect(
            check.errorLines.contains {
                $0.hasPrefix("\(huge):5:9: error: window is longer than the limit of 3650d (10 years)")
            }, "\(check.stderr)")
        let dry = try await klaxonAsync(["dry-run", "--rules", huge, "--readings", readings])
        #expect(dry.status == 1, "\(dry.stderr)")

        for path in [try rule("3650d"), try rule("3650d", per: "1s"), try rule("1s", per: "3650d")] {
            let ok = try await klaxonAsync(["dry-run", "--rules", path, "--readings", readings, "--format", "json"])
            #expect(ok.status == 0, "\(ok.stderr)")
        }
    }

    @Test func ingestReportsANulInAStationAndA10MBStationByFileAndLine() async throws {
        let s = try Scratch()
        let t = "2026-01-01T00:00:00Z"
        var text = "station,metric,time,value\n"
        text += "S1\u{0}evil,stage,\(t),1\n"
        text += String(repeating: "A", count: 10_000_000) + ",stage,\(t),2\n"
        text += String(repeating: "B", count: 200) + ",stage,\(t),3\n"
        text += "S2,stage,0001-01-01T00:00:00Z,4\n"
        text += "S3,stage,\(t),5\n"
        let csv = try s.write("r.csv", text)
        let r = await InProcess.ingest(db: s.path("k.sqlite"), csv)
        #expect(r.status == 1)
        #expect(
            Array(r.errorLines.prefix(4)) == [
                "\(csv):2: station contains the control character U+0000",
                "\(csv):3: the line is longer than 65536 bytes; not read",
                "\(csv):4: station is 200 bytes long; the limit is 128",
                "\(csv):5: time 0001-01-01T00:00:00Z is outside the years 1800 to 2199",
            ], "\(r.stderr)")
        // Only the good row was stored.
        let rule = try s.write("any.yaml", "name: any\nkind: threshold\nmetric: stage\nabove: 0\n")
        let dry = await InProcess.dryRun(rules: [rule], db: s.path("k.sqlite"), format: .json)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("\"S3\""))
        #expect(!dry.stdout.contains("S1"))
        #expect(!dry.stdout.contains("AAAA"))
    }
}
