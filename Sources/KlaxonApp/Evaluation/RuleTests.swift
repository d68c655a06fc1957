import Foundation
import KlaxonCore
import Yams

/// `klaxon test`: rule unit tests in the spirit of `promtool test rules`.
///
/// ```yaml
/// rule_files: [../river.yaml]        # relative to this file
/// tests:
///   - name: rises through the levels
///     interval: 15m                  # default 15m
///     start: 2026-01-01T00:00:00Z    # default 1970-01-01T00:00:00Z
///     series:
///       - {station: s1, metric: gage_height, values: "9 10+1x3 _ 12"}
///     expect:
///       - at: 45m                    # offset from start, or an ISO time
///         firing: [{rule: river-levels, station: s1, level: minor}]
/// ```
public enum RuleTests {
    public struct Failure: Sendable, CustomStringConvertible {
        public var file: String
        public var test: String
        public var detail: String
        public var description: String { "FAIL \(file): \(test)\n\(detail)" }
    }

    public struct Outcome: Sendable {
        public var passed = 0
        public var failed = 0
        public var failures: [Failure] = []
        public var summary: String { "\(passed) passed, \(failed) failed" }
    }

    struct Expectation {
        var at: Int64
        var atText: String
        var firing: [(rule: String, station: String, level: String?)]
    }

    struct Case {
        var name: String
        var interval: Int64
        var start: Int64
        var series: [(key: SeriesKey, values: [Double?])]
        var expect: [Expectation]
    }

    /// Test files under the paths: files as given, folders' `*.yaml`/`*.yml` (recursively).
    public static func testFiles(_ paths: [String]) throws -> [String] {
        var out: [String] = []
        let fm = FileManager.default
        for path in paths {
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDir) else {
                throw UserError("\(path): no such file or folder")
            }
            if isDir.boolValue {
                let all = (fm.enumerator(atPath: path)?.allObjects as? [String]) ?? []
                out += all.filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted().map {
                    (path as NSString).appendingPathComponent($0)
                }
            } else {
                out.append(path)
            }
        }
        return out
    }

    /// Runs every test in the files; a file that does not load counts as one failure.
    public static func run(paths: [String]) throws -> Outcome {
        var outcome = Outcome()
        for path in try testFiles(paths) {
            let diagnostics = Diagnostics()
            let (ruleFiles, cases, floods) = loadWithFloods(path: path, diagnostics: diagnostics)
            var rules: [Rule] = []
            if diagnostics.isEmpty {
                rules = (try? RuleLoader.load(paths: ruleFiles, diagnostics: diagnostics)) ?? []
                if rules.isEmpty && diagnostics.isEmpty {
                    diagnostics.add(Diagnostic(path: path, line: 1, column: 1, message: "rule_files hold no rule"))
                }
            }
            guard diagnostics.isEmpty else {
                outcome.failed += 1
                outcome.failures.append(
                    Failure(
                        file: path, test: "(file did not load)",
                        detail: diagnostics.items.map { "  \($0)" }.joined(separator: "\n")))
                continue
            }
            let engine = RuleEngine(rules: rules, floods: floods)
            for c in cases {
                let problems = run(c, engine: engine)
                if problems.isEmpty {
                    outcome.passed += 1
                } else {
                    outcome.failed += 1
                    outcome.failures.append(
                        Failure(file: path, test: "\"\(c.name)\"", detail: problems.joined(separator: "\n")))
                }
            }
        }
        return outcome
    }

    /// Replays a case and compares the firing set at each expectation time.
    static func run(_ c: Case, engine: RuleEngine) -> [String] {
        var readings: [(time: Int64, series: Int, value: Double)] = []
        for (si, s) in c.series.enumerated() {
            for (i, v) in s.values.enumerated() {
                if let v { readings.append((c.start + Int64(i) * c.interval, si, v)) }
            }
        }
        readings.sort { ($0.time, $0.series) < ($1.time, $1.series) }
        var sessions: [Int: SeriesSession] = [:]
        var sink: [Transition] = []
        var next = 0
        var problems: [String] = []
        for e in c.expect.sorted(by: { $0.at < $1.at }) {
            while next < readings.count && readings[next].time <= e.at {
                let r = readings[next]
                next += 1
                if sessions[r.series] == nil {
                    guard let s = engine.session(for: c.series[r.series].key) else { continue }
                    sessions[r.series] = s
                }
                engine.step(&sessions[r.series]!, time: r.time, value: r.value, into: &sink)
            }
            var got: [(rule: String, station: String, level: String?)] = []
            for key in sessions.keys.sorted() {
                engine.advance(&sessions[key]!, to: e.at, into: &sink)
                for f in engine.firing(in: sessions[key]!) {
                    got.append((f.rule, sessions[key]!.series.station, f.level))
                }
            }
            var unmatched = got
            var missing: [(rule: String, station: String, level: String?)] = []
            for want in e.firing {
                if let i = unmatched.firstIndex(where: {
                    $0.rule == want.rule && $0.station == want.station && (want.level == nil || want.level == $0.level)
                }) {
                    unmatched.remove(at: i)
                } else {
                    missing.append(want)
                }
            }
            if !missing.isEmpty || !unmatched.isEmpty {
                func show(_ list: [(rule: String, station: String, level: String?)]) -> String {
                    list.isEmpty
                        ? "(none)"
                        : list.map { "\($0.rule) \($0.station)" + ($0.level.map { " level=\($0)" } ?? "") }.sorted()
                            .joined(separator: ", ")
                }
                problems.append(
                    "  at \(e.atText) (\(Timestamp.format(e.at))):\n    expected firing: \(show(e.firing))\n    got firing:      \(show(got))"
                )
            }
        }
        return problems
    }

    static func load(path: String, diagnostics: Diagnostics) -> ([String], [Case]) {
        let (files, cases, _) = loadWithFloods(path: path, diagnostics: diagnostics)
        return (files, cases)
    }

    /// Also reads `flood_categories:` — NWS categories by station for `levels: nws` rules:
    /// `{"01646500": {action: 10, minor: 12, moderate: 15, major: 18}}` (stage, ft), or per station
    /// `{stage: {…}, flow: {…}}`.
    static func loadWithFloods(path: String, diagnostics: Diagnostics) -> (
        [String], [Case], [String: FloodCategories]
    ) {
        let file = YAMLFile(path: path, diagnostics: diagnostics)
        guard let text = file.read() else { return ([], [], [:]) }
        guard let root = file.compose(text), var top = file.map(root, what: "a test file") else {
            return ([], [], [:])
        }
        var floods: [String: FloodCategories] = [:]
        if let n = top.value("flood_categories"), let fm = file.map(n, what: "flood_categories") {
            for (key, value) in fm.entries {
                func table(_ node: Node, what: String) -> [String: Double] {
                    guard var tm = file.map(node, what: what) else { return [:] }
                    var out: [String: Double] = [:]
                    for name in FloodCategories.names {
                        if let v = tm.value(name), let d = file.number(v, what: name) { out[name] = d }
                    }
                    tm.rejectUnknown(known: FloodCategories.names, what: what)
                    return out
                }
                if let m = value.mapping, m.keys.contains(where: { $0.string == "stage" || $0.string == "flow" }) {
                    guard var sm = file.map(value, what: "flood categories") else { continue }
                    let stage = sm.value("stage").map { table($0, what: "stage categories") } ?? [:]
                    let flow = sm.value("flow").map { table($0, what: "flow categories") } ?? [:]
                    sm.rejectUnknown(known: ["stage", "flow"], what: "flood categories")
                    floods[key] = FloodCategories(stage: stage, flow: flow)
                } else {
                    floods[key] = FloodCategories(stage: table(value, what: "flood categories of \(key)"))
                }
            }
        }
        let dir = (path as NSString).deletingLastPathComponent
        let ruleFiles =
            (top.required("rule_files", what: "the test file").flatMap { file.stringList($0, what: "rule_files") } ?? [])
            .map { $0.hasPrefix("/") ? $0 : (dir as NSString).appendingPathComponent($0) }
        var cases: [Case] = []
        if let n = top.required("tests", what: "the test file"), let items = file.list(n, what: "tests") {
            for item in items {
                if let c = testCase(item, file: file) { cases.append(c) }
            }
        }
        top.rejectUnknown(known: ["rule_files", "flood_categories", "tests"], what: "a test file")
        return (ruleFiles, cases, floods)
    }

    static func testCase(_ node: Node, file: YAMLFile) -> Case? {
        guard var m = file.map(node, what: "a test") else { return nil }
        let name = m.required("name", what: "the test").flatMap { file.string($0, what: "name") } ?? "?"
        let interval = m.value("interval").flatMap { file.duration($0, what: "interval") } ?? 900
        let start = m.value("start").flatMap { file.time($0, what: "start") } ?? 0
        var series: [(SeriesKey, [Double?])] = []
        if let n = m.required("series", what: "test \"\(name)\""), let items = file.list(n, what: "series") {
            for item in items {
                guard var sm = file.map(item, what: "a series") else { continue }
                let station = sm.required("station", what: "the series").flatMap { file.string($0, what: "station") }
                let metric = sm.required("metric", what: "the series").flatMap { file.string($0, what: "metric") }
                let valuesNode = sm.required("values", what: "the series")
                var values: [Double?]? = nil
                if let valuesNode, let text = file.string(valuesNode, what: "values") {
                    switch expandSeries(text) {
                    case .success(let v): values = v
                    case .failure(let e): file.error(valuesNode, e.message)
                    }
                }
                sm.rejectUnknown(known: ["station", "metric", "values"], what: "a series")
                if let station, let metric, let values {
                    series.append((SeriesKey(station: station, metric: metric), values))
                }
            }
        }
        var expect: [Expectation] = []
        if let n = m.required("expect", what: "test \"\(name)\""), let items = file.list(n, what: "expect") {
            for item in items {
                guard var em = file.map(item, what: "an expectation") else { continue }
                var at: Int64? = nil
                var atText = ""
                if let atNode = em.required("at", what: "the expectation"), let s = file.string(atNode, what: "at") {
                    atText = s
                    if let d = DurationText.parse(s) {
                        at = start + d
                    } else if let t = Timestamp.parse(s) {
                        at = t
                    } else {
                        file.error(atNode, "at must be an offset like 45m or an ISO 8601 time, not \"\(s)\"")
                    }
                }
                var firing: [(String, String, String?)] = []
                if let fn = em.required("firing", what: "the expectation"), let list = file.list(fn, what: "firing") {
                    for f in list {
                        guard var fm = file.map(f, what: "a firing alert") else { continue }
                        let rule = fm.required("rule", what: "the alert").flatMap { file.string($0, what: "rule") }
                        let station = fm.required("station", what: "the alert").flatMap {
                            file.string($0, what: "station")
                        }
                        let level = fm.value("level").flatMap { file.string($0, what: "level") }
                        fm.rejectUnknown(known: ["rule", "station", "level"], what: "a firing alert")
                        if let rule, let station { firing.append((rule, station, level)) }
                    }
                }
                em.rejectUnknown(known: ["at", "firing"], what: "an expectation")
                if let at { expect.append(Expectation(at: at, atText: atText, firing: firing)) }
            }
        }
        m.rejectUnknown(known: ["name", "interval", "start", "series", "expect"], what: "a test")
        return Case(name: name, interval: interval, start: start, series: series, expect: expect)
    }

    public struct SeriesError: Error {
        public var message: String
    }

    /// Expands promtool series notation: numbers, `_` (missing), `_xN` (N missing), `a+bxN` / `a-bxN`
    /// (N+1 values from a in steps of b) and `axN` (a, N+1 times).
    public static func expandSeries(_ text: String) -> Result<[Double?], SeriesError> {
        var out: [Double?] = []
        for token in text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).map(String.init) {
            if token == "_" {
                out.append(nil)
                continue
            }
            if let x = token.lastIndex(of: "x"), x != token.startIndex {
                guard let n = Int(token[token.index(after: x)...]), n >= 0 else {
                    return .failure(
                        SeriesError(message: "values: \"\(token)\": the count after x must be a whole number"))
                }
                let head = String(token[..<x])
                if head == "_" {
                    out += Array(repeating: nil, count: n)
                    continue
                }
                var start: Double? = nil
                var step = 0.0
                let chars = Array(head)
                var split: Int? = nil
                for i in 1..<max(chars.count, 1)
                where (chars[i] == "+" || chars[i] == "-") && chars[i - 1] != "e" && chars[i - 1] != "E" {
                    split = i
                }
                if let split {
                    start = Double(String(chars[..<split]))
                    let stepText = String(chars[(split + 1)...])
                    guard let s = Double(stepText) else {
                        return .failure(SeriesError(message: "values: \"\(token)\" is not a+bxn"))
                    }
                    step = chars[split] == "-" ? -s : s
                } else {
                    start = Double(head)
                }
                guard let a = start else { return .failure(SeriesError(message: "values: \"\(token)\" is not a+bxn")) }
                for k in 0...n { out.append(a + Double(k) * step) }
                continue
            }
            guard let v = Double(token), v.isFinite else {
                return .failure(
                    SeriesError(message: "values: \"\(token)\" is not a number, _, or a+bxn"))
            }
            out.append(v)
        }
        return .success(out)
    }
}
