import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import NIOCore
import Testing

/// Every kind of secret `klaxon.yaml` reads, in a config where only that secret varies: `@@` is
/// the line the secret goes on (`KEY: VALUE` or `KEY_file: PATH`).
struct SecretKind: Sendable, CustomStringConvertible {
    var name: String
    var key: String
    var template: String
    var description: String { name }

    static let all: [SecretKind] = [
        .init(name: "chat.slack", key: "signing_secret", template: "chat:\n  slack:\n    @@\n"),
        .init(name: "chat.mattermost", key: "token", template: "chat:\n  mattermost:\n    @@\n"),
        .init(name: "api", key: "token", template: "api:\n  @@\n"),
        .init(
            name: "api.owners", key: "token",
            template: "api:\n  token: team-token-0123456789\n  owners:\n    - owner: alice\n      @@\n"),
        .init(name: "site", key: "secret", template: "site:\n  @@\n"),
        .init(
            name: "webhook hmac", key: "hmac_secret",
            template: "receivers:\n  - name: hook\n    type: webhook\n    url: https://hooks.example.org/x\n    @@\n"),
        .init(
            name: "slack bot token", key: "bot_token",
            template:
                "receivers:\n  - name: slack\n    type: webhook\n    preset: slack\n    channel: C0123ABCD\n    @@\n"),
        .init(name: "webhook url", key: "url", template: "receivers:\n  - name: hook\n    type: webhook\n    @@\n"),
        .init(
            name: "smtp", key: "password",
            template: """
                receivers:
                  - name: mail
                    type: email
                    smtp_url: smtp://127.0.0.1:2525
                    username: klaxon
                    from: klaxon@example.org
                    to: ops@example.org
                    @@

                """),
        .init(
            name: "database", key: "password",
            template: "database:\n  url: \"postgres://klaxon@127.0.0.1:5432/klaxon\"\n  @@\n"),
        .init(
            name: "openaq source", key: "api_key",
            template: "sources:\n  - name: aq\n    kind: openaq\n    locations: [2178]\n    @@\n"),
        .init(
            name: "waqi source", key: "token",
            template: "sources:\n  - name: w\n    kind: waqi\n    stations: [\"@1437\"]\n    @@\n"),
        .init(
            name: "http-json header", key: "value",
            template: """
                sources:
                  - name: backyard
                    kind: http-json
                    url: https://weather.example.org/current.json
                    records: ""
                    time: /time
                    station: {id: BACKYARD}
                    metrics:
                      temperature: {pointer: /temp, unit: °F}
                    headers:
                      X-Api-Key:
                        @@

                """),
        .init(
            name: "http-json url", key: "url",
            template: """
                sources:
                  - name: backyard
                    kind: http-json
                    @@
                    records: ""
                    time: /time
                    station: {id: BACKYARD}
                    metrics:
                      temperature: {pointer: /temp, unit: °F}

                """),
    ]

    /// A value that works for this kind (a URL for `url`, 32+ characters for the site's key).
    var good: String {
        key == "url" ? "https://hooks.example.org/GOODSECRET" : "GOODSECRET-0123456789abcdef-0123456789"
    }

    /// The config text with `line` on the secret's line, and that line's number.
    func yaml(_ line: String) -> (text: String, line: Int) {
        let base = name == "database" ? "" : "database: k.sqlite\n"
        let text = base + template.replacingOccurrences(of: "@@", with: line)
        let number = text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex {
            $0.contains(line)
        }!
        return (text, number + 1)
    }
}

/// A config that must not load, and what must not be in the error.
private func expectRefused(
    _ kind: SecretKind, _ line: String, environment: [String: String] = [:], files: [String: String] = [:],
    hidden: [String] = [], _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let s = try Scratch()
    for (name, text) in files { _ = try s.write(name, text) }
    for name in files.keys { chmod(s.path(name), 0o600) }
    let (text, number) = kind.yaml(line)
    let path = try s.write("klaxon.yaml", text)
    do {
        _ = try Config.load(path: path, environment: environment)
        Issue.record("\(kind): \(comment) was accepted", sourceLocation: sourceLocation)
    } catch {
        let message = "\(error)"
        #expect(
            message.contains("\(path):\(number):") && message.contains(": error: "),
            "\(kind): \(comment): \(message.prefix(300))", sourceLocation: sourceLocation)
        for h in hidden {
            #expect(
                !message.contains(h), "\(kind): \(comment): the secret is in the error", sourceLocation: sourceLocation)
        }
    }
}

@Suite("secrets in klaxon.yaml: never empty, never huge, never printed", .serialized, .timeLimit(.minutes(10)))
struct SecretConfigTests {
    static let big = String(repeating: "S3CRETMARK", count: 100_000)  // 1 MB

    @Test("a good value loads for every kind (the fixture is right)", arguments: SecretKind.all)
    func goodValueLoads(kind: SecretKind) throws {
        let s = try Scratch()
        let direct = kind.yaml("\(kind.key): \"\(kind.good)\"")
        let config = try Config.load(path: try s.write("a.yaml", direct.text), environment: [:])
        #expect(config.warnings.isEmpty)
        _ = try s.write("secret", kind.good + "\n")
        chmod(s.path("secret"), 0o600)
        let viaFile = kind.yaml("\(kind.key)_file: secret")
        let loaded = try Config.load(path: try s.write("b.yaml", viaFile.text), environment: [:])
        #expect(loaded.warnings.isEmpty, "\(loaded.warnings)")
    }

    @Test(
        "empty, whitespace, empty ${VAR}, oversized or multi-line: an error at FILE:LINE:COL", arguments: SecretKind.all
    )
    func hostileDirectValues(kind: SecretKind) throws {
        let k = kind.key
        try expectRefused(kind, "\(k): \"\"", "an empty string")
        try expectRefused(kind, "\(k): \"   \"", "spaces only")
        try expectRefused(kind, "\(k): \"\\t\\n\"", "a tab and a newline")
        try expectRefused(kind, "\(k): \"${MM}\"", environment: ["MM": ""], "${MM} set but empty")
        try expectRefused(kind, "\(k): \"${MM}\"", environment: ["MM": "  "], "${MM} of spaces")
        try expectRefused(kind, "\(k): \"${A}${B}\"", environment: ["A": "", "B": " \n"], "two empty variables")
        try expectRefused(
            kind, "\(k): \"${BIG}\"", environment: ["BIG": Self.big], hidden: ["S3CRETMARK"], "a 1 MB secret")
        try expectRefused(
            kind, "\(k): \"${NL}\"", environment: ["NL": "SEKRIT\r\nX-Injected: 1"], hidden: ["SEKRIT", "Injected"],
            "a secret with a line break (a header injection)")
        try expectRefused(
            kind, "\(k): \"${ESC}\"", environment: ["ESC": "SEKRIT\u{1B}[2J"], hidden: ["SEKRIT"],
            "a secret with an escape")
    }

    @Test("an empty, blank or huge *_file: an error at FILE:LINE:COL", arguments: SecretKind.all)
    func hostileFiles(kind: SecretKind) throws {
        let line = "\(kind.key)_file: secret"
        try expectRefused(kind, line, files: ["secret": ""], "an empty file")
        try expectRefused(kind, line, files: ["secret": "   \t  "], "a file of blanks")
        try expectRefused(kind, line, files: ["secret": "\n"], "a newline-only file")
        try expectRefused(kind, line, files: ["secret": "\n\n  \r\n"], "a file of blank lines")
        try expectRefused(kind, line, files: ["secret": Self.big], hidden: ["S3CRETMARK"], "a 1 MB file")
        try expectRefused(
            kind, line, files: ["secret": "SEKRIT\nSECOND-LINE\n"], hidden: ["SEKRIT", "SECOND-LINE"],
            "a file of two lines")
        try expectRefused(kind, line, files: [:], "a file that does not exist")
    }

    @Test("a password in a postgres:// URL or its ${VAR} must be a real one; none at all is fine")
    func databaseURLPassword() throws {
        let s = try Scratch()
        let cases: [(String, [String: String])] = [
            ("postgres://klaxon:@127.0.0.1:5432/k", [:]),
            ("postgres://klaxon:${PW}@127.0.0.1:5432/k", ["PW": ""]),
            ("postgres://klaxon:${PW}@127.0.0.1:5432/k", ["PW": "   "]),
            ("postgres://klaxon:${PW}@127.0.0.1:5432/k", ["PW": Self.big]),
            ("postgres://klaxon:${PW}@127.0.0.1:5432/k", ["PW": "SEKRIT\n"]),
            ("postgres://klaxon:%20%20@127.0.0.1:5432/k", [:]),
            ("postgres://klaxon:SEKRIT%0Aline@127.0.0.1:5432/k", [:]),
        ]
        for (i, (url, env)) in cases.enumerated() {
            let path = try s.write("db\(i).yaml", "rules: r\ndatabase: \"\(url)\"\n")
            #expect {
                try Config.load(path: path, environment: env)
            } throws: { error in
                let text = "\(error)"
                return text.contains("\(path):2:") && text.contains("password") && !text.contains("S3CRETMARK")
                    && !text.contains("SEKRIT")
            }
            // `--db` takes the same path.
            #expect(throws: (any Error).self) { try StoreLocation.parse(url, environment: env) }
        }
        let fine = try s.write("fine.yaml", "database: \"postgres://klaxon:${PW}@127.0.0.1:5432/k\"\n")
        #expect(throws: Never.self) { try Config.load(path: fine, environment: ["PW": "pa ss"]) }
        let none = try s.write("none.yaml", "database: \"postgres://klaxon@127.0.0.1:5432/k\"\n")
        #expect(throws: Never.self) { try Config.load(path: none, environment: [:]) }
    }

    @Test("a secret file anyone may write is an error; one anyone may read (or a symlink to one) a warning")
    func secretFilePermissions() throws {
        let s = try Scratch()
        let secret = "FILESECRET-0123456789"
        func load(_ yaml: String) throws -> Config {
            try Config.load(path: try s.write("p.yaml", yaml), environment: [:])
        }
        func config(_ file: String) -> String { "database: k.sqlite\napi:\n  token_file: \(file)\n" }

        _ = try s.write("private", secret)
        chmod(s.path("private"), 0o600)
        #expect(try load(config("private")).warnings.isEmpty)
        chmod(s.path("private"), 0o640)
        #expect(try load(config("private")).warnings.isEmpty)

        _ = try s.write("readable", secret)
        chmod(s.path("readable"), 0o644)
        let readable = try load(config("readable")).warnings
        #expect(readable.count == 1)
        let warning = readable.first?.warningDescription ?? ""
        #expect(warning.contains(":3:15: warning: api: token_file: \(s.path("readable")) is readable by every user"))
        #expect(warning.contains("chmod 600") && warning.contains("640") && !warning.contains(secret))

        // Kubernetes' layout: a symlink through `..data` to a 0644 file. A warning, not an error.
        try FileManager.default.createDirectory(atPath: s.path("k8s/..2026_11_27"), withIntermediateDirectories: true)
        _ = try s.write("k8s/..2026_11_27/token", secret)
        chmod(s.path("k8s/..2026_11_27/token"), 0o644)
        try FileManager.default.createSymbolicLink(atPath: s.path("k8s/..data"), withDestinationPath: "..2026_11_27")
        try FileManager.default.createSymbolicLink(atPath: s.path("k8s/token"), withDestinationPath: "..data/token")
        let k8s = try load(config("k8s/token"))
        #expect(k8s.apiToken?.value == secret)
        #expect(k8s.warnings.first?.message.contains("is a symlink to a file readable by every user") == true)
        // A symlink to a private file is fine.
        try FileManager.default.createSymbolicLink(atPath: s.path("link"), withDestinationPath: s.path("private"))
        #expect(try load(config("link")).warnings.isEmpty)

        // Anyone may write: the file, the file behind a symlink, or (without the sticky bit) its folder.
        _ = try s.write("writable", secret)
        chmod(s.path("writable"), 0o666)
        try FileManager.default.createSymbolicLink(atPath: s.path("to-writable"), withDestinationPath: "writable")
        try FileManager.default.createDirectory(atPath: s.path("open"), withIntermediateDirectories: true)
        _ = try s.write("open/token", secret)
        chmod(s.path("open/token"), 0o600)
        chmod(s.path("open"), 0o777)
        for (file, reason) in [
            ("writable", "is writable by every user"), ("to-writable", "(a symlink) is writable by every user"),
            ("open/token", "a folder every user may write to"),
        ] {
            #expect {
                try load(config(file))
            } throws: { error in
                let text = "\(error)"
                return text.contains(":3:15: error: api: token_file: ") && text.contains(reason)
                    && !text.contains(secret)
            }
        }
        // The sticky bit (as on /tmp and Kubernetes' volumes) stops others replacing the file: fine.
        chmod(s.path("open"), 0o1777)
        #expect(try load(config("open/token")).warnings.isEmpty)
        chmod(s.path("open"), 0o755)
    }

    @Test("klaxon check and klaxon run refuse an empty secret with FILE:LINE:COL; the value is never printed")
    func checkAndRunThroughTheBinary() async throws {
        let s = try Scratch()
        try s.write("rules/r.yaml", thresholdRule)
        _ = try s.write("empty-token", "\n  \n")
        chmod(s.path("empty-token"), 0o600)
        let fileConfig = try s.write(
            "file.yaml", "database: k.sqlite\nrules: rules\nchat:\n  mattermost:\n    token_file: empty-token\n")
        let envConfig = try s.write(
            "env.yaml", "database: k.sqlite\nrules: rules\nchat:\n  slack:\n    signing_secret: \"${SLACK_SECRET}\"\n")
        for (config, env, where_) in [
            (fileConfig, [String: String](), ":5:17: error: chat.mattermost: token_file: "),
            (envConfig, ["SLACK_SECRET": ""], ":5:21: error: chat.slack: signing_secret is empty"),
            (envConfig, ["SLACK_SECRET": " \t "], ":5:21: error: chat.slack: signing_secret is empty"),
            (envConfig, ["SLACK_SECRET": "SEKRIT\nline"], ":5:21: error: chat.slack: signing_secret contains a line"),
        ] {
            let check = try await klaxonAsync(["check", "--config", config], in: s.dir, environment: env)
            #expect(check.status == 1, "\(check.stderr)")
            #expect(check.stderr.contains(config + where_), "\(check.stderr)")
            #expect(!(check.stdout + check.stderr).contains("SEKRIT"))
            let run = try await klaxonAsync(["run", "--config", config], in: s.dir, environment: env)
            #expect(run.status == 1 && !run.killed, "\(run.stderr)")
            #expect(run.stderr.contains(config + where_), "\(run.stderr)")
            #expect(!(run.stdout + run.stderr).contains("SEKRIT"))
        }
        // A world-readable token file: a warning naming the file, exit 0.
        _ = try s.write("token", "READABLE-SECRET-0123456789")
        chmod(s.path("token"), 0o644)
        let warned = try s.write("warned.yaml", "database: k.sqlite\nrules: rules\napi:\n  token_file: token\n")
        let check = try await klaxonAsync(["check", "--config", warned], in: s.dir)
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stderr.contains("\(warned):4:15: warning: api: token_file: \(s.path("token")) is readable"))
        #expect(check.stderr.contains("chmod 600"))
        #expect(!(check.stdout + check.stderr).contains("READABLE-SECRET"))
    }

    @Test("the daemon logs a readable secret file at start, and site: {refresh: 0} serves pages without Refresh")
    func daemonWarnsAndRefreshOff() async throws {
        let s = try Scratch()
        try s.write("rules/r.yaml", thresholdRule)
        _ = try s.write("token", "READABLE-SECRET-0123456789\n")
        chmod(s.path("token"), 0o644)
        let config = try s.write(
            "klaxon.yaml",
            "database: k.sqlite\nrules: rules\nlisten: 127.0.0.1:0\napi:\n  token_file: token\nsite:\n  refresh: 0\n")
        try await DaemonProcess.with(config: config, in: s.dir) { daemon in
            let log = daemon.logText
            #expect(log.contains("\(config):5:15: warning: api: token_file: \(s.path("token")) is readable"), "\(log)")
            #expect(!log.contains("READABLE-SECRET"))
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: daemon.base + "/"), deadline: .distantFuture)
            _ = try await response.body.collect(upTo: 8 << 20)
            #expect(response.status.code == 200)
            #expect(response.headers["Refresh"].isEmpty)
            #expect(await daemon.stop() == 0)
        }
    }

    @Test("site.refresh: 0, 0s, off turn the Refresh header off; other values keep their meaning")
    func siteRefresh() throws {
        let s = try Scratch()
        for (value, seconds) in [("0", 0), ("0s", 0), ("off", 0), ("\"0\"", 0), ("false", 0), ("5m", 300), ("60s", 60)]
        {
            let config = try Config.load(path: try s.write("r.yaml", "site:\n  refresh: \(value)\n"), environment: [:])
            #expect(config.site.refresh == seconds, "\(value)")
            #expect(SiteSettings.make(config: config, rules: []).refreshSeconds == seconds)
        }
        for bad in ["-1", "2s", "25h", "soon", "0x"] {
            #expect(throws: (any Error).self, "\(bad)") {
                try Config.load(path: try s.write("r.yaml", "site:\n  refresh: \(bad)\n"), environment: [:])
            }
        }
    }
}

/// The HTTP endpoints behind the config: an empty secret never authenticates, whatever is sent.
@Suite("empty secrets at the endpoints", .serialized, .timeLimit(.minutes(10)))
struct EmptySecretEndpointTests {
    func withServer(
        slack: String?, mattermost: String?, api: String?, owners: [String: String],
        _ body: (Int) async throws -> Void
    ) async throws {
        let store = try tempStore()
        let (stream, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "test.empty-secrets")
        logger.logLevel = .critical
        let app = KlaxonHTTP.application(
            store: store, settings: .init(port: 0, apiToken: api, ownerTokens: owners), metrics: .init(),
            logger: logger, chat: .init(slackSigningSecret: slack, mattermostToken: mattermost),
            answer: { _, _ in "ANSWERED" },
            onRunning: { port in
                continuation.yield(port)
                continuation.finish()
            })
        let task = Task {
            defer { continuation.finish() }
            try await app.run()
        }
        var port = 0
        for await p in stream { port = p }
        let outcome = await Result { try await body(port) }
        task.cancel()
        #expect(await Bounded.wait(for: task, within: TestServers.stopLimit), "the server should stop")
        try outcome.get()
        #expect(try await store.silences(now: 0, includeExpired: true).isEmpty)
    }

    func send(
        _ port: Int, _ method: String, _ path: String, body: String = "", headers: [(String, String)] = []
    ) async throws -> (Int, String) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = .init(rawValue: method)
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        for (k, v) in headers { request.headers.add(name: k, value: v) }
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
        return (Int(response.status.code), String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test("Slack with an empty or blank key, Mattermost with an empty token, the API with empty tokens: 401")
    func refused() async throws {
        for blank in ["", " ", "\t \n"] {
            try await withServer(slack: blank, mattermost: blank, api: blank, owners: ["alice": blank]) { port in
                let form = "team_id=T1&user_id=U1&user_name=eve&command=%2Fklaxon&text=silence+high+1d"
                let ts = Int64(Date().timeIntervalSince1970)
                for key in ["", blank, " "] {
                    let signature = ChatEndpoints.slackSignature(secret: key, timestamp: ts, body: form)
                    let r = try await send(
                        port, "POST", "/chat/slack", body: form,
                        headers: [("X-Slack-Request-Timestamp", String(ts)), ("X-Slack-Signature", signature)])
                    #expect(r.0 == 401 && !r.1.contains("ANSWERED"), "slack key \(key.debugDescription)")
                }
                for token in ["token=&", "token=+&", "token=%09+%0A&", ""] {
                    let r = try await send(port, "POST", "/chat/mattermost", body: token + form)
                    #expect(r.0 == 401 && !r.1.contains("ANSWERED"), "mattermost \(token)")
                }
                for auth in ["Bearer ", "Bearer", "Bearer  \t", ""] {
                    let headers = auth.isEmpty ? [] : [("Authorization", auth)]
                    let list = try await send(port, "GET", "/api/v1/silences", headers: headers)
                    #expect(list.0 == 401, "api \(auth.debugDescription)")
                    let add = try await send(
                        port, "POST", "/api/v1/silences",
                        body: #"{"matchers":["rule=high"],"for":"1d","comment":"x"}"#, headers: headers)
                    #expect(add.0 == 401, "api \(auth.debugDescription)")
                    let trips = try await send(port, "GET", "/api/v1/trips", headers: headers)
                    #expect(trips.0 == 401, "owner \(auth.debugDescription)")
                }
            }
        }
    }

    @Test("the API refuses an author only the server may write, and control characters in stored text")
    func apiAuthors() async throws {
        try await withServer(slack: nil, mattermost: nil, api: "team-token-0123", owners: [:]) { port in
            let auth = [("Authorization", "Bearer team-token-0123"), ("Content-Type", "application/json")]
            for (author, comment) in [
                ("slack:U024BE7LH", "x"), ("web:alice", "x"), ("Mattermost:bob", "x"), ("api:robot", "x"),
                ("eve\u{1B}[2J", "x"), ("alice", "ok\u{1B}]0;pwned\u{07}"), ("alice", "\u{202E}txt"),
                ("", "x"),
            ] {
                let body = try JSONSerialization.data(
                    withJSONObject: ["matchers": ["rule=high"], "for": "1h", "comment": comment, "created_by": author])
                let r = try await send(
                    port, "POST", "/api/v1/silences", body: String(decoding: body, as: UTF8.self), headers: auth)
                #expect(r.0 == 400, "\(author.debugDescription) \(comment.debugDescription): \(r.1)")
            }
        }
    }
}

@Suite("klaxon silence: authors and terminal output", .serialized, .timeLimit(.minutes(10)))
struct SilenceTerminalTests {
    @Test("add refuses control characters and reserved authors; list escapes what others stored")
    func silenceCLI() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let store = try SQLiteStore.open(path: db)
        let now = Int64(Date().timeIntervalSince1970)
        // Stored by another way in (an older version, a direct write): the list must still be safe.
        let hostile = [
            ("\u{1B}[2J\u{1B}[Hcleared", "\u{202E}nimda"), ("title\u{1B}]0;pwned\u{07}", "ok\rFORGED"),
            ("two\nlines  by admin: fine", "\u{9B}31mred"),
        ]
        for (i, (comment, author)) in hostile.enumerated() {
            try await store.addSilence(
                Silence(
                    id: "hostile-\(i)", matchers: [try Matcher(name: "station", op: .equal, value: "S\u{1B}[31m\(i)")],
                    starts: now, ends: now + 3600, comment: comment, createdBy: author),
                now: now)
        }
        let list = await InProcess.silenceList(db: db)
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.lines.count == hostile.count, "\(list.stdout)")
        for scalar in list.stdout.unicodeScalars where scalar != "\n" {
            #expect(!TerminalText.isUnsafe(scalar), "U+\(String(scalar.value, radix: 16)) reached the terminal")
        }
        #expect(list.stdout.contains("\\e[2J\\e[Hcleared"))
        #expect(list.stdout.contains("\\u{202E}nimda"))
        #expect(list.stdout.contains("ok\\rFORGED"))
        #expect(list.stdout.contains("two\\nlines"))

        let refused: [(comment: String, author: String?, message: String)] = [
            ("x\u{1B}[2J", nil, "--comment: the comment contains a control character"),
            ("a\nb", nil, "--comment: the comment contains a control character"),
            ("\u{202E}x", nil, "--comment: the comment contains a control character"),
            ("x", "slack:alice", "--author: the author prefix \"slack:\" is reserved"),
            ("x", "web:bob", "--author: the author prefix \"web:\" is reserved"),
            ("x", "Mattermost:carol", "is reserved"),
            ("x", "eve\u{7}", "--author: the author contains a control character"),
        ]
        for (comment, author, message) in refused {
            let r = await InProcess.silenceAdd(
                db: db, match: ["rule=high"], for: "1h", comment: comment, author: author)
            #expect(r.status == 1, "\(comment) \(author ?? ""): \(r.stderr)")
            #expect(r.stderr.contains(message), "\(comment) \(author ?? ""): \(r.stderr)")
        }
        let ok = await InProcess.silenceAdd(
            db: db, match: ["rule=high"], for: "1h", comment: "river work", author: "alice")
        #expect(ok.status == 0, "\(ok.stderr)")
        let after = await InProcess.silenceList(db: db)
        #expect(after.lines.count == hostile.count + 1)
        #expect(after.stdout.contains("by alice: river work"))
    }
}

@Suite("klaxon outbox list: terminal output", .serialized, .timeLimit(.minutes(10)))
struct OutboxTerminalTests {
    @Test("a receiver name and its error with control characters print escaped")
    func outboxListEscapes() async throws {
        try await HTTPSink.with { sink in
            await sink.script(Array(repeating: .respond(status: 410), count: 5))
            let s = try Scratch()
            try s.write("r.csv", "station,metric,time,value\nST1,gage_height,2026-01-01T00:00:00Z,20\n")
            try s.write("rules/high.yaml", "name: high\nkind: threshold\nmetric: gage_height\nabove: 10\n")
            // The name reaches the outbox row and its error text (`receiver NAME: HTTP 410`).
            let config = try s.write(
                "klaxon.yaml",
                """
                database: k.sqlite
                rules: rules
                receivers:
                  - name: "hook\\e]0;pwned\\a\\e[2J\\u202E"
                    type: webhook
                    url: \(sink.url)/hook
                default_receiver: "hook\\e]0;pwned\\a\\e[2J\\u202E"
                """)
            #expect(await InProcess.ingest(config: config, s.path("r.csv")).status == 0)
            let eval = await InProcess.evaluate(config: config, now: "2026-01-01T00:05:00Z")
            #expect(eval.status == 0, "\(eval.stderr)")
            let run = try await klaxonAsync(["dispatch", "--config", config, "--until-empty"])
            #expect(run.status == 0, "\(run.stderr)")
            let list = await InProcess.outboxList(config: config)
            #expect(list.status == 0, "\(list.stderr)")
            #expect(list.lines.count == 1, "\(list.stdout)")
            for scalar in list.stdout.unicodeScalars where scalar != "\n" {
                #expect(!TerminalText.isUnsafe(scalar), "U+\(String(scalar.value, radix: 16)) reached the terminal")
            }
            #expect(list.stdout.contains("hook\\e]0;pwned\\x07\\e[2J\\u{202E}"), "\(list.stdout)")
        }
    }
}
