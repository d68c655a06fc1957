import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import Testing

/// Issue 41, "no storms": `budget: {messages: N, per: DURATION}` on any receiver; none by default;
/// each mistake an error at its line.
@Suite struct BudgetConfigTests {
    static let yaml = """
        receivers:
          - name: chat
            type: webhook
            preset: discord
            url: https://discord.com/api/webhooks/1/token
            budget: {messages: 20, per: 10m}
          - name: mail
            type: email
            smtp_url: smtp://127.0.0.1:2525
            from: klaxon@example.org
            to: ops@example.org
            budget:
              messages: 5
              per: 1h
          - name: out
            type: stdout
        """

    @Test("budget: is read on every receiver type, none by default, and reaches the dispatcher's settings")
    func budgetKey() throws {
        let s = try Scratch()
        let config = try Config.load(path: try s.write("klaxon.yaml", Self.yaml), environment: [:])
        #expect(config.budgets == ["chat": Budget(messages: 20, per: 600), "mail": Budget(messages: 5, per: 3600)])
        #expect(DeliveryWiring.settings(config).budgets == config.budgets)
    }

    @Test(
        "a wrong budget is an error at its line",
        arguments: [
            ("budget: {messages: 0, per: 10m}", "budget.messages must be from 1 to 10000, not 0"),
            ("budget: {messages: 5, per: 0s}", "budget.per must be from 1s to 7d, not 0s"),
            ("budget: {messages: 5, per: 8d}", "budget.per must be from 1s to 7d, not 8d"),
            ("budget: {messages: five, per: 10m}", "budget.messages must be a whole number"),
            ("budget: {messages: 5}", "budget is missing required key \"per\""),
            ("budget: {messages: 5, per: 10m, burst: 2}", "unknown key \"burst\" in budget"),
            ("budget: 20", "budget must be a mapping"),
        ])
    func wrongBudget(_ line: String, _ message: String) throws {
        let s = try Scratch()
        let bad = Self.yaml.replacingOccurrences(of: "budget: {messages: 20, per: 10m}", with: line)
        let path = try s.write("klaxon.yaml", bad)
        do {
            _ = try Config.load(path: path, environment: [:])
            Issue.record("\(line) was accepted")
        } catch {
            #expect("\(error)".contains("\(path):6:"), "\(error)")
            #expect("\(error)".contains(message), "\(error)")
        }
    }
}
