import Foundation
import KlaxonApp
import KlaxonDelivery
import Testing

/// Issue 41: `edit:` on every receiver (living messages on by default; `false` turns them off on any
/// platform); anything but a boolean is an error at its line.
@Suite struct LivingMessageConfigTests {
    static let yaml = """
        receivers:
          - name: on
            type: webhook
            preset: discord
            url: https://discord.com/api/webhooks/1/token
          - name: off
            type: webhook
            preset: discord
            url: https://discord.com/api/webhooks/1/token
            edit: false
          - name: mail
            type: email
            smtp_url: smtp://127.0.0.1:2525
            from: klaxon@example.org
            to: ops@example.org
            edit: false
          - name: out
            type: stdout
            edit: true
        """

    @Test("edit: defaults to true, is read on every receiver type, and false reaches the notifier")
    func editKey() throws {
        let s = try Scratch()
        let config = try Config.load(path: try s.write("klaxon.yaml", Self.yaml), environment: [:])
        let hooks = Dictionary(
            uniqueKeysWithValues: config.receivers.compactMap { r -> (String, Receiver.Webhook)? in
                if case .webhook(let w) = r { return (w.name, w) }
                return nil
            })
        #expect(hooks["on"]?.edit == true)
        #expect(hooks["off"]?.edit == false)
        #expect(try WebhookNotifier(config: try #require(hooks["on"])).editsMessages)
        #expect(try !WebhookNotifier(config: try #require(hooks["off"])).editsMessages)
        #expect(config.receivers.count == 4)
    }

    @Test("edit: that is not a boolean is an error at its line")
    func editMustBeBoolean() throws {
        let s = try Scratch()
        let bad = Self.yaml.replacingOccurrences(
            of: "edit: false\n  - name: mail", with: "edit: sometimes\n  - name: mail")
        #expect(bad != Self.yaml)
        let path = try s.write("klaxon.yaml", bad)
        do {
            _ = try Config.load(path: path, environment: [:])
            Issue.record("edit: sometimes was accepted")
        } catch {
            #expect("\(error)".contains("\(path):10:"), "\(error)")
        }
    }
}
