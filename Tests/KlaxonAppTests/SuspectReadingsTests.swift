import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonSources
import KlaxonStore
import KlaxonTesting
import Testing

/// A CWMS v2 time-series page of daily flows at KEYS: `rows` are `[epoch_ms, value, quality]`.
func cwmsDailyFlow(_ rows: [(day: Int, value: String, quality: Int)]) -> String {
    let values = rows.map { "[\(1_704_067_200_000 + Int64($0.day - 1) * 86_400_000),\($0.value),\($0.quality)]" }
    return #"{"name":"KEYS.Flow.Ave.~1Day.1Day.Best","office-id":"SWT","units":"cfs","interval":"PT0S","#
        + #""interval-offset":0,"time-zone":"UTC","begin":"2024-01-01T00:00:00+0000[UTC]","#
        + #""end":"2024-01-11T00:00:00+0000[UTC]","page":"p0","page-size":500,"total":\#(rows.count),"#
        + #""value-columns":[{"name":"date-time","ordinal":1,"datatype":"java.sql.Timestamp"},"#
        + #"{"name":"value","ordinal":2,"datatype":"java.lang.Double"},"#
        + #"{"name":"quality-code","ordinal":3,"datatype":"int"}],"values":[\#(values.joined(separator: ","))]}"#
}

/// Ten days of flow around 1,500–1,660 cfs; on day 4 the glitch (−8,455,545 cfs, quality 0: not screened),
/// on day 11 a plausible value the Corps screened and rejected (quality 17).
let keysFlow = cwmsDailyFlow([
    (1, "1500", 3), (2, "1520", 3), (3, "1540", 3), (4, "-8455545", 0), (5, "1560", 3), (6, "1580", 3),
    (7, "1600", 3), (8, "1620", 3), (9, "1640", 3), (10, "1660", 3), (11, "1700", 17),
])

@Suite("suspect readings: kept and shown, out of alerts and statistics", .serialized)
struct SuspectReadingsTests {
    @Test("a CWMS glitch of −8,455,545 cfs: stored, marked suspect, counted, left out of gauge figures")
    func cwmsGlitch() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let file = try s.write("keys.json", keysFlow)
        let ingest = await InProcess.ingest(db: db, format: .cwmsJSON, file)
        #expect(ingest.status == 0, "\(ingest.stderr)")
        #expect(ingest.stderr.contains("ingest: 11 new, 0 revised, 0 unchanged, 0 rejected, 2 marked suspect"))

        let store = try SQLiteStore.openReadOnly(path: db)
        let stored = try await store.readings(station: "KEYS", metric: "discharge")
        #expect(stored.count == 11)
        #expect(stored[3].value == -8_455_545 && stored[3].quality == "0" && stored[3].suspect)
        #expect(stored[10].quality == "17" && stored[10].suspect)
        #expect(stored.filter(\.suspect).count == 2)

        // Ingesting the same file again changes nothing and marks nothing anew.
        let again = await InProcess.ingest(db: db, format: .cwmsJSON, file)
        #expect(again.stderr.contains("ingest: 0 new, 0 revised, 11 unchanged, 0 rejected"))
        #expect(!again.stderr.contains("suspect"))

        let text = await InProcess.gauge("KEYS", db: db, since: "2024-01-01T00:00:00Z")
        #expect(text.status == 0, "\(text.stderr)")
        // The latest value is the newest one not suspect; the mean is of the nine others (not −844,132.5).
        #expect(text.stdout.contains("discharge      1660 ft³/s at 2024-01-10T00:00:00Z (3)"))
        #expect(text.stdout.contains("10 d: min 1500 · mean 1580 · max 1660 ft³/s (9 readings; 2 suspect left out)"))
        #expect(
            text.stdout.contains(
                "suspect, left out: 1700 ft³/s at 2024-01-11T00:00:00Z (17) · -8455545 ft³/s at 2024-01-04T00:00:00Z (0)"
            ))

        let json = await InProcess.gauge("KEYS", db: db, since: "2024-01-01T00:00:00Z", json: true)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        let discharge = try #require(o["discharge"] as? [String: Any])
        let range = try #require((discharge["ranges"] as? [[String: Any]])?.first)
        #expect(range["mean"] as? Double == 1580)
        #expect(range["min"] as? Double == 1500)
        #expect(range["count"] as? Int == 9)
        #expect(range["suspect"] as? Int == 2)
        let suspect = try #require(discharge["suspect"] as? [String: Any])
        #expect(suspect["count"] as? Int == 2)
        #expect((suspect["newest"] as? [[String: Any]])?.map { $0["value"] as? Double } == [1700, -8_455_545])
    }

    @Test("a rule for negative flow does not fire on the glitch; it does on a real (tidal) negative flow")
    func glitchDoesNotFire() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let file = try s.write("keys.json", keysFlow)
        #expect(await InProcess.ingest(db: db, format: .cwmsJSON, file).status == 0)
        let rules = try s.write("r.yaml", "name: reversed\nkind: threshold\nmetric: discharge\nbelow: 0\n")

        let dry = await InProcess.dryRun(rules: [rules], db: db, format: .json)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.isEmpty)

        let eval = await InProcess.evaluate(db: db, rules: [rules], now: "2024-01-12T00:00:00Z")
        #expect(eval.status == 0, "\(eval.stderr)")
        #expect(eval.stdout.isEmpty)
        #expect(eval.stderr.contains("evaluate: 9 new readings, 0 transitions, 2 suspect readings skipped"))

        // The same file as readings CSV through dry-run: skipped there too, and said so.
        var csv = "station,metric,time,value,unit,source,quality\n"
        csv += "KEYS,discharge,2024-01-03T00:00:00Z,1540,cfs,cwms,3\n"
        csv += "KEYS,discharge,2024-01-04T00:00:00Z,-8455545,cfs,cwms,0\n"
        // Hudson-like tide: a real reversal, within the range, fires.
        csv += "TIDE,discharge,2024-01-04T00:00:00Z,-45000,cfs,usgs-iv,P\n"
        let readings = try s.write("r.csv", csv)
        let replay = await InProcess.dryRun(rules: [rules], readings: [readings], format: .json)
        #expect(replay.status == 0, "\(replay.stderr)")
        let out = try jsonObjects(replay.lines)
        #expect(out.map { "\($0["station"]!) \($0["state"]!)" } == ["TIDE firing"])
        #expect(replay.stderr.contains("1 suspect readings skipped"))
    }

    @Test("NWIS qualifiers stay on the stored readings; outage qualifiers stay gaps")
    func nwisQualifiersKept() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let file = try s.write(
            "iv.json",
            ivBody(points: [
                ("2024-03-10T01:45:00.000-05:00", "4.10", ["P"]),
                ("2024-03-10T03:00:00.000-04:00", "4.20", ["A", "e"]),
                ("2024-03-10T03:15:00.000-04:00", "-999999", ["P", "Ice"]),
                ("2024-03-10T03:30:00.000-04:00", "4.30", ["P", "e"]),
            ]))
        let ingest = await InProcess.ingest(db: db, format: .usgsIVJSON, file)
        #expect(ingest.status == 0, "\(ingest.stderr)")
        #expect(ingest.stderr.contains("ingest: 3 new, 0 revised, 0 unchanged, 0 rejected, 1 missing values skipped"))
        #expect(!ingest.stderr.contains("suspect"))
        let stored = try await SQLiteStore.openReadOnly(path: db).readings(station: "01646500", metric: "gage_height")
        #expect(stored.map(\.quality) == ["P", "A:e", "P:e"])
        #expect(stored.map(\.suspect) == [false, false, false])
    }

    @Test("cwms fetch: the outcome line and the daemon's log say how many readings were marked suspect")
    func fetchSaysSuspect() async throws {
        try await HTTPSink.with { sink in try await fetchSaysSuspect(sink: sink) }
    }

    func fetchSaysSuspect(sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([.respond(status: 200, body: keysFlow)])
        let source = CWMSSource(
            name: "keystone", baseURL: sink.url + "/cwms-data/", office: "SWT",
            timeseries: [.init(name: "KEYS.Flow.Ave.~1Day.1Day.Best")])
        let out = await Fetch.run(
            sources: [ConfiguredSource(source: source)], store: store, now: Timestamp.parse("2024-01-12T00:00:00Z")!)
        #expect(out[0].error == nil)
        #expect(out[0].stats.inserted == 11 && out[0].stats.suspect == 2)
        #expect(out[0].line.contains("11 new, 0 revised, 0 unchanged, 2 marked suspect"))
    }
}
