import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Testing

/// The webhook's `notification_reason` (issue 41): Alertmanager's words, as its source says them
/// (`Tests/Fixtures/peers/alertmanager/notify_reason.go.txt`), decided from what the receiver heard.
@Suite struct NotificationReasonTests {
    let firing = transition(state: .firing, level: "minor", from: nil)
    let changed = transition(state: .changed, level: "moderate", from: "minor", severity: .critical)
    let resolved = transition(state: .resolved, level: nil, from: "action")

    func alert(
        _ t: Transition, id: Int64 = 7, path: [PathStep] = [], reminder: Bool = false, escalated: Bool = false
    ) -> NotifiedAlert {
        var a = NotifiedAlert(transition: t, message: t.summary, id: id, path: path)
        a.reminder = reminder
        a.escalated = escalated
        return a
    }

    /// The words of `NotifyReason.String()` in Alertmanager's source, but `none` (never sent).
    static func alertmanagersWords() throws -> [String] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/peers/alertmanager/notify_reason.go.txt")
        let text = try String(contentsOf: url, encoding: .utf8)
        let body = try #require(text.range(of: "func (r NotifyReason) String() string {"))
        return text[body.upperBound...].split(separator: "\n").compactMap { line -> String? in
            let l = line.trimmingCharacters(in: .whitespaces)
            guard l.hasPrefix("return \""), l.hasSuffix("\"") else { return nil }
            return String(l.dropFirst(8).dropLast())
        }.filter { $0 != "none" }
    }

    @Test func theWordsAreAlertmanagersOwn() throws {
        let words = try Self.alertmanagersWords()
        #expect(words.count == 6)
        #expect(NotificationReason.alertmanager.map(\.rawValue) == words)
        // Klaxon's one word of its own is not one of them, and every word has a template name.
        #expect(!words.contains(NotificationReason.alertsChanged.rawValue))
        #expect(NotificationReason.all.map(\.name).contains("repeat_interval_elapsed"))
    }

    @Test func eachNotificationSaysWhyItCame() {
        let folded = [PathStep(state: .firing, level: "minor", at: 1, episode: 7)]
        let cases: [([NotifiedAlert], NotificationReason)] = [
            ([alert(firing)], .firstNotification),
            ([alert(firing, id: 7), alert(firing, id: 8)], .firstNotification),
            // An episode's firing folded into a level change: the receiver never heard it.
            ([alert(changed, path: folded)], .firstNotification),
            ([alert(firing, id: 8), alert(changed)], .newAlertsAdded),
            ([alert(firing, id: 8), alert(resolved)], .newAlertsAdded),
            ([alert(resolved)], .allAlertsResolved),
            ([alert(resolved, id: 7), alert(resolved, id: 8)], .allAlertsResolved),
            ([alert(resolved, id: 7), alert(changed, id: 8)], .someAlertsResolved),
            ([alert(resolved, id: 7), alert(firing, id: 8, reminder: true)], .someAlertsResolved),
            ([alert(changed)], .alertsChanged),
            ([alert(changed, id: 8), alert(firing, reminder: true)], .alertsChanged),
            // A reminder carries the transition that announced the alert, a firing too.
            ([alert(firing, reminder: true)], .repeatIntervalElapsed),
            ([alert(changed, reminder: true)], .repeatIntervalElapsed),
            // An escalation is news to its receiver, whatever transition it carries.
            ([alert(changed, escalated: true)], .firstNotification),
            ([], .unknown),
        ]
        for (alerts, reason) in cases {
            let n = AlertNotification(key: "k", receiver: "r", alerts: alerts)
            #expect(n.reason == reason, "\(alerts.map { ($0.id, $0.transition.state, $0.reminder) })")
            // The generic body carries it, in both of its writers.
            #expect(
                WebhookPayloads.Reference.generic(n, groupBy: [])["notification_reason"] as? String == reason.rawValue)
            #expect(WebhookPayloads.genericText(n, groupBy: []).contains(#""notification_reason":"\#(reason)""#))
        }
    }

    /// A receiver's template sees the reason as text and as one boolean (mustache cannot compare).
    @Test func templatesSeeTheReason() throws {
        let text =
            #"{"why": "{{notification_reason}}", "still": "{{#reason.repeat_interval_elapsed}}yes{{/reason.repeat_interval_elapsed}}"}"#
        #expect(TemplateCheck.checkReceiver(text, escapedAs: "JSON").isEmpty)
        let template = try MessageRenderer.compile(text, origin: "test", escaping: .json(.generic))
        let reminder = AlertNotification(key: "k", receiver: "r", alerts: [alert(firing, reminder: true)])
        #expect(
            template.render(WebhookPayloads.templateContext(reminder))
                == #"{"why": "repeat interval elapsed", "still": "yes"}"#)
        let first = AlertNotification(key: "k", receiver: "r", alerts: [alert(firing)])
        #expect(
            template.render(WebhookPayloads.templateContext(first)) == #"{"why": "first notification", "still": ""}"#)
    }

    /// The chat presets' headline says a reminder is one; other notifications read as before.
    @Test func aRemindersHeadlineSaysStillFiring() throws {
        let reminder = alert(firing, reminder: true)
        #expect(WebhookPayloads.title(reminder).hasSuffix("(still firing)"))
        #expect(!WebhookPayloads.title(alert(firing)).contains("still firing"))
        var headed = changed
        headed.headline = "moderate flood stage, up from minor"
        #expect(
            WebhookPayloads.title(alert(headed, reminder: true))
                == "🔴 01646500: moderate flood stage, up from minor (still firing)")
        let slack = WebhookPayloads.slack(AlertNotification(key: "k", receiver: "r", alerts: [reminder]))
        #expect(slack["text"]?.string?.contains("(still firing)") == true)
        let discord = WebhookPayloads.discord(AlertNotification(key: "k", receiver: "r", alerts: [reminder]))
        #expect(discord["content"]?.string?.contains("(still firing)") == true)
    }
}
