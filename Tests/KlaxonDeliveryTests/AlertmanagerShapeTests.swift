import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import Testing

/// The generic webhook against what Alertmanager 0.25 itself sent for one alert firing and then
/// resolved (`Tests/Fixtures/peers/alertmanager/webhook_v4_*.json`, captured byte for byte):
/// the same keys at every level with the same JSON types, and the pair keeps Alertmanager's
/// identity rules (labels, fingerprint and `startsAt` fixed; `endsAt` set on the resolve).
@Suite struct AlertmanagerShapeTests {
    static let captures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/peers/alertmanager")

    static func capture(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: captures.appendingPathComponent(name))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// A JSON value's shape: an object's keys with their shapes, an array's first element's, a
    /// scalar's type.
    static func shape(_ v: Any) -> String {
        switch v {
        case let o as [String: Any]:
            return "{" + o.keys.sorted().map { "\($0):\(shape(o[$0]!))" }.joined(separator: ",") + "}"
        case let a as [Any]: return "[" + (a.first.map(shape) ?? "") + "]"
        case is String: return "string"
        case is NSNumber: return "number"
        case is NSNull: return "null"
        default: return "?"
        }
    }

    /// Keys whose value is an open map (labels, annotations): only its type is compared.
    static func openMaps(_ v: Any) -> Any {
        guard var o = v as? [String: Any] else { return v }
        for key in ["labels", "annotations", "groupLabels", "commonLabels", "commonAnnotations"] where o[key] != nil {
            o[key] = [String: Any]()
        }
        if let alerts = o["alerts"] as? [Any] { o["alerts"] = alerts.map(openMaps) }
        return o
    }

    func episode() -> (firing: AlertNotification, resolved: AlertNotification) {
        let start = Timestamp.parse("2026-11-27T12:00:00Z")!
        func t(_ state: TransitionState, _ level: String?, _ from: String?, _ at: Int64) -> Transition {
            Transition(
                rule: "FloodStage", kind: "levels", station: "01646500", metric: "gage_height", state: state,
                level: level, fromLevel: from, at: at, value: 12.4, unit: "ft", severity: .critical,
                summary: "Potomac at \(level ?? "no") flood stage", explanation: "why")
        }
        // Fired at action, rose to minor (the level changes; the labels do not), then resolved.
        let changed = NotifiedAlert(
            transition: t(.changed, "minor", "action", start + 3600), message: "minor", id: 41, startedAt: start)
        let resolved = NotifiedAlert(
            transition: t(.resolved, nil, "minor", start + 7200), message: "over", id: 41, startedAt: start)
        func n(_ a: NotifiedAlert) -> AlertNotification {
            AlertNotification(
                key: "k", receiver: "hook", alerts: [a], externalURL: "http://klaxon.example.org/",
                groupBy: ["rule", "station"])
        }
        return (n(changed), n(resolved))
    }

    /// The captures are Alertmanager 0.25's: the body is theirs plus `notification_reason`, a string
    /// since 0.32 (`webhook_v4_fields.go.txt`).
    @Test func firingAndResolvedHaveAlertmanagersShape() throws {
        let (firing, resolved) = episode()
        for (ours, theirs) in [(firing, "webhook_v4_firing.json"), (resolved, "webhook_v4_resolved.json")] {
            var mine = try #require(
                try JSONSerialization.jsonObject(with: Data(WebhookPayloads.genericText(ours, groupBy: []).utf8))
                    as? [String: Any])
            #expect(mine.removeValue(forKey: "notification_reason") is String)
            let captured = try Self.capture(theirs)
            #expect(Self.shape(Self.openMaps(mine)) == Self.shape(Self.openMaps(captured)))
        }
    }

    /// The `json:` tags of Alertmanager's webhook body (`Data`, embedded in `Message`) as its source
    /// declares them (`webhook_v4_fields.go.txt`).
    static func sourceKeys() throws -> Set<String> {
        let text = try String(
            contentsOf: captures.appendingPathComponent("webhook_v4_fields.go.txt"), encoding: .utf8)
        var keys: Set<String> = []
        for line in text.split(separator: "\n") {
            guard let open = line.range(of: "`json:\""), let close = line[open.upperBound...].firstIndex(of: "\"")
            else { continue }
            keys.insert(String(line[open.upperBound..<close]))
        }
        return keys
    }

    /// Every key of the body Alertmanager's source declares, `notification_reason` among them; only
    /// `routeLabels` (0.34's labels of a route, which Klaxon's routes do not have) is left out.
    @Test func theBodysKeysAreAlertmanagersOwn() throws {
        let declared = try Self.sourceKeys()
        #expect(declared.contains("notification_reason") && declared.contains("truncatedAlerts"))
        let (firing, resolved) = episode()
        for n in [firing, resolved] {
            let body = try #require(
                try JSONSerialization.jsonObject(with: Data(WebhookPayloads.genericText(n, groupBy: []).utf8))
                    as? [String: Any])
            #expect(Set(body.keys) == declared.subtracting(["routeLabels"]))
        }
        #expect(
            try Self.parse(WebhookPayloads.genericText(firing, groupBy: []))["notification_reason"] as? String
                == "alerts changed")
        #expect(
            try Self.parse(WebhookPayloads.genericText(resolved, groupBy: []))["notification_reason"] as? String
                == "all alerts resolved")
    }

    static func parse(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func anEpisodeKeepsItsIdentityFromFiringToResolve() throws {
        let (firing, resolved) = episode()
        func parsed(_ n: AlertNotification) throws -> ([String: Any], [String: Any]) {
            let p = try #require(
                try JSONSerialization.jsonObject(with: Data(WebhookPayloads.genericText(n, groupBy: []).utf8))
                    as? [String: Any])
            return (p, try #require((p["alerts"] as? [[String: Any]])?.first))
        }
        let (pf, f) = try parsed(firing)
        let (pr, r) = try parsed(resolved)
        #expect(f["labels"] as? [String: String] == r["labels"] as? [String: String])
        #expect((f["labels"] as? [String: String])?["level"] == nil)
        #expect(f["fingerprint"] as? String == r["fingerprint"] as? String)
        #expect(f["startsAt"] as? String == "2026-11-27T12:00:00Z")
        #expect(r["startsAt"] as? String == "2026-11-27T12:00:00Z")
        #expect(f["endsAt"] as? String == "0001-01-01T00:00:00Z")
        #expect(r["endsAt"] as? String == "2026-11-27T14:00:00Z")
        #expect((f["annotations"] as? [String: String])?["level"] == "minor")
        #expect((r["annotations"] as? [String: String])?["level"] == "minor")
        #expect((f["annotations"] as? [String: String])?["alert_id"] == "41")
        #expect(f["generatorURL"] as? String == "http://klaxon.example.org/alerts/41")
        // Alertmanager's grouping fields, built from label names as it builds them.
        let captured = try Self.capture("webhook_v4_firing.json")
        for p in [pf, pr] {
            #expect(p["groupLabels"] as? [String: String] == captured["groupLabels"] as? [String: String])
            #expect(p["groupKey"] as? String == captured["groupKey"] as? String)
            #expect(p["externalURL"] as? String == "http://klaxon.example.org")
        }
    }
}
