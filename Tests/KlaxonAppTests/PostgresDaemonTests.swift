import Foundation
import KlaxonApp
import KlaxonStore
import KlaxonTesting
import Testing

/// `klaxon` on PostgreSQL: `database: postgres://…` and `--db postgres://…` against a throw-away
/// server (`PostgresServer`), the daemon as a child process and the one-shot commands.
@Suite("klaxon on PostgreSQL", .serialized, .timeLimit(.minutes(10)))
struct PostgresDaemonTests {
    func rules(_ s: Scratch) throws {
        try s.write(
            "rules/flow.yaml",
            """
            name: high-flow
            kind: threshold
            metric: gage_height
            above: 150
            notify: [hook]
            """)
    }

    @Test("run on PostgreSQL: pushed readings are evaluated and delivered; SIGTERM exits 0; no password in the log")
    func daemon() async throws {
        try await PostgresServer.withDatabase { db in
            try await HTTPSink.with { hook in
                let s = try Scratch()
                try rules(s)
                try s.write("pg.secret", "hunter2-daemon\n")
                let cfg = try s.write(
                    "klaxon.yaml",
                    """
                    database: {url: "postgres://\(db.user)@127.0.0.1:\(db.port)/\(db.name)", password_file: pg.secret}
                    rules: [rules]
                    listen: 127.0.0.1:0
                    api: {token: s3cret}
                    receivers:
                      - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
                    """)
                try await DaemonProcess.with(config: cfg, in: s.dir) { daemon in
                    let (status, pushed) = try await http(
                        "POST", daemon.base + "/api/v1/readings",
                        body: "station,metric,time,value\nS9,gage_height,2026-01-01T00:00:00Z,500\n", token: "s3cret")
                    #expect(status == 200, "\(pushed)")
                    #expect(pushed.contains("\"inserted\":1"))
                    let posts = await hook.waitForRequests(1)
                    #expect(posts.count == 1)
                    #expect(posts.first?.text.contains("\"alertname\":\"high-flow\"") == true)
                    let (readyStatus, ready) = try await http("GET", daemon.base + "/readyz")
                    #expect(readyStatus == 200, "\(ready)")
                    #expect(ready.contains("\"database\":\"ok\""), "\(ready)")
                    // The sink has the request before the daemon has its answer and records the send.
                    try await poll(until: "the delivery is counted in /metrics") {
                        let (_, metrics) = try await http("GET", daemon.base + "/metrics")
                        return metrics.contains("klaxon_deliveries_total{receiver=\"hook\",outcome=\"sent\"} 1")
                    }
                    let (_, alerts) = try await http("GET", daemon.base + "/api/v1/alerts", token: "s3cret")
                    #expect(alerts.contains("\"station\":\"S9\""))
                    #expect(await daemon.stop() == 0, "SIGTERM: exit 0 within the product's limit")
                    let log = daemon.logText
                    #expect(log.contains("klaxon stopped"))
                    #expect(!log.contains("hunter2"))
                    #expect(log.contains("database=postgres://127.0.0.1:\(db.port)/\(db.name)"))
                }
                // What the daemon stored is on the server: the one-shot commands read it back.
                let list = try await klaxonAsync(["outbox", "list", "--config", cfg], in: s.dir)
                #expect(list.status == 0, "\(list.stderr)")
                #expect(list.stdout.contains("sent"))
                #expect(list.lines.count == 1)
            }
        }
    }

    @Test("ingest --db postgres://…, then evaluate and dispatch --until-empty with database: postgres://… ${ENV}")
    func oneShot() async throws {
        try await PostgresServer.withDatabase { db in
            try await HTTPSink.with { hook in
                let s = try Scratch()
                try rules(s)
                let env = ["KLAXON_TEST_PGPW": "hunter2-oneshot"]
                let url = "postgres://\(db.user):${KLAXON_TEST_PGPW}@127.0.0.1:\(db.port)/\(db.name)"
                let cfg = try s.write(
                    "klaxon.yaml",
                    """
                    database: "\(url)"
                    rules: [rules]
                    receivers:
                      - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
                    """)
                let csv = try s.write(
                    "r.csv",
                    """
                    station,metric,time,value
                    S1,gage_height,2026-01-01T00:00:00Z,100
                    S1,gage_height,2026-01-01T00:15:00Z,200
                    S2,gage_height,2026-01-01T00:00:00Z,90

                    """)
                let check = try await klaxonAsync(["check", "--config", cfg], in: s.dir, environment: env)
                #expect(check.status == 0, "\(check.stderr)")
                let ingest = try await klaxonAsync(["ingest", "--db", url, csv], in: s.dir, environment: env)
                #expect(ingest.status == 0, "\(ingest.stderr)")
                #expect(ingest.stderr.contains("ingest: 3 new"))
                // Again: nothing new (the server's unique key), as on SQLite.
                let again = try await klaxonAsync(["ingest", "--db", url, csv], in: s.dir, environment: env)
                #expect(again.stderr.contains("ingest: 0 new, 0 revised, 3 unchanged"), "\(again.stderr)")
                let evaluate = try await klaxonAsync(
                    ["evaluate", "--config", cfg, "--now", "2026-01-01T01:00:00Z"], in: s.dir, environment: env)
                #expect(evaluate.status == 0, "\(evaluate.stderr)")
                #expect(evaluate.stderr.contains("evaluate: 3 new readings, 1 transitions queued in the outbox"))
                let dispatch = try await klaxonAsync(
                    ["dispatch", "--config", cfg, "--until-empty", "--deadline", "60s"], in: s.dir, environment: env)
                #expect(dispatch.status == 0, "\(dispatch.stderr)")
                #expect(dispatch.stderr.contains("dispatch: 1 sent"), "\(dispatch.stderr)")
                let posts = await hook.waitForRequests(1)
                #expect(posts.count == 1)
                #expect(posts.first?.text.contains("\"station\":\"S1\"") == true)
                // Evaluated once: a second evaluation finds nothing new.
                let second = try await klaxonAsync(
                    ["evaluate", "--config", cfg, "--now", "2026-01-01T01:00:00Z"], in: s.dir, environment: env)
                #expect(second.stderr.contains("evaluate: 0 new readings, 0 transitions"), "\(second.stderr)")
                // The other commands that take --db, on the same server.
                var others: [Run] = []
                for arguments in [
                    ["silence", "add", "--config", cfg, "--match", "station=S2", "--for", "2h", "--comment", "pg"],
                    ["silence", "list", "--config", cfg],
                    ["outbox", "list", "--config", cfg, "--state", "sent"],
                    ["prune", "--config", cfg, "--dry-run"],
                    ["dry-run", "--db", url, "--rules", s.path("rules")],
                    ["run", "--config", cfg, "--once", "--deadline", "30s"],
                ] {
                    let run = try await klaxonAsync(arguments, in: s.dir, environment: env)
                    #expect(run.status == 0, "\(arguments): \(run.stderr)")
                    others.append(run)
                }
                #expect(others[1].stdout.contains("station=S2  by"))
                #expect(others[2].lines.count == 1)
                #expect(others[4].stderr.contains("dry-run: 3 readings replayed, 1 transitions"), "\(others[4].stderr)")
                #expect(others[5].stderr.contains("run --once: 0 new readings, 0 transitions"), "\(others[5].stderr)")
                for run in [check, ingest, again, evaluate, dispatch, second] + others {
                    #expect(!(run.stdout + run.stderr).contains("hunter2"))
                }
            }
        }
    }

    @Test(
        "a wrong password, a closed port or an unset variable: an error naming host:port/database, never the password")
    func connectionErrors() async throws {
        try await PostgresServer.with { server in
            try await server.requirePassword(user: "app", password: "right-horse")
            let db = try await server.createDatabase()
            let s = try Scratch()
            let url = "postgres://app:${KLAXON_TEST_PGPW}@127.0.0.1:\(server.port)/\(db.name)"
            let shown = "postgres://127.0.0.1:\(server.port)/\(db.name)"

            let wrong = try await klaxonAsync(
                ["outbox", "list", "--db", url], in: s.dir, environment: ["KLAXON_TEST_PGPW": "wrong-battery"])
            #expect(wrong.status == 1)
            #expect(wrong.stderr.contains("database \(shown): cannot connect: password authentication failed"))
            #expect(!wrong.stderr.contains("wrong-battery"))

            let right = try await klaxonAsync(
                ["outbox", "list", "--db", url], in: s.dir, environment: ["KLAXON_TEST_PGPW": "right-horse"])
            #expect(right.status == 0, "\(right.stderr)")
            #expect(right.stdout == "(empty)\n")

            let closed = try ClosedPort()
            let refused = try await klaxonAsync(
                ["outbox", "list", "--db", "postgres://app:right-horse@127.0.0.1:\(closed.port)/x"], in: s.dir)
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("database postgres://127.0.0.1:\(closed.port)/x: cannot connect:"))
            #expect(!refused.stderr.contains("right-horse"))

            let unset = try await klaxonAsync(["outbox", "list", "--db", url], in: s.dir)
            #expect(unset.status == 1)
            #expect(unset.stderr.contains("environment variable KLAXON_TEST_PGPW is not set"))

            try rules(s)
            let cfg = try s.write("klaxon.yaml", "database: \"\(url)\"\n")
            let check = try await klaxonAsync(["check", "--config", cfg, "--rules", s.path("rules")], in: s.dir)
            #expect(check.status == 1)
            #expect(
                check.stderr.contains(":1:11: error: database URL: environment variable KLAXON_TEST_PGPW is not set"))
        }
    }
}

@Suite("database: and --db select the store")
struct StoreLocationTests {
    @Test("a postgres:// URL is PostgreSQL; anything else a SQLite file")
    func parse() throws {
        #expect(try StoreLocation.parse("k.sqlite", environment: [:]).sqlitePath == "k.sqlite")
        #expect(try StoreLocation.parse("/var/lib/postgres://x", environment: [:]).sqlitePath != nil)
        let pg = try StoreLocation.parse("postgres://klaxon@db.example/alerts", environment: [:])
        #expect(pg.sqlitePath == nil)
        #expect("\(pg)" == "postgres://db.example:5432/alerts")
        guard case .postgres(let c) = pg else { return }
        #expect(c.username == "klaxon" && c.password == nil && c.port == 5432)

        // ${NAME} as is (a password needs no escaping), the rest percent-decoded.
        let env = ["PW": "p@ss/w:rd%41"]
        guard
            case .postgres(let e) = try StoreLocation.parse(
                "postgresql://k%40x:${PW}@[::1]:6543/db?sslmode=disable", environment: env)
        else { return }
        #expect(e.username == "k@x" && e.password == "p@ss/w:rd%41" && e.host == "::1" && e.port == 6543)
        #expect(e.database == "db")
        // Without a database: the user's name, as libpq does.
        guard case .postgres(let d) = try StoreLocation.parse("postgres://u:pw@h", environment: [:]) else { return }
        #expect(d.database == "u" && d.password == "pw")
    }

    @Test("bad URLs say what is wrong and never quote the URL")
    func errors() throws {
        for (url, message) in [
            ("postgres://db/x", "needs a user"),
            ("postgres://u:secret-pw@h:99999/x", "port must be a number"),
            ("postgres://u:secret-pw@h/x?sslmode=require", "TLS is not supported yet"),
            ("postgres://u:${NOPE}@h/x", "environment variable NOPE is not set"),
        ] {
            let error = #expect(throws: (any Error).self) { try StoreLocation.parse(url, environment: [:]) }
            let text = error.map { "\($0)" } ?? ""
            #expect(text.contains(message), "\(url): \(text)")
            #expect(!text.contains("secret-pw"))
        }
        let both = #expect(throws: (any Error).self) {
            try StoreLocation.parse("postgres://u:a@h/x", environment: [:], password: "b")
        }
        #expect(both.map { "\($0)" }?.contains("not both") == true)
    }

    @Test("database: {url, password_file} in klaxon.yaml; unknown keys and a SQLite url are errors")
    func config() throws {
        let s = try Scratch()
        try s.write("pg.secret", "from-a-file\n")
        let cfg = try Config.load(
            path: s.write("a.yaml", "database: {url: \"postgres://k@h:5433/d\", password_file: pg.secret}\n"))
        guard case .postgres(let c) = cfg.store else {
            Issue.record("not PostgreSQL: \(String(describing: cfg.store))")
            return
        }
        #expect(c.password == "from-a-file" && c.port == 5433)
        #expect(cfg.database == nil)
        #expect(try Config.load(path: s.write("b.yaml", "database: k.sqlite\n")).database == s.path("k.sqlite"))
        let bad = #expect(throws: (any Error).self) {
            try Config.load(path: s.write("c.yaml", "database: {url: k.sqlite, pasword: x}\n"))
        }
        let text = bad.map { "\($0)" } ?? ""
        #expect(text.contains("pasword"))
        #expect(text.contains("database.url must be a postgres:// URL"))

        // delivery_lease: how long another instance waits for a dead one's claims.
        #expect(try Config.load(path: s.write("d.yaml", "delivery_lease: 10s\n")).deliveryLease == 10)
        #expect(try Config.load(path: s.write("e.yaml", "rules: [r]\n")).deliveryLease == 30)
        let short = #expect(throws: (any Error).self) {
            try Config.load(path: s.write("f.yaml", "delivery_lease: 1s\n"))
        }
        #expect(short.map { "\($0)" }?.contains("delivery_lease must be from 5s to 1h") == true)
    }
}

@Suite("klaxon migrate-store", .serialized, .timeLimit(.minutes(10)))
struct MigrateStoreTests {
    @Test(
        "a SQLite store copied to PostgreSQL: every table's count matches, and the copy carries on where SQLite stopped"
    )
    func copy() async throws {
        try await PostgresServer.withDatabase { db in
            try await HTTPSink.with { hook in
                let s = try Scratch()
                try s.write(
                    "rules/flow.yaml",
                    "name: high-flow\nkind: threshold\nmetric: gage_height\nabove: 150\nnotify: [hook]\n")
                let sqlite = try s.write(
                    "klaxon.yaml",
                    """
                    database: k.sqlite
                    rules: [rules]
                    receivers:
                      - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
                    """)
                let csv = try s.write(
                    "r.csv",
                    """
                    station,metric,time,value
                    S1,gage_height,2026-01-01T00:00:00Z,100
                    S1,gage_height,2026-01-01T00:15:00Z,200.1
                    S2,gage_height,2026-01-01T00:00:00Z,160

                    """)
                let fixtures = packageRoot.appendingPathComponent("Tests/KlaxonSourcesTests/Fixtures")
                let k = s.path("k.sqlite")
                for arguments in [
                    ["ingest", "--db", k, csv],
                    [
                        "ingest", "--db", k, "--format", "usgs-quakes",
                        fixtures.appendingPathComponent("quakes_all_day.geojson").path,
                    ],
                    [
                        "ingest", "--db", k, "--format", "nwps-json",
                        fixtures.appendingPathComponent("nwps_gauge_undefined_major.json").path,
                    ],
                    [
                        "ingest", "--db", k, "--format", "open-meteo-json",
                        fixtures.appendingPathComponent("wx_open_meteo_forecast_denver_fahrenheit.json").path,
                    ],
                    ["trip", "add", try s.write("denver.yaml", denverTrip), "--db", k, "--owner", "alice"],
                    ["evaluate", "--config", sqlite, "--now", "2026-01-01T01:00:00Z"],
                    ["dispatch", "--config", sqlite, "--until-empty", "--deadline", "60s"],
                    ["silence", "add", "--db", k, "--match", "station=S9", "--for", "2h", "--comment", "test"],
                ] {
                    let run = try await klaxonAsync(arguments, in: s.dir)
                    #expect(run.status == 0, "\(arguments): \(run.stderr)")
                }
                _ = await hook.waitForRequests(2)

                let url = "postgres://\(db.user)@127.0.0.1:\(db.port)/\(db.name)"
                let migrate = try await klaxonAsync(["migrate-store", "--from", k, "--to", url], in: s.dir)
                #expect(migrate.status == 0, "\(migrate.stdout)\(migrate.stderr)")
                #expect(migrate.stderr.contains("every table's count matches"))
                var counts: [String: Int] = [:]
                for line in migrate.lines {
                    let parts = line.split(separator: " ")
                    guard parts.count == 4, parts[2] == "→" else { continue }
                    #expect(parts[1] == parts[3], "\(line)")
                    counts[String(parts[0].dropLast())] = Int(parts[3])
                }
                #expect(counts.count == StoreTables.copied.count)
                for table in [
                    "stations", "series", "readings", "transitions", "outbox", "silences", "quake_events", "gauges",
                    "trips", "forecasts",
                ] {
                    #expect((counts[table] ?? 0) > 0, "\(table) copied nothing")
                }

                // The same answers from both stores.
                for arguments in [
                    ["outbox", "list"], ["silence", "list"], ["quakes", "--since", "2000-01-01"],
                    ["trip", "list", "--owner", "alice"],
                    ["dry-run", "--rules", s.path("rules"), "--format", "json"],
                ] {
                    let a = try await klaxonAsync(arguments + ["--db", k], in: s.dir)
                    let b = try await klaxonAsync(arguments + ["--db", url], in: s.dir)
                    #expect(a.stdout == b.stdout && a.status == 0 && b.status == 0, "\(arguments): \(b.stderr)")
                }
                // The cursor came across: nothing is evaluated twice; new rows get new ids.
                let postgres = try s.write(
                    "pg.yaml",
                    """
                    database: "\(url)"
                    rules: [rules]
                    receivers:
                      - {name: hook, type: webhook, url: "\(hook.url)/hook", preset: generic}
                    """)
                let evaluate = try await klaxonAsync(
                    ["evaluate", "--config", postgres, "--now", "2026-01-01T01:00:00Z"], in: s.dir)
                #expect(evaluate.stderr.contains("evaluate: 0 new readings, 0 transitions"), "\(evaluate.stderr)")
                let more = try s.write("m.csv", "station,metric,time,value\nS3,gage_height,2026-01-01T00:30:00Z,300\n")
                #expect(try await klaxonAsync(["ingest", "--db", url, more], in: s.dir).status == 0)
                let next = try await klaxonAsync(
                    ["evaluate", "--config", postgres, "--now", "2026-01-01T01:00:00Z"], in: s.dir)
                #expect(next.stderr.contains("evaluate: 1 new readings, 1 transitions queued"), "\(next.stderr)")
                let dispatch = try await klaxonAsync(
                    ["dispatch", "--config", postgres, "--until-empty", "--deadline", "60s"], in: s.dir)
                #expect(dispatch.stderr.contains("dispatch: 1 sent"), "\(dispatch.stderr)")

                // Into a database that is not empty: refused.
                let again = try await klaxonAsync(["migrate-store", "--from", k, "--to", url], in: s.dir)
                #expect(again.status == 1)
                #expect(again.stderr.contains("is not empty"))
                let wrongWay = try await klaxonAsync(["migrate-store", "--from", url, "--to", k], in: s.dir)
                #expect(wrongWay.status == 1)
                #expect(wrongWay.stderr.contains("--from must be a SQLite file"))
            }
        }
    }
}
