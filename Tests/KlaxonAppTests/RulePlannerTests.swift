import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Testing

@testable import KlaxonApp

/// The planners an evaluation is made with: pure values, made before the store is touched.
@Suite struct RulePlannerTests {
    func transition(rule: String, annotations: [String: String] = [:]) -> Transition {
        var t = Transition(
            rule: rule, kind: "threshold", station: "S1", metric: "level", state: .firing, level: nil,
            fromLevel: nil, at: 1_790_000_000, value: 12.4, unit: "ft", severity: .warning, labels: [:],
            summary: "level at S1 above 10", explanation: "12.4 ≥ 10")
        t.annotations = annotations
        return t
    }

    let rules = [
        Rule(
            name: "high", kind: ThresholdRule(metric: "level", direction: .above, threshold: 10),
            message: "{{station}} is {{state}}", runbookURL: "https://wiki.example/{{station}}"),
        Rule(name: "plain", kind: ThresholdRule(metric: "level", direction: .above, threshold: 10), notify: ["chat"]),
    ]

    @Test("the rules' planner annotates, renders and routes a transition; without routing it routes nothing")
    func rulePlanner() throws {
        let routing = Routing(routes: [Route(receivers: ["hook"])])
        let planner = RulePlanner(rules: rules, renderer: try MessageRenderer(rules: rules), routing: routing)
        #expect(planner.routes)
        var t = transition(rule: "high")
        let plan = planner.plan(&t)
        #expect(t.annotations == ["runbook_url": "https://wiki.example/S1"])
        #expect(plan.message == "S1 is firing")
        #expect(plan.deliveries.map(\.receiver) == ["hook"])

        // A rule with no template of its own: the summary, its own annotations kept, its notify.
        var plain = transition(rule: "plain", annotations: ["resolve_reason": "why"])
        let planned = planner.plan(&plain)
        #expect(planned.message == "level at S1 above 10")
        #expect(plain.annotations == ["resolve_reason": "why"])
        #expect(planned.deliveries.map(\.receiver) == ["chat", "hook"])

        let recordOnly = RulePlanner(rules: rules, renderer: try MessageRenderer(rules: rules), routing: nil)
        #expect(!recordOnly.routes)
        var u = transition(rule: "high")
        #expect(recordOnly.plan(&u).deliveries.isEmpty)
        #expect(u.annotations == ["runbook_url": "https://wiki.example/S1"])
    }

    @Test("a removed rule's resolves go where its notify sent the firing, to receivers the config still has")
    func removedRulesPlanner() {
        let routing = Routing(routes: [Route(receivers: ["hook"])])
        let planner = RemovedRulesPlanner(
            routing: routing, notify: ["gone": ["chat", "old-pager"]], receivers: ["hook", "chat"])
        #expect(planner.routes)
        var t = transition(rule: "gone")
        let plan = planner.plan(&t)
        #expect(plan.message == t.summary)
        // notify's receivers first, then the route's; "old-pager" is gone from the config.
        #expect(plan.deliveries.map(\.receiver) == ["chat", "hook"])

        let unrouted = RemovedRulesPlanner(routing: nil, notify: ["gone": ["chat"]], receivers: ["chat"])
        #expect(!unrouted.routes && unrouted.plan(&t).deliveries.isEmpty)
    }
}
