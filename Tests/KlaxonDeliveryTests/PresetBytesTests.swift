import Foundation
import KlaxonCore
import Testing

@testable import KlaxonDelivery

/// The presets built as typed JSON values (`JSONValue`) send the same bytes as the `[String: Any]`
/// builders they replace (`WebhookPayloads.Reference`): field names, key order, numbers, escaping of
/// `/`, quotes, controls and non-ASCII text, over hostile data, digests, limits and buttons.
@Suite struct PresetBytesTests {
    static let hostile = [
        "plain", "quote \" backslash \\ slash / </script>", "tab\tnewline\nreturn\r bell\u{7} nul\u{0} del\u{7F}",
        "line sep \u{2028} para \u{2029} é ☔ 🌊 Ω", "<@U024BE7LH> <!channel> @here &amp; *bold* [x](http://e/)",
        "", String(repeating: "long ✳ ", count: 700),
    ]

    /// A signer whose contexts are the same on every call (the real one draws a nonce).
    static let signer = ChatActionSigner { action, episode in
        ["action": action.rawValue, "episode": String(episode), "issued": "1767225600", "nonce": "n/\u{2028}\""]
    }

    static func alert(_ i: Int, _ text: String) -> NotifiedAlert {
        let states: [TransitionState] = [.firing, .changed, .resolved]
        let state = states[i % 3]
        var t = Transition(
            rule: "rule-\(i) \(text.prefix(40))", kind: "levels", station: i % 2 == 0 ? "S\(i)" : text,
            metric: i % 4 == 0 ? "gage_height" : "pm25", state: state, level: state == .resolved ? nil : "minor",
            fromLevel: state == .changed ? "action" : nil, at: 1_772_345_700 + Int64(i),
            value: i % 5 == 0 ? nil : [12.4, 0.1, 1e20, -3, 123_456_789.125][i % 5], unit: i % 3 == 0 ? nil : "ft",
            severity: i % 2 == 0 ? .critical : .warning, labels: ["team": text, "Zone": "a/b", "_x": "1"],
            summary: "summary \(text)", explanation: "why \(text)", place: i % 2 == 0 ? text : nil,
            annotations: i % 3 == 1 ? ["runbook_url": "https://runbooks.example/\(i)?q=a b"] : [:],
            headline: i % 4 == 1 ? "headline \(text)" : nil)
        if i % 6 == 5 { t.labels = [:] }
        return NotifiedAlert(
            transition: t, message: "message \(text)", id: Int64(i + 1), startedAt: 1_772_340_000, late: i % 7 == 3)
    }

    static var notifications: [AlertNotification] {
        var out: [AlertNotification] = []
        for (k, text) in hostile.enumerated() {
            for count in [1, 2, 3] {
                let alerts = (0..<count).map { alert(k * 3 + $0, text) }
                for url in ["", "https://klaxon.example.org/base/"] {
                    out.append(
                        AlertNotification(
                            key: "k\(k)", receiver: "r \(text.prefix(20))", alerts: alerts, isDigest: count == 3,
                            externalURL: url, chatActions: k % 2 == 0 ? signer : nil))
                }
            }
        }
        // Past every limit: Slack's 50 blocks, Discord's 10 embeds, Teams' 20 alerts.
        let many = (0..<60).map { alert($0, hostile[$0 % hostile.count]) }
        out.append(
            AlertNotification(
                key: "many", receiver: "r", alerts: many, isDigest: true, externalURL: "https://k.example",
                chatActions: signer))
        out.append(AlertNotification(key: "none", receiver: "r", alerts: []))
        return out
    }

    @Test("Slack, Mattermost, Discord, Teams and Google Chat bodies: the same bytes as before")
    func presetsAsBefore() {
        typealias R = WebhookPayloads.Reference
        for n in Self.notifications {
            let pairs: [(String, Data, Data)] = [
                ("slack", WebhookPayloads.encode(WebhookPayloads.slack(n)), R.encode(R.slack(n))),
                ("mattermost", WebhookPayloads.encode(WebhookPayloads.mattermost(n)), R.encode(R.mattermost(n))),
                ("discord", WebhookPayloads.encode(WebhookPayloads.discord(n)), R.encode(R.discord(n))),
                ("msteams", WebhookPayloads.encode(WebhookPayloads.msteams(n)), R.encode(R.msteams(n))),
                ("googlechat", WebhookPayloads.encode(WebhookPayloads.googlechat(n)), R.encode(R.googlechat(n))),
                (
                    "generic", Data(WebhookPayloads.genericText(n, groupBy: ["rule", "Zone"]).utf8),
                    R.encode(R.generic(n, groupBy: ["rule", "Zone"]))
                ),
            ]
            for (name, new, old) in pairs {
                #expect(
                    String(decoding: new, as: UTF8.self) == String(decoding: old, as: UTF8.self),
                    "\(name), notification \(n.key) of \(n.alerts.count) alerts, external_url '\(n.externalURL)'")
            }
        }
    }

    @Test("numbers in a body: whole ones without a fraction, others in Swift's shortest form")
    func numbers() {
        let value: JSONValue = [
            "ts": JSONValue(Int64(1_772_345_700)), "color": JSONValue(0xFF8C00), "half": .number(0.5),
            "big": .number(1e20), "tiny": .number(1e-7), "negative": -3, "fraction": .number(123_456_789.125),
        ]
        #expect(
            JSONText.encode(value)
                == #"{"big":1e+20,"color":16747520,"fraction":123456789.125,"half":0.5,"negative":-3,"tiny":1e-07,"#
                + #""ts":1772345700}"#)
    }
}
