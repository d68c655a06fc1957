import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Testing

@Suite struct WebhookPayloadTests {
    let firing = transition(state: .firing, level: "minor", from: nil, severity: .warning)
    let changed = transition(state: .changed, level: "moderate", from: "minor", value: 14.2, severity: .critical)
    let resolved = transition(state: .resolved, level: nil, from: "action", value: 9.1)

    @Test func genericIsAlertmanagerV4() throws {
        let p = WebhookPayloads.Reference.generic(notification([firing, resolved], receiver: "ops"), groupBy: ["rule"])
        #expect(p["version"] as? String == "4")
        #expect(p["status"] as? String == "firing")
        #expect(p["receiver"] as? String == "ops")
        #expect(p["groupLabels"] as? [String: String] == ["alertname": "river-levels"])
        #expect(p["groupKey"] as? String == "{}:{alertname=\"river-levels\"}")
        #expect(p["truncatedAlerts"] as? Int == 0)
        let common = try #require(p["commonLabels"] as? [String: String])
        #expect(common["alertname"] == "river-levels" && common["station"] == "01646500" && common["team"] == "water")
        #expect(common["level"] == nil)  // never a label: it changes during an episode
        let alerts = try #require(p["alerts"] as? [[String: Any]])
        #expect(alerts.count == 2)
        let a = alerts[0]
        #expect(a["status"] as? String == "firing")
        let labels = try #require(a["labels"] as? [String: String])
        #expect(
            labels == [
                "alertname": "river-levels", "station": "01646500", "metric": "gage_height", "severity": "warning",
                "team": "water",
            ])
        let annotations = try #require(a["annotations"] as? [String: String])
        #expect(annotations["level"] == "minor")
        #expect(annotations["summary"] == firing.summary)
        #expect(annotations["description"] == firing.explanation)
        #expect(annotations["data_time"] == "2026-03-01T06:15:00Z")
        #expect(annotations["alert_id"] == "1")
        #expect(a["startsAt"] as? String == "2026-03-01T06:15:00Z")
        #expect(a["endsAt"] as? String == "0001-01-01T00:00:00Z")
        let fp = try #require(a["fingerprint"] as? String)
        #expect(fp.count == 16 && fp.allSatisfy(\.isHexDigit))
        #expect(alerts[1]["status"] as? String == "resolved")
        #expect(alerts[1]["endsAt"] as? String == "2026-03-01T06:15:00Z")
        #expect(alerts[1]["fingerprint"] as? String == fp)  // same alert, same fingerprint

        let onlyResolved = WebhookPayloads.Reference.generic(notification([resolved]), groupBy: [])
        #expect(onlyResolved["status"] as? String == "resolved")
        let withChange = WebhookPayloads.Reference.generic(notification([changed]), groupBy: [])
        let annotations2 = try #require(
            (withChange["alerts"] as? [[String: Any]])?.first?["annotations"] as? [String: String])
        #expect(annotations2["previous_level"] == "minor")
    }

    /// Changes folded into one notification read as the receiver learns them: from the level it last
    /// heard, through the ones in between; an episode it never heard of arrives as a firing.
    @Test func foldedChangesReadFromWhatWasHeard() throws {
        let moderate = transition(state: .changed, level: "moderate", from: "minor", severity: .critical)
        let heard = NotifiedAlert(
            transition: moderate, message: "m", id: 41,
            path: [PathStep(state: .changed, level: "minor", from: "action", at: 0, episode: 41)])
        #expect(WebhookPayloads.title(heard).hasSuffix("changed action→moderate (via minor)"))
        #expect(heard.route == ["action", "minor", "moderate"])
        let unheard = NotifiedAlert(
            transition: moderate, message: "m", id: 41,
            path: [
                PathStep(state: .firing, level: "action", at: 0, episode: 41),
                PathStep(state: .changed, level: "minor", from: "action", at: 0, episode: 41),
            ])
        #expect(WebhookPayloads.title(unheard).hasSuffix("firing moderate (via action → minor)"))
        #expect(
            StdoutNotifier().line(for: unheard).contains(
                "FIRING moderate 12.4 ft at 2026-03-01T06:15:00Z (via action → minor) — m"))
        let n = notification([moderate])
        let body = WebhookPayloads.genericText(
            AlertNotification(key: n.key, receiver: n.receiver, alerts: [heard]), groupBy: [])
        #expect(body.contains(#""path":"action → minor → moderate""#))
    }

    /// With `external_url`, every preset links to the alert's page; without it, none adds a link.
    @Test func everyPresetLinksToTheAlertsPage() async throws {
        let a = NotifiedAlert(transition: firing, message: "m", id: 41)
        let linked = AlertNotification(key: "k", receiver: "r", alerts: [a], externalURL: "https://k.example.org/")
        let url = "https://k.example.org/alerts/41"
        // Slack: the Open button (the blocks hold what the attachment's title showed).
        let slackButtons = (WebhookPayloads.slack(linked).sent["blocks"] as? [[String: Any]] ?? []).flatMap {
            $0["type"] as? String == "actions" ? $0["elements"] as? [[String: Any]] ?? [] : []
        }
        #expect(slackButtons.first?["url"] as? String == url)
        let mattermost = try #require(
            (WebhookPayloads.mattermost(linked).sent["attachments"] as? [[String: Any]])?.first)
        #expect(mattermost["title_link"] as? String == url)
        let discord = try #require((WebhookPayloads.discord(linked).sent["embeds"] as? [[String: Any]])?.first)
        #expect(discord["url"] as? String == url)
        let teams = try #require(
            ((WebhookPayloads.msteams(linked).sent["attachments"] as? [[String: Any]])?.first?["content"]
                as? [String: Any])?[
                    "actions"] as? [[String: Any]])
        #expect(teams.first?["type"] as? String == "Action.OpenUrl" && teams.first?["url"] as? String == url)
        #expect(
            (WebhookPayloads.googlechat(linked).sent["text"] as? String)?.contains("<\(url)|Open alert #41>") == true)
        let email = try EmailNotifier(
            config: .init(name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "k@example.org", to: ["o@example.org"])
        ).render(linked)
        let parts = try await EmailHeaderTests.parse(email).parts
        #expect(parts.count == 2 && parts[0].contains("Open: \(url)") && parts[1].contains("<a href=\"\(url)\""))
        // No external_url: no link anywhere.
        let plain = AlertNotification(key: "k", receiver: "r", alerts: [a])
        #expect(
            !String(decoding: WebhookPayloads.encode(WebhookPayloads.slack(plain)), as: UTF8.self).contains("https://"))
        #expect(
            (WebhookPayloads.mattermost(plain).sent["attachments"] as? [[String: Any]])?.first?["title_link"] == nil)
        #expect(
            !String(decoding: WebhookPayloads.encode(WebhookPayloads.msteams(plain)), as: UTF8.self).contains(
                "Action.OpenUrl"))
    }

    /// The generic body is written by hand on the hot path; it must be the same bytes as encoding
    /// the payload object, whatever the alerts hold.
    @Test func genericTextIsTheEncodedPayload() throws {
        var odd = transition(state: .firing, level: "major \"flood\"", from: "a\\b", value: -0.000125, severity: .info)
        odd.labels = ["team": "wa\nter", "ünï": "🌊\u{1}", "empty": ""]
        odd.summary = "tab\there, quote \" and slash \\ and \u{2028}"
        // Labels that clash with the match labels: the transition's own values win, and a `level` label
        // is never one (the level is an annotation).
        var clash = transition(station: "S9", level: nil)
        clash.labels = ["station": "x", "rule": "y", "level": "z", "alertname": "q", "metric": "m", "severity": "s"]
        for groupBy in [[], ["rule"], ["station", "rule", "missing"], ["team"], ["level", "level"]] {
            for alerts in [
                [firing], [resolved], [changed, resolved], [firing, changed, resolved, odd], [odd], [clash],
                [clash, firing],
            ] {
                let n = notification(alerts, receiver: "ops \"x\"")
                let object = String(
                    decoding: WebhookPayloads.Reference.encode(WebhookPayloads.Reference.generic(n, groupBy: groupBy)),
                    as: UTF8.self)
                #expect(WebhookPayloads.genericText(n, groupBy: groupBy) == object)
            }
        }
        let empty = notification([], receiver: "r")
        #expect(
            WebhookPayloads.genericText(empty, groupBy: ["rule"])
                == String(
                    decoding: WebhookPayloads.Reference.encode(
                        WebhookPayloads.Reference.generic(empty, groupBy: ["rule"])), as: UTF8.self))
    }

    @Test func slackAndMattermostAreColourCoded() throws {
        for p in [
            WebhookPayloads.slack(notification([changed, resolved])).sent,
            WebhookPayloads.mattermost(notification([changed, resolved])).sent,
        ] {
            let text = try #require(p["text"] as? String)
            #expect(text.contains("CRITICAL river-levels 01646500 changed minor→moderate"))
            let attachments = try #require(p["attachments"] as? [[String: Any]])
            #expect(attachments.map { $0["color"] as? String } == ["#d00000", "#2eb886"])
            // A firing or changed alert carries the id to ack it with; a resolved one does not.
            var footers = attachments.map { $0["footer"] as? String }
            var why = (attachments[0]["fields"] as? [[String: Any]])?.first?["value"] as? String
            if let blocks = p["blocks"] as? [[String: Any]] {
                // Slack: the footer is each alert's context block, the why is in its section.
                footers = blocks.filter { $0["type"] as? String == "context" }.map {
                    ($0["elements"] as? [[String: Any]])?.first?["text"] as? String
                }
                why =
                    ((blocks[1]["text"] as? [String: Any])?["text"] as? String)?.components(separatedBy: "*Why:* ")
                    .last
            }
            #expect(footers == ["data as of 2026-03-01T06:15:00Z · ack 1", "data as of 2026-03-01T06:15:00Z"])
            #expect(why == changed.explanation)
        }
        #expect(WebhookPayloads.mattermost(notification([firing])).sent["username"] as? String == "Klaxon")
    }

    @Test func discordContentStaysWithin2000Characters() throws {
        let many = (0..<60).map {
            transition(station: "STATION-\($0)-WITH-A-LONG-NAME-\(String(repeating: "x", count: 20))")
        }
        let p = WebhookPayloads.discord(notification(many)).sent
        let content = try #require(p["content"] as? String)
        #expect(content.count == 2000)
        #expect(content.hasSuffix("…"))
        let embeds = try #require(p["embeds"] as? [[String: Any]])
        #expect(embeds.count == 10)
        #expect(embeds[0]["color"] as? Int == 0xf2a900)
        #expect((embeds[0]["description"] as? String)?.contains("Why: ") == true)
        #expect(embeds[0]["timestamp"] as? String == "2026-03-01T06:15:00Z")
        let short = WebhookPayloads.discord(notification([firing])).sent["content"] as? String
        #expect(short?.hasSuffix("…") == false)
        // The message is in the embed, not said twice.
        #expect(short == WebhookPayloads.title(NotifiedAlert(transition: firing, message: firing.summary, id: 1)))
        #expect(content.contains(firing.summary) == false)
    }

    @Test func teamsIsAnAdaptiveCardMessage() throws {
        let p = WebhookPayloads.msteams(notification([changed])).sent
        #expect(p["type"] as? String == "message")
        let attachment = try #require((p["attachments"] as? [[String: Any]])?.first)
        #expect(attachment["contentType"] as? String == "application/vnd.microsoft.card.adaptive")
        let card = try #require(attachment["content"] as? [String: Any])
        #expect(card["type"] as? String == "AdaptiveCard")
        #expect(card["version"] as? String == "1.4")
        let body = try #require(card["body"] as? [[String: Any]])
        #expect(body[0]["color"] as? String == "Attention")
        let facts = try #require(body[2]["facts"] as? [[String: String]])
        #expect(facts.contains(["title": "Why", "value": changed.explanation]))
        #expect(facts.contains(["title": "Data time", "value": "2026-03-01T06:15:00Z"]))
        #expect(facts.contains(["title": "Value", "value": "14.2 ft"]))
    }

    @Test func googleChatCarriesExplanationAndDataTime() throws {
        let text = try #require(WebhookPayloads.googlechat(notification([firing])).sent["text"] as? String)
        #expect(text.contains(firing.summary))
        #expect(text.contains("Why: \(firing.explanation)"))
        #expect(text.contains("data as of 2026-03-01T06:15:00Z"))
    }

    @Test func customTemplateReplacesThePreset() throws {
        let n = try WebhookNotifier(
            config: .init(
                name: "t", url: Secret("http://127.0.0.1:1/x"), preset: .slack,
                template: #"{"msg":"{{#alerts}}{{station}} {{state}} {{level}}{{/alerts}}"}"#))
        #expect(try n.render(notification([firing])) == #"{"msg":"01646500 firing minor"}"#)
    }

    @Test func signatureIsHMACSHA256OfTimestampDotBody() {
        // Known answer: HMAC-SHA256(key "secret", "1700000000.{}") computed independently with openssl.
        let sig = WebhookNotifier.signature(secret: "secret", timestamp: 1_700_000_000, body: Data("{}".utf8))
        #expect(sig == "sha256=" + HMACReference.hex)
    }
}

/// `printf '1700000000.{}' | openssl dgst -sha256 -hmac secret`
enum HMACReference {
    static let hex = "b8569b78799ff9e3cbff0fc2d63a33a2b57f3282abd07c37ae5e8e7d79a5f163"
}
