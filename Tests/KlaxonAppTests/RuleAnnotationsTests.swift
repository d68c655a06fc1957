import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Testing

/// A rule's `runbook_url` and `annotations` (issue 30): checked when the rule loads, rendered when the
/// transition is logged, stored with it, and sent with it.
@Suite struct RuleAnnotationsTests {
    static let rule = """
        name: high
        kind: threshold
        metric: gage_height
        above: 10
        runbook_url: "https://wiki.example.org/gauges/{{station}}"
        annotations:
          dashboard: "https://grafana.example.org/d/river?var-station={{station}}"
          owner: "{{labels.team}} on call"
        labels: {team: water}
        """

    @Test func annotationsAreRenderedLoggedAndSent() async throws {
        let s = try Scratch()
        let rules = try RuleLoader.load(paths: [try s.write("rules/r.yaml", Self.rule)])
        #expect(rules.first?.runbookURL == "https://wiki.example.org/gauges/{{station}}")
        let store = try tempStore()
        let t0: Int64 = 1_767_225_600
        try await store.write(
            SourceBatch(readings: [
                Reading(station: "Mill Rïver", metric: "gage_height", time: t0, value: 12),
                Reading(station: "G2", metric: "gage_height", time: t0, value: 11),
            ]), at: t0)
        _ = try await Evaluate.run(store: store, rules: rules, now: t0)
        let logged = try await store.transitions().map(\.transition)
        let mill = try #require(logged.first { $0.station == "Mill Rïver" })
        // Data in a URL is percent-encoded, not HTML-escaped, and cannot leave the URL.
        #expect(mill.annotations["runbook_url"] == "https://wiki.example.org/gauges/Mill%20R%C3%AFver")
        #expect(mill.annotations["dashboard"] == "https://grafana.example.org/d/river?var-station=Mill Rïver")
        #expect(mill.annotations["owner"] == "water on call")
        #expect(mill.headline == "gage height 12, at or above 10")
        let n = AlertNotification(
            key: "k", receiver: "r", alerts: [NotifiedAlert(transition: mill, message: "m", id: 1)])
        let annotations = WebhookPayloads.genericParts(n.alerts[0]).annotations
        #expect(annotations["runbook_url"] == "https://wiki.example.org/gauges/Mill%20R%C3%AFver")
        #expect(annotations["owner"] == "water on call")
        #expect(WebhookPayloads.links(n, n.alerts[0]).map(\.label) == ["Runbook"])
    }

    @Test func badAnnotationsAreErrorsAtTheirLine() throws {
        let s = try Scratch()
        let cases: [(String, String)] = [
            ("runbook_url: \"javascript:alert(1)\"", "runbook_url must start with https:// or http://"),
            ("runbook_url: \"https://wiki/{{statoin}}\"", "did you mean {{station}}?"),
            ("annotations: {summary: x}", "annotations: \"summary\" is set by Klaxon itself"),
            ("annotations: {runbook_url: x}", "use the rule's runbook_url"),
            ("annotations: {\"bad name\": x}", "is not a name"),
            ("annotations: {note: \"{{#firing}}x\"}", "template error"),
        ]
        for (line, expected) in cases {
            let path = try s.write(
                "bad/r.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\n\(line)\n")
            do {
                _ = try RuleLoader.load(paths: [path])
                Issue.record("\(line) loaded")
            } catch {
                #expect("\(error)".contains(expected), "\(line): \(error)")
                #expect("\(error)".contains("r.yaml:5:"), "\(line): \(error)")
            }
        }
    }
}
