import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import NIOCore
import Testing

/// The Alertmanager v2 API in process, over a real SQLite file with alerts from a real evaluation:
/// the JSON has the shapes of Alertmanager 0.25's own answers (`Tests/Fixtures/peers/alertmanager`),
/// and hostile requests are refused before they cost anything.
@Suite("Alertmanager API", .serialized, .timeLimit(.minutes(10)))
struct AlertmanagerAPITests {
    static let token = "am-token"
    static let fixtures = packageRoot.appendingPathComponent("Tests/Fixtures/peers/alertmanager")

    static let rules = [
        Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10)),
        Rule(
            name: "very-high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 40),
            severity: .critical, notify: ["pager"]),
    ]

    /// `high` fires at S1 and S2; `very-high` at S2 only.
    static func with(_ body: (Int, Int64) async throws -> Void) async throws {
        let store = try tempStore()
        let now = Int64(Date().timeIntervalSince1970)
        _ = try await store.readingWriter().write([
            Reading(station: "S1", metric: "gage_height", time: now - 60, value: 20, unit: "ft"),
            Reading(station: "S2", metric: "gage_height", time: now - 60, value: 50, unit: "ft"),
        ])
        _ = try await Evaluate.run(store: store, rules: rules, now: now)
        let routing = Routing(
            routes: [Route(matchers: [try Matcher.parse("station=S2")], receivers: ["river"], groupBy: ["rule"])],
            defaultReceiver: "team", defaults: Route(groupBy: ["rule", "station"]))
        let am = AlertmanagerAPISettings(
            routing: routing, notify: ["very-high": ["pager"]], receivers: ["team", "river", "pager"],
            externalURL: "https://klaxon.example.org/", startedAt: now - 100)
        let (port, task) = await startHTTP(
            store: store, settings: KlaxonHTTP.Settings(port: 0, apiToken: token).with(alertmanager: am),
            now: { now })
        let outcome = await Result { try await body(port, now) }
        task.cancel()
        #expect(await Bounded.wait(for: task, within: TestServers.stopLimit), "the server should stop")
        try outcome.get()
    }

    static func get(_ port: Int, _ path: String, token: String? = token) async throws -> (Int, String) {
        try await http("GET", "http://127.0.0.1:\(port)\(path)", token: token)
    }

    static func post(_ port: Int, _ body: String) async throws -> (Int, String) {
        try await http("POST", "http://127.0.0.1:\(port)/api/v2/silences", body: body, token: token)
    }

    static func json(_ text: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    }

    static func fixture(_ name: String) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(contentsOf: fixtures.appendingPathComponent(name)))
    }

    /// Where `ours` differs in shape from Alertmanager's `theirs`: a field missing, or of another
    /// JSON type. Fields only Klaxon sends must be in `extra`. Arrays compare their first elements.
    static func shapeProblems(_ ours: Any, _ theirs: Any, path: String = "", extra: Set<String> = []) -> [String] {
        func kind(_ v: Any) -> String {
            switch v {
            case is String: "string"
            case is [String: Any]: "object"
            case is [Any]: "array"
            case is NSNull: "null"
            default: "scalar"
            }
        }
        guard kind(ours) == kind(theirs) else { return ["\(path): \(kind(ours)), not \(kind(theirs))"] }
        switch (ours, theirs) {
        case (let o as [String: Any], let t as [String: Any]):
            // Label sets are free-form: their values are strings.
            if ["labels", "annotations"].contains(where: { path.hasSuffix($0) }) {
                return o.compactMap { $0.value is String ? nil : "\(path).\($0.key): not a string" }
            }
            var problems: [String] = []
            for key in t.keys where o[key] == nil { problems.append("\(path).\(key): missing") }
            for key in o.keys where t[key] == nil && !extra.contains(key) { problems.append("\(path).\(key): extra") }
            for (key, value) in o {
                if let tv = t[key] { problems += shapeProblems(value, tv, path: "\(path).\(key)", extra: extra) }
            }
            return problems
        case (let o as [Any], let t as [Any]):
            guard let first = o.first, let theirs = t.first else { return [] }
            return shapeProblems(first, theirs, path: path + "[0]", extra: extra)
        default:
            return []
        }
    }

    /// Every date-time field in Alertmanager's form, `2026-11-27T12:00:17.000Z`.
    static func times(_ v: Any, path: String = "") -> [String] {
        switch v {
        case let o as [String: Any]:
            return o.flatMap { key, value -> [String] in
                if ["startsAt", "endsAt", "updatedAt", "uptime"].contains(key) {
                    let s = value as? String ?? ""
                    let ok = s.count == 24 && s.hasSuffix(".000Z") && Timestamp.parse(s) != nil
                    return ok ? [] : ["\(path).\(key) = \(s)"]
                }
                return times(value, path: "\(path).\(key)")
            }
        case let a as [Any]: return a.flatMap { times($0, path: path + "[]") }
        default: return []
        }
    }

    @Test("alerts, groups, silences and status have Alertmanager's fields and types")
    func shapes() async throws {
        try await Self.with { port, now in
            let created = try await Self.post(
                port,
                """
                {"matchers":[{"name":"alertname","value":"very-high","isRegex":false,"isEqual":true}],
                 "startsAt":"\(Timestamp.format(now))","endsAt":"\(Timestamp.format(now + 3600))",
                 "createdBy":"ops","comment":"river crew on site"}
                """)
            #expect(created.0 == 200, "\(created.1)")
            let id = (try Self.json(created.1) as? [String: Any])?["silenceID"] as? String ?? ""
            #expect(UUID(uuidString: id) != nil, "a silence id is a UUID, as amtool expects")

            let alertsText = try await Self.get(port, "/api/v2/alerts")
            #expect(alertsText.0 == 200)
            let alerts = try Self.json(alertsText.1) as? [[String: Any]] ?? []
            #expect(alerts.count == 3)
            let problems = Self.shapeProblems(
                alerts, try Self.fixture("api_v2_alerts.json"), extra: ["generatorURL", "mutedBy"])
            #expect(problems.isEmpty, "\(problems)")
            #expect(Self.times(alerts).isEmpty, "\(Self.times(alerts))")
            // Sorted by fingerprint; the webhook's labels; the silenced one suppressed by the new silence.
            let fingerprints = alerts.compactMap { $0["fingerprint"] as? String }
            #expect(fingerprints == fingerprints.sorted() && fingerprints.allSatisfy { $0.count == 16 })
            let critical = try #require(
                alerts.first { ($0["labels"] as? [String: String])?["alertname"] == "very-high" })
            #expect(
                critical["labels"] as? [String: String] == [
                    "alertname": "very-high", "station": "S2", "metric": "gage_height", "severity": "critical",
                ])
            let status = critical["status"] as? [String: Any]
            #expect(status?["state"] as? String == "suppressed")
            #expect(status?["silencedBy"] as? [String] == [id])
            #expect(status?["inhibitedBy"] as? [String] == [])
            #expect((critical["receivers"] as? [[String: String]])?.map { $0["name"] ?? "" } == ["pager", "river"])
            #expect((critical["generatorURL"] as? String)?.hasPrefix("https://klaxon.example.org/alerts/") == true)
            let annotations = critical["annotations"] as? [String: String] ?? [:]
            #expect(annotations["summary"] != nil && annotations["description"] != nil)

            let groupsText = try await Self.get(port, "/api/v2/alerts/groups")
            let groups = try Self.json(groupsText.1) as? [[String: Any]] ?? []
            let groupProblems = Self.shapeProblems(
                groups, try Self.fixture("api_v2_alert_groups.json"), extra: ["generatorURL", "mutedBy"])
            #expect(groupProblems.isEmpty, "\(groupProblems)")
            // team: high@S1 (grouped by rule and station); river: both alerts at S2, by rule; pager (the
            // rule's own receiver) takes the first matching route's grouping: by rule.
            let summary = groups.map { g -> String in
                let labels = (g["labels"] as? [String: String] ?? [:]).sorted { $0.key < $1.key }
                    .map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                return
                    "\((g["receiver"] as? [String: String])?["name"] ?? "") {\(labels)} \((g["alerts"] as? [Any])?.count ?? 0)"
            }
            #expect(
                summary == [
                    "pager {alertname=very-high} 1", "river {alertname=high} 1",
                    "river {alertname=very-high} 1", "team {alertname=high,station=S1} 1",
                ], "\(summary)")

            let silencesText = try await Self.get(port, "/api/v2/silences")
            let silences = try Self.json(silencesText.1)
            let silenceProblems = Self.shapeProblems(silences, try Self.fixture("api_v2_silences.json"))
            #expect(silenceProblems.isEmpty, "\(silenceProblems)")
            #expect(Self.times(silences).isEmpty)
            let one = try await Self.get(port, "/api/v2/silence/\(id)")
            #expect(one.0 == 200)
            #expect(
                Self.shapeProblems(try Self.json(one.1), (try Self.fixture("api_v2_silences.json") as? [Any])?[0] ?? 0)
                    .isEmpty)

            let statusText = try await Self.get(port, "/api/v2/status")
            let statusJSON = try Self.json(statusText.1)
            let statusProblems = Self.shapeProblems(statusJSON, try Self.fixture("api_v2_status.json"))
            #expect(statusProblems.isEmpty, "\(statusProblems)")
            let original = ((statusJSON as? [String: Any])?["config"] as? [String: Any])?["original"] as? String ?? ""
            #expect(original.contains("route:") && original.contains("- name: \"pager\""), "\(original)")
            #expect(!original.contains("klaxon.example.org"))
        }
    }

    @Test("filters: matchers, silenced, active and receiver, as Alertmanager applies them")
    func filters() async throws {
        try await Self.with { port, now in
            func names(_ query: String) async throws -> [String] {
                let (status, body) = try await Self.get(port, "/api/v2/alerts" + query)
                #expect(status == 200, "\(query): \(body)")
                let alerts = try Self.json(body) as? [[String: Any]] ?? []
                return alerts.map { a in
                    let l = a["labels"] as? [String: String] ?? [:]
                    return "\(l["alertname"] ?? "")@\(l["station"] ?? "")"
                }.sorted()
            }
            #expect(try await names("?filter=alertname%3D%22high%22") == ["high@S1", "high@S2"])
            #expect(try await names("?filter=alertname%3D~%22very.*%22") == ["very-high@S2"])
            #expect(try await names("?filter=station!%3DS1&filter=alertname%3Dhigh") == ["high@S2"])
            #expect(try await names("?receiver=pag.*") == ["very-high@S2"])
            #expect(try await names("?receiver=pag") == [], "the receiver regex is anchored")
            _ = try await Self.post(
                port,
                """
                {"matchers":[{"name":"station","value":"S1","isRegex":false}],"startsAt":"\(Timestamp.format(now))",
                 "endsAt":"\(Timestamp.format(now + 60))","createdBy":"ops","comment":""}
                """)
            #expect(try await names("?silenced=false") == ["high@S2", "very-high@S2"])
            #expect(try await names("?active=false") == ["high@S1"])
            let groups = try await Self.get(port, "/api/v2/alerts/groups?receiver=team&silenced=false")
            #expect((try Self.json(groups.1) as? [Any])?.count == 0)
        }
    }

    @Test("heavy regex silences (issue 38): /api/v2/alerts answers 503 within its budget; a narrow filter lists")
    func heavySilences() async throws {
        try await Self.with { port, now in
            // 20 silences × 10 matchers of 8,000 instructions each, legal one by one; each matches
            // every rule name, at a cost of tens of thousands of steps a match.
            let heavy = "." + String(repeating: "(?:.?){1000}", count: 4)
            for s in 0..<20 {
                let matchers = (0..<10).map { m in
                    #"{"name":"alertname","value":"\#(heavy)|z\#(s * 10 + m)","isRegex":true}"#
                }.joined(separator: ",")
                let (status, body) = try await Self.post(
                    port,
                    """
                    {"matchers":[\(matchers)],"startsAt":"\(Timestamp.format(now))",
                     "endsAt":"\(Timestamp.format(now + 3600))","createdBy":"ops","comment":"heavy"}
                    """)
                #expect(status == 200, "\(body)")
            }
            let (status, body) = try await Self.get(port, "/api/v2/alerts")
            #expect(status == 503, "\(body.prefix(300))")
            #expect(body.contains("needs more work than one request may do"))
            // A filter that leaves nothing out spares the silences: the answer is prompt and right.
            let narrow = try await Self.get(port, "/api/v2/alerts?filter=station%3D%22none%22")
            let listed = try Self.json(narrow.1) as? [Any]
            #expect(narrow.0 == 200 && listed?.count == 0, "\(narrow.1.prefix(300))")
            // Health never touches matching.
            #expect(try await Self.get(port, "/healthz", token: nil).0 == 200)
        }
    }

    @Test("silences: update replaces, delete expires, filters match matchers exactly")
    func silenceLifecycle() async throws {
        try await Self.with { port, now in
            let body = { (id: String?, ends: Int64) in
                """
                {\(id.map { "\"id\":\"\($0)\"," } ?? "")"matchers":[{"name":"rule","value":"hi.*","isRegex":true,"isEqual":false},
                 {"name":"station","value":"S1","isRegex":false}],"startsAt":"\(Timestamp.format(now - 10)).5Z",
                 "endsAt":"\(Timestamp.format(ends))","createdBy":"ops","comment":"maintenance"}
                """.replacingOccurrences(of: "Z.5Z", with: ".500Z")
            }
            let first = try await Self.post(port, body(nil, now + 3600))
            #expect(first.0 == 200, "\(first.1)")
            let id = (try Self.json(first.1) as? [String: Any])?["silenceID"] as? String ?? ""
            let stored = try Self.json(try await Self.get(port, "/api/v2/silence/\(id)").1) as? [String: Any] ?? [:]
            #expect(stored["startsAt"] as? String == AlertmanagerTime.format(now), "a start in the past is now")
            let matchers = stored["matchers"] as? [[String: Any]] ?? []
            #expect(matchers.first?["isRegex"] as? Bool == true && matchers.first?["isEqual"] as? Bool == false)

            let second = try await Self.post(port, body(id, now + 7200))
            #expect(second.0 == 200, "\(second.1)")
            let newID = (try Self.json(second.1) as? [String: Any])?["silenceID"] as? String ?? ""
            #expect(newID != id && !newID.isEmpty)
            let old = try Self.json(try await Self.get(port, "/api/v2/silence/\(id)").1) as? [String: Any] ?? [:]
            #expect((old["status"] as? [String: String])?["state"] == "expired")
            #expect(try await Self.post(port, body("no-such-silence", now + 60)).0 == 404)

            let filtered = try await Self.get(
                port, "/api/v2/silences?filter=station%3D%22S1%22&filter=rule!~%22hi.*%22")
            let listed = try Self.json(filtered.1) as? [[String: Any]] ?? []
            // Active first, then expired.
            #expect(listed.compactMap { $0["id"] as? String } == [newID, id])
            let none = try await Self.get(port, "/api/v2/silences?filter=station%3DS2")
            #expect((try Self.json(none.1) as? [Any])?.count == 0)

            #expect(
                try await http("DELETE", "http://127.0.0.1:\(port)/api/v2/silence/\(newID)", token: Self.token).0 == 200
            )
            #expect(
                try await http("DELETE", "http://127.0.0.1:\(port)/api/v2/silence/\(newID)", token: Self.token).0 == 200
            )
            #expect(
                try await http(
                    "DELETE", "http://127.0.0.1:\(port)/api/v2/silence/\(newID.prefix(8))", token: Self.token
                ).0 == 404, "no prefixes")
            let after = try Self.json(try await Self.get(port, "/api/v2/silence/\(newID)").1) as? [String: Any] ?? [:]
            #expect((after["status"] as? [String: String])?["state"] == "expired")
        }
    }

    @Test("hostile requests: no token, huge body, bad JSON, bad regex, too many matchers; any value is stored as it is")
    func hostile() async throws {
        try await Self.with { port, now in
            for path in [
                "/api/v2/status", "/api/v2/alerts", "/api/v2/alerts/groups", "/api/v2/silences", "/api/v2/receivers",
            ] {
                #expect(try await Self.get(port, path, token: nil).0 == 401, "\(path)")
                #expect(try await Self.get(port, path, token: "wrong").0 == 401, "\(path)")
            }
            // The token is checked before the body is read: a huge body without it is 401.
            let huge = String(repeating: "x", count: 200 << 10)
            #expect(try await http("POST", "http://127.0.0.1:\(port)/api/v2/silences", body: huge).0 == 401)
            #expect(try await Self.post(port, huge).0 == 413)
            #expect(try await http("DELETE", "http://127.0.0.1:\(port)/api/v2/silence/x").0 == 401)

            let times = "\"startsAt\":\"\(Timestamp.format(now))\",\"endsAt\":\"\(Timestamp.format(now + 60))\""
            func refused(_ body: String, _ says: String, sourceLocation: SourceLocation = #_sourceLocation) async throws
            {
                let (status, text) = try await Self.post(port, body)
                #expect(status == 400, "\(body.prefix(200)): \(text)", sourceLocation: sourceLocation)
                let message = (try? Self.json(text)) as? String ?? ""
                #expect(message.contains(says), "\(message)", sourceLocation: sourceLocation)
                #expect(message.utf8.count < 1_000, sourceLocation: sourceLocation)
            }
            func matcher(_ name: String, _ value: String, regex: Bool = false) -> String {
                "{\"name\":\(JSONText.string(name)),\"value\":\(JSONText.string(value)),\"isRegex\":\(regex)}"
            }
            func silence(_ matchers: [String], comment: String = "c") -> String {
                "{\"matchers\":[\(matchers.joined(separator: ","))],\(times),\"createdBy\":\"ops\",\"comment\":\(JSONText.string(comment))}"
            }
            try await refused("{not json", "parsing silence body")
            try await refused("[1,2]", "parsing silence body")
            try await refused("{\"matchers\":[],\(times),\"createdBy\":\"ops\",\"comment\":\"c\"}", "at least 1")
            try await refused(
                "{\"matchers\":[\(matcher("a", "b"))],\(times),\"comment\":\"c\"}", "createdBy in body is required")
            try await refused(silence([matcher("a", "(", regex: true)]), "invalid label matcher 0")
            try await refused(
                silence([matcher("a", String(repeating: "(", count: 5000), regex: true)]), "invalid label matcher 0")
            try await refused(silence([matcher("a", "x{1001}", regex: true)]), "invalid label matcher 0")
            try await refused(silence(Array(repeating: matcher("a", "b"), count: 65)), "at most 64")
            try await refused(silence([matcher("a b", "c")]), "invalid label matcher 0")
            try await refused(silence([matcher("a", "")]), "must not match the empty string")
            try await refused(silence([matcher("a", ".*", regex: true)]), "must not match the empty string")
            try await refused(silence([matcher("a", "b")], comment: "\u{1B}[31mred"), "comment")
            try await refused(
                "{\"matchers\":[\(matcher("a", "b"))],\"startsAt\":\"\(Timestamp.format(now))\",\"endsAt\":\"\(Timestamp.format(now - 60))\",\"createdBy\":\"ops\",\"comment\":\"c\"}",
                "start time must be before end time")
            try await refused(
                "{\"matchers\":[\(matcher("a", "b"))],\"startsAt\":\"\(Timestamp.format(now - 120))\",\"endsAt\":\"\(Timestamp.format(now - 60))\",\"createdBy\":\"ops\",\"comment\":\"c\"}",
                "end time can't be in the past")
            try await refused(
                "{\"matchers\":[\(matcher("a", "b"))],\"startsAt\":\"soon\",\"endsAt\":\"later\",\"createdBy\":\"ops\",\"comment\":\"c\"}",
                "date-time")

            // Queries: a bad filter or receiver regex is 400 (Alertmanager's words), never a crash.
            let bad = try await Self.get(port, "/api/v2/alerts?filter=%7Bnope")
            #expect(bad.0 == 400, "\(bad.1)")
            #expect(try await Self.get(port, "/api/v2/alerts?receiver=(").0 == 400)
            #expect(try await Self.get(port, "/api/v2/alerts?filter=a%3D~(").0 == 400)
            #expect(try await Self.get(port, "/api/v2/alerts?active=maybe").0 == 400)
            let many = (0..<65).map { "filter=a%3D\($0)" }.joined(separator: "&")
            #expect(try await Self.get(port, "/api/v2/alerts?" + many).0 == 400)
            #expect(try await Self.get(port, "/api/v2/silences?filter=%3D%3D").0 == 400)
            // Nothing refused was stored.
            #expect((try Self.json(try await Self.get(port, "/api/v2/silences").1) as? [Any])?.count == 0)

            // Values the old `name=value` storage could not keep are stored as they are (issue 38).
            for value in ["b\nstation=S1", " b", "b!=c", "~.*", "\"S2\""] {
                let (status, text) = try await Self.post(port, silence([matcher("a", value)]))
                #expect(status == 200, "\(value): \(text)")
                let id = (try Self.json(text) as? [String: Any])?["silenceID"] as? String ?? ""
                let back = try Self.json(try await Self.get(port, "/api/v2/silence/\(id)").1) as? [String: Any]
                let m = (back?["matchers"] as? [[String: Any]])?.first
                #expect(m?["value"] as? String == value && m?["isRegex"] as? Bool == false, "\(value)")
            }
        }
    }
}

/// Alertmanager's date-time form, for comparisons.
enum AlertmanagerTime {
    static func format(_ t: Int64) -> String { String(Timestamp.format(t).dropLast()) + ".000Z" }
}
