import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import Testing

/// `dry-run` prints in time order from bounded memory, whatever order the readings come in.
@Suite("dry-run output")
struct DryRunOutputTests {
    static let rules = """
        rules:
          - name: flap
            kind: threshold
            metric: gage_height
            above: 10
            severity: info
          - name: held
            kind: threshold
            metric: gage_height
            above: 11
            for: 30m
            severity: warning
        """

    /// `series` gauges × `steps` 15-minute readings that cross 10 and 11 often.
    static func readings(series: Int, steps: Int) -> [(station: String, time: Int64, value: Double)] {
        var out: [(String, Int64, Double)] = []
        for k in 0..<steps {
            for s in 0..<series {
                let v = 10 + 1.5 * sin(Double(k * (s + 2)) / 3.0) + Double((k * 7 + s * 3) % 5) / 10
                out.append(("G\(s)", 1_767_225_600 + Int64(k) * 900, (v * 100).rounded() / 100))
            }
        }
        return out
    }

    static func csv(_ rows: [(station: String, time: Int64, value: Double)]) -> String {
        "station,metric,time,value\n"
            + rows.map { "\($0.station),gage_height,\(Timestamp.format($0.time)),\(formatValue($0.value))\n" }.joined()
    }

    @Test("a file grouped by series and a time-ordered file print the same lines, in json and text")
    func groupedAndTimeOrderedAgree() async throws {
        let s = try Scratch()
        let rules = try s.write("rules/r.yaml", Self.rules)
        let rows = Self.readings(series: 4, steps: 200)
        let timeOrdered = try s.write("time.csv", Self.csv(rows))
        let grouped = try s.write(
            "grouped.csv", Self.csv(rows.sorted { ($0.station, $0.time) < ($1.station, $1.time) }))
        for format in [["--format", "json"], ["--explain"]] {
            let a = try await klaxonAsync(["dry-run", "--rules", rules, "--readings", timeOrdered] + format)
            let b = try await klaxonAsync(["dry-run", "--rules", rules, "--readings", grouped] + format)
            #expect(a.status == 0 && b.status == 0, "\(a.stderr) \(b.stderr)")
            #expect(a.lines.count > 100)
            #expect(a.stdout == b.stdout)
        }
    }

    @Test("series interleaved by time in a changing order, with unwatched series among them, replay as if grouped")
    func interleavedInAChangingOrder() throws {
        let s = try Scratch()
        let dry = DryRun(rules: try RuleLoader.load(paths: [try s.write("rules/r.yaml", Self.rules)]))
        let rows = Self.readings(series: 5, steps: 300)
        // Each time's readings in an order that shifts now and then, an unwatched metric's among them.
        var lines = ["station,metric,time,value"]
        for k in 0..<300 {
            var at = rows.filter { $0.time == 1_767_225_600 + Int64(k) * 900 }
            if k % 7 == 3 { at.reverse() } else if k % 5 == 1 { at = Array(at[2...] + at[..<2]) }
            for (n, r) in at.enumerated() {
                lines.append("\(r.station),gage_height,\(Timestamp.format(r.time)),\(formatValue(r.value))")
                if n % 2 == k % 2 { lines.append("\(r.station),discharge,\(Timestamp.format(r.time)),\(n)") }
            }
        }
        let mixed = try s.write("mixed.csv", lines.joined(separator: "\n") + "\n")
        let grouped = try s.write(
            "grouped.csv", Self.csv(rows.sorted { ($0.station, $0.time) < ($1.station, $1.time) }))
        let expected = try dry.run(files: [grouped]).transitions
        #expect(expected.count > 100)
        #expect(try dry.run(files: [mixed]).transitions == expected)
    }

    @Test("a series replayed again, sorted, is printed once, also when the output renders on its own thread")
    func disorderedSeriesWithBackgroundOutput() throws {
        let s = try Scratch()
        let ruleList = try RuleLoader.load(paths: [try s.write("rules/r.yaml", Self.rules)])
        let renderer = try MessageRenderer(rules: ruleList)
        let dry = DryRun(rules: ruleList)
        var rows = Self.readings(series: 3, steps: 120)
        // One series out of order half way: it is replayed again, sorted, and what it gave is discarded.
        let i = rows.firstIndex { $0.station == "G2" && $0.time > 1_767_225_600 + 60 * 900 }!
        rows.swapAt(i, i + 3 * 3)
        let file = try s.write("mixed.csv", Self.csv(rows))
        let expected = try dry.run(files: [file]).transitions
        for background in [false, true] {
            let output = DryRunOutput(format: .json, explain: false, renderer: renderer, runSize: 50)
            if background { output.beginBackground() }
            _ = try dry.run(files: [file], emit: { try output.add($0) }, discard: { output.discard($0) })
            var lines: [String] = []
            #expect(try output.finish { lines.append($0) } == expected.count)
            #expect(lines == DryRunPrinter.json(expected, renderer: renderer, explain: false))
        }
    }

    @Test("many transitions spilled in runs come out merged, in order, as if held in memory")
    func spilledRunsMergeInOrder() throws {
        let s = try Scratch()
        let ruleList = try RuleLoader.load(paths: [try s.write("rules/r.yaml", Self.rules)])
        let renderer = try MessageRenderer(rules: ruleList)
        let dry = DryRun(rules: ruleList)
        let rows = Self.readings(series: 6, steps: 400)
        let grouped = try s.write(
            "grouped.csv", Self.csv(rows.sorted { ($0.station, $0.time) < ($1.station, $1.time) }))
        let expected = try dry.run(files: [grouped]).transitions
        #expect(expected.count > 500)
        for format in [StdoutNotifier.Format.json, .text] {
            for (explain, background) in [(false, false), (true, false), (false, true), (true, true)] {
                // Runs of 37: many temporary files, merged; rendered on the caller's thread or on one of
                // the output's own (as `klaxon dry-run` does).
                let output = DryRunOutput(format: format, explain: explain, renderer: renderer, runSize: 37)
                if background { output.beginBackground() }
                _ = try dry.run(files: [grouped], emit: { try output.add($0) }, discard: { output.discard($0) })
                try output.endBackground()
                var lines: [String] = []
                let printed = try output.finish { lines.append($0) }
                #expect(printed == expected.count)
                let held =
                    format == .json
                    ? DryRunPrinter.json(expected, renderer: renderer, explain: explain)
                    : DryRunPrinter.text(expected, renderer: renderer, explain: explain)
                #expect(lines == held)
            }
        }
        // Nothing is left behind in the temporary folder.
        let left = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())
            .filter { $0.hasPrefix("klaxon-dry-run-\(getpid())-") }
        #expect(left.isEmpty)
    }
}
