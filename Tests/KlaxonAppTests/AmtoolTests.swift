import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

/// Runs Debian's `amtool` (prometheus-alertmanager 0.25) and collects its output, waiting for it off
/// the cooperative pool (`ProcessExit`); one still running after `limit` is killed (it hung).
func amtool(_ arguments: [String], limit: Duration = .seconds(60)) async throws -> Run {
    let p = Process()
    p.executableURL = AmtoolTests.binary
    p.arguments = arguments
    // amtool reads ~/.config/prometheus/amtool.yml: a home of its own keeps the test's flags the only ones.
    let home = FileManager.default.temporaryDirectory.appendingPathComponent("amtool-home-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    p.environment = ["HOME": home.path, "PATH": "/usr/bin:/bin", "USER": "tester"]
    let outURL = home.appendingPathComponent("out")
    let errURL = home.appendingPathComponent("err")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: home) }
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    p.standardOutput = out
    p.standardError = err
    p.standardInput = FileHandle.nullDevice
    let exit = ProcessExit(p)
    try await launchProcess(p)
    var killed = false
    if await !exit.wait(within: limit), !exit.hasExited {
        kill(p.processIdentifier, SIGKILL)
        killed = true
        _ = await exit.wait(within: .seconds(60))
    }
    try out.close()
    try err.close()
    return Run(
        status: p.terminationStatus,
        stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
        stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self), killed: killed)
}

/// The real client against `klaxon run`: `amtool alert query` (simple, `-o json`, with a filter),
/// `silence add` (the alert is then suppressed), `silence query` (and `-q`), `silence expire`, each
/// with the API token from an `--http.config.file`; without it, 401.
/// `/usr/bin/amtool` comes with Debian's `prometheus-alertmanager` (`Deploy/setup.sh --test`); the
/// test fails without it rather than being skipped.
@Suite("amtool against klaxon run", .serialized, .timeLimit(.minutes(10)))
struct AmtoolTests {
    static let binary = URL(fileURLWithPath: "/usr/bin/amtool")
    static let token = "amtool-test-token-4f1c9b2e"

    /// amtool's `--http.config.file` in `s`, sending `token` as the bearer credentials (from a file).
    static func httpConfig(in s: Scratch, token: String = token) throws -> String {
        let tokenFile = try s.write("secrets/amtool-token", token + "\n")
        return try s.write("amtool-http.yaml", "authorization:\n  credentials_file: \(tokenFile)\n")
    }

    @Test("alert query, silence add, silence query and silence expire work as against Alertmanager")
    func amtoolRoundTrip() async throws {
        let s = try Scratch()
        try s.write("rules/flow.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        let httpConfig = try Self.httpConfig(in: s)
        let cfg = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: [rules]
            listen: 127.0.0.1:0
            api: {token: \(Self.token)}
            external_url: https://klaxon.example.org
            receivers:
              - {name: console, type: stdout}
            default_receiver: console
            """)
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            let url = "--alertmanager.url=\(daemon.base)/"
            func run(_ args: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> Run {
                let r = try await amtool([url, "--http.config.file=\(httpConfig)"] + args)
                #expect(r.status == 0 && !r.killed, "amtool \(args): \(r.stderr)", sourceLocation: sourceLocation)
                return r
            }

            // Without the token: 401, and amtool fails.
            #expect(try await http("GET", daemon.base + "/api/v2/alerts").0 == 401)
            let refused = try await amtool([url, "alert", "query"])
            #expect(refused.status != 0 && !refused.killed, "\(refused.stdout)")

            // A reading over the threshold: `high` fires at S1.
            let time = Timestamp.format(Int64(Date().timeIntervalSince1970) - 60)
            let pushed = try await http(
                "POST", daemon.base + "/api/v1/readings",
                body: "station,metric,time,value\nS1,gage_height,\(time),500\n",
                token: Self.token)
            #expect(pushed.0 == 200, "\(pushed.1)")
            try await poll(until: "the alert fires") {
                let (status, body) = try await http("GET", daemon.base + "/api/v2/alerts", token: Self.token)
                return status == 200 && body.contains("\"alertname\":\"high\"")
            }

            let table = try await run(["alert", "query"])
            #expect(table.lines.first?.hasPrefix("Alertname") == true, "\(table.stdout)")
            #expect(table.lines.count == 2 && table.lines[1].hasPrefix("high "), "\(table.stdout)")
            #expect(table.lines.last?.contains("active") == true, "\(table.stdout)")

            let json = try await run(["-o", "json", "alert", "query", "alertname=high"])
            let alerts = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [[String: Any]] ?? []
            #expect(alerts.count == 1)
            let labels = alerts.first?["labels"] as? [String: String] ?? [:]
            #expect(labels["alertname"] == "high" && labels["station"] == "S1" && labels["metric"] == "gage_height")
            #expect((alerts.first?["status"] as? [String: Any])?["state"] as? String == "active")
            #expect((alerts.first?["generatorURL"] as? String)?.hasPrefix("https://klaxon.example.org/alerts/") == true)
            let filtered = try await run(["alert", "query", "alertname=~\"lo.*\""])
            #expect(filtered.lines.count == 1, "only the header: \(filtered.stdout)")

            // Silence it: the id is a UUID, and the alert is suppressed (hidden unless asked for).
            let added = try await run(
                ["silence", "add", "alertname=high", "station=S1", "-a", "ops", "-c", "river crew on site", "-d", "1h"])
            let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(UUID(uuidString: id) != nil, "\(added.stdout)")
            #expect(try await run(["alert", "query"]).lines.count == 1, "a silenced alert is hidden by default")
            let silenced = try await run(["alert", "query", "--silenced"])
            #expect(silenced.lines.count == 2 && silenced.lines[1].contains("suppressed"), "\(silenced.stdout)")
            let silencedJSON = try await run(["-o", "json", "alert", "query", "--silenced"])
            let status =
                (try JSONSerialization.jsonObject(with: Data(silencedJSON.stdout.utf8)) as? [[String: Any]])?
                .first?["status"] as? [String: Any]
            #expect(status?["silencedBy"] as? [String] == [id])

            let silences = try await run(["silence", "query"])
            #expect(silences.lines.first?.hasPrefix("ID") == true)
            #expect(silences.lines.count == 2, "\(silences.stdout)")
            let row = silences.lines.last ?? ""
            #expect(
                row.hasPrefix(id) && row.contains("alertname=\"high\" station=\"S1\"") && row.contains("ops")
                    && row.contains("river crew on site"), "\(row)")
            #expect(try await run(["silence", "query", "-q"]).lines == [id])
            #expect(try await run(["silence", "query", "-q", "station=S1"]).lines == [id])

            // Expire it: gone from the active list, listed with --expired, the alert active again.
            let expired = try await run(["silence", "expire", id])
            #expect(expired.stdout.isEmpty)
            #expect(try await run(["silence", "query", "-q"]).lines.isEmpty)
            #expect(try await run(["silence", "query", "--expired", "-q"]).lines == [id])
            let again = try await run(["alert", "query"])
            #expect(again.lines.count == 2 && again.lines[1].contains("active"), "\(again.stdout)")

            // What Alertmanager would refuse, amtool reports as an error: an unknown silence.
            let unknown = try await amtool(
                [url, "--http.config.file=\(httpConfig)", "silence", "expire", UUID().uuidString.lowercased()])
            #expect(unknown.status != 0)
            #expect(await daemon.stop() == 0)
        }
    }
}
