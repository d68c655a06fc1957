import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import KlaxonTesting
import Testing

/// What a message says, in every preset (issue 39, item 7): no *Ack* or *Silence* offered for an
/// event's news (a quake, a trip), which has no firing alert behind it to act on; a late message
/// says the time its value is from; the trend it tells agrees with the change.
@Suite struct MessageContentTests {
    static let base = "https://klaxon.example.org"

    /// Every way a message goes out: each webhook preset, and email (its text and HTML parts).
    static let presets: [String] = Receiver.Webhook.Preset.allCases.map(\.rawValue) + ["email"]

    /// What receiver `preset` gets for `n`, as one string: a webhook's body (its JSON strings with
    /// the chat escaping's word joiners taken out), or an email's headers and decoded parts.
    static func rendered(_ preset: String, _ n: AlertNotification) throws -> (text: String, json: [String: Any]?) {
        guard let p = Receiver.Webhook.Preset(rawValue: preset) else {
            let mail = try EmailNotifier(
                config: Receiver.Email(
                    name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "klaxon@example.org", to: ["ops@example.org"]),
                clock: { 1_770_000_000 })
            return (decodedEmail(try mail.render(n)), nil)
        }
        let notifier = try WebhookNotifier(
            config: .init(name: "r", url: Secret("http://127.0.0.1:1/x"), preset: p))
        let body = try notifier.render(n)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let text = strings(json).joined(separator: "\n").replacingOccurrences(of: "\u{2060}", with: "")
        return (text, json)
    }

    /// An email's headers, then each base64 part decoded.
    static func decodedEmail(_ source: String) -> String {
        var out: [String] = []
        var block: [Substring] = []
        var inBase64 = false
        var afterHeader = false
        for line in source.split(separator: "\r\n", omittingEmptySubsequences: false)
            .flatMap({ $0.split(separator: "\n", omittingEmptySubsequences: false) })
        {
            if line.hasPrefix("Content-Transfer-Encoding: base64") {
                inBase64 = true
                afterHeader = false
                continue
            }
            if inBase64 && !afterHeader {
                if line.isEmpty { afterHeader = true }
                continue
            }
            if inBase64 {
                if line.hasPrefix("--") || line.isEmpty {
                    let data = Data(base64Encoded: block.joined()) ?? Data()
                    out.append(String(decoding: data, as: UTF8.self))
                    block = []
                    inBase64 = false
                } else {
                    block.append(line)
                }
                continue
            }
            out.append(String(line))
        }
        return out.joined(separator: "\n")
    }

    static func strings(_ value: Any) -> [String] {
        switch value {
        case let s as String: return [s]
        case let d as [String: Any]: return d.keys.sorted().flatMap { strings(d[$0]!) }
        case let a as [Any]: return a.flatMap(strings)
        default: return []
        }
    }

    /// What in a rendered payload offers to ack or silence: Slack's `ack.N`/`silence_1h.N` buttons,
    /// Mattermost's actions, Teams' *Acknowledge* fact, any `ack 21` hint.
    static func actionsOffered(_ r: (text: String, json: [String: Any]?), id: Int64) -> [String] {
        var found: [String] = []
        if r.text.contains("ack \(id)") { found.append("the hint ack \(id)") }
        if r.text.contains("Acknowledge") { found.append("an Acknowledge fact") }
        if let json = r.json {
            for (i, b) in (json["blocks"] as? [[String: Any]] ?? []).enumerated() {
                for e in b["elements"] as? [[String: Any]] ?? [] {
                    if let action = e["action_id"] as? String, ChatAction.named(actionID: action) != nil {
                        found.append("Slack block \(i) button \(action)")
                    }
                }
            }
            for a in json["attachments"] as? [[String: Any]] ?? [] where a["actions"] != nil {
                found.append("Mattermost actions")
            }
        }
        return found
    }

    static func notification(_ a: NotifiedAlert) -> AlertNotification {
        let signer = ChatActionSigner { action, episode in
            MattermostActions.context(
                action, episode: episode, key: MattermostActions.key(token: "mm-token"), now: 1_770_000_000)
        }
        return AlertNotification(key: "k", receiver: "r", alerts: [a], externalURL: base, chatActions: signer)
    }

    static let quake = Transition(
        rule: "big-quakes", kind: QuakeRule.kindName, station: "us7000abcd", metric: "quake", state: .firing,
        at: Timestamp.parse("2026-03-01T06:15:00Z")!, value: 6.1, severity: .critical,
        summary: "M6.1 — 130 km E of Tokyo", explanation: "magnitude 6.1 ≥ 6", place: "130 km E of Tokyo",
        headline: "M6.1 earthquake")

    static let trip = Transition(
        rule: "trips", kind: TripPackingRule.kindName, station: "alice/hike", metric: "packing", state: .firing,
        at: Timestamp.parse("2026-03-01T06:15:00Z")!, value: nil, severity: .info,
        summary: "Pack a rain jacket for Saturday", explanation: "rain 80% on Saturday", place: "hike",
        headline: "packing list")

    @Test(
        "quake and trip messages offer no Ack or Silence in any preset (no button may answer an error); a river's does",
        arguments: presets)
    func noActionsForEvents(preset: String) throws {
        for t in [Self.quake, Self.trip] {
            var revised = t
            revised.state = .changed
            for event in [t, revised] {
                let r = try Self.rendered(
                    preset, Self.notification(NotifiedAlert(transition: event, message: event.summary, id: 21)))
                #expect(Self.actionsOffered(r, id: 21) == [], "\(preset) \(event.kind) \(event.state)")
                if let json = r.json, preset == "slack" { #expect(ChatPayloadShape.slackProblems(json) == []) }
                if let json = r.json, preset == "mattermost" {
                    #expect(ChatPayloadShape.mattermostProblems(json) == [])
                }
            }
        }
        // A series alert still offers them where the preset has them (the hint is in every preset
        // but the generic webhook, whose consumers read labels).
        let river = transition(station: "S0")
        let r = try Self.rendered(
            preset, Self.notification(NotifiedAlert(transition: river, message: river.summary, id: 22)))
        #expect(preset == "generic" || !Self.actionsOffered(r, id: 22).isEmpty, "\(preset)")
    }

    @Test(
        "a late message says, in every preset, the time its value is from; its chart says it runs to now",
        arguments: presets)
    func lateSaysWhenItsValueIsFrom(preset: String) throws {
        let t = transition(station: "S0", value: 14.2, at: "2026-03-01T11:05:00Z")
        let late = try Self.rendered(
            preset, Self.notification(NotifiedAlert(transition: t, message: t.summary, id: 7, late: true)))
        if preset == "generic" {
            // Labels and annotations: `late`, `value` and `data_time` say it field by field.
            #expect(late.text.contains("2026-03-01T11:05:00Z") && late.text.contains("14.2"))
            let alert = try #require((late.json?["alerts"] as? [[String: Any]])?.first)
            #expect((alert["annotations"] as? [String: String])?["late"] == "true")
        } else {
            #expect(late.text.contains("14.2 ft at 11:05 UTC on 2026-03-01"), "\(preset): \(late.text)")
        }
        if preset == "slack" {
            let json = try #require(late.json)
            #expect(ChatPayloadShape.slackProblems(json) == [])
            let image = try #require((json["blocks"] as? [[String: Any]])?.first { $0["type"] as? String == "image" })
            let title = (image["title"] as? [String: Any])?["text"] as? String
            #expect(title == "The chart runs to now; the value above is from 11:05 UTC on 2026-03-01")
        }
        if preset == "msteams" {
            #expect(late.text.contains("The chart runs to now; the value above is from 11:05 UTC on 2026-03-01"))
        }
        // On time: no such words (the data time is there as before).
        let onTime = try Self.rendered(
            preset, Self.notification(NotifiedAlert(transition: t, message: t.summary, id: 7)))
        #expect(!onTime.text.contains("at 11:05 UTC on") && !onTime.text.contains("The chart runs to now"))
    }

    @Test("the trend a flood message tells agrees with its change, in every preset", arguments: presets)
    func trendAgreesWithTheChange(preset: String) throws {
        let info = StationInfo(id: "G1", name: "Willamette R at Portland, OR", usgsID: "G1", nwsLID: "PRTO3")
        let engine = RuleEngine(
            rules: [
                Rule(name: "flood", kind: LevelsRule(metric: "gage_height", levels: [], nws: true))
            ],
            stations: ["G1": info],
            floods: ["G1": FloodCategories(stage: ["action": 17, "minor": 18, "moderate": 24, "major": 28])])
        var s = try #require(engine.session(for: SeriesKey(station: "G1", metric: "gage_height"), unit: "ft"))
        var out: [Transition] = []
        let t0 = Timestamp.parse("2026-03-01T06:00:00Z")!
        // Minor, a peak at moderate an hour later, then minor again: over three hours the river is
        // higher than it was, over the last hour it fell.
        for (i, v) in [20, 25, 23.9].enumerated() {
            _ = engine.step(&s, time: t0 + Int64(i) * 3_600, value: v, into: &out)
        }
        let fell = try #require(out.last)
        #expect(fell.state == .changed && fell.fromLevel == "moderate" && fell.level == "minor")
        let r = try Self.rendered(
            preset, Self.notification(NotifiedAlert(transition: fell, message: fell.summary, id: 9)))
        #expect(r.text.contains("fell from moderate flood stage to minor flood stage"), "\(preset): \(r.text)")
        #expect(!r.text.contains("rising"), "\(preset): \(r.text)")
        #expect(r.text.contains("falling 1.1 ft/h over 1 h"), "\(preset)")
    }
}
