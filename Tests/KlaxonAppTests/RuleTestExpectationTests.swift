import Foundation
import KlaxonCore
import Testing

@testable import KlaxonApp

/// `klaxon test`'s `transitions:`, `sent:` and `route:`: what they read, what they refuse (with
/// the line and column), and what a failing test prints.
@Suite("klaxon test: transitions, sent and route")
struct RuleTestExpectationTests {
    /// The diagnostics of loading a test file of `text` (rule_files is `r.yaml` beside it).
    static func problems(_ text: String) throws -> (path: String, items: [Diagnostic], cases: [RuleTests.Case]) {
        let s = try Scratch()
        try s.write("r.yaml", thresholdRule)
        let path = try s.write("t.yaml", text)
        let diagnostics = Diagnostics()
        let (_, cases, _) = RuleTests.loadWithFloods(path: path, diagnostics: diagnostics)
        return (path, diagnostics.items, cases)
    }

    /// A test file with one case whose one expectation is `at: 30m` and `expectation` (its lines
    /// from line 9, column 9), under `route` (line 4, from column 12).
    static func file(_ expectation: String, route: String = "{}") -> String {
        let lines =
            [
                "rule_files: [r.yaml]", "tests:", "  - name: t", "    route: \(route)", "    series:",
                "      - {station: G1, metric: gage_height, values: \"12x4\"}", "    expect:", "      - at: 30m",
            ] + expectation.split(separator: "\n", omittingEmptySubsequences: false).map { "        " + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    @Test("the new keys are read: route timing, transitions with filters, sent with labels and annotations")
    func readsTheNewKeys() throws {
        let (_, items, cases) = try Self.problems(
            Self.file(
                """
                transitions:
                  - {state: firing, rule: high, station: G1}
                  - {state: resolved}
                sent:
                  - status: firing
                    receiver: test
                    title: "🟠 G1: gage height 12, at or above 10"
                    message: "m"
                    exp_labels: {alertname: high, station: G1}
                    exp_annotations: {value: "12"}
                """, route: "{group_by: [rule], group_wait: 30s, group_interval: 5m, notify_max_age: 1h}"))
        #expect(items.isEmpty, "\(items)")
        let c = try #require(cases.first)
        #expect(c.route.groupBy == ["rule"])
        #expect(c.route.groupWait == 30 && c.route.groupInterval == 300 && c.route.notifyMaxAge == 3600)
        #expect(c.replaysSent)
        let e = try #require(c.expect.first)
        #expect(e.firing == nil, "firing: is optional beside transitions: and sent:")
        #expect(e.transitions?.map(\.state) == [.firing, .resolved])
        #expect(e.transitions?.first?.rule == "high" && e.transitions?.last?.rule == nil)
        let sent = try #require(e.sent?.first)
        #expect(sent.status == "firing" && sent.receiver == "test" && sent.message == "m")
        #expect(sent.labels == ["alertname": "high", "station": "G1"])
        #expect(sent.annotations == ["value": "12"])
    }

    @Test("without route: the defaults (group_by rule, station, metric; no waiting; no age limit)")
    func routeDefaults() throws {
        let (_, items, cases) = try Self.problems(Self.file("firing: []"))
        #expect(items.isEmpty)
        let c = try #require(cases.first)
        #expect(c.route.groupBy == ["rule", "station", "metric"])
        #expect(c.route.groupWait == 0 && c.route.groupInterval == 0 && c.route.notifyMaxAge == 0)
        #expect(!c.replaysSent, "a case without sent: stays on the engine alone")
    }

    @Test(
        "bad and hostile inputs: each is refused with its file, line and column and what would fix it",
        arguments: [
            (
                "transitions: [{state: exploded}]", "{}", "9:31",
                "state must be firing, changed or resolved, not \"exploded\""
            ),
            ("transitions: [{level: minor}]", "{}", "9:23", "the transition is missing required key \"state\""),
            ("transitions: [{state: firing, levle: minor}]", "{}", "9:39", "unknown key \"levle\" in a transition"),
            ("transitions: firing", "{}", "9:22", "transitions must be a list"),
            ("sent: yes", "{}", "9:15", "sent must be a list"),
            ("sent: [{status: pending}]", "{}", "9:25", "status must be firing or resolved, not \"pending\""),
            ("sent: [{exp_labels: {a: b}}]", "{}", "9:16", "the sent alert is missing required key \"status\""),
            (
                "sent: [{status: firing, exp_labels: [a, b]}]", "{}", "9:45",
                "exp_labels must be a mapping of keys to values"
            ),
            (
                "sent: [{status: firing, exp_annotations: {level: {deep: x}}}]", "{}", "9:58",
                "exp_annotations.level must be a string"
            ),
            (
                "sent: [{status: firing, exp_label: {a: b}}]", "{}", "9:33",
                "unknown key \"exp_label\" in a sent alert (did you mean \"exp_labels\"?)"
            ),
            ("sent: [{status: firing, message: [x]}]", "{}", "9:42", "message must be a string"),
            ("sent: []\nfirng: []", "{}", "10:9", "unknown key \"firng\" in an expectation (did you mean \"firing\"?)"),
            ("", "{}", "8:9", "the expectation needs firing:, transitions: or sent: (or more than one)"),
            (
                "sent: []", "{group_wait: soon}", "4:25",
                "group_wait must be a duration like 30s, 15m, 6h or 2d, not \"soon\""
            ),
            (
                "sent: []", "{group_wiat: 1m}", "4:13",
                "unknown key \"group_wiat\" in route (did you mean \"group_wait\"?)"
            ),
            ("sent: []", "{group_by: rule}", "4:23", "group_by must be a list"),
            ("sent: []", "{notify_max_age: 99999d}", "4:29", "notify_max_age is longer than the limit"),
            ("sent: []", "[group_wait]", "4:12", "route must be a mapping of keys to values"),
        ] as [(String, String, String, String)])
    func refusesBadInput(_ expectation: String, _ route: String, _ position: String, _ message: String) throws {
        let (path, items, _) = try Self.problems(Self.file(expectation, route: route))
        #expect(items.count == 1, "\(items)")
        let shown = items.map(\.description).joined(separator: "\n")
        #expect(shown.contains("\(path):\(position): error: \(message)"), "\(shown)")
    }

    @Test("klaxon test with sent: passes when the team would get exactly that, and fails with expected and got")
    func sentEndToEnd() async throws {
        let s = try Scratch()
        try s.write("r.yaml", thresholdRule)
        let good = try s.write(
            "good.yaml",
            """
            rule_files: [r.yaml]
            tests:
              - name: fires, is sent, resolves
                route: {group_interval: 1h}
                series:
                  - {station: G1, metric: gage_height, values: "12x4 10 10"}
                expect:
                  - at: 30m
                    firing: [{rule: high, station: G1}]
                    transitions: [{state: firing, rule: high, station: G1}]
                    sent:
                      - status: firing
                        title: "🟠 G1: gage height 12, at or above 12"
                        message: "gage_height at G1 is 12, at or above 12"
                        exp_labels: {alertname: high, metric: gage_height, severity: warning, station: G1}
                        exp_annotations: {value: "12"}
                  - at: 1h15m     # resolved at 1h15m; group_interval holds the message until 1h30m
                    transitions: [{state: resolved}]
                    sent: []
                  - at: 1h30m
                    sent: [{status: resolved, receiver: test}]
            """)
        let ok = try await klaxonAsync(["test", good])
        #expect(ok.status == 0, "\(ok.stdout)")
        #expect(ok.lines.last == "1 passed, 0 failed")

        let bad = try s.write(
            "bad.yaml",
            """
            rule_files: [r.yaml]
            tests:
              - name: expects the wrong label and a message that never went out
                series:
                  - {station: G1, metric: gage_height, values: "12x4"}
                expect:
                  - at: 30m
                    transitions: [{state: changed}]
                    sent:
                      - {status: firing, exp_labels: {alertname: high, station: G1}}
                      - {status: resolved}
            """)
        let r = try await klaxonAsync(["test", bad])
        #expect(r.status == 1)
        let expected = """
            FAIL \(bad): "expects the wrong label and a message that never went out"
              at 30m (1970-01-01T00:30:00Z):
                expected transitions:
                  - {state: changed}
                got transitions:
                  - {state: firing, rule: high, station: G1}
                first difference: item 1: expected {state: changed}, got {state: firing, rule: high, station: G1}
                expected sent:
                  - status: firing
                    exp_labels: {alertname: high, station: G1}
                  - status: resolved
                got sent:
                  - status: firing
                    title: "🟠 G1: gage height 12, at or above 12"
                    message: "gage_height at G1 is 12, at or above 12"
                    exp_labels: {alertname: high, metric: gage_height, severity: warning, station: G1}
                    exp_annotations: {value: "12"}
                first difference: expected 2 sent, got 1
            0 passed, 1 failed
            """
        #expect(r.stdout == expected + "\n", "\(r.stdout)")

        // The got list pasted back in passes.
        let pasted = try s.write(
            "pasted.yaml",
            """
            rule_files: [r.yaml]
            tests:
              - name: pasted
                series:
                  - {station: G1, metric: gage_height, values: "12x4"}
                expect:
                  - at: 30m
                    transitions:
                      - {state: firing, rule: high, station: G1}
                    sent:
                      - status: firing
                        title: "🟠 G1: gage height 12, at or above 12"
                        message: "gage_height at G1 is 12, at or above 12"
                        exp_labels: {alertname: high, metric: gage_height, severity: warning, station: G1}
                        exp_annotations: {value: "12"}
            """)
        let again = try await klaxonAsync(["test", pasted])
        #expect(again.status == 0, "\(again.stdout)")
    }

    @Test("a got scalar reads back as the same string: quoted when YAML would read it otherwise")
    func scalarsReadBack() {
        #expect(TestYAML.scalar("action") == "action")
        #expect(TestYAML.scalar("public-works") == "public-works")
        for s in ["01646500", "12", "true", "No", "", "a: b", "x #y", "🔴 CRITICAL", "say \"hi\"", "tab\there", "-1"] {
            #expect(TestYAML.scalar(s).hasPrefix("\""), "\(s)")
        }
        #expect(TestYAML.scalar("tab\there") == "\"tab\\there\"")
    }
}
