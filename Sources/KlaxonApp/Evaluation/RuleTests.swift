import Foundation
import KlaxonCore
import KlaxonDelivery
import Yams

/// `klaxon test`: rule unit tests in the spirit of `promtool test rules`.
///
/// ```yaml
/// rule_files: [../river.yaml]        # relative to this file
/// tests:
///   - name: rises through the levels
///     interval: 15m                  # default 15m
///     start: 2026-01-01T00:00:00Z    # default 1970-01-01T00:00:00Z
///     route: {group_interval: 1h}    # how `sent:` is grouped (see below)
///     series:
///       - {station: s1, metric: gage_height, values: "9 10+1x3 _ 12"}
///     expect:
///       - at: 45m                    # offset from start, or an ISO time
///         firing: [{rule: river-levels, station: s1, level: minor}]
///         transitions:               # recorded since the previous expectation, in order
///           - {state: firing, rule: river-levels, station: s1, level: action}
///         sent:                      # sent since the previous expectation, one item per alert
///           - status: firing
///             title: "🟠 WARNING river-levels s1 firing action"
///             message: "s1 reached action stage"
///             exp_labels: {alertname: river-levels, metric: gage_height, severity: warning, station: s1}
///             exp_annotations: {level: action}
/// ```
///
/// An expectation gives at least one of `firing:`, `transitions:` and `sent:`. `firing:` is the set
/// firing at `at`. `transitions:` lists the transitions recorded in (the previous expectation's
/// `at`, this `at`], each `{state, rule, station, level}` with all but `state` optional filters (on
/// a resolve, `level` is the level it fell from); the list must match in length and order.
///
/// `sent:` lists what the receiver `test` was sent in that window, each alert of each notification
/// one item, in order. `status` is `firing` or `resolved`; `exp_labels` are the generic webhook's
/// labels, compared exactly (as promtool does); `exp_annotations` are compared as a subset: the ones
/// given must match exactly, the others are not checked; `message` (the rule's rendered message),
/// `title` (the chat headline) and `receiver` are compared exactly when given. To get `sent:`, the
/// case is replayed through the real store and dispatcher: readings are evaluated at their own
/// times (all readings of one time in one evaluation), so folding happens only where the group
/// timing or one evaluation makes it. The case's `route:` sets that timing: `group_by` (default
/// `[rule, station, metric]`), `group_wait`, `group_interval` and `notify_max_age` (each default
/// 0s). Everything goes to the one receiver `test`: the rules' own `notify:` is not used here.
public enum RuleTests {
    public struct Failure: Sendable, CustomStringConvertible {
        public var file: String
        public var test: String
        public var detail: String
        /// Shown with control characters escaped: the names and values come from the files.
        public var description: String {
            "FAIL \(TerminalText.safe(file)): \(TerminalText.safe(test))\n\(TerminalText.safeLines(detail))"
        }
    }

    /// One test case's result, in file order (`klaxon test --junit`, `--format json`).
    public struct CaseResult: Sendable {
        public var file: String
        /// The case's name; `(file did not load)` for a file that did not load.
        public var name: String
        public var seconds: Double
        /// Why it failed; nil when it passed.
        public var failure: String?
    }

    public struct Outcome: Sendable {
        public var passed = 0
        public var failed = 0
        public var failures: [Failure] = []
        public var cases: [CaseResult] = []
        public var summary: String { "\(passed) passed, \(failed) failed" }
    }

    typealias FiringAlert = (rule: String, station: String, level: String?)

    /// An item of `transitions:`: a state, and filters on the rest.
    struct TransitionExpectation: Sendable {
        var state: TransitionState
        var rule: String?
        var station: String?
        var level: String?

        func matches(_ t: Transition) -> Bool {
            t.state == state && (rule == nil || rule == t.rule) && (station == nil || station == t.station)
                && (level == nil || level == (t.level ?? t.fromLevel))
        }

        var yaml: String {
            var pairs = [("state", state.rawValue)]
            if let rule { pairs.append(("rule", rule)) }
            if let station { pairs.append(("station", station)) }
            if let level { pairs.append(("level", level)) }
            return TestYAML.flow(pairs)
        }

        /// What `t` shows of itself in a test's terms.
        static func yaml(_ t: Transition) -> String {
            var pairs = [("state", t.state.rawValue), ("rule", t.rule), ("station", t.station)]
            if let level = t.level ?? t.fromLevel { pairs.append(("level", level)) }
            return TestYAML.flow(pairs)
        }
    }

    /// An item of `sent:`: one alert of one notification.
    struct SentExpectation: Sendable {
        var status: String
        var labels: [String: String]?
        var annotations: [String: String]?
        var message: String?
        var title: String?
        var receiver: String?

        /// The first way `got` differs from this, or nil.
        func difference(_ got: SentAlert) -> String? {
            func quoted(_ s: String?) -> String { s.map(TestYAML.scalar) ?? "(none)" }
            if status != got.status { return "status: expected \(status), got \(got.status)" }
            if let receiver, receiver != got.receiver {
                return "receiver: expected \(quoted(receiver)), got \(quoted(got.receiver))"
            }
            if let title, title != got.title { return "title: expected \(quoted(title)), got \(quoted(got.title))" }
            if let message, message != got.message {
                return "message: expected \(quoted(message)), got \(quoted(got.message))"
            }
            if let labels, labels != got.labels {
                return "exp_labels: expected \(TestYAML.flow(labels)), got \(TestYAML.flow(got.labels))"
            }
            let wanted = (annotations ?? [:]).sorted { $0.key < $1.key }
            if let (key, value) = wanted.first(where: { got.annotations[$0.key] != $0.value }) {
                let shown = "\(TestYAML.scalar(key)): expected \(quoted(value)), got \(quoted(got.annotations[key]))"
                return "exp_annotations: " + shown
            }
            return nil
        }

        var yaml: [String] {
            var lines = ["status: \(status)"]
            if let receiver { lines.append("receiver: \(TestYAML.scalar(receiver))") }
            if let title { lines.append("title: \(TestYAML.scalar(title))") }
            if let message { lines.append("message: \(TestYAML.scalar(message))") }
            if let labels { lines.append("exp_labels: \(TestYAML.flow(labels))") }
            if let annotations { lines.append("exp_annotations: \(TestYAML.flow(annotations))") }
            return lines
        }
    }

    /// One alert of a notification the replay sent, as `sent:` items describe it.
    struct SentAlert: Sendable {
        var receiver: String
        var status: String
        var labels: [String: String]
        var annotations: [String: String]
        var message: String
        var title: String

        /// Each alert of a notification, with the generic webhook's labels and annotations.
        static func of(_ sent: NotifyReplay.Sent) -> [SentAlert] {
            sent.notification.alerts.map { a in
                let (labels, annotations) = WebhookPayloads.genericParts(a)
                return SentAlert(
                    receiver: sent.notification.receiver,
                    status: a.transition.state == .resolved ? "resolved" : "firing",
                    labels: labels, annotations: annotations, message: a.message, title: WebhookPayloads.title(a))
            }
        }

        /// Annotations the got list leaves out: an id of the scratch store, the message again
        /// (`message:`), and the data time and explanation, which say little a test asserts.
        static let unshown: Set<String> = ["alert_id", "summary", "data_time", "description"]

        var yaml: [String] {
            [
                "status: \(status)", "title: \(TestYAML.scalar(title))", "message: \(TestYAML.scalar(message))",
                "exp_labels: \(TestYAML.flow(labels))",
                "exp_annotations: \(TestYAML.flow(annotations.filter { !Self.unshown.contains($0.key) }))",
            ]
        }
    }

    struct Expectation: Sendable {
        var at: Int64
        var atText: String
        /// Nil: not checked.
        var firing: [FiringAlert]?
        var transitions: [TransitionExpectation]?
        var sent: [SentExpectation]?
    }

    struct Case: Sendable {
        var name: String
        var interval: Int64
        var start: Int64
        var series: [(key: SeriesKey, values: [Double?])]
        var expect: [Expectation]
        /// The timing `sent:` is replayed under (its receivers are set when it is).
        var route = Route(notifyMaxAge: 0)

        /// Whether an expectation asks what was sent: only then is the case replayed through a store.
        var replaysSent: Bool { expect.contains { $0.sent != nil } }
    }

    /// A test file, read: its rules, cases and flood categories, or what is wrong with it.
    struct Loaded: Sendable {
        var rules: [Rule] = []
        var cases: [Case] = []
        var floods: [String: FloodCategories] = [:]
        var problems: [Diagnostic] = []
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

    /// Reads a test file and its rule files.
    static func load(_ path: String) -> Loaded {
        let diagnostics = Diagnostics()
        var loaded = Loaded()
        let ruleFiles: [String]
        (ruleFiles, loaded.cases, loaded.floods) = loadWithFloods(path: path, diagnostics: diagnostics)
        if diagnostics.isEmpty {
            loaded.rules = (try? RuleLoader.load(paths: ruleFiles, diagnostics: diagnostics)) ?? []
            if loaded.rules.isEmpty && diagnostics.isEmpty {
                diagnostics.add(Diagnostic(path: path, line: 1, column: 1, message: "rule_files hold no rule"))
            }
        }
        loaded.problems = diagnostics.items
        return loaded
    }

    /// Runs every test in the files; a file that does not load counts as one failure. Files are
    /// read off the cooperative pool.
    public static func run(paths: [String]) async throws -> Outcome {
        var outcome = Outcome()
        for path in try await offPool({ try testFiles(paths) }) {
            let loaded = try await offPool { load(path) }
            guard loaded.problems.isEmpty else {
                outcome.failed += 1
                let detail = loaded.problems.map { "  \($0)" }.joined(separator: "\n")
                outcome.failures.append(Failure(file: path, test: "(file did not load)", detail: detail))
                outcome.cases.append(CaseResult(file: path, name: "(file did not load)", seconds: 0, failure: detail))
                continue
            }
            let engine = RuleEngine(rules: loaded.rules, floods: loaded.floods)
            for c in loaded.cases {
                let clock = ContinuousClock.now
                let problems = await run(c, rules: loaded.rules, floods: loaded.floods, engine: engine)
                let took = clock.duration(to: .now)
                let seconds = Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
                if problems.isEmpty {
                    outcome.passed += 1
                    outcome.cases.append(CaseResult(file: path, name: c.name, seconds: seconds, failure: nil))
                } else {
                    outcome.failed += 1
                    let detail = problems.joined(separator: "\n")
                    outcome.failures.append(Failure(file: path, test: "\"\(c.name)\"", detail: detail))
                    outcome.cases.append(CaseResult(file: path, name: c.name, seconds: seconds, failure: detail))
                }
            }
        }
        return outcome
    }

    /// Runs a case: the firing set and the transitions come from the engine alone; what was sent,
    /// when an expectation asks, from a replay through a scratch store and the dispatcher.
    static func run(_ c: Case, rules: [Rule], floods: [String: FloodCategories], engine: RuleEngine) async -> [String] {
        let expectations = c.expect.sorted { $0.at < $1.at }
        let observed = observe(c, expectations, engine: engine)
        var sent: [[SentAlert]]? = nil
        if c.replaysSent {
            do {
                sent = try await replaySent(c, expectations, rules: rules, floods: floods)
            } catch {
                return ["  could not replay what is sent: \(error)"]
            }
        }
        var problems: [String] = []
        for (i, e) in expectations.enumerated() {
            var lines: [String] = []
            if let firing = e.firing { lines += compare(firing: firing, got: observed[i].firing) }
            if let want = e.transitions { lines += compare(transitions: want, got: observed[i].transitions) }
            if let want = e.sent, let got = sent?[i] { lines += compare(sent: want, got: got) }
            if !lines.isEmpty {
                problems.append("  at \(e.atText) (\(Timestamp.format(e.at))):\n" + lines.joined(separator: "\n"))
            }
        }
        return problems
    }

    /// What the engine shows at an expectation: the firing set at its time, and the transitions
    /// made since the previous one.
    struct Observed {
        var firing: [FiringAlert] = []
        var transitions: [Transition] = []
    }

    /// Replays a case through the engine; one `Observed` per expectation (in `at` order).
    static func observe(_ c: Case, _ expectations: [Expectation], engine: RuleEngine) -> [Observed] {
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
        var out: [Observed] = []
        for e in expectations {
            let mark = sink.count
            while next < readings.count && readings[next].time <= e.at {
                let r = readings[next]
                next += 1
                if sessions[r.series] == nil {
                    guard let s = engine.session(for: c.series[r.series].key) else { continue }
                    sessions[r.series] = s
                }
                engine.step(&sessions[r.series]!, time: r.time, value: r.value, into: &sink)
            }
            var seen = Observed()
            for key in sessions.keys.sorted() {
                engine.advance(&sessions[key]!, to: e.at, into: &sink)
                for f in engine.firing(in: sessions[key]!) {
                    seen.firing.append((f.rule, sessions[key]!.series.station, f.level))
                }
            }
            seen.transitions = sink[mark...].sorted(by: Transition.outputOrder)
            out.append(seen)
        }
        return out
    }

    /// Replays a case through a scratch store and the dispatcher (one receiver, `test`, under the
    /// case's route): each reading time is one evaluation, and so is each expectation's time. Returns
    /// the alerts sent in each expectation's window.
    static func replaySent(
        _ c: Case, _ expectations: [Expectation], rules: [Rule], floods: [String: FloodCategories]
    ) async throws -> [[SentAlert]] {
        var byTime: [Int64: [Reading]] = [:]
        for s in c.series {
            for (i, v) in s.values.enumerated() {
                guard let v else { continue }
                let t = c.start + Int64(i) * c.interval
                byTime[t, default: []].append(
                    Reading(station: s.key.station, metric: s.key.metric, time: t, value: v))
            }
        }
        let times = byTime.keys.sorted()
        var route = c.route
        route.receivers = ["test"]
        // Everything goes to the one receiver: the rules' own receivers are not configured here.
        let quiet = rules.map { rule -> Rule in
            var r = rule
            r.notify = []
            return r
        }
        return try await NotifyReplay.with(
            rules: quiet, routing: Routing(routes: [route]), receivers: ["test"], floods: floods
        ) { replay in
            var out: [[SentAlert]] = []
            var next = 0
            var last: Int64? = nil
            for e in expectations {
                while next < times.count && times[next] <= e.at {
                    try await replay.step(readings: byTime[times[next]] ?? [], at: times[next])
                    last = times[next]
                    next += 1
                }
                // Time passes to the expectation (stale checks), as for `firing:`.
                if last.map({ $0 < e.at }) ?? true {
                    try await replay.step(readings: [], at: e.at)
                    last = e.at
                }
                out.append(try await replay.flush(until: e.at).flatMap(SentAlert.of))
            }
            return out
        }
    }

    static func compare(firing want: [FiringAlert], got: [FiringAlert]) -> [String] {
        var unmatched = got
        var missing: [FiringAlert] = []
        for w in want {
            if let i = unmatched.firstIndex(where: {
                $0.rule == w.rule && $0.station == w.station && (w.level == nil || w.level == $0.level)
            }) {
                unmatched.remove(at: i)
            } else {
                missing.append(w)
            }
        }
        guard !missing.isEmpty || !unmatched.isEmpty else { return [] }
        func show(_ list: [FiringAlert]) -> String {
            list.isEmpty
                ? "(none)"
                : list.map { "\($0.rule) \($0.station)" + ($0.level.map { " level=\($0)" } ?? "") }.sorted()
                    .joined(separator: ", ")
        }
        return ["    expected firing: \(show(want))", "    got firing:      \(show(got))"]
    }

    static func compare(transitions want: [TransitionExpectation], got: [Transition]) -> [String] {
        var why: String? = nil
        if want.count != got.count {
            why = "expected \(want.count) transitions, got \(got.count)"
        } else if let i = want.indices.first(where: { !want[$0].matches(got[$0]) }) {
            why = "item \(i + 1): expected \(want[i].yaml), got \(TransitionExpectation.yaml(got[i]))"
        }
        guard let why else { return [] }
        return [
            "    expected transitions:" + TestYAML.list(want.map { [$0.yaml] }),
            "    got transitions:" + TestYAML.list(got.map { [TransitionExpectation.yaml($0)] }),
            "    first difference: \(why)",
        ]
    }

    static func compare(sent want: [SentExpectation], got: [SentAlert]) -> [String] {
        var why: String? = nil
        if want.count != got.count {
            why = "expected \(want.count) sent, got \(got.count)"
        } else {
            for (i, (w, g)) in zip(want, got).enumerated() {
                if let d = w.difference(g) {
                    why = "item \(i + 1): \(d)"
                    break
                }
            }
        }
        guard let why else { return [] }
        return [
            "    expected sent:" + TestYAML.list(want.map(\.yaml)), "    got sent:" + TestYAML.list(got.map(\.yaml)),
            "    first difference: \(why)",
        ]
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
        let route = m.value("route").flatMap { testRoute($0, file: file) } ?? Route(notifyMaxAge: 0)
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
                if let e = expectation(item, start: start, file: file) { expect.append(e) }
            }
        }
        m.rejectUnknown(known: ["name", "interval", "start", "route", "series", "expect"], what: "a test")
        return Case(name: name, interval: interval, start: start, series: series, expect: expect, route: route)
    }

    /// A test's `route:`: the group timing `sent:` is replayed under.
    static func testRoute(_ node: Node, file: YAMLFile) -> Route? {
        guard var m = file.map(node, what: "route") else { return nil }
        var route = Route(notifyMaxAge: 0)
        if let n = m.value("group_by"), let v = file.stringList(n, what: "group_by") { route.groupBy = v }
        if let n = m.value("group_wait"), let v = file.duration(n, what: "group_wait") { route.groupWait = v }
        if let n = m.value("group_interval"), let v = file.duration(n, what: "group_interval") {
            route.groupInterval = v
        }
        if let n = m.value("notify_max_age"), let v = file.duration(n, what: "notify_max_age") {
            route.notifyMaxAge = v
        }
        m.rejectUnknown(known: ["group_by", "group_wait", "group_interval", "notify_max_age"], what: "route")
        return route
    }

    static func expectation(_ node: Node, start: Int64, file: YAMLFile) -> Expectation? {
        guard var em = file.map(node, what: "an expectation") else { return nil }
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
        var firing: [FiringAlert]? = nil
        if let fn = em.value("firing"), let list = file.list(fn, what: "firing") {
            firing = []
            for f in list {
                guard var fm = file.map(f, what: "a firing alert") else { continue }
                let rule = fm.required("rule", what: "the alert").flatMap { file.string($0, what: "rule") }
                let station = fm.required("station", what: "the alert").flatMap { file.string($0, what: "station") }
                let level = fm.value("level").flatMap { file.string($0, what: "level") }
                fm.rejectUnknown(known: ["rule", "station", "level"], what: "a firing alert")
                if let rule, let station { firing?.append((rule, station, level)) }
            }
        }
        var transitions: [TransitionExpectation]? = nil
        if let tn = em.value("transitions"), let list = file.list(tn, what: "transitions") {
            transitions = list.compactMap { transitionExpectation($0, file: file) }
        }
        var sent: [SentExpectation]? = nil
        if let sn = em.value("sent"), let list = file.list(sn, what: "sent") {
            sent = list.compactMap { sentExpectation($0, file: file) }
        }
        if !em.has("firing") && !em.has("transitions") && !em.has("sent") {
            file.error(node, "the expectation needs firing:, transitions: or sent: (or more than one)")
        }
        em.rejectUnknown(known: ["at", "firing", "transitions", "sent"], what: "an expectation")
        guard let at else { return nil }
        return Expectation(at: at, atText: atText, firing: firing, transitions: transitions, sent: sent)
    }

    static func transitionExpectation(_ node: Node, file: YAMLFile) -> TransitionExpectation? {
        guard var m = file.map(node, what: "a transition") else { return nil }
        var state: TransitionState? = nil
        if let n = m.required("state", what: "the transition"), let s = file.string(n, what: "state") {
            state = TransitionState(rawValue: s)
            if state == nil { file.error(n, "state must be firing, changed or resolved, not \(YAMLFile.show(n))") }
        }
        let rule = m.value("rule").flatMap { file.string($0, what: "rule") }
        let station = m.value("station").flatMap { file.string($0, what: "station") }
        let level = m.value("level").flatMap { file.string($0, what: "level") }
        m.rejectUnknown(known: ["state", "rule", "station", "level"], what: "a transition")
        guard let state else { return nil }
        return TransitionExpectation(state: state, rule: rule, station: station, level: level)
    }

    static func sentExpectation(_ node: Node, file: YAMLFile) -> SentExpectation? {
        guard var m = file.map(node, what: "a sent alert") else { return nil }
        var status: String? = nil
        if let n = m.required("status", what: "the sent alert"), let s = file.string(n, what: "status") {
            if s == "firing" || s == "resolved" {
                status = s
            } else {
                file.error(n, "status must be firing or resolved, not \(YAMLFile.show(n))")
            }
        }
        let labels = m.value("exp_labels").flatMap { file.stringMap($0, what: "exp_labels") }
        let annotations = m.value("exp_annotations").flatMap { file.stringMap($0, what: "exp_annotations") }
        let message = m.value("message").flatMap { file.string($0, what: "message") }
        let title = m.value("title").flatMap { file.string($0, what: "title") }
        let receiver = m.value("receiver").flatMap { file.string($0, what: "receiver") }
        m.rejectUnknown(
            known: ["status", "exp_labels", "exp_annotations", "message", "title", "receiver"], what: "a sent alert")
        guard let status else { return nil }
        return SentExpectation(
            status: status, labels: labels, annotations: annotations, message: message, title: title,
            receiver: receiver)
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

/// The YAML-ish shape `klaxon test` prints what it got in, so an author can paste it.
enum TestYAML {
    /// A scalar as it reads back: plain when that is unambiguous, else double-quoted (JSON escapes,
    /// which YAML reads the same). Terminal control characters are shown escaped.
    static func scalar(_ s: String) -> String {
        let plain =
            s.first.map { $0.isASCII && ($0.isLetter || $0 == "_") } == true
            && s.unicodeScalars.allSatisfy {
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "_-./".unicodeScalars.contains($0))
            }
            && !["true", "false", "yes", "no", "on", "off", "null", "y", "n"].contains(s.lowercased())
        return plain ? s : TerminalText.safe(JSONText.string(s))
    }

    /// `{key: value, …}` in the pairs' order.
    static func flow(_ pairs: [(String, String)]) -> String {
        "{" + pairs.map { "\(scalar($0.0)): \(scalar($0.1))" }.joined(separator: ", ") + "}"
    }

    /// `{key: value, …}`, keys sorted.
    static func flow(_ map: [String: String]) -> String {
        flow(map.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// A list under a `key:` line: ` []` when empty, else one `- ` item per entry (each entry's lines
    /// indented under its first).
    static func list(_ items: [[String]]) -> String {
        guard !items.isEmpty else { return " []" }
        var out = ""
        for item in items {
            for (i, line) in item.enumerated() { out += (i == 0 ? "\n      - " : "\n        ") + line }
        }
        return out
    }
}
