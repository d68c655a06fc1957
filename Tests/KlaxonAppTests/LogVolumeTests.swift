import Foundation
import KlaxonCore
import KlaxonSQLite
import KlaxonTesting
import Logging
import Testing

@testable import KlaxonApp

/// Issue 39, item 10: where the daemon listens is said once, through the logger; a routine poll is
/// a debug line, not one info line per source per poll.
@Suite("log volume: one listening line, polls at debug unless something changed", .serialized, .timeLimit(.minutes(10)))
struct LogVolumeTests {
    static func fetched(_ capture: LogCapture) -> [String] {
        capture.all.filter { $0.contains(" fetched [") }.map { String($0.prefix { $0 != " " }) }
    }

    @Test("fetched: info at the first success and after failures, debug for every other poll")
    func fetchedLevels() async throws {
        try await TestServers.with { servers in
            let upstream = try await servers.sink()
            let body = ivBody(site: "08055000", points: [("2021-04-07T10:00:00.000-05:00", "120", ["P"])])
            await upstream.script([
                .respond(status: 200, body: body), .respond(status: 200, body: body), .respond(status: 200, body: body),
                .respond(status: 500, body: "down"), .respond(status: 200, body: body),
                .respond(status: 200, body: body),
            ])
            let s = try Scratch()
            try s.write("rules/r.yaml", "name: r\nkind: threshold\nmetric: gage_height\nabove: 1000\n")
            let path = try s.write(
                "klaxon.yaml",
                """
                database: \(s.path("k.sqlite"))
                rules: [\(s.path("rules"))]
                listen: 127.0.0.1:0
                sources:
                  - {name: texas, kind: usgs-iv, base_url: "\(upstream.url)/nwis/iv/", sites: ["08055000"], parameters: [gage_height], timeout: 10m}
                """)
            let config = try Config.load(path: path)
            let store = try SQLiteStore.open(path: s.path("k.sqlite"))
            let capture = LogCapture()
            let daemon = Daemon(
                config: config, store: store, rules: try RuleLoader.load(paths: config.rules ?? []),
                logger: capture.logger("klaxon"))
            let source = try #require(config.sources.first)
            for n in 0..<6 {
                _ = await daemon.poll(source, now: 1_700_000_000 + Int64(n) * 60)
            }
            // 1st: first success; 2nd, 3rd: routine; 4th fails; 5th: recovered; 6th: routine. (The source
            // waits as long as the machine needs: a soak's starved run timed the first poll out at 30 s, and
            // a failure there is a 'recovered' line the story does not have.)
            #expect(Self.fetched(capture) == ["info", "debug", "debug", "info", "debug"], "\(capture.all)")
            #expect(capture.all.filter { $0.hasPrefix("info ") }.count == 2, "\(capture.all)")
        }
    }

    @Test("klaxon run says where it listens once, as a JSON record in a JSON log; no line is plain text")
    func listeningOnce() async throws {
        let s = try Scratch()
        try s.write("rules/r.yaml", "name: r\nkind: threshold\nmetric: m\nabove: 1\n")
        let cfg = try s.write("klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: 127.0.0.1:0\n")
        for format in ["json", "logfmt"] {
            let daemon = try await DaemonProcess.start(config: cfg, in: s.dir, arguments: ["--log-format", format])
            #expect(await daemon.stop() == 0)
            let lines = daemon.logText.split(separator: "\n").map(String.init)
            let listening = lines.filter { $0.localizedCaseInsensitiveContains("listening") }
            #expect(listening.count == 1, "\(format): \(lines)")
            if format == "json" {
                #expect(lines.allSatisfy { $0.hasPrefix("{\"time\":") }, "\(lines)")
                let object = try #require(try jsonObjects(listening).first)
                #expect(object["msg"] as? String == "listening")
                #expect(object["address"] as? String == "127.0.0.1:\(daemon.port)")
            } else {
                #expect(lines.allSatisfy { $0.hasPrefix("time=") }, "\(lines)")
                #expect(
                    listening.first?.hasSuffix(" level=notice msg=listening address=127.0.0.1:\(daemon.port)") == true)
            }
        }
    }
}
