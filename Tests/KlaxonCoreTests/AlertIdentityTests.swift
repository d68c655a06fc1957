import KlaxonCore
import Testing

/// An alert's identity (labels, fingerprint, annotations, group labels) lives in the core, so the
/// server shows alerts as the webhook sends them without linking the notifiers (issue 40). The
/// fingerprint is the same bytes as before it moved: the expected values below were computed with
/// `sha256sum`, independently of Klaxon.
@Suite("Alert identity")
struct AlertIdentityTests {
    @Test("SHA-256 matches the standard's vectors, across block boundaries")
    func sha256Vectors() {
        let cases: [(String, String)] = [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (String(repeating: "a", count: 55), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"),
            (String(repeating: "a", count: 56), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"),
            (String(repeating: "a", count: 64), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"),
            (String(repeating: "a", count: 1000), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3"),
        ]
        for (text, hex) in cases {
            #expect(SHA256Digest.hex(SHA256Digest.hash(Array(text.utf8))) == hex, "\(text.count) bytes")
        }
    }

    static func transition(
        rule: String = "high", station: String = "S1", metric: String = "gage_height", labels: [String: String] = [:],
        annotations: [String: String] = [:]
    ) -> Transition {
        Transition(
            rule: rule, kind: "threshold", station: station, metric: metric, state: .firing, level: "minor",
            fromLevel: "action", at: 1_700_000_000, value: 12.5, severity: .warning, labels: labels, summary: "s",
            explanation: "above 10", annotations: annotations)
    }

    @Test("the fingerprint is the first 8 bytes of SHA-256(rule␟station␟metric), as the webhook has always sent")
    func fingerprint() {
        #expect(AlertIdentity.fingerprint(Self.transition()) == "d7ca24ede3948365")
        #expect(
            AlertIdentity.fingerprint(Self.transition(rule: "très", station: "☃", metric: "m")) == "d03c40390c2212cd")
        // Labels, levels and values are not part of it: the same alert keeps its fingerprint.
        var t = Self.transition(labels: ["team": "river"])
        t.level = "major"
        #expect(AlertIdentity.fingerprint(t) == "d7ca24ede3948365")
    }

    @Test("labels: the rule's, then Klaxon's own names win; sorted by name; no level")
    func labels() {
        let t = Self.transition(labels: ["team": "river", "alertname": "spoof", "level": "x", "a": "1"])
        let pairs = AlertIdentity.labels(t).map { "\($0.key)=\($0.value)" }
        #expect(
            pairs == ["a=1", "alertname=high", "metric=gage_height", "severity=warning", "station=S1", "team=river"])
    }

    @Test("annotations: Klaxon's keys in order, the path only with more than one step, the rule's own after")
    func annotations() {
        let t = Self.transition(annotations: ["runbook_url": "https://x", "summary": "theirs"])
        let pairs = AlertIdentity.annotations(t, id: 7, summary: "ours", dataTime: "d", late: true, route: ["minor"])
            .map { "\($0.key)=\($0.value)" }
        #expect(
            pairs == [
                "alert_id=7", "data_time=d", "description=above 10", "late=true", "level=minor",
                "previous_level=action", "runbook_url=https://x", "summary=ours", "value=12.5",
            ])
        let path = AlertIdentity.annotations(t, id: 0, summary: "", dataTime: "d", route: ["action", "minor"])
        #expect(path.contains { $0.key == "path" && $0.value == "action → minor" })
        #expect(!path.contains { $0.key == "alert_id" })
    }

    @Test("group labels: rule is alertname, each name once, missing ones left out, sorted")
    func groupLabels() {
        let t = Self.transition(labels: ["team": "river"])
        let pairs = AlertIdentity.groupLabels(of: t, by: ["station", "rule", "alertname", "nope", "team"])
        #expect(pairs.map { "\($0.key)=\($0.value)" } == ["alertname=high", "station=S1", "team=river"])
    }
}
