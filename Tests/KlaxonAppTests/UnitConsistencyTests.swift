import AsyncHTTPClient
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonServer
import KlaxonSources
import KlaxonStore
import KlaxonTesting
import NIOCore
import Testing

/// Data that is wrong must not be stored: readings from the future, observations in unit codes
/// nobody read, and numbers under another unit's label.
@Suite("wrong data is refused: future readings, unknown unit codes, one unit per series", .serialized)
struct UnitConsistencyTests {
    let wallNow = Int64(Date().timeIntervalSince1970)

    func fixturePath(_ name: String) -> String {
        packageRoot.appendingPathComponent("Tests/KlaxonSourcesTests/Fixtures/\(name)").path
    }

    // MARK: One unit per series

    @Test("NWS observations ingested --units metric, then --units us: stored in °C both times, never relabelled")
    func metricThenUS() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let file = fixturePath("wx_nws_observations_2019_unit_codes.json")
        let metric = await InProcess.ingest(db: db, format: .nwsObservations, units: .metric, file)
        #expect(metric.status == 0, "\(metric.stderr)")
        #expect(metric.stderr.contains("ingest: 16 new"), "\(metric.stderr)")
        let store = try SQLiteStore.open(path: db)
        let before = try await storedReadings(store)
        #expect(before.contains("KBOS|temperature|2019-01-21T12:54:00Z|-35.0|°C"), "\(before)")
        let us = await InProcess.ingest(db: db, format: .nwsObservations, units: .us, file)
        #expect(us.status == 0, "\(us.stderr)")
        // The °F, mph, inHg, mi and in values went back to the series' units: no new series, no
        // number under another label. (The US values were rounded to 4 decimals, so some come back a
        // hair off and are revised: 1013.2 hPa → 29.9198 inHg → 1013.2014 hPa, 2.5 mm → 0.0984 in → 2.49936 mm.)
        #expect(us.stderr.contains("ingest: 0 new"), "\(us.stderr)")
        #expect(
            us.stderr.contains("KBOS/temperature: 2 readings in °F converted to the series' unit °C"), "\(us.stderr)")
        let after = try await storedReadings(store)
        #expect(after.count == before.count)
        for (a, b) in zip(before, after) {
            let x = a.split(separator: "|")
            let y = b.split(separator: "|")
            #expect(x[0..<3] == y[0..<3] && x[4] == y[4], "\(a) → \(b)")
            let (u, v) = (Double(x[3])!, Double(y[3])!)
            #expect(abs(u - v) <= max(1e-3, 1e-5 * abs(u)), "\(a) → \(b)")
        }
        #expect(after.contains("KBOS|temperature|2019-01-21T12:54:00Z|-35.0|°C"), "\(after)")
        #expect(try await store.series(station: "KBOS").first { $0.metric == "temperature" }?.unit == "°C")
    }

    @Test("a CSV in a unit that does not convert is refused for that series (exit 1); the others are stored")
    func unconvertibleRefused() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let first = try s.write(
            "a.csv",
            "station,metric,time,value,unit\nG1,gage_height,2024-01-01T00:00:00Z,10,ft\n"
                + "G1,discharge,2024-01-01T00:00:00Z,100,ft3/s\n")
        #expect(await InProcess.ingest(db: db, first).status == 0)
        let hostile = [
            ("°C", "8"), ("furlongs", "3"), ("ft<script>", "4"), ("", "5"), ("m3/s", "6"), ("\u{202E}tf", "7"),
        ]
        var rows = "station,metric,time,value,unit\n"
        for (i, (unit, value)) in hostile.enumerated() {
            rows += "G1,gage_height,2024-01-01T0\(i + 1):00:00Z,\(value),\(unit)\n"
        }
        rows += "G1,gage_height,2024-01-01T09:00:00Z,3,m\n"  // converts: 9.84251969 ft
        rows += "G1,discharge,2024-01-01T09:00:00Z,1,m³/s\n"  // converts: 35.3146667 ft³/s
        let second = try s.write("b.csv", rows)
        let r = await InProcess.ingest(db: db, second)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(
            r.stderr.contains("G1/gage_height: 1 reading in °C not stored: the series is stored in ft"), "\(r.stderr)")
        #expect(r.stderr.contains("in furlongs not stored"), "\(r.stderr)")
        #expect(r.stderr.contains("in m3/s not stored"), "\(r.stderr)")
        #expect(r.stderr.contains("in ft<script> not stored"), "\(r.stderr)")
        #expect(!r.stderr.contains("\u{202E}"), "\(r.stderr)")
        let store = try SQLiteStore.open(path: db)
        let stage = try await store.readings(station: "G1", metric: "gage_height")
        // The unitless row is taken to be in the series' unit; the metres are converted; the rest refused.
        #expect(stage.map(\.value) == [10, 5, 9.84251969], "\(stage.map(\.value))")
        #expect(stage.allSatisfy { $0.unit == "ft" })
        #expect(try await store.readings(station: "G1", metric: "discharge").map(\.value) == [100, 35.3146667])
    }

    // MARK: NWS unit codes

    @Test("an NWS file whose values are all in unknown unit codes says why and exits 1; the 2019 spelling loads")
    func unknownUnitCodes() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let bad = fixturePath("wx_nws_observations_unknown_unit_codes.json")
        let r = await InProcess.ingest(db: db, format: .nwsObservations, bad)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(
            r.stderr.contains("no observation had a value in a known unit: saw unitCode 'unit:xyz' 32 times"),
            "\(r.stderr)")
        #expect(!r.stderr.contains("missing values skipped"), "\(r.stderr)")
        // Some values in an unknown unit: the others are stored, the rest counted as rejected.
        let mixed = try s.write(
            "mixed.json",
            """
            {"type":"FeatureCollection","features":[{"properties":{"stationId":"K1","timestamp":"2019-01-21T12:54:00Z",
             "temperature":{"unitCode":"unit:degC","value":3},"dewpoint":{"unitCode":"unit:furlong","value":1}}}]}
            """)
        let m = await InProcess.ingest(db: db, format: .nwsObservations, mixed)
        #expect(m.status == 1, "\(m.stderr)")
        #expect(m.stderr.contains("1 values not stored, their unit unknown: saw unitCode 'unit:furlong' 1 time"))
        #expect(m.stderr.contains("ingest: 1 new"), "\(m.stderr)")
        let ok = try await klaxonAsync(
            ["ingest", "--db", db, "--format", "nws-observations", fixturePath("wx_nws_observations_ucum_codes.json")])
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    // MARK: Readings from the future

    @Test("klaxon ingest refuses readings past now + 1 day (CSV, JSON Lines, --format); the rest are stored")
    func ingestRefusesFuture() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let ok1 = Timestamp.format(wallNow - 3600)
        let ok2 = Timestamp.format(wallNow + 23 * 3600)
        let late1 = Timestamp.format(wallNow + 25 * 3600)
        let csv = try s.write(
            "f.csv",
            """
            station,metric,time,value
            F1,gage_height,\(ok1),1
            F1,gage_height,2199-12-31T00:00:00Z,99
            F1,gage_height,\(ok2),2
            F1,gage_height,\(late1),98
            F1,gage_height,9999-12-31T23:59:59Z,97

            """)
        let r = await InProcess.ingest(db: db, csv)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("\(csv):3: time 2199-12-31T00:00:00Z is more than 1d after now"), "\(r.stderr)")
        #expect(r.stderr.contains("\(csv):5: time \(late1) is more than 1d after now"), "\(r.stderr)")
        #expect(r.stderr.contains("\(csv):6: time 9999-12-31T23:59:59Z is outside the years"), "\(r.stderr)")
        let jsonl = try s.write(
            "f.jsonl",
            #"{"station":"F2","metric":"gage_height","time":"\#(ok1)","value":1}"# + "\n"
                + #"{"station":"F2","metric":"gage_height","time":"2150-06-01T00:00:00Z","value":2}"# + "\n")
        let j = await InProcess.ingest(db: db, jsonl)
        #expect(j.status == 1)
        #expect(j.stderr.contains("\(jsonl):2: time 2150-06-01T00:00:00Z is more than 1d after now"), "\(j.stderr)")
        // A saved service response dated in the future.
        let nws = try s.write(
            "future.json",
            try stationFixture("wx_nws_observations_2019_unit_codes.json")
                .replacingOccurrences(of: "2019-01-21T12:54:00+00:00", with: "2199-01-21T12:54:00+00:00"))
        let n = await InProcess.ingest(db: db, format: .nwsObservations, nws)
        #expect(n.status == 1, "\(n.stderr)")
        #expect(
            n.stderr.contains("KBOS temperature: time 2199-01-21T12:54:00Z is more than 1d after now"), "\(n.stderr)")
        #expect(n.stderr.contains("ingest: 8 new"), "\(n.stderr)")
        let store = try SQLiteStore.open(path: db)
        #expect(try await store.readings(station: "F1", metric: "gage_height").map(\.value) == [1, 2])
        #expect(try await store.readings(station: "F2", metric: "gage_height").map(\.value) == [1])
        let latest = try await store.latestTimes(metric: nil)
        #expect(latest.values.allSatisfy { $0 <= wallNow + 86_400 }, "\(latest)")
        // readings.max_future in the config sets the margin.
        let config = try s.write("klaxon.yaml", "database: \(db)\nreadings: {max_future: 30d}\n")
        let wide = try s.write("w.csv", "station,metric,time,value\nF3,gage_height,\(late1),1\n")
        let w = await InProcess.ingest(config: config, wide)
        #expect(w.status == 0, "\(w.stderr)")
    }

    @Test("dry-run replays history files as they are: no reading is refused for its date (its now is the replay's)")
    func dryRunIsNotBounded() async throws {
        let s = try Scratch()
        let rules = try s.write(
            "r.yaml",
            "rules:\n"
                + thresholdRule.split(separator: "\n").enumerated().map {
                    $0 == 0 ? "  - \($1)" : "    \($1)"
                }.joined(separator: "\n") + "\n")
        let csv = try s.write(
            "h.csv",
            "station,metric,time,value\nG1,gage_height,2150-01-01T00:00:00Z,13\nG1,gage_height,2150-01-01T01:00:00Z,13\n"
        )
        let r = await InProcess.dryRun(rules: [rules], readings: [csv], format: .json)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("2 readings replayed"), "\(r.stderr)")
        #expect(!r.stderr.contains("after now"), "\(r.stderr)")
    }

    @Test("readings.max_future: a duration from 0s to 366d; anything else is a config error")
    func configKey() throws {
        let s = try Scratch()
        #expect(try Config.load(path: s.write("a.yaml", "readings: {max_future: 2h}\n")).futureBound.margin == 7200)
        #expect(try Config.load(path: s.write("b.yaml", "rules: []\n")).futureBound.margin == 86_400)
        for bad in ["{max_future: 400d}", "{max_future: -1s}", "{max_future: soon}", "{future: 1d}", "7"] {
            #expect(throws: (any Error).self, "\(bad)") {
                try Config.load(path: s.write("bad.yaml", "readings: \(bad)\n"))
            }
        }
    }

    @Test("a push mixing good and far-future lines stores the good ones and lists the others with their lines")
    func pushRefusesFuture() async throws {
        let store = try tempStore()
        let now = Timestamp.parse("2026-06-01T12:00:00Z")!
        let (port, task) = await startHTTP(
            store: store, settings: KlaxonHTTP.Settings(port: 0, apiToken: "team-token"), now: { now })
        let outcome = await Result {
            let body = """
                station,metric,time,value
                P1,gage_height,2026-06-01T11:00:00Z,1
                P1,gage_height,2199-12-31T00:00:00Z,2
                P1,gage_height,2026-06-02T11:00:00Z,3
                P1,gage_height,2026-06-02T13:00:00Z,4
                P2,gage_height,2100-01-01T00:00:00Z,5

                """
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/api/v1/readings")
            request.method = .POST
            request.headers.add(name: "Authorization", value: "Bearer team-token")
            request.headers.add(name: "Content-Type", value: "text/csv")
            request.body = .bytes(ByteBuffer(string: body))
            let response = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
            let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            #expect(response.status.code == 400, "\(text)")
            let o = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(o["inserted"] as? Int == 2)
            let rejected = o["rejected"] as? [String] ?? []
            #expect(rejected.count == 3, "\(rejected)")
            #expect(rejected.first?.hasPrefix("line 3: time 2199-12-31T00:00:00Z is more than 1d after now") == true)
            #expect(rejected.contains { $0.hasPrefix("line 5: time 2026-06-02T13:00:00Z") })
            #expect(rejected.contains { $0.hasPrefix("line 6: time 2100-01-01T00:00:00Z") })
            #expect(try await store.readings(station: "P1", metric: "gage_height").map(\.value) == [1, 3])
            #expect(try await store.series(station: "P2").isEmpty)
            // Units in a push: the series takes ft, metres are converted, °C is refused and listed.
            request.body = .bytes(
                ByteBuffer(
                    string: "station,metric,time,value,unit\nP1,gage_height,2026-06-01T09:00:00Z,2,ft\n"
                        + "P1,gage_height,2026-06-01T08:00:00Z,1,m\nP1,gage_height,2026-06-01T07:00:00Z,9,°C\n"))
            let units = try await HTTPClient.shared.execute(request, deadline: .distantFuture)
            let unitText = String(buffer: try await units.body.collect(upTo: 1 << 20))
            #expect(units.status.code == 400, "\(unitText)")
            let u = try #require(try JSONSerialization.jsonObject(with: Data(unitText.utf8)) as? [String: Any])
            let listed = u["rejected"] as? [String] ?? []
            #expect(listed.count == 1 && listed[0].hasPrefix("P1/gage_height: 1 reading in °C not stored"), "\(u)")
            let stage = try await store.readings(station: "P1", metric: "gage_height")
            #expect(stage.map(\.value) == [3.2808399, 2, 1, 3])
            #expect(try await store.series(station: "P1").map(\.unit) == ["ft"])
        }
        task.cancel()
        _ = await Bounded.wait(for: task, within: TestServers.stopLimit)
        try outcome.get()
    }

    @Test("a source whose payload is dated in the future: those readings refused, the rest stored, the fetch ok")
    func sourceRefusesFuture() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let now = Timestamp.parse("2024-01-15T12:05:00Z")!
            await sink.script([
                .respond(status: 200, body: try stationFixture("wx_nws_station_kmwn.json")),
                .respond(
                    status: 200,
                    body: kmwnObservations([
                        ("2199-12-31T00:00:00+00:00", 10), ("2024-01-17T00:00:00+00:00", 11),
                        ("2024-01-15T12:00:00+00:00", 12), ("2024-01-16T11:00:00+00:00", 13),
                    ])),
            ])
            let source = ConfiguredSource(
                source: NWSObservationsSource(name: "summit", baseURL: sink.url + "/", stations: ["KMWN"]))
            let o = await Fetch.run(sources: [source], store: store, now: now)
            #expect(o[0].error == nil)
            #expect(o[0].refusedCount == 2)
            #expect(o[0].stats.inserted == 2)
            #expect(
                o[0].line.contains("2 refused (KMWN wind_speed: time 2199-12-31T00:00:00Z is more than 1d"),
                "\(o[0].line)")
            let wind = try await store.readings(station: "KMWN", metric: "wind_speed")
            #expect(wind.map(\.value) == [12, 13])
            // The cursor the source worked out from 2199 is not kept: the next fetch asks from before.
            await #expect(try store.sourceState("summit")?.cursor == nil)
        }
    }
}
