import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import Testing

@testable import KlaxonDemo

@Suite struct ChatPageTests {
    let utc = TimeZone(secondsFromGMT: 0) ?? .current

    func json(_ object: [String: Any]) throws -> Data {
        try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    func slack(
        text: String = "fallback", color: String = "#d93f0b", title: String = "FIRING · flood-stage · 01100500",
        attachmentText: String = "Mill River at Riverton reached minor stage: 11.3 ft",
        footer: String = "data as of 2026-11-21T10:15:00Z · ack 12"
    ) throws -> Data {
        try json([
            "text": text,
            "attachments": [
                [
                    "color": color, "title": title, "text": attachmentText,
                    "fields": [["title": "Why", "value": "gage_height 11.3 ≥ 11 (minor)", "short": false]],
                    "footer": footer, "ts": 1_795_000_000,
                ] as [String: Any]
            ],
        ])
    }

    func page(_ posts: [ChatPage.Post]) -> String {
        ChatPage.html(title: "Demo <run>", subtitle: "Mill River & friends", posts: posts, timeZone: utc)
    }

    func post(_ body: Data, channel: String = "team-chat", at seconds: TimeInterval = 1_795_000_000) -> ChatPage.Post {
        ChatPage.Post(channel: channel, receivedAt: Date(timeIntervalSince1970: seconds), body: body)
    }

    @Test func rendersTheAttachmentCard() throws {
        let html = page([post(try slack())])
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.contains("<meta charset=\"utf-8\">"))
        #expect(html.contains("<meta name=\"viewport\""))
        #expect(html.contains("<title>Demo &lt;run&gt;</title>"))
        #expect(html.contains("Mill River &amp; friends"))
        #expect(html.contains("#team-chat"))
        #expect(html.contains(">Klaxon</span>"))
        #expect(html.contains("border-left-color:#d93f0b"))
        #expect(html.contains("<div class=\"card-title\">FIRING · flood-stage · 01100500</div>"))
        #expect(html.contains("<span class=\"field-title\">Why:</span> gage_height 11.3 ≥ 11 (minor)"))
        #expect(html.contains("data as of 2026-11-21T10:15:00Z · ack 12"))
        #expect(!html.contains("<script"))
        // The plain-text fallback duplicates the attachments: not shown beside them.
        #expect(!html.contains(">fallback<"))
        #expect(!html.contains("class=\"tag\""))
    }

    @Test func escapesScriptInTextTitleAndFooter() throws {
        let body = try slack(
            title: "<script>alert('t')</script>", attachmentText: "<script>alert(\"x\")</script>",
            footer: "<script>f</script> & <b>")
        let html = page([post(body)])
        #expect(!html.contains("<script"))
        #expect(!html.contains("<b>"))
        #expect(html.contains("&lt;script&gt;alert(&#39;t&#39;)&lt;/script&gt;"))
        #expect(html.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"))
        #expect(html.contains("&lt;script&gt;f&lt;/script&gt; &amp; &lt;b&gt;"))

        let plain = page([post(try json(["text": "<script>alert(1)</script>\nline two"]))])
        #expect(!plain.contains("<script"))
        #expect(plain.contains("&lt;script&gt;alert(1)&lt;/script&gt;<br>line two"))
    }

    @Test func validatesColours() throws {
        let bad = page([post(try slack(color: "red;background:url(x)"))])
        #expect(!bad.contains("red;background"))
        #expect(!bad.contains("url(x)"))
        #expect(bad.contains("border-left-color:#c3c7cc"))

        let quoted = page([post(try slack(color: "#fff\" onmouseover=\"x"))])
        #expect(!quoted.contains("onmouseover"))

        #expect(page([post(try slack(color: "#ABC"))]).contains("border-left-color:#abc\""))
        #expect(page([post(try slack(color: "#12345g"))]).contains("border-left-color:#c3c7cc"))
        #expect(page([post(try slack(color: "danger"))]).contains("border-left-color:#a30200"))
    }

    @Test func convertsLinksAndRefusesOtherSchemes() throws {
        let body = try slack(
            attachmentText: "See <https://earthquake.usgs.gov/x|event page> or <javascript:alert(1)|click me>")
        let html = page([post(body)])
        #expect(
            html.contains(
                "<a href=\"https://earthquake.usgs.gov/x\" rel=\"noopener noreferrer\">event page</a>"))
        #expect(!html.contains("javascript:alert(1)\""))
        #expect(!html.contains("href=\"javascript"))
        #expect(html.contains("&lt;javascript:alert(1)|click me&gt;"))

        let sneaky = page([post(try slack(attachmentText: "<https://a.example/\"onclick=\"x|y>"))])
        #expect(!sneaky.contains("\"onclick"))
    }

    @Test func marksBoldAndItalicButNotSnakeCase() throws {
        let html = page([post(try json(["text": "*Flood* warning, _check_ gage_height and rain_total"]))])
        #expect(html.contains("<strong>Flood</strong> warning, <em>check</em> gage_height and rain_total"))
    }

    @Test func showsPostsInOrderWithTimes() throws {
        let first = post(try slack(title: "first alert"), at: 1_795_000_000)  // 2026-11-18 11:06:40 UTC
        let second = post(try slack(title: "second alert"), at: 1_795_003_723)  // 12:08:43 UTC
        let html = page([first, second])
        let a = try #require(html.range(of: "first alert"))
        let b = try #require(html.range(of: "second alert"))
        #expect(a.lowerBound < b.lowerBound)
        let t1 = try #require(html.range(of: ">11:06:40</time>"))
        let t2 = try #require(html.range(of: ">12:08:43</time>"))
        #expect(t1.lowerBound < a.lowerBound)
        #expect(a.lowerBound < t2.lowerBound)
        #expect(t2.lowerBound < b.lowerBound)

        let plusTwo = try #require(TimeZone(secondsFromGMT: 2 * 3600))
        let shifted = ChatPage.html(title: "t", subtitle: "", posts: [first], timeZone: plusTwo)
        #expect(shifted.contains(">13:06:40</time>"))
    }

    @Test func saysWhenNothingWasDelivered() {
        let html = page([])
        #expect(html.contains("No messages were delivered."))
        #expect(!html.contains("class=\"message\""))
        #expect(!page([post(Data("{\"text\":\"hi\"}".utf8))]).contains("No messages were delivered."))
    }

    @Test func showsANonJSONBodyEscaped() {
        let html = page([post(Data("oops <b>not json</b> & more".utf8))])
        #expect(html.contains("<pre class=\"raw\">oops &lt;b&gt;not json&lt;/b&gt; &amp; more</pre>"))
    }

    @Test func usesTheMattermostUsername() throws {
        let html = page([post(try json(["username": "River <Bot>", "text": "hello"]))])
        #expect(html.contains(">River &lt;Bot&gt;</span>"))
        #expect(html.contains("<div class=\"text\">hello</div>"))
    }

    @Test func tagsPostsWithTheirChannelsWhenThereAreSeveral() throws {
        let html = page([
            post(try slack(), channel: "team-chat"),
            post(try slack(), channel: "on-call"),
        ])
        #expect(html.contains("<span class=\"tag\">#team-chat</span>"))
        #expect(html.contains("<span class=\"tag\">#on-call</span>"))
        #expect(html.contains("<span class=\"channel-name\">#team-chat</span>"))
        #expect(html.contains("<span class=\"channel-name\">#on-call</span>"))
    }

    @Test("a Block Kit body: a card per alert in its attachment's colour, with its text, footer and buttons")
    func rendersBlockKit() throws {
        let t = Transition(
            rule: "flood-stage", kind: "levels", station: "01646500", metric: "gage_height", state: .firing,
            level: "minor", fromLevel: nil, at: 1_795_000_000, value: 12, unit: "ft", severity: .critical,
            labels: [:], summary: "s", explanation: "12 ft ≥ minor (11)")
        let n = AlertNotification(
            key: "k", receiver: "team-chat", alerts: [NotifiedAlert(transition: t, message: "River *rising*", id: 7)],
            externalURL: "https://klaxon.example.org")
        let html = page([post(WebhookPayloads.encode(WebhookPayloads.slack(n)))])
        #expect(html.contains("border-left-color:#d00000"))
        #expect(html.contains("CRITICAL flood-stage 01646500 firing minor"))
        #expect(html.contains("River <strong>rising</strong>") && html.contains("12 ft ≥ minor (11)"))
        #expect(html.contains("class=\"card-footer\">data as of"))
        #expect(html.contains("<a class=\"button\" href=\"https://klaxon.example.org/alerts/7\""))
        #expect(html.contains("<span class=\"button\">Ack</span>") && html.contains(">Silence 1h</span>"))
        #expect(!html.contains("<img"), "the page loads nothing")
    }
}
