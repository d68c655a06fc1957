import Foundation
import KlaxonCore
import KlaxonDelivery
import Testing

/// `StdoutNotifier.jsonLine` writes its bytes into one buffer (issue 44); every line must read exactly
/// as the string-built form did: keys, order, escaping, nulls, the levels-only keys and the extras.
@Suite struct StdoutJSONLineTests {
    /// The string-built form, as it was.
    static func reference(_ t: Transition, message: String, explain: Bool, details: Bool) -> String {
        var o = "{\"rule\":\(JSONText.string(t.rule)),\"station\":\(JSONText.string(t.station))"
        o += ",\"metric\":\(JSONText.string(t.metric)),\"state\":\"\(t.state.rawValue)\""
        if t.kind == LevelsRule.kindName {
            o += ",\"level\":\(t.level.map(JSONText.string) ?? "null")"
            o += ",\"from_level\":\(t.fromLevel.map(JSONText.string) ?? "null")"
        }
        o += ",\"at\":\"\(Timestamp.format(t.at))\",\"value\":\(t.value.map(JSONText.number) ?? "null")"
        o += ",\"message\":\(JSONText.string(message))"
        if details {
            o += ",\"severity\":\"\(t.severity.rawValue)\""
            if let u = t.unit { o += ",\"unit\":\(JSONText.string(u))" }
        }
        if explain {
            o += ",\"explanation\":\(JSONText.string(t.explanation))"
            if !t.details.isEmpty { o += ",\"details\":\(JSONText.string(t.details))" }
        }
        return o + "}"
    }

    static let transitions: [Transition] = [
        Transition(
            rule: "flapping", kind: "threshold", station: "F001", metric: "gage_height", state: .firing,
            at: 1_735_689_600,
            value: 10.25, severity: .info, summary: "gage_height at F001 is 10.25, at or above 10",
            explanation: "10.25 is at or above 10", details: "gage_height 10.25 ≥ 10 (above)"),
        Transition(
            rule: "flood \"stages\"", kind: "levels", station: "0164\u{1B}6500", metric: "gage_height",
            state: .changed, level: "moderate", fromLevel: "minor", at: -62_135_596_800, value: -0.001, unit: "ft",
            severity: .critical, summary: "s", explanation: "line\nbreak and \u{2028} and tab\t", details: ""),
        Transition(
            rule: "quiet", kind: "levels", station: "Zürich", metric: "pm25", state: .firing, level: nil,
            fromLevel: nil, at: 253_402_300_800, value: nil, unit: "µg/m³", severity: .warning, summary: "",
            explanation: "", details: "back\\slash"),
        Transition(
            rule: "", kind: "stale", station: "", metric: "", state: .resolved, at: 0, value: 1e21, severity: .info,
            summary: "", explanation: "why", details: "engine"),
    ]

    @Test func matchesTheStringBuiltForm() {
        let messages = ["", "plain", "quote \" and \\ and \u{0} and \u{7F}", "emoji 🌊 and ≥", "\u{202E}bidi"]
        for t in Self.transitions {
            for message in messages {
                for explain in [false, true] {
                    for details in [false, true] {
                        #expect(
                            StdoutNotifier.jsonLine(t, message: message, explain: explain, details: details)
                                == Self.reference(t, message: message, explain: explain, details: details),
                            "\(t.rule) \(message) \(explain) \(details)")
                    }
                }
            }
        }
    }
}
