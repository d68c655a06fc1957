import Foundation
import KlaxonCore
import Testing

@testable import KlaxonDelivery

// The preset builders as they were written before issue 40 (`[String: Any]` dictionaries and the
// writer that took them), kept here as the reference the typed builders are held to byte for byte
// (`PresetBytesTests`). Test code only: Sources hold no `[String: Any]` outside the templates'
// context (`ArchitectureTests.freeFormMaps`).

extension WebhookPayloads {
    enum Reference {
        /// `JSONText.encode` as it was: dictionaries, arrays, strings, numbers, booleans, `NSNull`.
        static func encode(_ object: [String: Any]) -> Data { Data(text(object).utf8) }

        static func text(_ value: Any) -> String {
            var out = ""
            write(value, into: &out)
            return out
        }

        static func write(_ value: Any, into out: inout String) {
            switch value {
            case let s as String: out += JSONText.string(s)
            case let b as Bool: out += b ? "true" : "false"
            case let i as Int: out += String(i)
            case let i as Int64: out += String(i)
            case let d as Double: out += JSONText.number(d)
            case let d as [String: String]:
                out += "{"
                for (n, key) in d.keys.sorted().enumerated() {
                    if n > 0 { out += "," }
                    out += JSONText.string(key) + ":" + JSONText.string(d[key]!)
                }
                out += "}"
            case let d as [String: Any]:
                out += "{"
                for (n, key) in d.keys.sorted().enumerated() {
                    if n > 0 { out += "," }
                    out += JSONText.string(key) + ":"
                    write(d[key]!, into: &out)
                }
                out += "}"
            case let a as [Any]:
                out += "["
                for (n, item) in a.enumerated() {
                    if n > 0 { out += "," }
                    write(item, into: &out)
                }
                out += "]"
            default:
                out += "null"
            }
        }

        static func generic(_ n: AlertNotification, groupBy: [String]) -> [String: Any] {
            let alerts: [[String: Any]] = n.alerts.map { a in
                let t = a.transition
                let (labels, annotations) = genericParts(a)
                let resolved = t.state == .resolved
                return [
                    "status": resolved ? "resolved" : "firing", "labels": labels, "annotations": annotations,
                    "startsAt": Timestamp.format(a.startedAt), "endsAt": resolved ? Timestamp.format(t.at) : zeroTime,
                    "generatorURL": generatorURL(n, a), "fingerprint": AlertIdentity.fingerprint(t),
                ]
            }
            let labelSets = alerts.map { $0["labels"] as! [String: String] }
            let annotationSets = alerts.map { $0["annotations"] as! [String: String] }
            let groupLabels = Dictionary(
                n.groupLabels(groupBy).map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
            return [
                "version": "4", "groupKey": n.groupKey(groupBy), "truncatedAlerts": 0, "status": n.status,
                "receiver": n.receiver, "groupLabels": groupLabels, "commonLabels": common(labelSets),
                "commonAnnotations": common(annotationSets), "externalURL": AlertNotification.trimmed(n.externalURL),
                "alerts": alerts, "notification_reason": n.reason.rawValue,
            ]
        }

        static func common(_ sets: [[String: String]]) -> [String: String] {
            guard var out = sets.first else { return [:] }
            for s in sets.dropFirst() { out = out.filter { s[$0.key] == $0.value } }
            return out
        }

        static func slack(_ n: AlertNotification) -> [String: Any] {
            let e = ChatEscape.slack
            return [
                "text": plainText(n, escape: e), "blocks": SlackBlocks.Reference.blocks(n),
                "attachments": n.alerts.map { a -> [String: Any] in
                    ["color": colour(a.transition), "fallback": "\(e(title(a))): \(e(a.message))"]
                },
            ]
        }

        /// Slack's attachment format, with values from data passed through `e`.
        static func attachments(_ n: AlertNotification, escape e: (String) -> String) -> [String: Any] {
            [
                "text": plainText(n, escape: e),
                "attachments": n.alerts.map { a -> [String: Any] in
                    var attachment: [String: Any] = [
                        "color": colour(a.transition), "title": e(title(a)), "text": e(a.message),
                        "fields": [["title": "Why", "value": e(a.transition.explanation), "short": false]],
                        "footer": e(footer(a)), "ts": a.transition.at,
                    ]
                    // The title opens the alert's page (`external_url`: a checked URL and a number, not data).
                    if let link = n.link(a) { attachment["title_link"] = link }
                    return attachment
                },
            ]
        }

        static func mattermost(_ n: AlertNotification) -> [String: Any] {
            var p = attachments(n, escape: ChatEscape.mattermost)
            p["username"] = "Klaxon"
            guard var list = p["attachments"] as? [[String: Any]], list.count == n.alerts.count else { return p }
            // What the alert is about and its runbook, as Markdown links (labels Klaxon's, URLs checked and
            // encoded: data in a runbook URL cannot close the link and open its own).
            for (i, a) in n.alerts.enumerated() {
                let links = links(n, a)
                guard !links.isEmpty, var fields = list[i]["fields"] as? [[String: Any]] else { continue }
                fields.append([
                    "title": "Links",
                    "value": links.map { ChatEscape.markdownLink($0.label, $0.url, escape: ChatEscape.mattermost) }
                        .joined(separator: " · "),
                    "short": false,
                ])
                list[i]["fields"] = fields
            }
            p["attachments"] = list
            guard let signer = n.chatActions, !n.externalURL.isEmpty else { return p }
            let url = AlertNotification.trimmed(n.externalURL) + "/chat/mattermost/actions"
            for (i, a) in n.alerts.enumerated() where ackHint(a) != nil {
                list[i]["actions"] = [ChatAction.ack, .silence1h].map { action -> [String: Any] in
                    [
                        "id": "\(action == .ack ? "ack" : "silence")\(i)", "type": "button", "name": action.label,
                        "style": action == .ack ? "primary" : "default",
                        "integration": ["url": url, "context": signer.context(action, a.id)],
                    ]
                }
            }
            p["attachments"] = list
            return p
        }

        static func discord(_ n: AlertNotification) -> [String: Any] {
            let e = ChatEscape.discord
            var lines: [String] = []
            if n.isDigest { lines.append("Held during quiet hours (\(n.alerts.count)):") }
            for (i, a) in n.alerts.enumerated() {
                lines.append(i < discordEmbeds ? e(title(a)) : "\(e(title(a))): \(e(a.message))")
            }
            let shown = Array(n.alerts.prefix(discordEmbeds))
            // What each embed must carry (title, footer, links), then the rest of the budget shared out
            // among the descriptions.
            let fixed = shown.map { a -> (title: String, footer: String, links: String?) in
                let more = links(n, a)
                return (
                    truncate(e(title(a)), to: 256), truncate(e(footer(a)), to: 2048),
                    more.isEmpty
                        ? nil
                        : truncate(
                            more.map { ChatEscape.markdownLink($0.label, $0.url, escape: e) }.joined(separator: " · "),
                            to: 1024)
                )
            }
            let fixedSize = fixed.reduce(0) {
                $0 + $1.title.count + $1.footer.count + ($1.links.map { $0.count + 5 } ?? 0)
            }
            let share = shown.isEmpty ? 0 : max(40, (discordEmbedTotal - fixedSize) / shown.count)
            return [
                "content": truncate(lines.joined(separator: "\n"), to: discordLimit),
                "embeds": zip(shown, fixed).map { a, f -> [String: Any] in
                    var embed: [String: Any] = [
                        "title": f.title,
                        "description": truncate(
                            "\(e(a.message))\n\nWhy: \(e(a.transition.explanation))", to: min(4096, share)),
                        "color": Int(colour(a.transition).dropFirst(), radix: 16) ?? 0,
                        "timestamp": Timestamp.format(a.transition.at), "footer": ["text": f.footer],
                    ]
                    if let link = n.link(a) { embed["url"] = link }
                    // Markdown links in an embed field; the URLs are checked and encoded, the labels are Klaxon's.
                    if let links = f.links { embed["fields"] = [["name": "Links", "value": links, "inline": false]] }
                    return embed
                },
                "allowed_mentions": discordAllowedMentions,
            ]
        }

        static var discordAllowedMentions: [String: Any] { ["parse": [Any]()] }

        static func msteams(_ n: AlertNotification) -> [String: Any] {
            let e = ChatEscape.msteams
            var body: [[String: Any]] = []
            for a in n.alerts.prefix(teamsAlerts) {
                let t = a.transition
                let colour = t.state == .resolved ? "Good" : (t.severity == .critical ? "Attention" : "Warning")
                body.append([
                    "type": "TextBlock", "text": e(title(a)), "weight": "Bolder", "size": "Medium", "color": colour,
                    "wrap": true,
                ])
                body.append(["type": "TextBlock", "text": e(a.message), "wrap": true])
                var facts: [[String: String]] = [
                    ["title": "Station", "value": e(t.station)], ["title": "Metric", "value": e(t.metric)],
                ]
                if let v = t.value {
                    // Late: the value says the time it is from (its trend is as old).
                    let value = formatValue(v) + (t.unit.map { " \(e($0))" } ?? "")
                    facts.append(["title": "Value", "value": a.late ? e(valueTime(t)) + " (late)" : value])
                }
                facts.append(["title": "Why", "value": e(t.explanation)])
                facts.append(["title": "Data time", "value": Timestamp.format(t.at)])
                if let ack = ackHint(a) { facts.append(["title": "Acknowledge", "value": ack]) }
                body.append(["type": "FactSet", "facts": facts])
                // The chart, for a single alert, when Teams can fetch it (see `publicChartLink`).
                if n.alerts.count == 1, let chart = n.publicChartLink(a) {
                    if let caption = chartCaption(a) {
                        body.append(["type": "TextBlock", "text": e(caption), "wrap": true, "isSubtle": true])
                    }
                    body.append([
                        "type": "Image", "url": chart, "size": "Stretch",
                        "altText": e("Chart of \(place(t)), \(MetricWords.name(t.metric)), the last 48 hours"),
                    ])
                }
            }
            if n.alerts.count > teamsAlerts {
                body.append([
                    "type": "TextBlock", "wrap": true, "isSubtle": true,
                    "text": "…and \(n.alerts.count - teamsAlerts) more"
                        + (n.externalURL.isEmpty ? "" : ": \(AlertNotification.trimmed(n.externalURL))/alerts"),
                ])
            }
            var card: [String: Any] = [
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard",
                "version": "1.4",
                "body": body,
            ]
            // Buttons that open the alert's page (one per alert), and for a single alert what it is
            // about and its runbook: at most 5, as Teams shows them.
            var actions: [[String: Any]] = n.alerts.compactMap { a in
                n.link(a).map { link -> [String: Any] in
                    [
                        "type": "Action.OpenUrl", "url": link,
                        "title": n.alerts.count == 1
                            ? "Open alert #\(a.id)" : "Open #\(a.id) \(e(truncate(place(a.transition), to: 40)))",
                    ]
                }
            }
            if n.alerts.count == 1, let a = n.alerts.first {
                for l in links(n, a) { actions.append(["type": "Action.OpenUrl", "url": l.url, "title": l.label]) }
            }
            if !actions.isEmpty { card["actions"] = Array(actions.prefix(5)) }
            return [
                "type": "message",
                "attachments": [
                    ["contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": NSNull(), "content": card]
                ],
            ]
        }

        static func googlechat(_ n: AlertNotification) -> [String: Any] {
            let e = ChatEscape.googlechat
            var lines: [String] = []
            if n.isDigest { lines.append("*Held during quiet hours (\(n.alerts.count))*") }
            for a in n.alerts {
                lines.append(
                    "*\(e(title(a)))*\n\(e(a.message))\n_Why: \(e(a.transition.explanation)); \(e(footer(a)))_"
                        + linkLine(n, a))
            }
            return ["text": truncate(lines.joined(separator: "\n\n"), to: googleChatLimit)]
        }
    }
}

extension SlackBlocks {
    enum Reference {
        static func blocks(_ n: AlertNotification) -> [[String: Any]] {
            var out: [[String: Any]] = []
            if n.isDigest {
                out.append(section(id: "digest", text: "*Held during quiet hours (\(n.alerts.count)):*"))
            }
            var shown = 0
            for (i, a) in n.alerts.enumerated() {
                let group = alert(n, a, position: i)
                // Room is kept for the summary line unless this is the last alert.
                let room = Limit.blocks - out.count - (i == n.alerts.count - 1 ? 0 : 1)
                guard group.count <= room else { break }
                out += group
                shown += 1
            }
            if shown < n.alerts.count { out.append(more(n, from: shown)) }
            return out
        }

        /// One alert's blocks (five at most). `position` makes its ids unique in the message.
        static func alert(_ n: AlertNotification, _ a: NotifiedAlert, position i: Int) -> [[String: Any]] {
            let e = ChatEscape.slack
            let t = a.transition
            let headline = e(WebhookPayloads.title(a))
            var blocks: [[String: Any]] = [
                [
                    "type": "header", "block_id": "alert-\(i)",
                    "text": plain(headline.isEmpty ? "Alert" : headline, Limit.header),
                ],
                section(id: "alert-\(i)-text", text: "\(e(a.message))\n*Why:* \(e(t.explanation))"),
                [
                    "type": "context", "block_id": "alert-\(i)-time",
                    "elements": [mrkdwn(e(WebhookPayloads.footer(a)))],
                ],
            ]
            // The chart of what the alert is about (`external_url` + a checked path: no data unescaped).
            if let chart = n.publicChartLink(a), chart.utf16.count <= Limit.url {
                var image: [String: Any] = [
                    "type": "image", "block_id": "alert-\(i)-chart", "image_url": chart,
                    "alt_text": ChatText.clip(
                        e("Chart of \(WebhookPayloads.place(t)), \(MetricWords.name(t.metric)), the last 48 hours"),
                        Limit.altText),
                ]
                // Late: the chart shows newer data than the message; its title says whose time is whose.
                if let caption = WebhookPayloads.chartCaption(a) { image["title"] = plain(caption, Limit.altText) }
                blocks.append(image)
            }
            var buttons: [[String: Any]] = []
            if let link = n.link(a), link.utf16.count <= Limit.url {
                buttons.append([
                    "type": "button", "action_id": "\(ChatAction.open).\(i)", "text": plain("Open", Limit.buttonText),
                    "url": link,
                ])
            }
            // What the alert is about (its gauge, city or station) and the rule's runbook: links too.
            for (k, link) in WebhookPayloads.links(n, a).enumerated() where link.url.utf16.count <= Limit.url {
                buttons.append([
                    "type": "button", "action_id": "\(ChatAction.open).\(i).\(k)",
                    "text": plain(link.label, Limit.buttonText), "url": link.url,
                ])
            }
            // Ack and Silence only while the alert fires, and only for a logged one (a test message has id 0).
            if WebhookPayloads.ackHint(a) != nil {
                for action in [ChatAction.ack, .silence1h] {
                    var button: [String: Any] = [
                        "type": "button", "action_id": action.actionID(position: i),
                        "text": plain(action.label, Limit.buttonText), "value": String(a.id),
                    ]
                    if action == .ack { button["style"] = "primary" }
                    buttons.append(button)
                }
            }
            if !buttons.isEmpty {
                blocks.append([
                    "type": "actions", "block_id": "alert-\(i)-actions",
                    "elements": Array(buttons.prefix(Limit.actionsElements)),
                ])
            }
            return blocks
        }

        /// The last block when not every alert fits: how many more, their headlines as far as the text
        /// limit allows, and a button to the site's list of alerts (with `external_url`).
        static func more(_ n: AlertNotification, from shown: Int) -> [String: Any] {
            let rest = n.alerts[shown...]
            let lines = rest.map { "• " + ChatEscape.slack(WebhookPayloads.title($0)) }
            var block = section(
                id: "more", text: "*…and \(rest.count) more:*\n" + lines.joined(separator: "\n"))
            if !n.externalURL.isEmpty {
                let list = AlertNotification.trimmed(n.externalURL) + "/alerts"
                if list.utf16.count <= Limit.url {
                    block["accessory"] = [
                        "type": "button", "action_id": "\(ChatAction.open).more",
                        "text": plain("All alerts", Limit.buttonText),
                        "url": list,
                    ]
                }
            }
            return block
        }

        static func section(id: String, text: String) -> [String: Any] {
            ["type": "section", "block_id": id, "text": mrkdwn(text)]
        }

        /// A `mrkdwn` text object, cut to the limit and `verbatim`: Slack turns no bare URL, channel name
        /// or `@here` in it into a link or a mention.
        static func mrkdwn(_ text: String) -> [String: Any] {
            ["type": "mrkdwn", "text": ChatText.clip(text.isEmpty ? " " : text, Limit.text), "verbatim": true]
        }

        /// A `plain_text` object cut to `limit`.
        static func plain(_ text: String, _ limit: Int) -> [String: Any] {
            ["type": "plain_text", "text": ChatText.clip(text, limit), "emoji": true]
        }
    }
}

extension Dictionary where Key == String, Value == JSONValue {
    /// A preset's body as the platform reads it: its bytes, parsed.
    var sent: [String: Any] {
        (try? JSONSerialization.jsonObject(with: WebhookPayloads.encode(self))) as? [String: Any] ?? [:]
    }
}

/// A value as `JSONSerialization` read it (a test's view of a body), as a typed JSON value; nil for
/// nil and for anything that is not JSON.
func jsonValue(_ any: Any?) -> JSONValue? {
    guard let any, JSONSerialization.isValidJSONObject([any]),
        let data = try? JSONSerialization.data(withJSONObject: [any])
    else { return nil }
    return JSONValue.parse(data)?.array?.first
}
