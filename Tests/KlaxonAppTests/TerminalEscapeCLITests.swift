import Foundation
import KlaxonTesting
import Testing

/// What `klaxon check`, `klaxon test` and `POST /-/reload` print when a file holds terminal control
/// characters (issue 38, item 21): they are shown escaped (`\e`), never sent to the terminal raw, so
/// a hostile file cannot redraw a failing check as "ok". And a JSON or HTML template may not insert
/// a value unescaped.
@Suite("terminal escapes in what quotes the files", .serialized)
struct TerminalEscapeCLITests {
    /// What a hostile key tries: erase the line, return, and print a success of its own.
    static let hostileKey = #""x\e[2K\e[1A\rok: 1 rules in 1 files\a""#

    /// No byte a terminal would act on (C0 other than the line feed, DEL, C1).
    static func raw(_ text: String) -> Bool {
        text.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) }
    }

    @Test("klaxon check: hostile keys and values in rules and the config are reported escaped (\\e), the check fails")
    func checkEscapes() async throws {
        let s = try Scratch()
        // Quoted in messages: a key, a kind, a listen address.
        try s.write(
            "rules/high.yaml",
            "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n\(Self.hostileKey): 1\n")
        try s.write("rules/kind.yaml", "name: other\nkind: \(Self.hostileKey)\nmetric: gage_height\nabove: 150\n")
        let cfg = try s.write(
            "klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: \(Self.hostileKey)\n\(Self.hostileKey): 2\n")
        let r = try await klaxonAsync(["check", "--config", cfg, "--rules", s.path("rules")], in: s.dir)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(!Self.raw(r.stderr), "raw control characters: \(r.stderr.debugDescription)")
        #expect(!Self.raw(r.stdout), "\(r.stdout.debugDescription)")
        #expect(r.stderr.contains(#"x\e[2K\e[1A\rok: 1 rules in 1 files\x07"#), "\(r.stderr)")
        #expect(r.stderr.contains("high.yaml:5:1: error:"), "\(r.stderr)")
        #expect(r.stderr.contains("kind.yaml:2:7: error:"), "\(r.stderr)")
        #expect(r.stderr.contains("klaxon.yaml:3:9: error:"), "\(r.stderr)")
        #expect(!r.stdout.contains("ok:"))
    }

    @Test("klaxon test: a hostile test name and a rule file that does not load print escaped")
    func testEscapes() async throws {
        let s = try Scratch()
        try s.write("r.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\n")
        try s.write("bad.yaml", "name: bad\nkind: threshold\nmetric: gage_height\nabove: 10\n\(Self.hostileKey): 1\n")
        let test = try s.write(
            "t.yaml",
            """
            rule_files: [r.yaml]
            tests:
              - name: "wrong\\e[2K\\r1 passed, 0 failed\\e[8m"
                series:
                  - {station: "G\\e]0;owned\\a1", metric: gage_height, values: "12x4"}
                expect:
                  - at: 15m
                    firing: []
            """)
        let broken = try s.write(
            "u.yaml",
            """
            rule_files: [bad.yaml]
            tests:
              - name: loads
                series:
                  - {station: G1, metric: gage_height, values: "12x4"}
                expect:
                  - at: 15m
                    firing: []
            """)
        let r = try await klaxonAsync(["test", test, broken], in: s.dir)
        #expect(r.status == 1, "\(r.stdout)\n\(r.stderr)")
        #expect(!Self.raw(r.stdout), "raw control characters: \(r.stdout.debugDescription)")
        #expect(!Self.raw(r.stderr), "raw control characters: \(r.stderr.debugDescription)")
        #expect(r.stdout.contains(#"wrong\e[2K\r1 passed, 0 failed\e[8m"#), "\(r.stdout)")
        #expect((r.stdout + r.stderr).contains(#"x\e[2K\e[1A\rok: 1 rules in 1 files\x07"#), "\(r.stdout)\n\(r.stderr)")
    }

    @Test("POST /-/reload: the error body shows a hostile key escaped")
    func reloadBodyEscapes() async throws {
        let s = try Scratch()
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        let cfg = try s.write(
            "klaxon.yaml", "database: k.sqlite\nrules: [rules]\nlisten: 127.0.0.1:0\napi: {token: s3cret}\n")
        try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
            try s.write(
                "rules/high.yaml",
                "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n\(Self.hostileKey): 1\n")
            let (status, body) = try await http("POST", daemon.base + "/-/reload", token: "s3cret")
            #expect(status == 500, "\(body)")
            #expect(!Self.raw(body), "raw control characters: \(body.debugDescription)")
            #expect(body.contains(#"x\e[2K\e[1A\rok: 1 rules in 1 files\x07"#), "\(body)")
            #expect(!Self.raw(daemon.logText), "\(daemon.logText.debugDescription)")
            #expect(await daemon.stop() == 0)
        }
    }

    @Test(
        "klaxon check: {{{x}}} and {{& x}} in a webhook's JSON template or an email's HTML are errors with FILE:LINE:COL"
    )
    func rawTagsInEscapedTemplates() async throws {
        let s = try Scratch()
        try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 150\n")
        let cfg = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: [rules]
            receivers:
              - name: hook
                type: webhook
                url: http://127.0.0.1:9/hook
                template: '{"text": "{{#alerts}}{{{station}}}{{/alerts}}"}'
              - name: mail
                type: email
                smtp_url: smtp://127.0.0.1:2525
                from: klaxon@example.org
                to: ops@example.org
                subject: '{{{receiver}}} alerts'
                text: '{{#alerts}}{{& station}}{{/alerts}}'
                html: '<p>{{#alerts}}{{& station}}{{/alerts}}</p>'
            """)
        let r = try await klaxonAsync(["check", "--config", cfg, "--rules", s.path("rules")], in: s.dir)
        #expect(r.status == 1, "\(r.stderr)")
        let errors = r.errorLines.filter { $0.contains(": error: ") }
        #expect(errors.count == 2, "\(r.stderr)")
        #expect(
            errors.contains {
                $0.hasPrefix("\(cfg):7:") && $0.contains("{{{station}}} inserts a value unescaped into JSON")
            },
            "\(r.stderr)")
        #expect(
            errors.contains {
                $0.hasPrefix("\(cfg):15:") && $0.contains("{{& station}} inserts a value unescaped into HTML")
            },
            "\(r.stderr)")
        // Escaped, the same templates pass; raw tags in the plain-text parts stay allowed.
        try s.write(
            "klaxon.yaml",
            try String(contentsOfFile: cfg, encoding: .utf8).replacingOccurrences(
                of: "{{{station}}}", with: "{{station}}"
            )
            .replacingOccurrences(of: "<p>{{#alerts}}{{& station}}", with: "<p>{{#alerts}}{{station}}"))
        let ok = try await klaxonAsync(["check", "--config", cfg, "--rules", s.path("rules")], in: s.dir)
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    /// Every message that quotes input, whatever prints it (issue 39, item 15): 0x01 and a carriage
    /// return in a rule's name, a receiver's name, a readings file's fields, a file's name and an
    /// argument never reach the terminal raw, on stdout or stderr.
    @Test(
        "0x01 and \\r in files, file names and arguments: check, test, ingest (CSV, JSON), dry-run, outbox, and the parser's own errors print them escaped"
    )
    func controlBytesEverywhere() async throws {
        let s = try Scratch()
        // YAML spells the bytes as escapes (it refuses them raw); the loaded strings hold them.
        try s.write(
            "rules/r.yaml",
            "name: \"ri\\x01ver\\r\"\nkind: threshold\nmetric: gage_height\nabove: 10\n\"k\\x01\\r\": 1\n")
        let cfg = try s.write(
            "klaxon.yaml",
            "database: k.sqlite\nrules: [rules]\nreceivers:\n  - {name: \"a\\x01\\r\", type: \"nope\\x01\"}\n")
        let csv = try s.write(
            "r.csv", "station,metric,time,value\nS\u{01}1\r,gage_height,2026-01-01T00:00:00Z,1\u{01}2\r\n")
        let json = try s.write(
            "r.json",
            #"[{"station": "S\u00011\r", "metric": "gage_height", "time": "2026-01-01T00:00:00Z", "value": "x\u0001\r"}]"#
        )
        let odd = try s.write("odd\u{01}\r.csv", "station,metric,time,value\nS1,gage_height,nope\u{01},1\n")
        let runs: [[String]] = [
            ["check", "--config", cfg],
            ["test", s.path("rules/r.yaml")],
            ["ingest", "--db", s.path("k.sqlite"), csv],
            ["ingest", "--db", s.path("k.sqlite"), json],
            ["ingest", "--db", s.path("k.sqlite"), odd],
            ["ingest", "--db", s.path("k.sqlite"), s.path("missing\u{01}\r.csv")],
            ["dry-run", "--rules", s.path("rules"), "--readings", csv],
            ["outbox", "list", "--db", s.path("k.sqlite"), "--state", "bad\u{01}\r"],
            // ArgumentParser's own errors quote the command line.
            ["check", "--format", "x\u{01}\r"],
            ["ingest", "--format", "x\u{01}\r", csv],
        ]
        for arguments in runs {
            let r = try await klaxonAsync(arguments, in: s.dir)
            #expect(r.status != 0, "\(arguments): \(r.stdout)\(r.stderr)")
            #expect(!Self.raw(r.stdout), "\(arguments): \(r.stdout.debugDescription)")
            #expect(!Self.raw(r.stderr), "\(arguments): \(r.stderr.debugDescription)")
        }
        let parser = try await klaxonAsync(["check", "--format", "x\u{01}\r"], in: s.dir)
        #expect(parser.status == 64)
        #expect(parser.stderr.contains(#"'x\x01\r' is invalid for '--format <format>'"#), "\(parser.stderr)")
        let checked = try await klaxonAsync(["check", "--config", cfg], in: s.dir)
        #expect(checked.stderr.contains(#"ri\x01ver\r"#), "\(checked.stderr)")
    }
}
