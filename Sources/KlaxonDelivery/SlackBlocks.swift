import Foundation
import KlaxonCore

/// The Slack preset's Block Kit message: for each alert a header (its headline), a section (the
/// message and why), a context line (data time, since when, `ack N`), its chart when
/// `external_url` is set, and buttons: *Open* (its page), links to what it is about and its runbook,
/// *Ack* and *Silence 1h* (while it fires).
///
/// Within Block Kit's limits, whatever the notification holds: at most 50 blocks (the alerts that
/// do not fit are summed up in one last section, "…and N more", with a button to the site's list),
/// text at most 3,000 characters (a header 150), at most 25 elements in an actions block, button
/// text 75, a value 2,000 and a URL 3,000; every `block_id` and `action_id` unique in its message.
/// Lengths are counted in UTF-16 code units, which is never less than the characters Slack counts.
/// Every value from data is escaped for Slack (`ChatEscape.slack`) and sent `verbatim`, so nothing
/// in it can mention, link or be read as a channel name.
public enum SlackBlocks {
    /// Block Kit's documented limits.
    public enum Limit {
        public static let blocks = 50
        public static let text = 3000
        public static let header = 150
        public static let actionsElements = 25
        public static let contextElements = 10
        public static let buttonText = 75
        public static let value = 2000
        public static let url = 3000
        public static let altText = 2000
        public static let id = 255
    }

    /// The message's blocks.
    public static func blocks(_ n: AlertNotification) -> [[String: JSONValue]] {
        var out: [[String: JSONValue]] = []
        if n.isDigest {
            out.append(section(id: "digest", text: "*Held during quiet hours (\(n.alerts.count)):*"))
        }
        // A living message (a Slack app's, edited in place) ends with its timeline: room is kept for it.
        let living = n.living.flatMap { $0.timeline.isEmpty ? nil : $0 }
        var shown = 0
        for (i, a) in n.alerts.enumerated() {
            let group = alert(n, a, position: i)
            // Room is kept for the summary line unless this is the last alert.
            let room = Limit.blocks - (living == nil ? 0 : 1) - out.count - (i == n.alerts.count - 1 ? 0 : 1)
            guard group.count <= room else { break }
            out += group
            shown += 1
        }
        if shown < n.alerts.count { out.append(more(n, from: shown)) }
        if let living {
            out.append([
                "type": "context", "block_id": "timeline",
                "elements": [mrkdwn(ChatEscape.slack(living.text(limit: Limit.text - 200)) + " (UTC)")],
            ])
        }
        return out
    }

    /// One alert's blocks (five at most). `position` makes its ids unique in the message.
    static func alert(_ n: AlertNotification, _ a: NotifiedAlert, position i: Int) -> [[String: JSONValue]] {
        let e = ChatEscape.slack
        let t = a.transition
        let headline = e(WebhookPayloads.title(a))
        var blocks: [[String: JSONValue]] = [
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
            var image: [String: JSONValue] = [
                "type": "image", "block_id": "alert-\(i)-chart", "image_url": .string(chart),
                "alt_text": .string(
                    ChatText.clip(
                        e("Chart of \(WebhookPayloads.place(t)), \(MetricWords.name(t.metric)), the last 48 hours"),
                        Limit.altText)),
            ]
            // Late: the chart shows newer data than the message; its title says whose time is whose.
            if let caption = WebhookPayloads.chartCaption(a) { image["title"] = plain(caption, Limit.altText) }
            blocks.append(image)
        }
        var buttons: [JSONValue] = []
        if let link = n.link(a), link.utf16.count <= Limit.url {
            buttons.append([
                "type": "button", "action_id": "\(ChatAction.open).\(i)", "text": plain("Open", Limit.buttonText),
                "url": .string(link),
            ])
        }
        // What the alert is about (its gauge, city or station) and the rule's runbook: links too.
        for (k, link) in WebhookPayloads.links(n, a).enumerated() where link.url.utf16.count <= Limit.url {
            buttons.append([
                "type": "button", "action_id": "\(ChatAction.open).\(i).\(k)",
                "text": plain(link.label, Limit.buttonText), "url": .string(link.url),
            ])
        }
        // Ack and Silence only while the alert fires, and only for a logged one (a test message has id 0).
        if WebhookPayloads.ackHint(a) != nil {
            for action in ChatAction.buttons(for: a.transition) {
                var button: [String: JSONValue] = [
                    "type": "button", "action_id": .string(action.actionID(position: i)),
                    "text": plain(action.label, Limit.buttonText), "value": .string(String(a.id)),
                ]
                if action == .ack { button["style"] = "primary" }
                buttons.append(.object(button))
            }
        }
        if !buttons.isEmpty {
            blocks.append([
                "type": "actions", "block_id": "alert-\(i)-actions",
                "elements": .array(Array(buttons.prefix(Limit.actionsElements))),
            ])
        }
        return blocks
    }

    /// The last block when not every alert fits: how many more, their headlines as far as the text
    /// limit allows, and a button to the site's list of alerts (with `external_url`).
    static func more(_ n: AlertNotification, from shown: Int) -> [String: JSONValue] {
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
                    "url": .string(list),
                ]
            }
        }
        return block
    }

    /// A section of Slack-formatted text, cut to the limit.
    static func section(id: String, text: String) -> [String: JSONValue] {
        ["type": "section", "block_id": .string(id), "text": mrkdwn(text)]
    }

    /// A `mrkdwn` text object, cut to the limit and `verbatim`: Slack turns no bare URL, channel name
    /// or `@here` in it into a link or a mention.
    static func mrkdwn(_ text: String) -> JSONValue {
        ["type": "mrkdwn", "text": .string(ChatText.clip(text.isEmpty ? " " : text, Limit.text)), "verbatim": true]
    }

    /// A `plain_text` object cut to `limit`.
    static func plain(_ text: String, _ limit: Int) -> JSONValue {
        ["type": "plain_text", "text": .string(ChatText.clip(text, limit)), "emoji": true]
    }
}
