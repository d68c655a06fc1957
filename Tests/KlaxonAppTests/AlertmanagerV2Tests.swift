import Crypto
import Foundation
import KlaxonCore
import KlaxonStore
import Testing

@testable import KlaxonServer

/// The Alertmanager v2 schemas as Codable types (issue 40): their JSON is byte for byte what the
/// dictionaries through `JSONSerialization` wrote before (keys sorted, `/` unescaped, any label
/// name or value), and a posted silence is refused with Alertmanager's words, fault by fault.
@Suite("Alertmanager v2 types")
struct AlertmanagerV2Tests {
    /// What the API wrote before the types: `JSONSerialization` with these options.
    static func old(_ object: Any) throws -> String {
        String(
            decoding: try JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes, .fragmentsAllowed]),
            as: UTF8.self)
    }

    static func new(_ value: some Encodable) -> String { String(decoding: AlertmanagerV2.encode(value), as: UTF8.self) }

    /// Label values a rule or a silence may carry, hostile ones included, under lower-case names
    /// (their order is the same by code point and by `JSONSerialization`'s compare; see `labelOrder`).
    static let labels: [String: String] = [
        "alertname": "high", "team": "a/b", "zone": "\"quoted\" \\ back", "metric": "tab\tnew\nline\r\u{1}\u{1F}",
        "place": "é ☃ 🚨", "severity": "\u{7F}\u{2028}\u{2029}<>&'", "station": "", "unit": "\u{FEFF}",
    ]

    @Test("an alert, a group, a silence, the status and an error encode byte for byte as the dictionaries did")
    func bytesAsBefore() throws {
        let alert = AlertmanagerV2.GettableAlert(
            annotations: Self.labels, endsAt: .init(1_800_000_300), fingerprint: "d7ca24ede3948365",
            generatorURL: "https://k.example.org/alerts/7", labels: Self.labels,
            receivers: [.init(name: "team"), .init(name: "pa/ger")], startsAt: .init(1_800_000_000),
            status: .init(state: "suppressed", silencedBy: ["b", "a"], inhibitedBy: [], mutedBy: []),
            updatedAt: .init(1_800_000_100))
        let alertObject: [String: Any] = [
            "labels": Self.labels, "annotations": Self.labels, "startsAt": "2027-01-15T08:00:00.000Z",
            "updatedAt": "2027-01-15T08:01:40.000Z", "endsAt": "2027-01-15T08:05:00.000Z",
            "fingerprint": "d7ca24ede3948365", "receivers": [["name": "team"], ["name": "pa/ger"]],
            "status": [
                "state": "suppressed", "silencedBy": ["b", "a"], "inhibitedBy": [String](), "mutedBy": [String](),
            ]
                as [String: Any],
            "generatorURL": "https://k.example.org/alerts/7",
        ]
        #expect(Self.new(alert) == (try Self.old(alertObject)))
        var bare = alert
        bare.generatorURL = nil
        var bareObject = alertObject
        bareObject["generatorURL"] = nil
        #expect(Self.new([bare, alert]) == (try Self.old([bareObject, alertObject])))

        let group = AlertmanagerV2.AlertGroup(alerts: [alert], labels: Self.labels, receiver: .init(name: "team"))
        #expect(
            Self.new([group])
                == (try Self.old([["labels": Self.labels, "receiver": ["name": "team"], "alerts": [alertObject]]])))

        let silence = AlertmanagerV2.GettableSilence(
            comment: "river crew \"on site\"", createdBy: "slack:U1", endsAt: .init(1_800_003_600), id: "1b2c",
            matchers: [
                .init(try Matcher(name: "alertname", op: .regex, value: "hi.*")),
                .init(try Matcher(name: "Team", op: .notEqual, value: "a/b\n")),
            ], startsAt: .init(1_800_000_000), status: .init(state: "active"), updatedAt: .init(1_800_000_000))
        let silenceObject: [String: Any] = [
            "id": "1b2c", "status": ["state": "active"], "updatedAt": "2027-01-15T08:00:00.000Z",
            "comment": "river crew \"on site\"", "createdBy": "slack:U1", "startsAt": "2027-01-15T08:00:00.000Z",
            "endsAt": "2027-01-15T09:00:00.000Z",
            "matchers": [
                ["name": "alertname", "value": "hi.*", "isRegex": true, "isEqual": true],
                ["name": "Team", "value": "a/b\n", "isRegex": false, "isEqual": false],
            ] as [[String: Any]],
        ]
        #expect(Self.new([silence]) == (try Self.old([silenceObject])))
        #expect(Self.new([AlertmanagerV2.GettableSilence]()) == (try Self.old([Any]())))

        let status = AlertmanagerAPI.status(
            AlertmanagerAPISettings(receivers: ["team", "p\"x"], startedAt: 1_800_000_000))
        let statusObject: [String: Any] = [
            "cluster": ["status": "disabled", "peers": [Any]()] as [String: Any],
            "config": ["original": status.config.original], "uptime": "2027-01-15T08:00:00.000Z",
            "versionInfo": [
                "version": BuildInfo.version, "revision": BuildInfo.revision, "branch": "unknown",
                "buildUser": "klaxon", "buildDate": BuildInfo.date, "goVersion": "swift\(BuildInfo.swift)",
            ],
        ]
        #expect(Self.new(status) == (try Self.old(statusObject)))
        #expect(Self.new([AlertmanagerV2.Receiver(name: "a/b")]) == (try Self.old([["name": "a/b"]])))
        #expect(Self.new(AlertmanagerV2.SilenceCreated(silenceID: "x")) == (try Self.old(["silenceID": "x"])))
        let message = "bad matcher format: \"\u{1B}[31m\" / \u{0}"
        #expect(Self.new(message) == (try Self.old(message)))
    }

    @Test(
        "the core's fingerprint is swift-crypto's SHA-256 as the webhook computed it before it moved, on any identity")
    func fingerprintAsBefore() {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("ab/=\"\\ \u{1}\u{1F}é☃🚨0123456789-_.")
        func text() -> String {
            String((0..<Int.random(in: 0...90, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
        }
        for _ in 0..<500 {
            let (rule, station, metric) = (text(), text(), text())
            let t = Transition(
                rule: rule, kind: "threshold", station: station, metric: metric, state: .firing, at: 0, value: nil,
                severity: .info, summary: "", explanation: "")
            let digest = SHA256.hash(data: Data("\(rule)\u{1F}\(station)\u{1F}\(metric)".utf8))
            let before = digest.prefix(8).map { String(format: "%02x", $0) }.joined()
            #expect(AlertIdentity.fingerprint(t) == before, "\(rule) \(station) \(metric)")
        }
    }

    /// What `/api/v1/alerts` wrote before the types: a dictionary per alert, `JSONSerialization`
    /// with sorted keys and unescaped slashes, and a newline.
    static func oldAlertPage(_ alerts: [FiringAlert], total: Int, next: String?) throws -> String {
        let list = alerts.map { a -> [String: Any] in
            let t = a.transition
            var o: [String: Any] = [
                "id": a.episode, "rule": a.key.rule, "station": a.key.station, "metric": a.key.metric,
                "severity": t.severity.rawValue, "since": Timestamp.format(a.startedAt), "summary": t.summary,
                "transition_id": a.transitionID,
            ]
            if let level = t.level {
                o["level"] = level
                o["level_since"] = Timestamp.format(t.at)
            }
            if let ack = a.ack {
                o["acked_by"] = ack.by
                o["acked_at"] = Timestamp.format(ack.at)
            }
            if let v = t.value { o["value"] = v }
            return o
        }
        let object: [String: Any] = ["alerts": list, "total": total, "next": next.map { $0 as Any } ?? NSNull()]
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    @Test("/api/v1's alert pages encode byte for byte as the dictionaries did, whatever the values")
    func v1AlertBytes() throws {
        let values: [Double?] = [
            nil, 0, -0.0, 12, 12.5, 0.1, 1.0 / 3, -3.25, 1e-7, 123456.789, 1e15, 1e21, 9_007_199_254_740_994, 2.5e-300,
        ]
        var alerts: [FiringAlert] = []
        for (i, v) in values.enumerated() {
            let t = Transition(
                rule: "high/\(i)", kind: "threshold", station: "S\"\(i)", metric: "gage_height", state: .firing,
                level: i % 2 == 0 ? "minor" : nil, at: 1_800_000_000 + Int64(i), value: v,
                severity: i % 3 == 0 ? .critical : .warning, summary: "é \u{1}\n<b>", explanation: "")
            alerts.append(
                FiringAlert(
                    key: t.alertKey, transitionID: Int64(100 + i), transition: t,
                    ack: i % 4 == 0 ? Ack(transitionID: 7, by: "slack:U/1", at: 1_800_000_100) : nil,
                    episode: i % 2 == 0 ? Int64(i) : nil, startedAt: 1_799_999_000))
        }
        for next in [nil, "c/1"] as [String?] {
            let new =
                String(
                    decoding: APIJSON.encode(APIAlertPage(alerts: alerts.map(APIAlert.init), next: next, total: 99)),
                    as: UTF8.self) + "\n"
            #expect(new == (try Self.oldAlertPage(alerts, total: 99, next: next)))
        }
        #expect(
            String(decoding: APIJSON.encode(APIAlertPage(alerts: [], next: nil, total: 0)), as: UTF8.self)
                == "{\"alerts\":[],\"next\":null,\"total\":0}")
    }

    @Test(
        "a free-form label map is written in code-point order (JSONSerialization's compare put A after a and 9 before 10): the same object"
    )
    func labelOrder() throws {
        let labels = ["alertname": "x", "Team": "t", "a10": "1", "a9": "9", "_x": "u", "Z": "z", "émoji": "e"]
        let new = Self.new(labels)
        #expect(new == #"{"Team":"t","Z":"z","_x":"u","a10":"1","a9":"9","alertname":"x","émoji":"e"}"#)
        let old = try Self.old(labels)
        #expect(
            (try JSONSerialization.jsonObject(with: Data(new.utf8)) as? [String: String])
                == (try JSONSerialization.jsonObject(with: Data(old.utf8)) as? [String: String]))
    }

    static let now: Int64 = 1_800_000_000
    static let times = "\"startsAt\":\"2027-01-15T08:00:00Z\",\"endsAt\":\"2027-01-15T09:00:00Z\""

    static func refusal(_ body: String) -> String? {
        switch AlertmanagerAPI.PostedSilence.read(Data(body.utf8), now: now) {
        case .success: nil
        case .failure(let r): r.message
        }
    }

    @Test("a posted silence is refused fault by fault with Alertmanager's words, as before the types")
    func postedRefusals() {
        let m = "{\"name\":\"a\",\"value\":\"b\",\"isRegex\":false}"
        let who = "\"createdBy\":\"ops\",\"comment\":\"c\""
        let cases: [(String, String)] = [
            ("{not json", "parsing silence body from \"\" failed, because the body is not JSON"),
            ("1", "parsing silence body from \"\" failed, because the body is not JSON"),
            ("\"x\"", "parsing silence body from \"\" failed, because the body is not JSON"),
            ("", "parsing silence body from \"\" failed, because the body is not JSON"),
            (" [1,2]", "parsing silence body from \"\" failed, because the body is not an object"),
            ("{\(Self.times),\(who)}", "matchers in body is required"),
            ("{\"matchers\":[\(m)],\"endsAt\":\"2027-01-15T09:00:00Z\",\(who)}", "startsAt in body is required"),
            ("{\"matchers\":[\(m)],\(Self.times),\"comment\":\"c\"}", "createdBy in body is required"),
            ("{\"matchers\":[\(m)],\(Self.times),\"createdBy\":\"ops\"}", "comment in body is required"),
            ("{\"id\":7,\"matchers\":[\(m)],\(Self.times),\(who)}", "id in body must be of type string"),
            (
                "{\"matchers\":[\(m)],\(Self.times),\"createdBy\":null,\"comment\":\"c\"}",
                "createdBy in body must be of type string"
            ),
            (
                "{\"matchers\":[\(m)],\(Self.times),\"createdBy\":\"ops\",\"comment\":5}",
                "comment in body must be of type string"
            ),
            (
                "{\"matchers\":[\(m)],\"startsAt\":\"soon\",\"endsAt\":\"2027-01-15T09:00:00Z\",\(who)}",
                "startsAt in body must be of type date-time"
            ),
            (
                "{\"matchers\":[\(m)],\"startsAt\":\"2027-01-15T08:00:00Z\",\"endsAt\":17,\(who)}",
                "endsAt in body must be of type date-time"
            ),
            ("{\"matchers\":[],\(Self.times),\(who)}", "matchers in body should have at least 1 items"),
            ("{\"matchers\":{},\(Self.times),\(who)}", "matchers in body should have at least 1 items"),
            (
                "{\"matchers\":[\(Array(repeating: m, count: 65).joined(separator: ","))],\(Self.times),\(who)}",
                "matchers in body should have at most 64 items"
            ),
            (
                "{\"matchers\":[\(m),1],\(Self.times),\(who)}",
                "silence invalid: invalid label matcher 1: a matcher must be an object"
            ),
            (
                "{\"matchers\":[{\"value\":\"b\",\"isRegex\":false}],\(Self.times),\(who)}",
                "silence invalid: invalid label matcher 0: name is required"
            ),
            (
                "{\"matchers\":[{\"name\":\"a\",\"value\":1,\"isRegex\":false}],\(Self.times),\(who)}",
                "silence invalid: invalid label matcher 0: value is required"
            ),
            (
                "{\"matchers\":[{\"name\":\"a\",\"value\":\"b\"}],\(Self.times),\(who)}",
                "silence invalid: invalid label matcher 0: isRegex is required"
            ),
            (
                "{\"matchers\":[{\"name\":\"a\",\"value\":\"b\",\"isRegex\":false,\"isEqual\":\"no\"}],\(Self.times),\(who)}",
                "silence invalid: invalid label matcher 0: isEqual must be of type boolean"
            ),
            (
                "{\"matchers\":[{\"name\":\"a\",\"value\":\"\",\"isRegex\":false}],\(Self.times),\(who)}",
                "silence invalid: at least one matcher must not match the empty string"
            ),
            (
                "{\"matchers\":[\(m)],\(Self.times),\"createdBy\":\"ops\",\"comment\":\"\\u001b[31m\"}",
                "silence invalid: "
            ),
            (
                "{\"matchers\":[\(m)],\"startsAt\":\"2027-01-15T09:00:00Z\",\"endsAt\":\"2027-01-15T08:00:00Z\",\(who)}",
                "Failed to create silence: start time must be before end time"
            ),
        ]
        for (body, says) in cases {
            let message = Self.refusal(body)
            #expect(message?.hasPrefix(says) == true, "\(body): \(message ?? "accepted")")
        }
    }

    @Test(
        "a posted silence is read as before: null id and isEqual are absent, an empty id is none, times with fractions")
    func postedAccepted() throws {
        let body = """
            {"id":"","matchers":[{"name":"rule","value":"hi.*","isRegex":true,"isEqual":null},
             {"name":"station","value":"S1","isRegex":false,"isEqual":false}],
             "startsAt":"2027-01-15T08:00:00.500Z","endsAt":"2027-01-15T09:00:00Z","createdBy":"ops","comment":""}
            """
        let posted = try AlertmanagerAPI.PostedSilence.read(Data(body.utf8), now: Self.now).get()
        #expect(posted.id == nil)
        #expect(posted.matchers.map(\.description) == ["rule=~hi.*", "station!=S1"])
        #expect(posted.starts == Self.now && posted.ends == Self.now + 3600)
        let withID = try AlertmanagerAPI.PostedSilence.read(
            Data(body.replacingOccurrences(of: "\"id\":\"\"", with: "\"id\":null").utf8), now: Self.now
        ).get()
        #expect(withID.id == nil)
    }
}
