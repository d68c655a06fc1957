import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSources
import KlaxonStore
import KlaxonTesting
import Testing

/// One USGS GeoJSON feature.
func quakeFeature(
    id: String, ids: [String]? = nil, mag: Double?, time: Int64 = 1_700_000_000_000, updated: Int64,
    status: String = "automatic", alert: String? = nil, lon: Double = 139.9, lat: Double = 35.5, depth: Double = 30,
    type: String = "earthquake", place: String = "10 km E of Chiba, Japan"
) -> String {
    let ids = ids ?? [id]
    let magText = mag.map { String($0) } ?? "null"
    let alertText = alert.map { "\"\($0)\"" } ?? "null"
    return
        #"{"type":"Feature","properties":{"mag":\#(magText),"place":"\#(place)","time":\#(time),"updated":\#(updated),"tz":null,"url":"https://earthquake.usgs.gov/earthquakes/eventpage/\#(id)","detail":"x","felt":null,"cdi":null,"mmi":null,"alert":\#(alertText),"status":"\#(status)","tsunami":0,"sig":400,"net":"us","code":"x","ids":",\#(ids.joined(separator: ",")),","sources":",us,","types":",origin,","nst":null,"dmin":1.2,"rms":0.5,"gap":50,"magType":"mww","type":"\#(type)","title":"M \#(magText) - \#(place)"},"geometry":{"type":"Point","coordinates":[\#(lon),\#(lat),\#(depth)]},"id":"\#(id)"}"#
}

func quakeFeed(_ features: [String]) -> String {
    #"{"type":"FeatureCollection","metadata":{"generated":1700000100000,"url":"x","title":"USGS All Earthquakes","status":200,"api":"1.10.3","count":\#(features.count)},"features":[\#(features.joined(separator: ","))],"bbox":[0,0,0,0,0,0]}"#
}

@Suite("quakes and air quality from the command line", .serialized)
struct QuakeAirCLITests {
    func rule(_ s: Scratch) throws -> String {
        try s.write(
            "quake.yaml",
            """
            name: tokyo-quakes
            kind: quake
            min_magnitude: 4.5
            near: [{name: Tokyo, latitude: 35.6762, longitude: 139.6503, radius_km: 300}]
            """)
    }

    @Test("a revision sequence gives one firing, then updates; the same feed twice gives nothing new")
    func revisionSequence() async throws {
        let s = try Scratch()
        let db = s.path("q.sqlite")
        let rules = try rule(s)
        let v1 = try s.write(
            "v1.geojson",
            quakeFeed([
                quakeFeature(id: "us1", mag: 4.9, updated: 1_700_000_060_000),
                quakeFeature(id: "us2", mag: 5.1, updated: 1_700_000_060_000, type: "quarry blast"),
                quakeFeature(id: "us3", mag: 6.0, updated: 1_700_000_060_000, lon: -70, lat: -30, place: "Chile"),
            ]))
        // USGS merges the event under another network's id, with a new magnitude, then reviews it.
        let v2 = try s.write(
            "v2.geojson",
            quakeFeed([quakeFeature(id: "at9", ids: ["at9", "us1"], mag: 5.0, updated: 1_700_000_600_000)]))
        let v3 = try s.write(
            "v3.geojson",
            quakeFeed([
                quakeFeature(
                    id: "at9", ids: ["at9", "us1"], mag: 5.0, updated: 1_700_001_200_000, status: "reviewed",
                    alert: "green")
            ]))
        let v4 = try s.write(
            "v4.geojson",
            quakeFeed([
                quakeFeature(id: "us1", ids: ["at9", "us1"], mag: 5.0, updated: 1_700_002_000_000, status: "deleted")
            ]))

        let first = await InProcess.ingest(db: db, format: .usgsQuakes, v1)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("ingest: 3 new, 0 revised, 0 unchanged"))
        let e1 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        #expect(e1.status == 0, "\(e1.stderr)")
        let o1 = try jsonObjects(e1.lines)
        #expect(o1.count == 1)
        #expect(o1.first?["state"] as? String == "firing")
        #expect(o1.first?["station"] as? String == "us1")
        #expect((o1.first?["message"] as? String)?.contains("Tokyo") == true)

        let again = await InProcess.ingest(db: db, format: .usgsQuakes, v1)
        #expect(again.stderr.contains("ingest: 0 new, 0 revised, 3 unchanged"))
        let e2 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        #expect(e2.lines.isEmpty, "\(e2.stdout)")

        var states: [String] = []
        for v in [v2, v3, v4] {
            let r = await InProcess.ingest(db: db, format: .usgsQuakes, v)
            #expect(r.stderr.contains("ingest: 0 new, 1 revised, 0 unchanged"), "\(r.stderr)")
            let e = await InProcess.evaluate(db: db, rules: [rules], format: .json)
            states += try jsonObjects(e.lines).map { "\($0["station"] ?? "")=\($0["state"] ?? "")" }
        }
        // All under the key the event was first stored as.
        #expect(states == ["us1=changed", "us1=changed", "us1=resolved"])

        // dry-run replays the stored revisions, and the same from the files.
        let fromStore = await InProcess.dryRun(rules: [rules], db: db, format: .json)
        #expect(
            try jsonObjects(fromStore.lines).map { $0["state"] as? String } == [
                "firing", "changed", "changed", "resolved",
            ])
        let fromFiles = await InProcess.dryRun(rules: [rules], events: [v3, v1, v2, v4], format: .json)
        #expect(fromFiles.status == 0, "\(fromFiles.stderr)")
        let replayed = try jsonObjects(fromFiles.lines)
        #expect(replayed.map { $0["state"] as? String } == ["firing", "changed", "changed", "resolved"])
        #expect((replayed.last?["message"] as? String)?.contains("Withdrawn") == true)

        let list = try await klaxonAsync(["quakes", "--db", db, "--since", "2023-01-01", "--format", "json"])
        #expect(list.status == 0, "\(list.stderr)")
        let events = try jsonObjects(list.lines)
        #expect(events.count == 3)
        let merged = try #require(events.first { ($0["ids"] as? [String])?.contains("us1") == true })
        #expect(merged["status"] as? String == "deleted")
        #expect(merged["revisions"] as? Int == 4)
        let near = try await klaxonAsync([
            "quakes", "--db", db, "--since", "2023-01-01", "--near", "35.68,139.69", "--radius", "100",
            "--min-magnitude", "5",
        ])
        #expect(near.lines.count == 2)  // the merged event (M5.0) and the quarry blast (M5.1), not Chile
        #expect(near.stdout.contains("quarry blast"))
    }

    static let realQuakes = packageRoot.appendingPathComponent("Tests/Fixtures/real/usgs_earthquakes")

    @Test("a real USGS feed ingests (18 events); a second ingest changes nothing")
    func realFeeds() async throws {
        let real = Self.realQuakes
        let s = try Scratch()
        let db = s.path("q.sqlite")
        let file = real.appendingPathComponent("summary_significant_month_2023-10.geojson").path
        let r = await InProcess.ingest(db: db, format: .usgsQuakes, file)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 18 new, 0 revised, 0 unchanged"))
        let again = await InProcess.ingest(db: db, format: .usgsQuakes, file)
        #expect(again.stderr.contains("ingest: 0 new, 0 revised, 18 unchanged"))
        let rules = try s.write("any.yaml", "name: any-6\nkind: quake\nmin_magnitude: 6\n")
        let e1 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        let firing = try jsonObjects(e1.lines)
        #expect(!firing.isEmpty)
        #expect(firing.allSatisfy { $0["state"] as? String == "firing" })
        let e2 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        #expect(e2.lines.isEmpty)
    }

    @Test("aqi: latest value, level with its emoji, sparkline of the last 25 samples")
    func aqiReport() async throws {
        let s = try Scratch()
        let db = s.path("a.sqlite")
        var csv = "station,metric,time,value\n"
        for i in 0..<30 { csv += "Delhi,aqi,2026-11-01T00:\(String(format: "%02d", i)):00Z,\(150 + i * 5)\n" }
        let file = try s.write("aqi.csv", csv)
        #expect(await InProcess.ingest(db: db, file).status == 0)
        let text = try await klaxonAsync(["aqi", "delhi", "--db", db, "--scale", "india-naqi"])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.lines.first == "Delhi: AQI 295 at 2026-11-01T00:29:00Z")
        #expect(text.stdout.contains("Poor (india-naqi)"))
        #expect(text.stdout.contains("last 25 samples: ▁"))
        let json = try await klaxonAsync(["aqi", "Delhi", "--db", db, "--format", "json"])
        let o = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(o["level"] as? String == "Very Unhealthy")  // 295 on the US EPA scale
        #expect((o["samples"] as? [Double])?.count == 25)
        #expect((o["samples"] as? [Double])?.first == 175)
        let missing = try await klaxonAsync(["aqi", "Atlantis", "--db", db])
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no AQI readings for \"Atlantis\""))
    }
}

@Suite("usgs-quakes FDSN windows", .serialized)
struct QuakeFetchTests {
    @Test("a full window is split in two and asked again, so no event is lost to the cap")
    func splitsFullWindows() async throws {
        try await HTTPSink.with { sink in try await splitsFullWindows(sink: sink) }
    }

    func splitsFullWindows(sink: HTTPSink) async throws {
        let store = try tempStore()
        let a = quakeFeature(id: "a", mag: 3, time: 1_700_000_000_000, updated: 1)
        let b = quakeFeature(id: "b", mag: 3, time: 1_700_040_000_000, updated: 1)
        await sink.script([
            .respond(status: 200, body: quakeFeed([a, b])),  // day 1: full (cap 2)
            .respond(status: 200, body: quakeFeed([a])),  // first half of day 1
            .respond(status: 200, body: quakeFeed([b])),  // second half
            .respond(status: 200, body: quakeFeed([])),  // day 2
        ])
        let start = Timestamp.parse("2023-11-14T00:00:00Z")!
        let source = USGSQuakesSource(
            name: "fdsn", baseURL: sink.url + "/fdsnws/event/1/",
            mode: .fdsn(start: start, end: start + 2 * 86_400, minMagnitude: 2.5, area: nil, window: 86_400), cap: 2)
        let out = await Fetch.run(sources: [ConfiguredSource(source: source)], store: store, now: start + 3 * 86_400)
        #expect(out[0].error == nil, "\(out[0].error ?? "")")
        #expect(out[0].requests == 4)
        #expect(out[0].stats.events.new == 2 && out[0].stats.inserted == 0)
        let queries = await sink.requests().map(\.query)
        #expect(queries[0].contains("starttime=2023-11-14T00:00:00Z&endtime=2023-11-15T00:00:00Z"))
        #expect(queries[1].contains("starttime=2023-11-14T00:00:00Z&endtime=2023-11-14T12:00:00Z"))
        #expect(queries[2].contains("starttime=2023-11-14T12:00:00Z&endtime=2023-11-15T00:00:00Z"))
        #expect(queries[3].contains("starttime=2023-11-15T00:00:00Z&endtime=2023-11-16T00:00:00Z"))
        #expect(queries[0].contains("minmagnitude=2.5"))
        await #expect(try store.quakes().count == 2)
    }
}
