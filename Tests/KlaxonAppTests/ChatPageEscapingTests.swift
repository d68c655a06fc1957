import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import Testing

@testable import KlaxonDemo

/// The demo's chat page shows what Klaxon's Slack and Mattermost payloads carry: hostile data comes
/// out as text, never as markup, links or mentions, in every place the page shows something.
@Suite struct ChatPageEscapingTests {
    static let hostile = [
        "<script>alert(1)</script>", "\"><img src=x onerror=alert(1)>", "<!channel>", "<!here|x>", "<@U1>",
        "<https://evil.example|Ack here>", "<javascript:alert(1)|click>", "&amp; &lt;b&gt;", "@everyone",
        "[Ack here](https://evil.example)", "' onmouseover='x", "</li></ol><h1>x</h1>",
    ]

    static func page(_ posts: [ChatPage.Post]) -> String {
        ChatPage.html(
            title: "Demo", subtitle: "", posts: posts, timeZone: TimeZone(secondsFromGMT: 0) ?? .current)
    }

    static func post(_ body: Data, channel: String = "team-chat") -> ChatPage.Post {
        ChatPage.Post(channel: channel, receivedAt: Date(timeIntervalSince1970: 1_795_000_000), body: body)
    }

    static func notification(_ h: String) -> AlertNotification {
        let t = Transition(
            rule: "rule \(h)", kind: "threshold", station: "S \(h)", metric: "level", state: .firing, level: "minor",
            fromLevel: nil, at: 1_795_000_000, value: 1, unit: "ft", severity: .critical, labels: [:],
            summary: "s", explanation: "why \(h)")
        return AlertNotification(
            key: "k", receiver: "r", alerts: [NotifiedAlert(transition: t, message: "msg \(h)", id: 4)])
    }

    /// No element, attribute, link or mention came from data.
    static func inert(_ html: String, _ h: String) {
        #expect(!html.contains("<script"), "\(h)")
        #expect(!html.contains("<img"), "\(h)")
        #expect(!html.contains("<h1>x"), "\(h)")
        #expect(!html.contains("\"><img") && !html.contains("onmouseover='"), "\(h)")
        #expect(!html.contains("href=\"https://evil") && !html.contains("href=\"javascript"), "\(h)")
        #expect(!html.contains("class=\"mention\""), "\(h)")
    }

    @Test func payloadsFromHostileDataRenderAsText() throws {
        for h in Self.hostile {
            for payload in [
                WebhookPayloads.slack(Self.notification(h)), WebhookPayloads.mattermost(Self.notification(h)),
            ] {
                let html = Self.page([Self.post(WebhookPayloads.encode(payload))])
                Self.inert(html, h)
                // Shown as the data says (Slack's escapes undone, then escaped for HTML).
                let plain = html.replacingOccurrences(of: "\u{2060}", with: "")
                #expect(plain.contains(HTMLText.escape("msg \(h)")), "\(h)")
                #expect(plain.contains(HTMLText.escape("why \(h)")), "\(h)")
            }
        }
    }

    @Test func channelsUsernamesAndRawBodiesAreEscaped() throws {
        for h in Self.hostile {
            let username = try JSONSerialization.data(withJSONObject: ["username": h, "text": "t"])
            let raw = Data("not json \(h)".utf8)
            let html = Self.page([Self.post(username, channel: h), Self.post(raw, channel: "other")])
            Self.inert(html, h)
            #expect(html.contains(HTMLText.escape("not json \(h)")))
        }
    }
}
