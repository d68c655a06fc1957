import Foundation
import KlaxonCore
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Testing

@Suite(.serialized) struct DeliveryCLITests {
    /// 200 stations, each one reading above the threshold: 200 firing transitions, 200 outbox rows.
    func prepare(_ s: Scratch, hookURL: String, extraConfig: String = "") async throws -> (
        config: String, db: String, stations: [String]
    ) {
        let stations = (0..<200).map { String(format: "ST%03d", $0) }
        var csv = "station,metric,time,value\n"
        for st in stations { csv += "\(st),gage_height,2026-01-01T00:00:00Z,20\n" }
        try s.write("r.csv", csv)
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\nnotify: [hook]\n")
        let config = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: rules
            receivers:
              - name: hook
                type: webhook
                preset: generic
                url: \(hookURL)
            \(extraConfig)
            """)
        #expect(await InProcess.ingest(config: config, s.path("r.csv")).status == 0)
        let eval = await InProcess.evaluate(config: config, now: "2026-01-01T00:05:00Z")
        #expect(eval.status == 0, "\(eval.stderr)")
        #expect(eval.stderr.contains("200 transitions queued in the outbox"))
        return (config, s.path("k.sqlite"), stations)
    }

    @Test func dispatchKilledMidBatchLosesNothingAndKeepsKeys() async throws {
        try await HTTPSink.with { sink in try await dispatchKilledMidBatchLosesNothingAndKeepsKeys(sink: sink) }
    }

    func dispatchKilledMidBatchLosesNothingAndKeepsKeys(sink: HTTPSink) async throws {
        // Slow answers, then none at all: the kill lands while requests are in flight, however fast the
        // dispatcher and however late the kill.
        await sink.script(
            Array(repeating: .hang(seconds: 0.1), count: 40) + Array(repeating: .never, count: 400))
        let s = try Scratch()
        let (config, db, stations) = try await prepare(s, hookURL: sink.url + "/hook")

        let first = Process()
        first.executableURL = klaxonBinary
        first.arguments = ["dispatch", "--config", config, "--until-empty", "--lease", "1s"]
        first.standardOutput = FileHandle.nullDevice
        first.standardError = FileHandle.nullDevice
        let firstExit = ProcessExit(first)
        try await launchProcess(first)
        let before = await sink.waitForRequests(40)
        kill(first.processIdentifier, SIGKILL)
        #expect(await firstExit.wait(within: .seconds(60)), "a killed process ends at once")
        #expect(before.count >= 40)
        #expect(first.terminationReason == .uncaughtSignal)
        let deliveredBeforeKill = await sink.requests().count
        #expect(deliveredBeforeKill < 200, "the kill came too late to test anything")
        await sink.script([])  // the restarted dispatcher's requests are answered at once

        let second = try await klaxonAsync([
            "dispatch", "--config", config, "--until-empty", "--lease", "1s", "--deadline", "60s",
        ])
        #expect(second.status == 0, "\(second.stderr)")

        let store = try SQLiteStore.openReadOnly(path: db)
        let rows = try await store.outbox(state: nil, limit: 1000)
        #expect(rows.count == 200)
        #expect(rows.allSatisfy { $0.state == .sent })
        let keyByStation = Dictionary(
            uniqueKeysWithValues: rows.map { row in
                (String(row.alert.split(separator: "|")[1]), row.id)
            })
        var keysSeen: [String: Set<String>] = [:]
        for r in await sink.requests() {
            let alerts = (r.json?["alerts"] as? [[String: Any]]) ?? []
            for a in alerts {
                if let st = (a["labels"] as? [String: String])?["station"] {
                    keysSeen[st, default: []].insert(r.headers["idempotency-key"] ?? "")
                }
            }
        }
        #expect(Set(keysSeen.keys) == Set(stations), "every row delivered at least once")
        for (station, keys) in keysSeen {
            #expect(keys == [keyByStation[station] ?? "?"], "\(station) was sent under \(keys)")
        }
    }

    @Test("a stdout receiver whose reader has gone: the row is dead with the reason, the dispatcher goes on")
    func stdoutToAClosedPipe() async throws {
        let s = try Scratch()
        try s.write("r.csv", "station,metric,time,value\nG1,gage_height,2026-01-01T00:00:00Z,20\n")
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\n")
        let config = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: rules
            receivers:
              - {name: console, type: stdout}
            default_receiver: console
            """)
        #expect(await InProcess.ingest(config: config, s.path("r.csv")).status == 0)
        #expect(await InProcess.evaluate(config: config, now: "2026-01-01T00:05:00Z").status == 0)
        let p = Process()
        p.executableURL = klaxonBinary
        p.arguments = ["dispatch", "--config", config, "--until-empty"]
        let pipe = Pipe()
        try pipe.fileHandleForReading.close()  // nobody reads: a write gets EPIPE
        p.standardOutput = pipe.fileHandleForWriting
        p.standardError = FileHandle.nullDevice
        let exit = ProcessExit(p)
        try await launchProcess(p)
        // It ends within a second or so; a minute means it hung.
        guard await exit.wait(within: .seconds(60)) else {
            kill(p.processIdentifier, SIGKILL)
            _ = await exit.wait(within: .seconds(60))
            Issue.record("klaxon dispatch hung writing to a closed pipe")
            return
        }
        #expect(p.terminationReason == .exit, "killed by a signal")
        #expect(p.terminationStatus == 0)
        let dead = await InProcess.outboxList(config: config, state: "dead")
        #expect(dead.lines.count == 1, "\(dead.stdout)")
        #expect(dead.stdout.contains("error=receiver console: stdout: Broken pipe"), "\(dead.stdout)")
    }

    @Test func outboxListRetryAndSilences() async throws {
        try await HTTPSink.with { sink in try await outboxListRetryAndSilences(sink: sink) }
    }

    func outboxListRetryAndSilences(sink: HTTPSink) async throws {
        await sink.script(Array(repeating: .respond(status: 410), count: 200))
        let s = try Scratch()
        let (config, _, _) = try await prepare(s, hookURL: sink.url + "/hook")
        let run = try await klaxonAsync(["dispatch", "--config", config, "--until-empty"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("0 sent, 0 retried, 200 dead"))
        let dead = await InProcess.outboxList(config: config, state: "dead")
        #expect(dead.lines.count == 200)
        #expect(dead.stdout.contains("HTTP 410"))
        let id = try #require(dead.lines.first?.split(separator: " ").first.map(String.init))
        #expect(await InProcess.outboxRetry(config: config, id).status == 0)
        let again = try await klaxonAsync(["dispatch", "--config", config, "--until-empty"])
        #expect(again.stderr.contains("1 sent"), "\(again.stderr)")
        #expect(await InProcess.outboxRetry(config: config, "nope").status == 1)

        // Silences: add, list, and a silenced alert is muted, not sent.
        let add = await InProcess.silenceAdd(
            config: config, match: ["rule=high", "station=~ST00."], for: "2h", comment: "maintenance")
        #expect(add.status == 0, "\(add.stderr)")
        let list = await InProcess.silenceList(config: config)
        #expect(list.stdout.contains("rule=high station=~ST00.") && list.stdout.contains("maintenance"))
        let silenceID = try #require(add.lines.first?.split(separator: " ").first.map(String.init))
        #expect(await InProcess.silenceExpire(config: config, silenceID).status == 0)
        #expect(await InProcess.silenceList(config: config).stdout.contains("(no silences)"))
        let bad = await InProcess.silenceAdd(config: config, match: ["nonsense"], for: "2h", comment: "x")
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("must look like NAME=VALUE"))
    }

    @Test func dryRunRendersTheExactPayload() async throws {
        let s = try Scratch()
        try s.write(
            "rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\nnotify: [chat, mail]\n")
        try s.write("r.csv", "station,metric,time,value\nG1,gage_height,2026-01-01T00:00:00Z,12\n")
        let config = try s.write(
            "klaxon.yaml",
            """
            rules: rules
            receivers:
              - {name: chat, type: webhook, preset: discord, url: "https://discord.example/api/webhooks/SECRET"}
              - {name: mail, type: email, smtp_url: "smtp://127.0.0.1:2525", from: a@example.org, to: [b@example.org]}
            """)
        let chat = await InProcess.dryRun(readings: [s.path("r.csv")], render: "chat", config: config)
        #expect(chat.status == 0, "\(chat.stderr)")
        #expect(chat.lines.first == "--- 1: high G1 firing at 2026-01-01T00:00:00Z → chat")
        let body = try #require(chat.lines.dropFirst().first)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect((json["content"] as? String)?.contains("G1: gage height 12, at or above 10") == true, "\(json)")
        let mail = await InProcess.dryRun(readings: [s.path("r.csv")], render: "mail", config: config)
        #expect(mail.stdout.contains("Message-ID: <alert-1.mail@example.org>"), "\(mail.stdout)")
        #expect(mail.stdout.contains("X-Klaxon-Key: "))
        #expect(mail.stdout.contains("Subject: G1: gage height 12, at or above 10"))
        #expect(mail.stdout.contains("Content-Type: multipart/alternative"))
        let unknown = await InProcess.dryRun(readings: [s.path("r.csv")], render: "pager", config: config)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no receiver \"pager\" (receivers are chat, mail)"))
    }

    @Test("dry-run --render shows Slack's blocks, buttons and chart, and Mattermost's signed buttons, as sent")
    func dryRunRendersBlocksAndButtons() async throws {
        let s = try Scratch()
        try s.write(
            "rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\nnotify: [slack, mm]\n")
        try s.write("r.csv", "station,metric,time,value\nG1,gage_height,2026-01-01T00:00:00Z,12\n")
        let config = try s.write(
            "klaxon.yaml",
            """
            rules: rules
            external_url: https://klaxon.example.org
            chat:
              mattermost: {token: mm-token}
            receivers:
              - {name: slack, type: webhook, preset: slack, url: "https://hooks.slack.com/services/T/B/SECRET"}
              - {name: mm, type: webhook, preset: mattermost, url: "https://mm.example.org/hooks/SECRET"}
            """)
        let slack = await InProcess.dryRun(readings: [s.path("r.csv")], render: "slack", config: config)
        #expect(slack.status == 0, "\(slack.stderr)")
        let body = try #require(slack.lines.dropFirst().first)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(ChatPayloadShape.slackProblems(json) == [])
        let blocks = try #require(json["blocks"] as? [[String: Any]])
        #expect(blocks.map { $0["type"] as? String } == ["header", "section", "context", "image", "actions"])
        #expect(blocks[3]["image_url"] as? String == "https://klaxon.example.org/gauges/G1/chart.png?range=48h")
        let buttons = (blocks[4]["elements"] as? [[String: Any]] ?? []).map {
            ($0["text"] as? [String: Any])?["text"] as? String
        }
        #expect(buttons == ["Open", "River gauge", "Ack", "Silence 1h"])
        #expect(!slack.stdout.contains("SECRET"))

        let mm = await InProcess.dryRun(readings: [s.path("r.csv")], render: "mm", config: config)
        #expect(mm.status == 0, "\(mm.stderr)")
        let mmBody = try #require(mm.lines.dropFirst().first)
        let mmJSON = try #require(try JSONSerialization.jsonObject(with: Data(mmBody.utf8)) as? [String: Any])
        #expect(ChatPayloadShape.mattermostProblems(mmJSON) == [])
        let actions = try #require((mmJSON["attachments"] as? [[String: Any]])?.first?["actions"] as? [[String: Any]])
        let context = (actions.first?["integration"] as? [String: Any])?["context"]
        let verified = MattermostActions.verify(
            jsonValue(context), key: MattermostActions.key(token: "mm-token"), now: Int64(Date().timeIntervalSince1970))
        #expect((try? verified.get())?.action == .ack)
        #expect(!mm.stdout.contains("mm-token") && !mm.stdout.contains("SECRET"))
    }

    @Test func notifyTestSendsForRealAndReportsFailures() async throws {
        try await HTTPSink.with { sink in try await notifyTestSendsForRealAndReportsFailures(sink: sink) }
    }

    func notifyTestSendsForRealAndReportsFailures(sink: HTTPSink) async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            receivers:
              - {name: hook, type: webhook, preset: generic, url: "\(sink.url)/hooks/SECRET-TOKEN"}
            """)
        let ok = try await klaxonAsync(["notify-test", "--config", config, "hook"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("sent a test message to hook"))
        let got = await sink.requests()
        #expect(got.count == 1)
        let labels = ((got.first?.json?["alerts"] as? [[String: Any]])?.first?["labels"]) as? [String: String]
        #expect(labels?["alertname"] == "klaxon-test")

        await sink.script([.respond(status: 403, body: "forbidden")])
        let failed = try await klaxonAsync(["notify-test", "--config", config, "hook"])
        #expect(failed.status == 1)
        #expect(failed.stderr.contains("HTTP 403"))
        #expect(!failed.stderr.contains("SECRET"))

        let unknown = try await klaxonAsync(["notify-test", "--config", config, "pager"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no receiver \"pager\" (receivers are hook)"))
    }

    @Test(
        "outbox list --state: the help lists every state the store has, and a wrong one is refused naming them all, before any store is opened (issue 39)"
    )
    func outboxStatesNamed() async throws {
        let s = try Scratch()
        let all = OutboxRecord.State.allCases.map(\.rawValue)
        #expect(all.contains("held") && all.contains("superseded") && all.contains("skipped"))
        let help = try await klaxonAsync(["outbox", "list", "--help"], in: s.dir)
        #expect(help.status == 0, "\(help.stderr)")
        let flat = help.stdout.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(flat.contains("Only rows in this state: \(all.joined(separator: ", "))."), "\(help.stdout)")
        // No database here: the wrong word is what is reported, not the missing store.
        let wrong = try await klaxonAsync(
            ["outbox", "list", "--db", s.path("none.sqlite"), "--state", "deadd"], in: s.dir)
        #expect(wrong.status == 1, "\(wrong.stderr)")
        #expect(
            wrong.stderr.contains("--state must be one of \(all.joined(separator: ", ")) (not \"deadd\")"),
            "\(wrong.stderr)")
        #expect(!FileManager.default.fileExists(atPath: s.path("none.sqlite")))
    }
}
