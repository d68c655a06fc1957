import Foundation
import KlaxonTesting
import Testing

/// NWS gauge metadata for St. Louis (STLM7 ↔ USGS 07010000): action 28, minor 30, moderate 35 ft, major undefined.
let stlGauge = packageRoot.appendingPathComponent("Tests/KlaxonSourcesTests/Fixtures/nwps_gauge_undefined_major.json")

/// An NWIS RDB file of gage height at 07010000, local time (CST) with `tz_cd`, one value per hour.
func stlRDB(_ values: [String]) -> String {
    var rows: [String] = []
    for (i, v) in values.enumerated() {
        let hour = i % 24
        let day = 1 + i / 24
        let dt = String(format: "2025-11-%02d %02d:00", day, hour)
        rows.append("USGS\t07010000\t\(dt)\tCST\t\(v)\t\(v.isEmpty ? "" : "P")")
    }
    return """
        # Data for the following 1 site(s) are contained in this file
        #    USGS 07010000 MISSISSIPPI RIVER AT ST. LOUIS, MO
        #
        agency_cd\tsite_no\tdatetime\ttz_cd\t35102_00065\t35102_00065_cd
        5s\t15s\t20d\t6s\t14n\t10s

        """ + rows.joined(separator: "\n") + "\n"
}

@Suite("water commands: ingest --format, gauge, fetch, levels: nws back-test", .serialized)
struct WaterCLITests {
    /// 26 → 36.5 ft and back down, hourly, with one missing hour.
    let flood = [
        "26", "27", "28.2", "29", "30.4", "31", "33", "35.2", "36.5", "36", "", "34", "31", "29.4", "27", "26",
    ]

    func backTestDB(_ s: Scratch) async throws -> String {
        let db = s.path("back.sqlite")
        let gauge = await InProcess.ingest(db: db, format: .nwpsJSON, stlGauge.path)
        #expect(gauge.status == 0, "\(gauge.stderr)")
        let rdb = try s.write("07010000.rdb", stlRDB(flood))
        let river = await InProcess.ingest(db: db, format: .usgsRDB, rdb)
        #expect(river.status == 0, "\(river.stderr)")
        #expect(river.stderr.contains("ingest: 15 new, 0 revised, 0 unchanged, 0 rejected, 1 missing values skipped"))
        return db
    }

    @Test("back-testing a flood: saved NWPS and RDB files, then dry-run with levels: nws")
    func backTestFlood() async throws {
        let s = try Scratch()
        let db = try await backTestDB(s)
        let run = await InProcess.dryRun(rules: [repoPath("Rules/flood-stage.yaml")], db: db, format: .json)
        #expect(run.status == 0, "\(run.stderr)")
        let out = try jsonObjects(run.lines)
        // Hourly readings and min_dwell 15m: a series sampled less often than its dwell meets it with one
        // reading, so each category is announced at the first reading in it, not an hour later (issue 39,
        // item 3). Falling from minor, 29.4 (inside action) is announced, then 27 (below action − 0.5)
        // resolves.
        #expect(
            out.map { $0["state"] as? String } == ["firing", "changed", "changed", "changed", "changed", "resolved"])
        #expect(out.map { $0["level"] as? String ?? "-" } == ["action", "minor", "moderate", "minor", "action", "-"])
        // 2025-11-01 02:00 CST = 08:00Z: 28.2 ft, the first reading in action stage (28 ft).
        #expect(out.first?["at"] as? String == "2025-11-01T08:00:00Z")
        let message = try #require(out.first?["message"] as? String)
        #expect(
            message.hasPrefix(
                "Mississippi River at St. Louis, MO (USGS 07010000, NWS STLM7): gage_height 28.2 ft reached action stage (28 ft)"
            ))
        #expect(message.contains("; next: minor flood stage at 30 ft;"))
        // The trend in words, not a Unicode sparkline.
        #expect(message.hasSuffix("; rising 1.1 ft/h over 3 h"), "\(message)")
        #expect(!message.contains("▁"))
        let moderate = try #require(out[2]["message"] as? String)
        #expect(moderate.contains("rose from minor flood stage to moderate flood stage (35 ft)"))
        #expect(moderate.contains("highest category"))
    }

    @Test("gauge: text and JSON from the store, by USGS id or NWS LID")
    func gaugeReport() async throws {
        let s = try Scratch()
        let db = try await backTestDB(s)
        let text = try await klaxonAsync(["gauge", "07010000", "--db", db])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.lines.first == "Mississippi River at St. Louis, MO")
        #expect(text.stdout.contains("USGS 07010000 · NWS STLM7 · America/Chicago"))
        // Newest reading 26 ft at 2025-11-01 15:00 CST = 21:00Z: below action.
        #expect(text.stdout.contains("height         26 ft at 2025-11-01T21:00:00Z (P) — below flood categories"))
        #expect(text.stdout.contains("flood stages   action 28 · minor 30 · moderate 35 ft; next: action at 28 ft"))
        #expect(text.stdout.contains("24 h: min 26 · mean 30.65 · max 36.5 ft (15 readings)"))
        #expect(text.stdout.contains("\n                 ▁▂▂▃▄▄▆▇██ ▆▄▃▂▁\n"))

        let json = try await klaxonAsync(["gauge", "stlm7", "--db", db, "--format", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(o["usgs_id"] as? String == "07010000")
        #expect(o["nws_lid"] as? String == "STLM7")
        let height = try #require(o["height"] as? [String: Any])
        let latest = try #require(height["latest"] as? [String: Any])
        #expect(latest["value"] as? Double == 26)
        #expect(latest["time"] as? String == "2025-11-01T21:00:00Z")
        let flood = try #require(o["flood"] as? [String: Any])
        #expect(flood["next"] as? String == "action")
        #expect((flood["stage"] as? [[String: Any]])?.map { $0["at"] as? Double } == [28, 30, 35])

        // A range: --since/--until pick the hours of the crest.
        let crest = try await klaxonAsync([
            "gauge", "07010000", "--db", db, "--since", "2025-11-01T12:00:00Z", "--until", "2025-11-01T15:00:00Z",
            "--format", "json",
        ])
        let c = try #require(try JSONSerialization.jsonObject(with: Data(crest.stdout.utf8)) as? [String: Any])
        let ranges = try #require((c["height"] as? [String: Any])?["ranges"] as? [[String: Any]])
        #expect(ranges.count == 1)
        #expect(ranges[0]["max"] as? Double == 36.5)
        #expect(ranges[0]["count"] as? Int == 4)  // 12:00, 13:00, 14:00, 15:00Z (16:00Z is missing)
    }

    @Test("gauge: an unknown id says so and suggests --fetch")
    func unknownGauge() async throws {
        let s = try Scratch()
        let db = try await backTestDB(s)
        let run = try await klaxonAsync(["gauge", "02336910", "--db", db])
        #expect(run.status == 1)
        #expect(run.stderr.contains("unknown gauge \"02336910\""))
        #expect(run.stderr.contains("klaxon gauge 02336910 --fetch"))
    }

    @Test("check and evaluate report a watched station without NWS categories")
    func missingCategoriesReported() async throws {
        let s = try Scratch()
        let db = try await backTestDB(s)
        let csv = try s.write("other.csv", "station,metric,time,value\n02336910,gage_height,2025-11-01T00:00:00Z,5\n")
        #expect(await InProcess.ingest(db: db, csv).status == 0)
        let config = try s.write(
            "klaxon.yaml",
            "database: back.sqlite\nrules: [\(packageRoot.path)/Rules/flood-stage.yaml]\nreceivers:\n  - {name: ops, type: stdout}\n"
        )
        let check = await InProcess.check(config: config)
        #expect(check.status == 0, "\(check.stderr)")
        let warnings = check.errorLines.filter { $0.hasPrefix("warning:") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("station 02336910 has no NWS flood categories stored") == true)
        let eval = await InProcess.evaluate(config: config, now: "2025-11-02T00:00:00Z")
        #expect(eval.status == 0, "\(eval.stderr)")
        #expect(eval.errorLines.filter { $0.contains("02336910 has no NWS flood categories") }.count == 1)
    }

    @Test("gauge --fetch asks NWPS for the gauge, then USGS for its site; fetch exits 1 when a source fails")
    func gaugeFetch() async throws {
        try await HTTPSink.with { sink in try await gaugeFetch(sink: sink) }
    }

    func gaugeFetch(sink: HTTPSink) async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            database: klaxon.sqlite
            sources:
              - {name: nws, kind: nwps, base_url: "\(sink.url)/nwps/v1/", gauges: [PRTO3]}
              - {name: river, kind: usgs-iv, base_url: "\(sink.url)/nwis/iv/", sites: ["14211720"], parameters: [gage_height]}
            """)
        let gauge = try String(contentsOf: stlGauge, encoding: .utf8)
        let recent = Int64(Date().timeIntervalSince1970) / 900 * 900
        func local(_ t: Int64) -> String {
            // CST (-06:00), as WaterServices sends St. Louis' times.
            let f = DateFormatter()
            f.locale = Locale(identifier: "en_US_POSIX")
            f.timeZone = TimeZone(secondsFromGMT: -6 * 3600)
            f.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSS"
            return f.string(from: Date(timeIntervalSince1970: TimeInterval(t))) + "-06:00"
        }
        let iv = ivBody(
            site: "07010000", points: [(local(recent - 900), "31.5", ["P"]), (local(recent), "31.9", ["P"])])
        await sink.script([.respond(status: 200, body: gauge), .respond(status: 200, body: iv)])
        let run = try await klaxonAsync(["gauge", "STLM7", "--fetch", "--config", config], in: s.dir)
        #expect(run.status == 0, "\(run.stderr)")
        let requests = await sink.requests()
        #expect(requests.map(\.path) == ["/nwps/v1/gauges/STLM7", "/nwis/iv/"])
        #expect(requests.last?.query.contains("sites=07010000") == true)
        #expect(run.stdout.contains("31.9 ft at"))
        #expect(run.stdout.contains("MINOR FLOOD STAGE (30 ft)"))

        await sink.script([.respond(status: 500, body: "down")])
        let fetch = try await klaxonAsync(["fetch", "--config", config, "--source", "river"], in: s.dir)
        #expect(fetch.status == 1)
        #expect(fetch.stdout.contains("river (usgs-iv): FAILED: source river: GET "))
        #expect(fetch.stdout.contains("HTTP 500"))
        let unknown = try await klaxonAsync(["fetch", "--config", config, "--source", "rivr"], in: s.dir)
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no source \"rivr\" (sources are nws, river)"))
    }

    @Test(
        "config: a usgs-iv source on USGS's WaterServices is warned about (retired in Q1 2027); one on a base_url of its own is not"
    )
    func usgsIVRetirementWarning() async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            sources:
              - {name: mirror, kind: usgs-iv, base_url: "http://127.0.0.1:9/nwis/iv/", sites: ["01646500"]}
              - {name: river, kind: usgs-iv, sites: ["01646500"]}
              - {name: ogc, kind: usgs-ogc, sites: ["01646500"]}
            receivers:
              - {name: ops, type: stdout}
            """)
        let run = await InProcess.check(config: config, rules: [repoPath("Rules/water.yaml")])
        #expect(run.status == 0, "\(run.stderr)")
        let warnings = run.stderr.split(separator: "\n").filter { $0.contains("decommissions") }
        #expect(warnings.count == 1, "\(run.stderr)")
        #expect(warnings.first?.contains("klaxon.yaml:3:") == true, "\(run.stderr)")
        #expect(warnings.first?.contains("warning: kind: usgs-iv reads USGS WaterServices") == true)
        #expect(warnings.first?.contains("`kind: usgs-ogc`") == true)
    }

    @Test("config: sources are checked strictly, with positions")
    func sourceConfigErrors() async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            sources:
              - {name: a, kind: usgs-iv, sites: ["0164"], parameters: [gage_hieght]}
              - {name: b, kind: nwps, gauges: [PRTO3], every: 10s}
              - {name: c, kind: usgs-ivv, sites: ["01646500"]}
              - {name: d, kind: cwms, office: SWT, timeseries: [ARBU.Elev], unit: US}
            """)
        let run = await InProcess.check(config: config, rules: [repoPath("Rules/water.yaml")])
        #expect(run.status == 1)
        let errors = run.errorLines.joined(separator: "\n")
        #expect(errors.contains(":2:"))
        #expect(errors.contains("\"0164\" is not a USGS site number (8 to 15 digits)"))
        #expect(errors.contains("unknown parameter \"gage_hieght\" (did you mean gage_height?)"))
        #expect(errors.contains("every must be at least 1m"))
        #expect(errors.contains("unknown source kind \"usgs-ivv\""))
        #expect(errors.contains("unit must be EN or SI, not \"US\""))
        #expect(errors.contains("must be Location.Parameter.Type.Interval.Duration.Version"))
    }
}
