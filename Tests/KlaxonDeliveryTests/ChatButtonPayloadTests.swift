import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import KlaxonTesting
import Testing

/// The Slack and Mattermost presets against their platforms' documented shapes (`ChatPayloadShape`):
/// Block Kit's limits whatever the notification holds, buttons only where they can act, data escaped,
/// and Mattermost's button contexts signed.
@Suite struct ChatButtonPayloadTests {
    static let base = "https://klaxon.example.org"

    static func alerts(_ count: Int, state: TransitionState = .firing, station: (Int) -> String = { "S\($0)" })
        -> [NotifiedAlert]
    {
        (0..<count).map { i in
            let t = transition(station: station(i), state: state, level: state == .resolved ? nil : "minor")
            return NotifiedAlert(transition: t, message: t.summary, id: Int64(100 + i))
        }
    }

    static func slack(_ alerts: [NotifiedAlert], externalURL: String = base, digest: Bool = false) throws -> [String:
        Any]
    {
        let n = AlertNotification(
            key: "k", receiver: "chat", alerts: alerts, isDigest: digest, externalURL: externalURL)
        // Through the encoder, as the receiver gets it.
        let body = WebhookPayloads.encode(WebhookPayloads.slack(n))
        return try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
    }

    static func blocks(_ p: [String: Any]) -> [[String: Any]] { p["blocks"] as? [[String: Any]] ?? [] }

    static func buttons(_ p: [String: Any]) -> [[String: Any]] {
        blocks(p).flatMap { b -> [[String: Any]] in
            (b["elements"] as? [[String: Any]] ?? []).filter { $0["type"] as? String == "button" }
                + [b["accessory"] as? [String: Any]].compactMap { $0 }
        }
    }

    @Test("one firing alert: header, section, context, chart and Open/Ack/Silence 1h, within Block Kit's limits")
    func oneAlert() throws {
        let p = try Self.slack(Self.alerts(1))
        #expect(ChatPayloadShape.slackProblems(p) == [])
        #expect(Self.blocks(p).map { $0["type"] as? String } == ["header", "section", "context", "image", "actions"])
        let header = try #require((Self.blocks(p)[0]["text"] as? [String: Any])?["text"] as? String)
        #expect(header.contains("WARNING river-levels S0 firing minor"))
        let section = try #require((Self.blocks(p)[1]["text"] as? [String: Any])?["text"] as? String)
        #expect(section.contains("gage_height at S0 reached minor") && section.contains("*Why:* gage_height 12.4 ft"))
        let context = try #require(
            ((Self.blocks(p)[2]["elements"] as? [[String: Any]])?.first)?["text"] as? String)
        #expect(context.contains("data as of 2026-03-01T06:15:00Z") && context.contains("ack 100"))
        #expect(Self.blocks(p)[3]["image_url"] as? String == "\(Self.base)/gauges/S0/chart.png?range=48h")
        #expect((Self.blocks(p)[3]["alt_text"] as? String)?.isEmpty == false)
        let buttons = Self.buttons(p)
        #expect(
            buttons.map { ($0["text"] as? [String: Any])?["text"] as? String } == [
                "Open", "River gauge", "Ack", "Silence 1h",
            ])
        #expect(buttons[0]["url"] as? String == "\(Self.base)/alerts/100")
        #expect(buttons[1]["url"] as? String == "\(Self.base)/gauges/S0")
        #expect(buttons[2]["value"] as? String == "100" && buttons[3]["value"] as? String == "100")
        #expect(ChatAction.named(actionID: buttons[1]["action_id"] as? String ?? "") == nil, "a link acts on nothing")
        #expect(ChatAction.named(actionID: buttons[2]["action_id"] as? String ?? "") == .ack)
        #expect(ChatAction.named(actionID: buttons[3]["action_id"] as? String ?? "") == .silence1h)
        // The notification fallback and the colour stay; the attachments' displayed fields are in the blocks.
        #expect((p["text"] as? String)?.contains("river-levels S0 firing") == true)
        let attachments = try #require(p["attachments"] as? [[String: Any]])
        #expect(attachments.count == 1 && attachments[0]["color"] as? String == "#f2a900")
        #expect((attachments[0]["fallback"] as? String)?.contains("gage_height at S0") == true)
        #expect(attachments[0]["title"] == nil && attachments[0]["footer"] == nil)
    }

    @Test("no Ack or Silence on a resolved alert or one never logged; no Open or chart without external_url")
    func buttonsOnlyWhereTheyAct() throws {
        let resolved = try Self.slack(Self.alerts(1, state: .resolved))
        #expect(ChatPayloadShape.slackProblems(resolved) == [])
        #expect(
            Self.buttons(resolved).map { ($0["text"] as? [String: Any])?["text"] as? String } == [
                "Open", "River gauge",
            ])
        var test = Self.alerts(1)[0]
        test.id = 0
        let unlogged = try Self.slack([test])
        #expect(ChatPayloadShape.slackProblems(unlogged) == [])
        #expect(
            Self.buttons(unlogged).map { ($0["text"] as? [String: Any])?["text"] as? String } == ["River gauge"],
            "no page of its own to open, nothing to ack")
        let plain = try Self.slack(Self.alerts(1), externalURL: "")
        #expect(ChatPayloadShape.slackProblems(plain) == [])
        #expect(
            Self.buttons(plain).map { ($0["text"] as? [String: Any])?["text"] as? String } == ["Ack", "Silence 1h"])
        #expect(!Self.blocks(plain).contains { $0["type"] as? String == "image" })
    }

    @Test("links to what the alert is about and to its runbook: Slack buttons, a Mattermost field")
    func links() throws {
        var a = Self.alerts(1)[0]
        a.transition.annotations = ["runbook_url": "https://wiki.example.org/flood"]
        let slack = try Self.slack([a])
        #expect(ChatPayloadShape.slackProblems(slack) == [])
        let urls = Self.buttons(slack).compactMap { $0["url"] as? String }
        #expect(urls == ["\(Self.base)/alerts/100", "\(Self.base)/gauges/S0", "https://wiki.example.org/flood"])
        let mm = try Self.mattermost([a])
        let fields = (mm["attachments"] as? [[String: Any]])?.first?["fields"] as? [[String: Any]] ?? []
        #expect(
            fields.last?["value"] as? String
                == "[River gauge](\(Self.base)/gauges/S0) · [Runbook](https://wiki.example.org/flood)")
        // A runbook that is not a plain http(s) link is not offered.
        a.transition.annotations = ["runbook_url": "javascript:alert(1)"]
        #expect(
            !String(
                decoding: WebhookPayloads.encode(WebhookPayloads.slack(.init(key: "k", receiver: "r", alerts: [a]))),
                as: UTF8.self
            ).contains("javascript"))
    }

    @Test("60 alerts: at most 50 blocks, the rest summed up with a link to the list; ids unique")
    func sixtyAlerts() throws {
        let p = try Self.slack(Self.alerts(60), digest: true)
        #expect(ChatPayloadShape.slackProblems(p) == [])
        let blocks = Self.blocks(p)
        #expect(blocks.count <= 50)
        let shown = blocks.filter { $0["type"] as? String == "header" }.count
        let more = try #require(blocks.last)
        let text = try #require((more["text"] as? [String: Any])?["text"] as? String)
        #expect(text.hasPrefix("*…and \(60 - shown) more:*"), "\(text)")
        #expect(text.contains("river-levels S59 firing"))
        #expect((more["accessory"] as? [String: Any])?["url"] as? String == "\(Self.base)/alerts")
        #expect(shown == 9, "five blocks an alert, a digest line and the summary")
        // Every alert in the message (shown or summed up) is in the fallback text.
        #expect((p["text"] as? String)?.contains("S59") == true)
    }

    @Test("huge messages and names are cut to the limits, never inside an escape or a character")
    func hugeValues() throws {
        var alerts = Self.alerts(3, station: { i in String(repeating: i == 0 ? "&" : "🌊", count: 2_000) })
        alerts[0].message = String(repeating: "<&>", count: 5_000)
        alerts[1].message = String(repeating: "👩‍👩‍👧‍👦", count: 5_000)
        alerts[2].transition.explanation = String(repeating: "x", count: 100_000)
        let p = try Self.slack(alerts)
        #expect(ChatPayloadShape.slackProblems(p) == [])
        for text in ChatPayloadShape.slackTexts(p) {
            // A cut escape would show as `&am…`: every `&` still begins a whole one.
            var rest = Substring(text)
            while let amp = rest.firstIndex(of: "&") {
                let tail = rest[amp...]
                #expect(["&amp;", "&lt;", "&gt;"].contains { tail.hasPrefix($0) }, "\(text.prefix(60))…")
                rest = rest[rest.index(after: amp)...]
            }
        }
        let header = try #require((Self.blocks(p)[0]["text"] as? [String: Any])?["text"] as? String)
        #expect(header.hasSuffix("…") && header.utf16.count <= 150)
    }

    @Test("hostile data is text: no mention, link or channel from a station, a message or an explanation")
    func hostileData() throws {
        let hostile = ["<!channel>", "<!here|x>", "<@U123>", "<https://evil.example|Ack here>", "*bold* _x_ &amp;"]
        for h in hostile {
            var a = Self.alerts(1, station: { _ in h })[0]
            a.message = "look: \(h)"
            a.transition.explanation = "because \(h)"
            let p = try Self.slack([a])
            #expect(ChatPayloadShape.slackProblems(p) == [])
            for text in ChatPayloadShape.slackTexts(p) + [p["text"] as? String ?? ""] {
                #expect(!text.contains("<") && !text.contains(">"), "\(h): \(text)")
            }
            // mrkdwn is verbatim: Slack links no bare URL or channel name in it.
            for b in Self.blocks(p) {
                if let t = b["text"] as? [String: Any], t["type"] as? String == "mrkdwn" {
                    #expect(t["verbatim"] as? Bool == true)
                }
            }
            // A station's path is percent-encoded: the chart URL and the Open URL carry no markup.
            for u in Self.blocks(p).compactMap({ $0["image_url"] as? String })
                + Self.buttons(p).compactMap({ $0["url"] as? String })
            {
                #expect(!u.contains("<") && !u.contains("|") && !u.contains(" "), "\(u)")
            }
        }
    }

    static let key = MattermostActions.key(token: "mm-token")

    static func mattermost(_ alerts: [NotifiedAlert], externalURL: String = base, signed: Bool = true) throws
        -> [String: Any]
    {
        let signer = ChatActionSigner { action, episode in
            MattermostActions.context(action, episode: episode, key: key, now: Int64(Date().timeIntervalSince1970))
        }
        let n = AlertNotification(
            key: "k", receiver: "mm", alerts: alerts, externalURL: externalURL, chatActions: signed ? signer : nil)
        return try #require(
            try JSONSerialization.jsonObject(with: WebhookPayloads.encode(WebhookPayloads.mattermost(n)))
                as? [String: Any])
    }

    @Test("Mattermost: Ack and Silence 1h buttons with a signed context that verifies, and fails when tampered")
    func mattermostButtons() throws {
        let p = try Self.mattermost(Self.alerts(2) + Self.alerts(1, state: .resolved))
        #expect(ChatPayloadShape.mattermostProblems(p) == [])
        let attachments = try #require(p["attachments"] as? [[String: Any]])
        // The attachment keeps every field it had.
        #expect(attachments[0]["title_link"] as? String == "\(Self.base)/alerts/100")
        #expect((attachments[0]["fields"] as? [[String: Any]])?.first?["title"] as? String == "Why")
        let actions = try #require(attachments[0]["actions"] as? [[String: Any]])
        #expect(actions.map { $0["name"] as? String } == ["Ack", "Silence 1h"])
        #expect(attachments[2]["actions"] == nil, "a resolved alert has no buttons")
        let now = Int64(Date().timeIntervalSince1970)
        for (action, expected) in zip(actions, [ChatAction.ack, .silence1h]) {
            let integration = try #require(action["integration"] as? [String: Any])
            #expect(integration["url"] as? String == "\(Self.base)/chat/mattermost/actions")
            let context = try #require(integration["context"] as? [String: Any])
            let verified = try MattermostActions.verify(jsonValue(context), key: Self.key, now: now).get()
            #expect(verified.action == expected && verified.episode == 100)
            // Any change voids it: another alert, another action, a later issue time, another key.
            for (field, value) in [("episode", "101"), ("action", "ack"), ("issued", String(now + 1))]
            where context[field] as? String != value {
                var tampered = context
                tampered[field] = value
                #expect(MattermostActions.verify(jsonValue(tampered), key: Self.key, now: now) == .failure(.forged))
            }
            #expect(
                MattermostActions.verify(jsonValue(context), key: MattermostActions.key(token: "other"), now: now)
                    == .failure(.forged))
            #expect(
                MattermostActions.verify(jsonValue(context), key: Self.key, now: now + 86_401) == .failure(.expired))
        }
        #expect(attachments[1]["actions"] != nil)
        // Without external_url (nowhere to post back) or a signer (no chat.mattermost): no buttons.
        for q in [
            try Self.mattermost(Self.alerts(1), externalURL: ""), try Self.mattermost(Self.alerts(1), signed: false),
        ] {
            #expect((q["attachments"] as? [[String: Any]])?.allSatisfy { $0["actions"] == nil } == true)
            #expect(ChatPayloadShape.mattermostProblems(q) == [])
        }
    }

    @Test("a signed context's shape is checked before its signature: junk is refused, never trapped on")
    func hostileContexts() {
        let now = Int64(Date().timeIntervalSince1970)
        let junk: [Any?] = [
            nil, "ack", [1, 2], ["action": "ack"], ["action": 1, "episode": 2],
            [
                "action": "ack", "episode": "-1", "issued": "\(now)", "nonce": String(repeating: "a", count: 32),
                "sig": String(repeating: "0", count: 64),
            ],
            [
                "action": "drop_tables", "episode": "1", "issued": "\(now)", "nonce": String(repeating: "a", count: 32),
                "sig": String(repeating: "0", count: 64),
            ],
            [
                "action": "ack", "episode": "1", "issued": "9999999999999999999",
                "nonce": String(repeating: "a", count: 32),
                "sig": String(repeating: "0", count: 64),
            ],
        ]
        for j in junk { #expect(MattermostActions.verify(jsonValue(j), key: Self.key, now: now) == .failure(.forged)) }
    }
}
