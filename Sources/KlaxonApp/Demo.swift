import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore

/// `klaxon demo`: a bundled scenario run through the real path — readings written to a CSV file,
/// ingested into a temporary SQLite database, evaluated by the example rules, alerts printed by the
/// stdout adapter. Offline, in seconds.
public enum Demo {
    /// The demo's rules, in the same YAML rule authors write.
    public static let rulesYAML = """
        rules:
          - name: river-flood-stage
            kind: levels
            metric: gage_height
            levels:
              - {name: action, at: 10}
              - {name: minor, at: 12}
              - {name: moderate, at: 14}
              - {name: major, at: 17}
            deadband: 0.3
            severity: warning
            labels: {team: public-works}
            message: >-
              {{#firing}}Mill River at {{station}} reached {{level}} stage: {{value}} {{unit}}.{{/firing}}
              {{#changed}}Mill River at {{station}}: {{from_level}} → {{level}} stage, {{value}} {{unit}}.{{/changed}}
              {{#resolved}}Mill River at {{station}} is back below flood stages: {{value}} {{unit}}.{{/resolved}}
          - name: river-high-for-an-hour
            kind: threshold
            metric: gage_height
            above: 13
            clear: 12.5
            for: 1h
            severity: critical
          - name: gauge-silent
            kind: stale
            metric: gage_height
            after: 1h
            severity: info
        """

    /// A river rising from 8 ft through action, minor and moderate over a day, then receding, with a
    /// two-hour telemetry gap near the end. 15-minute readings.
    public static func scenarioCSV(start: Int64) -> String {
        var lines = ["station,metric,time,value,unit,source"]
        let steps = 4 * 40  // 40 hours
        for i in 0..<steps {
            if i >= 140 && i < 148 { continue }  // the gauge goes quiet for two hours
            let t = start + Int64(i) * 900
            let hours = Double(i) / 4
            // A smooth flood wave peaking at 14.8 ft twenty hours in.
            let wave = 6.8 * exp(-pow((hours - 20) / 7, 2))
            let value = (8 + wave) * 100
            lines.append("MILL1,gage_height,\(Timestamp.format(t)),\(value.rounded() / 100),ft,demo")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Runs the scenario; prints alerts to stdout and a summary to stderr. Returns the transitions.
    @discardableResult
    public static func run(format: StdoutNotifier.Format = .text, keep: Bool = false) throws -> [Transition] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "klaxon-demo-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: dir) } }
        let rulesPath = dir.appendingPathComponent("rules.yaml").path
        let readingsPath = dir.appendingPathComponent("readings.csv").path
        let dbPath = dir.appendingPathComponent("klaxon.sqlite").path
        try rulesYAML.write(toFile: rulesPath, atomically: true, encoding: .utf8)
        let start = Timestamp.parse("2026-04-02T00:00:00Z")!
        try scenarioCSV(start: start).write(toFile: readingsPath, atomically: true, encoding: .utf8)

        let clock = ContinuousClock.now
        let rules = try RuleLoader.load(paths: [rulesPath])
        let store = try Store.open(path: dbPath)
        let summary = try Ingest.run(store: store, files: [readingsPath])
        printError(
            "demo: ingested \(summary.stats.inserted) readings of gauge MILL1 into \(keep ? dbPath : "a temporary database")"
        )
        let result = try Evaluate.run(store: store, rules: rules, now: start + 40 * 3600)
        let stdout = StdoutNotifier(format: format)
        for (t, message) in result.transitions { stdout.write(t, message: message) }
        let elapsed = clock.duration(to: .now)
        printError(
            "demo: \(result.newReadings) readings evaluated by \(rules.count) rules, \(result.transitions.count) alerts delivered to stdout in \(elapsed.formatted(.units(allowed: [.seconds, .milliseconds], width: .abbreviated)))"
        )
        return result.transitions.map(\.transition)
    }
}
