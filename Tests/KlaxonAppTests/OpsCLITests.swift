import Foundation
import KlaxonApp
import KlaxonTesting
import Testing

/// Issue 31's command line: config lookup, read commands that create nothing, `alerts`, `ack`,
/// `routes show|test`, `--format json`, `test --junit`, help, completions, exit codes,
/// `fetch --timeout`. Each drives the built `klaxon`.
@Suite(.serialized) struct OpsCLITests {
    /// The environment of a child that must not find a config of the machine's.
    static let noConfig = [ConfigLookup.environmentVariable: ""]

    /// A river that rises into the `minor` level of `levelsRule` and stays there.
    static let risingCSV = """
        station,metric,time,value,unit
        G1,gage_height,2026-01-01T00:00:00Z,9,ft
        G1,gage_height,2026-01-01T00:15:00Z,10.5,ft
        G1,gage_height,2026-01-01T00:30:00Z,12.5,ft
        G1,gage_height,2026-01-01T00:45:00Z,12.6,ft
        G2,gage_height,2026-01-01T00:45:00Z,10.6,ft

        """

    /// The files in `dir`, for "nothing was created".
    static func contents(_ dir: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
    }

    @Test("config lookup: --config, else KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml when it exists, else none")
    func configLookupOrder() throws {
        let s = try Scratch()
        let system = try s.write("etc/klaxon.yaml", "rules: []\n")
        let env = [ConfigLookup.environmentVariable: s.path("env.yaml")]
        #expect(
            ConfigLookup.resolve(flag: "flag.yaml", environment: env, systemPath: system)
                == ConfigLookup(path: "flag.yaml", origin: .flag))
        #expect(
            ConfigLookup.resolve(flag: nil, environment: env, systemPath: system)
                == ConfigLookup(path: s.path("env.yaml"), origin: .environment))
        // An empty variable is unset.
        #expect(
            ConfigLookup.resolve(flag: nil, environment: [ConfigLookup.environmentVariable: ""], systemPath: system)
                == ConfigLookup(path: system, origin: .system))
        #expect(ConfigLookup.resolve(flag: nil, environment: [:], systemPath: system)?.origin == .system)
        // No system file: none (the command's defaults).
        #expect(ConfigLookup.resolve(flag: nil, environment: [:], systemPath: s.path("etc/missing.yaml")) == nil)
        // A named file that is missing is still the one named (loading it says so), never a fallback.
        #expect(ConfigLookup.resolve(flag: nil, environment: env, systemPath: system)?.path == s.path("env.yaml"))
    }

    @Test("KLAXON_CONFIG is read by every command that takes --config; --config wins over it")
    func configFromEnvironment() async throws {
        let s = try Scratch()
        try s.write("r.yaml", levelsRule)
        let cfg = try s.write(
            "klaxon.yaml", "database: k.sqlite\nrules: [r.yaml]\nreceivers:\n  - {name: console, type: stdout}\n")
        let env = [ConfigLookup.environmentVariable: cfg]
        // check validates the config KLAXON_CONFIG names, with its rules.
        let check = try await klaxonAsync(["check"], in: s.dir, environment: env)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("ok: 1 rules in 1 files"), "\(check.stdout)")
        // The store of the config: its database:, and the error says where the path came from.
        let list = try await klaxonAsync(["silence", "list"], in: s.dir, environment: env)
        #expect(list.status == 1)
        #expect(list.stderr.contains("no database at \(s.path("k.sqlite"))"), "\(list.stderr)")
        #expect(list.stderr.contains("from database: in \(cfg), found through KLAXON_CONFIG"), "\(list.stderr)")
        // --config wins.
        let other = try s.write("other.yaml", "database: other.sqlite\n")
        let flag = try await klaxonAsync(["silence", "list", "--config", other], in: s.dir, environment: env)
        #expect(flag.stderr.contains("other.sqlite"), "\(flag.stderr)")
        // A variable naming a missing file is an error, not a fallback.
        let missing = try await klaxonAsync(
            ["check"], in: s.dir, environment: [ConfigLookup.environmentVariable: s.path("nope.yaml")])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("nope.yaml"), "\(missing.stderr)")
        // routes show and notify-test find it too.
        let routes = try await klaxonAsync(["routes", "show"], in: s.dir, environment: env)
        #expect(routes.status == 0, "\(routes.stderr)")
        let notify = try await klaxonAsync(["notify-test", "nobody"], in: s.dir, environment: env)
        #expect(notify.stderr.contains("no receiver \"nobody\" (receivers are console)"), "\(notify.stderr)")
        #expect(try Self.contents(s.dir) == ["klaxon.yaml", "other.yaml", "r.yaml"])
    }

    @Test(
        "a command that reads never creates a database: each fails naming where it looked, and leaves the folder empty")
    func readCommandsCreateNothing() async throws {
        let s = try Scratch()
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: rules, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: rules) }
        try levelsRule.write(to: rules.appendingPathComponent("r.yaml"), atomically: true, encoding: .utf8)
        let commands: [[String]] = [
            ["silence", "list"], ["silence", "expire", "abc"], ["outbox", "list"], ["outbox", "retry", "x"],
            ["alerts"], ["alerts", "-o", "json"], ["ack", "1"], ["evaluate", "--rules", rules.path],
            ["prune", "--dry-run", "--rules", rules.path], ["quakes"], ["aqi", "Delhi"], ["trip", "list"],
            ["gauge", "G1"],
        ]
        for command in commands {
            let r = try await klaxonAsync(command, in: s.dir, environment: Self.noConfig)
            #expect(r.status == 1, "\(command): \(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("no database at ./klaxon.sqlite"), "\(command): \(r.stderr)")
            let left = try Self.contents(s.dir)
            #expect(left.isEmpty, "\(command) created \(left)")
        }
        let told = try await klaxonAsync(["silence", "list"], in: s.dir, environment: Self.noConfig)
        #expect(
            told.stderr.contains("no database at ./klaxon.sqlite (no such file; from the default)"), "\(told.stderr)")
        #expect(told.stderr.contains("set --db, database: in the config, or KLAXON_CONFIG"), "\(told.stderr)")
        // routes test reads silences only from a database that exists.
        let cfg = try s.write("c.yaml", "receivers:\n  - {name: console, type: stdout}\ndefault_receiver: console\n")
        let routes = try await klaxonAsync(["routes", "test", "--config", cfg, "rule=x"], in: s.dir)
        #expect(routes.status == 0, "\(routes.stderr)")
        #expect(routes.stdout.contains("silences: not checked (no database)"), "\(routes.stdout)")
        #expect(try Self.contents(s.dir) == ["c.yaml"])
    }

    @Test("read commands on an existing database leave no -wal or -shm behind")
    func readOnlyOpensLeaveNoLitter() async throws {
        let s = try Scratch()
        let csv = try s.write("r.csv", Self.risingCSV)
        let db = s.path("k.sqlite")
        #expect(await InProcess.ingest(db: db, csv).status == 0)
        let before = try Self.contents(s.dir)
        for command in [["silence", "list"], ["outbox", "list"], ["alerts"], ["quakes"]] {
            let r = try await klaxonAsync(command + ["--db", db], in: s.dir, environment: Self.noConfig)
            #expect(r.status == 0, "\(command): \(r.stderr)")
            let after = try Self.contents(s.dir)
            #expect(after == before, "\(command) left \(after)")
        }
    }

    /// A database with the `stages` alert firing at G1 (minor) and G2 (action).
    func firing(_ s: Scratch) async throws -> (db: String, rules: String) {
        let rules = try s.write("r.yaml", levelsRule)
        let csv = try s.write("r.csv", Self.risingCSV)
        let db = s.path("k.sqlite")
        #expect(await InProcess.ingest(db: db, csv).status == 0)
        let eval = await InProcess.evaluate(db: db, rules: [rules], now: "2026-01-01T01:00:00Z")
        #expect(eval.status == 0, "\(eval.stderr)")
        return (db, rules)
    }

    @Test("alerts lists what fires (text and JSON, filtered by matchers); ack acks it as the site and chat do")
    func alertsAndAck() async throws {
        let s = try Scratch()
        let (db, _) = try await firing(s)
        let json = try await klaxonAsync(["alerts", "--db", db, "-o", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]])
        #expect(list.count == 2)
        let g1 = try #require(list.first { $0["station"] as? String == "G1" })
        #expect(g1["rule"] as? String == "stages")
        #expect(g1["state"] as? String == "firing")
        #expect(g1["level"] as? String == "minor")
        #expect(g1["silenced"] as? Bool == false)
        #expect(g1["acked_by"] == nil)
        for key in ["id", "severity", "since", "level_since", "summary", "metric", "silenced_by", "labels"] {
            #expect(g1[key] != nil, "missing \(key)")
        }
        let id = try #require(g1["id"] as? Int)
        let severity = try #require(g1["severity"] as? String)

        // Matchers, as amtool takes them.
        let one = try await klaxonAsync(["alerts", "--db", db, "--format", "json", "station=G1", "rule=~sta.*"])
        #expect(try JSONSerialization.jsonObject(with: Data(one.stdout.utf8)) as? [Any] != nil)
        #expect((try JSONSerialization.jsonObject(with: Data(one.stdout.utf8)) as? [Any])?.count == 1)
        let none = try await klaxonAsync(["alerts", "--db", db, "severity!=\(severity)"])
        #expect(none.stdout == "(no firing alert matches)\n", "\(none.stdout)")
        let bad = try await klaxonAsync(["alerts", "--db", db, "rule"])
        #expect(bad.status == 64, "\(bad.stderr)")

        // Text: aligned columns under a header.
        let text = try await klaxonAsync(["alerts", "--db", db])
        let lines = text.lines
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("ID"))
        let column = try #require(lines[0].range(of: "RULE")).lowerBound.utf16Offset(in: lines[0])
        for line in lines.dropFirst() {
            #expect(line.utf16.count > column && Array(line.utf16)[column] == UInt16(UInt8(ascii: "s")), "\(line)")
        }

        // ack: unknown and malformed ids, then the real one.
        let unknown = try await klaxonAsync(["ack", "--db", db, "999999"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no firing alert has id 999999"), "\(unknown.stderr)")
        let malformed = try await klaxonAsync(["ack", "--db", db, "abc"])
        #expect(malformed.status == 64, "\(malformed.stderr)")
        let claimed = try await klaxonAsync(["ack", "--db", db, "\(id)", "--by", "slack:boss"])
        #expect(claimed.status == 64, "\(claimed.stderr)")
        let ack = try await klaxonAsync(["ack", "--db", db, "\(id)", "--by", "alice"])
        #expect(ack.status == 0, "\(ack.stderr)")
        #expect(ack.stdout.contains("acked #\(id): stages at G1 by alice"), "\(ack.stdout)")
        let after = try await klaxonAsync(["alerts", "--db", db, "-o", "json", "station=G1"])
        let acked = try #require(
            (try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [[String: Any]])?.first)
        #expect(acked["acked_by"] as? String == "alice")
        #expect(acked["acked_at"] as? String != nil)
        // A second ack of the same episode says who acked first and changes nothing (issue 39).
        let again = try await klaxonAsync(["ack", "--db", db, "\(id)", "--by", "bob"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("already acked by alice"), "\(again.stdout)")
        let still = try await klaxonAsync(["alerts", "--db", db, "-o", "json", "station=G1"])
        #expect(still.stdout.contains(#""acked_by":"alice""#) || still.stdout.contains(#""acked_by" : "alice""#))

        // A silence shows.
        // With no $USER (systemd, cron, containers) the author is the account's name, not "unknown".
        let add = try await klaxonAsync(
            ["silence", "add", "--db", db, "--match", "station=G2", "--for", "1h", "--comment", "works"],
            environment: ["USER": ""])
        #expect(add.status == 0, "\(add.stderr)")
        let query = await InProcess.silenceList(db: db)
        #expect(query.stdout.contains("by \(NSUserName()):"), "\(query.stdout)")
        let silenced = try await klaxonAsync(["alerts", "--db", db, "-o", "json", "station=G2"])
        let g2 = try #require(
            (try JSONSerialization.jsonObject(with: Data(silenced.stdout.utf8)) as? [[String: Any]])?.first)
        #expect(g2["silenced"] as? Bool == true)
        #expect((g2["silenced_by"] as? [String])?.count == 1)
    }

    static let routedConfig = """
        receivers:
          - {name: console, type: stdout}
          - {name: pager, type: stdout}
          - {name: chat, type: stdout}
        default_receiver: console
        routes:
          - match: {severity: critical}
            receivers: [pager]
            group_by: [rule]
            group_wait: 30s
            group_interval: 5m
            repeat_interval: 4h
            continue: true
            escalate_after: 30m
            escalate_to: chat
          - match: {rule: "~river-.*"}
            receivers: [chat]
            quiet_hours: {timezone: America/Chicago, from: "22:00", to: "07:00", policy: defer}

        """

    @Test("routes show prints the tree; routes test says which receivers, which group, quiet hours and silences")
    func routesShowAndTest() async throws {
        let s = try Scratch()
        let cfg = try s.write("klaxon.yaml", Self.routedConfig)
        let show = try await klaxonAsync(["routes", "show", "--config", cfg])
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.lines.count == 3)
        #expect(show.lines[0].hasPrefix("└── default  receivers: console"), "\(show.stdout)")
        #expect(show.lines[1].contains("#1 {severity=critical}  receivers: pager  group_by: [rule]  group_wait: 30s"))
        #expect(show.lines[1].contains("repeat_interval: 4h  continue: true  escalate_after: 30m → chat"))
        #expect(show.lines[2].contains("quiet_hours: 22:00–07:00 America/Chicago (defer)"), "\(show.stdout)")
        let showJSON = try await klaxonAsync(["routes", "show", "--config", cfg, "--format", "json"])
        let tree = try #require(try JSONSerialization.jsonObject(with: Data(showJSON.stdout.utf8)) as? [String: Any])
        let routes = try #require(tree["routes"] as? [[String: Any]])
        #expect(routes.count == 2)
        #expect(routes[0]["continue"] as? Bool == true)
        #expect(routes[0]["group_by"] as? [String] == ["rule"])
        #expect((routes[1]["quiet_hours"] as? [String: Any])?["timezone"] as? String == "America/Chicago")
        #expect((tree["default"] as? [String: Any])?["receivers"] as? [String] == ["console"])

        // amtool's first line: the receivers. Critical river alerts go to pager (continue) and chat.
        let test = try await klaxonAsync([
            "routes", "test", "--config", cfg, "--now", "2026-01-01T12:00:00Z", "rule=river-x", "severity=critical",
            "station=G1",
        ])
        #expect(test.status == 0, "\(test.stderr)")
        #expect(test.lines.first == "pager,chat", "\(test.stdout)")
        #expect(test.stdout.contains("pager: route #1  group {rule=river-x}  group_wait: 30s"), "\(test.stdout)")
        // At 23:00 in Chicago (05:00 UTC) the chat route is in quiet hours, until 07:00 there.
        let night = try await klaxonAsync([
            "routes", "test", "--config", cfg, "--now", "2026-01-01T05:00:00Z", "rule=river-x", "--format", "json",
        ])
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(night.stdout.utf8)) as? [String: Any])
        let receivers = try #require(answer["receivers"] as? [[String: Any]])
        #expect(receivers.map { $0["receiver"] as? String } == ["chat"])
        #expect(receivers[0]["quiet_now"] as? Bool == true)
        #expect(receivers[0]["quiet_until"] as? String == "2026-01-01T13:00:00Z")
        #expect(receivers[0]["group_key"] as? String == "rule=river-x,station=,metric=")
        #expect(answer["silences_checked"] as? Bool == false)
        // Nothing matches: the default receiver.
        let other = try await klaxonAsync(["routes", "test", "--config", cfg, "rule=other"])
        #expect(other.lines.first == "console")

        // With a database, an active silence that matches is named.
        let (db, _) = try await firing(s)
        let add = await InProcess.silenceAdd(db: db, match: ["rule=~river-.*"], for: "1h", comment: "works")
        let silenceID = try #require(add.stdout.split(separator: " ").first.map(String.init))
        let muted = try await klaxonAsync([
            "routes", "test", "--config", cfg, "--db", db, "rule=river-x", "--format", "json",
        ])
        let mutedAnswer = try #require(
            try JSONSerialization.jsonObject(with: Data(muted.stdout.utf8)) as? [String: Any])
        #expect(mutedAnswer["silenced_by"] as? [String] == [silenceID], "\(muted.stdout) \(muted.stderr)")
        #expect(mutedAnswer["silences_checked"] as? Bool == true)
    }

    @Test(
        "routes test rule=X tests X's real alert: its severity and labels, and the quiet hours it bypasses (issue 39)")
    func routesTestTakesTheRulesSeverity() async throws {
        let s = try Scratch()
        try s.write(
            "rules/river.yaml",
            "name: river-crit\nkind: threshold\nmetric: gage_height\nabove: 10\nseverity: critical\nlabels: {team: river}\n"
        )
        let cfg = try s.write(
            "klaxon.yaml",
            "rules: [rules]\n"
                + Self.routedConfig.replacingOccurrences(
                    of: "policy: defer}", with: "policy: defer, bypass_severity: critical}"))
        // 05:00 UTC is 23:00 in Chicago: the chat route's quiet hours, which a critical alert bypasses.
        let night = try await klaxonAsync([
            "routes", "test", "--config", cfg, "--now", "2026-01-01T05:00:00Z", "rule=river-crit", "--format", "json",
        ])
        #expect(night.status == 0, "\(night.stderr)")
        let answer = try #require(try JSONSerialization.jsonObject(with: Data(night.stdout.utf8)) as? [String: Any])
        let receivers = try #require(answer["receivers"] as? [[String: Any]])
        #expect(receivers.map { $0["receiver"] as? String } == ["pager", "chat"], "\(night.stdout)")
        #expect(receivers.allSatisfy { $0["quiet_now"] as? Bool == false }, "\(night.stdout)")
        let labels = answer["labels"] as? [String: String]
        #expect(labels?["severity"] == "critical" && labels?["team"] == "river", "\(night.stdout)")
        // A label given on the command line still wins over the rule's.
        let warned = try await klaxonAsync([
            "routes", "test", "--config", cfg, "--now", "2026-01-01T05:00:00Z", "rule=river-crit", "severity=warning",
        ])
        #expect(warned.lines.first == "chat", "\(warned.stdout)")
    }

    @Test("--format json on check, test, silence list and outbox list; test --junit writes well-formed JUnit XML")
    func jsonFormatsAndJUnit() async throws {
        let s = try Scratch()
        // check: errors as objects with file, line, column, message.
        let bad = try s.write("bad.yaml", "name: x\nkind: threshold\nmetric: m\nabove: 1\nbogus: 2\n")
        let check = try await klaxonAsync(["check", "--rules", bad, "--format", "json"], environment: Self.noConfig)
        #expect(check.status == 1)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any])
        #expect(report["ok"] as? Bool == false)
        let errors = try #require(report["errors"] as? [[String: Any]])
        #expect(
            errors.contains { $0["file"] as? String == bad && $0["line"] as? Int == 5 && $0["column"] as? Int == 1 })
        #expect(errors.allSatisfy { $0["message"] is String })
        let good = try s.write("good.yaml", thresholdRule)
        let ok = try await klaxonAsync(["check", "--rules", good, "--format", "json"], environment: Self.noConfig)
        #expect(ok.status == 0)
        let okReport = try #require(try JSONSerialization.jsonObject(with: Data(ok.stdout.utf8)) as? [String: Any])
        #expect(okReport["ok"] as? Bool == true)
        #expect(okReport["rules"] as? Int == 1)

        // test: JSON and JUnit, with a name that needs escaping.
        try s.write("r.yaml", thresholdRule)
        let tests = try s.write(
            "t.yaml",
            """
            rule_files: [r.yaml]
            tests:
              - name: "wrong <on> & \\"purpose\\""
                series:
                  - {station: G1, metric: gage_height, values: "12x4"}
                expect:
                  - at: 15m
                    firing: [{rule: high, station: G1}]
              - name: right
                series:
                  - {station: G1, metric: gage_height, values: "12x4"}
                expect:
                  - at: 30m
                    firing: [{rule: high, station: G1}]
            """)
        let junit = s.path("out/junit.xml")
        try FileManager.default.createDirectory(atPath: s.path("out"), withIntermediateDirectories: true)
        let run = try await klaxonAsync(["test", tests, "--format", "json", "--junit", junit])
        #expect(run.status == 1)
        let results = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
        #expect(results["passed"] as? Int == 1)
        #expect(results["failed"] as? Int == 1)
        let cases = try #require(results["tests"] as? [[String: Any]])
        #expect(cases.map { $0["name"] as? String } == ["wrong <on> & \"purpose\"", "right"])
        #expect(cases.map { $0["passed"] as? Bool } == [false, true])
        #expect((cases[0]["failure"] as? String)?.contains("expected firing: high G1") == true)
        // Parsed by Python's own XML parser: promtool's shape.
        let parsed = try await python(
            """
            import sys, xml.etree.ElementTree as ET
            root = ET.parse(sys.stdin.buffer).getroot()
            print(root.tag)
            for suite in root:
                print(suite.tag, suite.get("name"), suite.get("tests"), suite.get("failures"), suite.get("errors"))
                for case in suite:
                    print(case.tag, case.get("name"), [f.tag for f in case], "expected firing" in "".join(f.text or "" for f in case))
            """, input: try Data(contentsOf: URL(fileURLWithPath: junit)))
        let lines = String(decoding: parsed, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(
            lines == [
                "testsuites", "testsuite \(tests) 2 1 0",
                "testcase wrong <on> & \"purpose\" ['failure'] True", "testcase right [] False",
            ], "\(lines)")

        // silence list and outbox list.
        let (db, _) = try await firing(s)
        let add = await InProcess.silenceAdd(db: db, match: ["rule=stages"], for: "1h", comment: "c", author: "bob")
        #expect(add.status == 0, "\(add.stderr)")
        let silences = try await klaxonAsync(["silence", "list", "--db", db, "--format", "json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(silences.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 1)
        #expect(rows[0]["matchers"] as? [String] == ["rule=stages"])
        #expect(rows[0]["created_by"] as? String == "bob")
        #expect(rows[0]["active"] as? Bool == true)
        let outbox = try await klaxonAsync(["outbox", "list", "--db", db, "--format", "json"])
        #expect(outbox.status == 0, "\(outbox.stderr)")
        #expect(try JSONSerialization.jsonObject(with: Data(outbox.stdout.utf8)) as? [Any] != nil, "\(outbox.stdout)")
    }

    @Test("help prints each default once; exit codes: 0 help, 64 usage, 1 failure")
    func helpAndExitCodes() async throws {
        let root = try await klaxonAsync(["--help"])
        #expect(root.status == 0)
        let commands = [
            "demo", "check", "ingest", "evaluate", "dry-run", "test", "dispatch", "outbox list", "outbox retry",
            "silence add", "silence list", "silence expire", "notify-test", "run", "fetch", "gauge", "quakes", "aqi",
            "trip add", "trip list", "prune", "migrate-store", "alerts", "ack", "routes show", "routes test",
        ]
        for command in commands {
            let r = try await klaxonAsync(["help"] + command.split(separator: " ").map(String.init))
            #expect(r.status == 0, "\(command): \(r.stderr)")
            // One option's text runs from its "  -" line to the next.
            let options = r.stdout.components(separatedBy: "\n  -").dropFirst()  // the first is the overview
            for option in options {
                let defaults = option.components(separatedBy: "default").count - 1
                #expect(defaults <= 1, "\(command): \(option)")
            }
        }
        #expect(try await klaxonAsync(["alerts", "--bogus"]).status == 64)
        #expect(try await klaxonAsync(["frobnicate"]).status == 64)
        let noConfig = try await klaxonAsync(["routes", "show"], environment: Self.noConfig)
        if !FileManager.default.fileExists(atPath: ConfigLookup.systemPath) {
            #expect(noConfig.status == 64, "\(noConfig.stderr)")
            #expect(noConfig.stderr.contains("routes needs a config: give --config klaxon.yaml or set KLAXON_CONFIG"))
        }
    }

    @Test("completion scripts complete files, and receiver and rule names from the config")
    func completions() async throws {
        let s = try Scratch()
        try s.write("Rules/r.yaml", levelsRule)
        let cfg = try s.write(
            "klaxon.yaml",
            "rules: [Rules]\nreceivers:\n  - {name: console, type: stdout}\n  - {name: pager, type: stdout}\n")
        for shell in ["bash", "zsh", "fish"] {
            let r = try await klaxonAsync(["--generate-completion-script", shell])
            #expect(r.status == 0)
            #expect(r.stdout.contains("---completion"), "\(shell)")
        }
        let bash = try await klaxonAsync(["--generate-completion-script", "bash"])
        #expect(bash.stdout.contains("yaml"), "file completion of --config by extension")
        // The shells call back `klaxon ---completion SUBCOMMAND -- ARG WORD-INDEX CURSOR-IN-WORD WORDS…`.
        let receivers = try await klaxonAsync(
            [
                "---completion", "notify-test", "--", "positional@0", "4", "0", "klaxon", "notify-test", "--config",
                cfg,
                "",
            ],
            in: s.dir)
        #expect(receivers.lines == ["console", "pager"], "\(receivers.stdout) \(receivers.stderr)")
        let rules = try await klaxonAsync(
            ["---completion", "alerts", "--", "positional@0", "2", "5", "klaxon", "alerts", "rule="],
            in: s.dir, environment: [ConfigLookup.environmentVariable: cfg])
        #expect(rules.lines == ["rule=stages"], "\(rules.stdout) \(rules.stderr)")
        // A broken config completes nothing, quietly.
        let broken = try s.write("broken.yaml", "receivers: [\n")
        let quiet = try await klaxonAsync(
            [
                "---completion", "notify-test", "--", "positional@0", "4", "0", "klaxon", "notify-test", "--config",
                broken, "",
            ],
            in: s.dir)
        #expect(quiet.status == 0)
        #expect(quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stdout) \(quiet.stderr)")
    }

    @Test("fetch --timeout bounds a WebSocket source that never answers and one whose port refuses")
    func fetchTimeout() async throws {
        try await HTTPSink.with { silent in
            await silent.script([.never])
            let refused = try ClosedPort()
            let s = try Scratch()
            let cfg = try s.write(
                "klaxon.yaml",
                """
                database: k.sqlite
                sources:
                  - {name: silent, kind: aqi-websocket, url: "ws://127.0.0.1:\(silent.port)/aqi"}
                  - {name: refused, kind: aqi-websocket, url: "ws://127.0.0.1:\(refused.port)/aqi"}
                """)
            let started = ContinuousClock.now
            let r = try await klaxonAsync(
                ["fetch", "--config", cfg, "--timeout", "2s"], in: s.dir, limit: .seconds(60))
            let took = ContinuousClock.now - started
            #expect(!r.killed)
            #expect(took < .seconds(20), "took \(took)")
            // The silent source either listened out the time left with nothing (0 new) or was cut
            // off (FAILED: timed out), whichever came first; the other is skipped or failed.
            #expect(r.stdout.contains("silent (aqi-websocket): "), "\(r.stdout)")
            #expect(r.stdout.contains("refused (aqi-websocket): "), "\(r.stdout)")
            #expect(!r.stdout.contains("refused (aqi-websocket): 0 new"), "\(r.stdout)")

            // The refused port alone: every attempt fails until the time is up, and it says so.
            let refusedOnly = try s.write(
                "refused.yaml",
                """
                database: k.sqlite
                sources:
                  - {name: refused, kind: aqi-websocket, url: "ws://127.0.0.1:\(refused.port)/aqi"}
                """)
            let again = ContinuousClock.now
            let r2 = try await klaxonAsync(
                ["fetch", "--config", refusedOnly, "--timeout", "2s"], in: s.dir, limit: .seconds(60))
            #expect(ContinuousClock.now - again < .seconds(20))
            #expect(r2.status == 1, "\(r2.stdout) \(r2.stderr)")
            #expect(r2.stdout.contains("refused (aqi-websocket): FAILED"), "\(r2.stdout)")
            withExtendedLifetime(refused) {}  // the port stays bound, and refusing, until here
            let bad = try await klaxonAsync(["fetch", "--config", cfg, "--timeout", "soon"], in: s.dir)
            #expect(bad.status == 64, "\(bad.stderr)")
        }
    }
}
