import Foundation
import KlaxonCore

/// The JSON bodies of the webhook presets. Pure: notification in, JSON object out, so previews
/// (`dry-run --render`) and sends use the same code and tests can check every field.
public enum WebhookPayloads {
    /// Colours by state and severity (resolved is green whatever the severity).
    public static func colour(_ t: Transition) -> String {
        if t.state == .resolved { return "#2eb886" }
        switch t.severity {
        case .critical: return "#d00000"
        case .warning: return "#f2a900"
        case .info: return "#439fe0"
        }
    }

    static let zeroTime = "0001-01-01T00:00:00Z"

    /// A headline for chat and mail in plain words, the place first:
    /// `🔴 Potomac River at Little Falls: moderate flood stage, up from minor`. A transition logged
    /// before headlines existed keeps the engine's form (`🔴 CRITICAL river-levels 01646500 changed
    /// minor→moderate`).
    public static func title(_ t: Transition) -> String {
        if let headline = t.headline { return "\(StdoutNotifier.mark(t)) \(place(t)): \(headline)" }
        return engineTitle(t)
    }

    /// What the place is called (`Potomac River at Little Falls`), or its id when nothing more is known.
    public static func place(_ t: Transition) -> String {
        guard let p = t.place, !p.isEmpty else { return t.station }
        return p
    }

    /// `🔴 CRITICAL river-levels 01646500 changed minor→moderate`: the rule, station and levels.
    public static func engineTitle(_ t: Transition) -> String {
        var s =
            "\(StdoutNotifier.mark(t)) \(t.severity.rawValue.uppercased()) \(t.rule) \(t.station) \(t.state.rawValue)"
        switch (t.fromLevel, t.level) {
        case (let f?, let l?): s += " \(f)→\(l)"
        case (nil, let l?): s += " \(l)"
        case (let f?, nil): s += " (was \(f))"
        default: break
        }
        return s
    }

    /// The endings a headline gives a change (`, up from minor`), dropped when the receiver heard of
    /// the alert at another level than the transition left.
    static let fromEndings = [", up from ", ", down from ", ", worse than ", ", better than "]

    /// `data as of 2026-01-01T00:15:00Z`.
    public static func dataTime(_ t: Transition) -> String { "data as of \(Timestamp.format(t.at))" }

    /// How to acknowledge an alert that is firing: `ack 123` (the chat command); nil for a resolved
    /// alert, one that was never logged (a test message), or an event's news (a quake, a trip: no
    /// firing alert stays behind it to ack or silence). Every preset offers its *Ack* and *Silence*
    /// buttons, and its `ack N` hint, only where this is not nil.
    public static func ackHint(_ a: NotifiedAlert) -> String? {
        a.transition.state == .resolved || a.id <= 0 || a.transition.isEvent ? nil : "ack \(a.id)"
    }

    /// `14.2 ft at 11:05 UTC on 2026-01-01`: the alert's value and the time it is from (without a
    /// value, `at 11:05 UTC on 2026-01-01`).
    public static func valueTime(_ t: Transition) -> String {
        let stamp = Timestamp.format(t.at)  // 2026-01-01T11:05:00Z
        let day = stamp.prefix(10)
        let clock = stamp.dropFirst(11).prefix(5)
        let when = "at \(clock) UTC on \(day)"
        guard let v = t.value else { return when }
        return formatValue(v) + (t.unit.map { " \($0)" } ?? "") + " " + when
    }

    /// What a late notification's chart (the last 48 hours up to now: newer data than the alert's)
    /// says under its picture, so the two do not seem to disagree: `The chart runs to now; the value
    /// above is from 11:05 UTC on 2026-01-01`. Nil when the alert is not late.
    public static func chartCaption(_ a: NotifiedAlert) -> String? {
        guard a.late else { return nil }
        let stamp = Timestamp.format(a.transition.at)
        return
            "The chart runs to now; the value above is from \(stamp.dropFirst(11).prefix(5)) UTC on \(stamp.prefix(10))"
    }

    /// `data as of 2026-01-01T00:15:00Z · firing since 2026-01-01T00:00:00Z · ack 123`. A late
    /// notification (its data older than the route's `notify_max_age` when it goes out: after
    /// retries, quiet hours, a catch-up) says so and the time its value is from, since what it tells
    /// (the value, its trend) is that old: `late: 14.2 ft at 11:05 UTC on 2026-01-01 (data as of …)`.
    public static func footer(_ a: NotifiedAlert) -> String {
        var s =
            a.late
            ? "late: \(valueTime(a.transition)) (\(dataTime(a.transition)))" : dataTime(a.transition)
        if a.transition.state != .resolved, a.startedAt != a.transition.at {
            s += " · firing since \(Timestamp.format(a.startedAt))"
        }
        return s + (ackHint(a).map { " · \($0)" } ?? "")
    }

    /// The headline of a notification: the state the receiver learns (`firing` for an episode it
    /// had not heard of, whatever came last) and the way it got there, for chat and mail:
    /// `🔴 CRITICAL river-levels 01646500 firing moderate (via action → minor)`.
    /// A reminder (`repeat_interval`) says so: `… moderate flood stage (still firing)`.
    public static func title(_ a: NotifiedAlert) -> String {
        let (shown, via) = a.presented
        let still = a.reminder && shown.state != .resolved
        guard var headline = shown.headline else {
            let notes = (via.isEmpty ? [] : ["via " + via.joined(separator: " → ")]) + (still ? ["still firing"] : [])
            return engineTitle(shown) + (notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")")
        }
        let t = a.transition
        var notes: [String] = []
        if shown.state != t.state || shown.fromLevel != t.fromLevel {
            // Presented otherwise than logged: the change is told from what this receiver heard.
            for ending in fromEndings {
                if let r = headline.range(of: ending, options: .backwards) {
                    headline = String(headline[..<r.lowerBound])
                }
            }
            if shown.state == .changed, let from = shown.fromLevel { notes.append("was \(from)") }
        }
        if !via.isEmpty { notes.append("via " + via.joined(separator: " → ")) }
        if still { notes.append("still firing") }
        var s = "\(StdoutNotifier.mark(shown)) \(place(shown)): \(headline)"
        if !notes.isEmpty { s += " (" + notes.joined(separator: ", ") + ")" }
        return s
    }

    /// One alert's labels (`AlertIdentity.labels`) and annotations (`annotationPairs`) in the generic payload.
    /// `klaxon test` compares them with a test's `exp_labels` and `exp_annotations`.
    package static func genericParts(_ a: NotifiedAlert) -> (labels: [String: String], annotations: [String: String]) {
        let labels = Dictionary(
            AlertIdentity.labels(a.transition).map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        let annotations = Dictionary(
            annotationPairs(a, dataTime: Timestamp.format(a.transition.at)).map { ($0.key, $0.value) },
            uniquingKeysWith: { a, _ in a })
        return (labels, annotations)
    }

    /// The alert's `generatorURL`: its page on the status site, or "" without `external_url`.
    static func generatorURL(_ n: AlertNotification, _ a: NotifiedAlert) -> String { n.link(a) ?? "" }

    /// Alertmanager webhook payload, version 4, so any Alertmanager consumer accepts Klaxon's: the
    /// same fields and types as Alertmanager 0.25 sends, and 0.32's `notification_reason`
    /// (`NotificationReason`). An alert's labels and `fingerprint` are
    /// the same from its firing to its resolve; `startsAt` is when its episode began. Written
    /// straight from the typed values into bytes (keys sorted): no dictionaries to build, hash and
    /// sort (labels and annotations are short lists of pairs, sorted once). Every webhook of the
    /// generic preset is one of these, so it is on the delivery hot path.
    public static func genericText(_ n: AlertNotification, groupBy: [String]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(700 * n.alerts.count + 300)
        func raw(_ s: StaticString) {
            s.withUTF8Buffer { out.append(contentsOf: $0) }
        }
        func string(_ s: String) { Escape.json.write(s, into: &out) }
        func object(_ pairs: [(key: String, value: String)]) {
            out.append(UInt8(ascii: "{"))
            for (i, p) in pairs.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(p.key)
                out.append(UInt8(ascii: ":"))
                string(p.value)
            }
            out.append(UInt8(ascii: "}"))
        }
        var labelSets: [[(key: String, value: String)]] = []
        var annotationSets: [[(key: String, value: String)]] = []
        labelSets.reserveCapacity(n.alerts.count)
        annotationSets.reserveCapacity(n.alerts.count)
        raw("{\"alerts\":[")
        for (i, a) in n.alerts.enumerated() {
            let t = a.transition
            let labels = AlertIdentity.labels(t)
            let at = Timestamp.format(t.at)
            let annotations = annotationPairs(a, dataTime: at)
            let resolved = t.state == .resolved
            if i > 0 { out.append(UInt8(ascii: ",")) }
            raw("{\"annotations\":")
            object(annotations)
            raw(",\"endsAt\":")
            string(resolved ? at : zeroTime)
            raw(",\"fingerprint\":")
            string(AlertIdentity.fingerprint(t))
            raw(",\"generatorURL\":")
            string(generatorURL(n, a))
            raw(",\"labels\":")
            object(labels)
            raw(",\"startsAt\":")
            string(a.startedAt == t.at ? at : Timestamp.format(a.startedAt))
            raw(resolved ? ",\"status\":\"resolved\"}" : ",\"status\":\"firing\"}")
            labelSets.append(labels)
            annotationSets.append(annotations)
        }
        let groupLabels = n.groupLabels(groupBy)
        raw("],\"commonAnnotations\":")
        object(commonPairs(annotationSets))
        raw(",\"commonLabels\":")
        object(commonPairs(labelSets))
        raw(",\"externalURL\":")
        string(AlertNotification.trimmed(n.externalURL))
        raw(",\"groupKey\":")
        string(n.groupKey(labels: groupLabels))
        raw(",\"groupLabels\":")
        object(groupLabels)
        raw(",\"notification_reason\":")
        string(n.reason.rawValue)
        raw(",\"receiver\":")
        string(n.receiver)
        raw(",\"status\":")
        string(n.status)
        raw(",\"truncatedAlerts\":0,\"version\":\"4\"}")
        return String(decoding: out, as: UTF8.self)
    }

    /// `AlertIdentity.annotations` of a notified alert: its id, message, lateness and the path it
    /// took since the receiver last heard of it.
    package static func annotationPairs(_ a: NotifiedAlert, dataTime: String) -> [(key: String, value: String)] {
        AlertIdentity.annotations(
            a.transition, id: a.id, summary: a.message, dataTime: dataTime, late: a.late,
            route: a.path.isEmpty ? [] : a.route)
    }

    /// The links a message offers besides the alert's page, as (label, URL): what the alert is about
    /// (`River gauge`, `Air quality`, …) and the rule's runbook.
    public static func links(_ n: AlertNotification, _ a: NotifiedAlert) -> [(label: String, url: String)] {
        var out: [(label: String, url: String)] = []
        if let url = n.subjectLink(a) {
            out.append((subjectLabel(SubjectPage.of(metric: a.transition.metric)), url))
        }
        if let url = runbook(a) { out.append(("Runbook", url)) }
        return out
    }

    /// The rule's `runbook_url` for the alert, when it is a safe link.
    public static func runbook(_ a: NotifiedAlert) -> String? {
        a.transition.annotations["runbook_url"].flatMap { MessageRenderer.isLink($0) ? $0 : nil }
    }

    static func subjectLabel(_ page: SubjectPage) -> String {
        switch page {
        case .gauge: return "River gauge"
        case .air: return "Air quality"
        case .quakes: return "Earthquakes"
        case .trip: return "Trip"
        case .station: return "Station"
        }
    }

    /// The pairs every set holds with the same value (`common` on sorted pairs).
    static func commonPairs(_ sets: [[(key: String, value: String)]]) -> [(key: String, value: String)] {
        guard let first = sets.first else { return [] }
        guard sets.count > 1 else { return first }
        let others = sets.dropFirst().map { Dictionary($0.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a }) }
        return first.filter { p in others.allSatisfy { $0[p.key] == p.value } }
    }

    /// The plain text of a notification: one line per alert with its message.
    public static func plainText(_ n: AlertNotification) -> String { plainText(n, escape: { $0 }) }

    /// `plainText(n)` with each value from data passed through `e` (a chat platform's escaping).
    static func plainText(_ n: AlertNotification, escape e: (String) -> String) -> String {
        var lines: [String] = []
        if n.isDigest { lines.append("Held during quiet hours (\(n.alerts.count)):") }
        for a in n.alerts { lines.append("\(e(title(a))): \(e(a.message))") }
        return lines.joined(separator: "\n")
    }

    /// Slack incoming webhook: Block Kit `blocks` (headline, message and why, times, chart, and the
    /// Open, Ack and Silence 1h buttons: `SlackBlocks`), `text` (what notifications show), and one
    /// attachment per alert with its `color` and a plain `fallback`. Slack shows top-level blocks
    /// and then attachments, so the attachments' displayed fields (`title`, `text`, `fields`,
    /// `footer`, `ts`) are not sent to Slack: the blocks say all of it once. Values from data are
    /// escaped for Slack (`&amp;`, `&lt;`, `&gt;`): see `ChatEscape`.
    public static func slack(_ n: AlertNotification) -> [String: JSONValue] {
        let e = ChatEscape.slack
        return [
            "text": .string(plainText(n, escape: e) + livingLine(n, escape: e)),
            "blocks": .array(SlackBlocks.blocks(n).map(JSONValue.object)),
            "attachments": .array(
                n.alerts.map { a -> JSONValue in
                    ["color": .string(colour(a.transition)), "fallback": "\(e(title(a))): \(e(a.message))"]
                }),
        ]
    }

    /// A living message's timeline as a last line of its text (`⏎firing at action 14:00 · … (UTC)`),
    /// "" for any other message.
    static func livingLine(_ n: AlertNotification, escape e: (String) -> String) -> String {
        guard let living = n.living, !living.timeline.isEmpty else { return "" }
        return "\n" + e(living.text()) + " (UTC)"
    }

    /// Slack's attachment format, with values from data passed through `e`.
    static func attachments(_ n: AlertNotification, escape e: (String) -> String) -> [String: JSONValue] {
        [
            "text": .string(plainText(n, escape: e)),
            "attachments": .array(
                n.alerts.map { a -> JSONValue in
                    var attachment: [String: JSONValue] = [
                        "color": .string(colour(a.transition)), "title": .string(e(title(a))),
                        "text": .string(e(a.message)),
                        "fields": [["title": "Why", "value": .string(e(a.transition.explanation)), "short": false]],
                        "footer": .string(e(footer(a))), "ts": JSONValue(a.transition.at),
                    ]
                    // The title opens the alert's page (`external_url`: a checked URL and a number, not data).
                    if let link = n.link(a) { attachment["title_link"] = .string(link) }
                    return .object(attachment)
                }),
        ]
    }

    /// Mattermost accepts Slack's attachment format (it does not show Block Kit); its escaping also
    /// defuses `@channel` and Markdown links (see `ChatEscape.mattermost`). Links to what an alert is
    /// about and its runbook are a `Links` field. With `external_url` and
    /// a signer (`chat.mattermost`), a firing alert's attachment carries Ack and Silence 1h message
    /// buttons, which Mattermost posts back to `EXTERNAL_URL/chat/mattermost/actions` with their
    /// signed context.
    public static func mattermost(_ n: AlertNotification) -> [String: JSONValue] {
        var p = attachments(n, escape: ChatEscape.mattermost)
        p["username"] = "Klaxon"
        if let text = p["text"]?.string { p["text"] = .string(text + livingLine(n, escape: ChatEscape.mattermost)) }
        guard var list = p["attachments"]?.array?.compactMap(\.object), list.count == n.alerts.count else { return p }
        // What the alert is about and its runbook, as Markdown links (labels Klaxon's, URLs checked and
        // encoded: data in a runbook URL cannot close the link and open its own).
        for (i, a) in n.alerts.enumerated() {
            let links = links(n, a)
            guard !links.isEmpty, var fields = list[i]["fields"]?.array else { continue }
            fields.append([
                "title": "Links",
                "value": .string(
                    links.map { ChatEscape.markdownLink($0.label, $0.url, escape: ChatEscape.mattermost) }
                        .joined(separator: " · ")),
                "short": false,
            ])
            list[i]["fields"] = .array(fields)
        }
        p["attachments"] = .array(list.map(JSONValue.object))
        guard let signer = n.chatActions, !n.externalURL.isEmpty else { return p }
        let url = AlertNotification.trimmed(n.externalURL) + "/chat/mattermost/actions"
        for (i, a) in n.alerts.enumerated() where ackHint(a) != nil {
            list[i]["actions"] = .array(
                ChatAction.buttons(for: a.transition).map { action -> JSONValue in
                    [
                        "id": "\(action.buttonName)\(i)", "type": "button",
                        "name": .string(action.label), "style": action == .ack ? "primary" : "default",
                        "integration": [
                            "url": .string(url),
                            "context": .object(signer.context(action, a.id).mapValues(JSONValue.string)),
                        ],
                    ]
                })
        }
        p["attachments"] = .array(list.map(JSONValue.object))
        return p
    }

    static let discordLimit = 2000

    /// Discord's documented limits on embeds: 10 per message, and per embed a title of 256, a
    /// description of 4,096, a field value of 1,024 and a footer of 2,048 characters; all embeds'
    /// text together at most 6,000.
    static let discordEmbeds = 10
    static let discordEmbedTotal = 6000

    /// Discord: `content` within 2000 characters (truncated with "…"), plus an embed per alert (at most 10).
    /// `content` holds the headlines; the message is in the embed, so it is not shown twice (an alert
    /// past the tenth, which has no embed, keeps its message in `content`). The embeds share Discord's
    /// 6,000-character budget: descriptions are shortened so that the total stays within it.
    /// `allowed_mentions: {parse: []}`: nothing in a message can ping anyone.
    public static func discord(_ n: AlertNotification) -> [String: JSONValue] {
        let e = ChatEscape.discord
        var lines: [String] = []
        if n.isDigest { lines.append("Held during quiet hours (\(n.alerts.count)):") }
        for (i, a) in n.alerts.enumerated() {
            lines.append(i < discordEmbeds ? e(title(a)) : "\(e(title(a))): \(e(a.message))")
        }
        if let living = n.living, !living.timeline.isEmpty { lines.append(e(living.text()) + " (UTC)") }
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
        let fixedSize = fixed.reduce(0) { $0 + $1.title.count + $1.footer.count + ($1.links.map { $0.count + 5 } ?? 0) }
        let share = shown.isEmpty ? 0 : max(40, (discordEmbedTotal - fixedSize) / shown.count)
        return [
            "content": .string(truncate(lines.joined(separator: "\n"), to: discordLimit)),
            "embeds": .array(
                zip(shown, fixed).map { a, f -> JSONValue in
                    var embed: [String: JSONValue] = [
                        "title": .string(f.title),
                        "description": .string(
                            truncate(
                                "\(e(a.message))\n\nWhy: \(e(a.transition.explanation))", to: min(4096, share))),
                        "color": JSONValue(Int(colour(a.transition).dropFirst(), radix: 16) ?? 0),
                        "timestamp": .string(Timestamp.format(a.transition.at)), "footer": ["text": .string(f.footer)],
                    ]
                    if let link = n.link(a) { embed["url"] = .string(link) }
                    // Markdown links in an embed field; the URLs are checked and encoded, the labels are Klaxon's.
                    if let links = f.links {
                        embed["fields"] = [["name": "Links", "value": .string(links), "inline": false]]
                    }
                    return .object(embed)
                }),
            "allowed_mentions": discordAllowedMentions,
        ]
    }

    /// `{"parse": []}`: Discord parses no mention of users, roles, `@everyone` or `@here`.
    static var discordAllowedMentions: JSONValue { ["parse": []] }

    /// The most alerts one Teams card lists: a Teams message is at most 28 KB.
    static let teamsAlerts = 20

    /// Microsoft Teams (Workflows webhook): a message carrying an Adaptive Card (version 1.4, which
    /// Teams renders), at most `teamsAlerts` alerts and 5 buttons.
    public static func msteams(_ n: AlertNotification) -> [String: JSONValue] {
        let e = ChatEscape.msteams
        var body: [JSONValue] = []
        for a in n.alerts.prefix(teamsAlerts) {
            let t = a.transition
            let colour = t.state == .resolved ? "Good" : (t.severity == .critical ? "Attention" : "Warning")
            body.append([
                "type": "TextBlock", "text": .string(e(title(a))), "weight": "Bolder", "size": "Medium",
                "color": .string(colour), "wrap": true,
            ])
            body.append(["type": "TextBlock", "text": .string(e(a.message)), "wrap": true])
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
            body.append([
                "type": "FactSet", "facts": .array(facts.map { JSONValue.object($0.mapValues(JSONValue.string)) }),
            ])
            // The chart, for a single alert, when Teams can fetch it (see `publicChartLink`).
            if n.alerts.count == 1, let chart = n.publicChartLink(a) {
                if let caption = chartCaption(a) {
                    body.append(["type": "TextBlock", "text": .string(e(caption)), "wrap": true, "isSubtle": true])
                }
                body.append([
                    "type": "Image", "url": .string(chart), "size": "Stretch",
                    "altText": .string(e("Chart of \(place(t)), \(MetricWords.name(t.metric)), the last 48 hours")),
                ])
            }
        }
        if n.alerts.count > teamsAlerts {
            body.append([
                "type": "TextBlock", "wrap": true, "isSubtle": true,
                "text": .string(
                    "…and \(n.alerts.count - teamsAlerts) more"
                        + (n.externalURL.isEmpty ? "" : ": \(AlertNotification.trimmed(n.externalURL))/alerts")),
            ])
        }
        var card: [String: JSONValue] = [
            "$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
            "body": .array(body),
        ]
        // Buttons that open the alert's page (one per alert), and for a single alert what it is
        // about and its runbook: at most 5, as Teams shows them.
        var actions: [JSONValue] = n.alerts.compactMap { a in
            n.link(a).map { link -> JSONValue in
                [
                    "type": "Action.OpenUrl", "url": .string(link),
                    "title": .string(
                        n.alerts.count == 1
                            ? "Open alert #\(a.id)" : "Open #\(a.id) \(e(truncate(place(a.transition), to: 40)))"),
                ]
            }
        }
        if n.alerts.count == 1, let a = n.alerts.first {
            for l in links(n, a) {
                actions.append(["type": "Action.OpenUrl", "url": .string(l.url), "title": .string(l.label)])
            }
        }
        if !actions.isEmpty { card["actions"] = .array(Array(actions.prefix(5))) }
        return [
            "type": "message",
            "attachments": [
                [
                    "contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": .null,
                    "content": .object(card),
                ]
            ],
        ]
    }

    /// Google Chat's limit on a message's text (4,096 characters).
    static let googleChatLimit = 4096

    /// Google Chat: `text` with the explanation and data time of each alert, and its links.
    public static func googlechat(_ n: AlertNotification) -> [String: JSONValue] {
        let e = ChatEscape.googlechat
        var lines: [String] = []
        if n.isDigest { lines.append("*Held during quiet hours (\(n.alerts.count))*") }
        for a in n.alerts {
            lines.append(
                "*\(e(title(a)))*\n\(e(a.message))\n_Why: \(e(a.transition.explanation)); \(e(footer(a)))_"
                    + linkLine(n, a))
        }
        return ["text": .string(truncate(lines.joined(separator: "\n\n"), to: googleChatLimit))]
    }

    /// `\n<URL|Open alert #12> · <URL|River gauge> · <URL|Runbook>`: Google Chat's link syntax (the
    /// URLs are checked and encoded: no `|`, `>` or spaces can end them early).
    static func linkLine(_ n: AlertNotification, _ a: NotifiedAlert) -> String {
        var parts: [String] = []
        let e = ChatEscape.googlechat
        if let link = n.link(a) { parts.append(ChatEscape.angleLink(link, "Open alert #\(a.id)", escape: e)) }
        for l in links(n, a) { parts.append(ChatEscape.angleLink(l.url, l.label, escape: e)) }
        return parts.isEmpty ? "" : "\n" + parts.joined(separator: " · ")
    }

    /// Shortens to at most `limit` characters, ending with "…" when cut.
    public static func truncate(_ s: String, to limit: Int) -> String {
        guard s.count > limit else { return s }
        return String(s.prefix(limit - 1)) + "…"
    }

    /// What a custom `template` sees: the notification and each alert's fields.
    public static func templateContext(_ n: AlertNotification) -> [String: Any] {
        [
            "receiver": n.receiver, "status": n.status, "digest": n.isDigest, "key": n.key,
            // Alertmanager's `.NotificationReason`, and one boolean for it (mustache cannot compare
            // strings): `{{#reason.repeat_interval_elapsed}}still firing{{/reason.repeat_interval_elapsed}}`.
            "notification_reason": n.reason.rawValue, "reason": [n.reason.name: true],
            "alerts": n.alerts.map { a -> [String: Any] in
                var c = MessageRenderer.context(a.transition)
                c["message"] = a.message
                c["title"] = title(a)
                c["alert_id"] = a.id
                c["starts_at"] = Timestamp.format(a.startedAt)
                c["path"] = a.route.count > 1 ? a.route.joined(separator: " → ") : ""
                c["late"] = a.late
                if let link = n.link(a) { c["url"] = link }
                if let link = n.subjectLink(a) { c["page_url"] = link }
                if let link = n.chartLink(a) { c["chart_url"] = link }
                if let runbook = runbook(a) { c["runbook_url"] = runbook }
                c["annotations"] = a.transition.annotations
                return c
            },
        ]
    }

    /// A preset's body: keys sorted, numbers and strings as `JSONText` writes them.
    public static func encode(_ object: [String: JSONValue]) -> Data {
        Data(JSONText.encode(.object(object)).utf8)
    }
}
