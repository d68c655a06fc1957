import Foundation
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import Testing

/// The CLI's contract of issue 42's commands: `nowcast`, `series` and `quakes --at` (their
/// arithmetic is tested in the core; here, the flags, the JSON shapes and the exit statuses).
@Suite(.timeLimit(.minutes(10))) struct ForecastCLITests {
    @Test func nowcastPrintsTheDocumentedShapeOrSaysWhyNot() async throws {
        let ok = try await klaxonAsync([
            "nowcast", "--pollutant", "pm2.5", "--hourly",
            "46.3,27.4,59.8,129.2,130.6,215.4,143.2,93.7,101.8,49.3,80.2,123.3", "-o", "json",
        ])
        #expect(ok.status == 0, "\(ok.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(ok.stdout.utf8)) as? [String: Any])
        #expect(o["nowcast"] as? Double == 54.8)
        #expect(o["aqi"] as? Int == 149)
        #expect(o["category"] as? String == "Unhealthy for Sensitive Groups")
        #expect(Set(o.keys) == ["nowcast", "aqi", "category"])

        // One of the 3 most recent hours: no NowCast, said so, exit 1.
        let missing = try await klaxonAsync(["nowcast", "--pollutant", "pm10", "--hourly", "40,,,38,37", "-o", "json"])
        #expect(missing.status == 1)
        #expect(missing.stdout.isEmpty)
        #expect(missing.stderr.hasPrefix("not valid: needs at least 2 of the 3 most recent hours"), "\(missing.stderr)")

        // A value that cannot be a concentration is refused by its hour; a word is a usage error.
        let negative = try await klaxonAsync(["nowcast", "--pollutant", "pm2.5", "--hourly", "10,-4,9"])
        #expect(negative.status == 1)
        #expect(negative.stderr.contains("hour 2"), "\(negative.stderr)")
        let word = try await klaxonAsync(["nowcast", "--pollutant", "pm2.5", "--hourly", "10,ten,9"])
        #expect(word.status == 64)
        #expect(word.stderr.contains("item 2"), "\(word.stderr)")
    }

    @Test func seriesAndQuakesAtAPlace() async throws {
        let scratch = try Scratch()
        let db = scratch.path("klaxon.sqlite")
        let hour = Timestamp.parse("2026-11-01T00:00:00Z")!
        do {
            let store = try SQLiteStore.open(path: db)
            var batch = SourceBatch(
                readings: (0..<4).map {
                    Reading(station: "omak", metric: "pm25", time: hour + Int64($0) * 3_600, value: 40, unit: "µg/m³")
                })
            batch.quakes = [
                QuakeEvent(
                    id: "us7000demo", time: hour * 1_000, updated: hour * 1_000, magnitude: 6.8, magType: "mww",
                    place: "near Tokyo", latitude: 35.6762 + 132 / 111.2, longitude: 139.6503, depthKm: 30, cdi: 4.3,
                    mmi: 5.1)
            ]
            _ = try await store.write(batch, at: hour)
        }
        let series = try await klaxonAsync(["series", "omak", "aqi.pm25.nowcast", "--db", db, "-o", "json"])
        #expect(series.status == 0, "\(series.stderr)")
        let points = try #require(try JSONSerialization.jsonObject(with: Data(series.stdout.utf8)) as? [[String: Any]])
        #expect(points.count == 3)  // hours 1–3: hour 0 alone has 1 of its 3 most recent hours
        #expect(points.first?["time"] as? String == "2026-11-01T01:00:00Z")
        #expect(points.allSatisfy { $0["value"] as? Double == 112 })  // 40 µg/m³ steady → AQI 112
        #expect(Set(points.first?.keys ?? [:].keys) == ["time", "value"])

        let quakes = try await klaxonAsync([
            "quakes", "--db", db, "--since", "2026-10-01", "--at", "35.6762,139.6503", "-o", "json",
        ])
        #expect(quakes.status == 0, "\(quakes.stderr)")
        let e = try #require(try JSONSerialization.jsonObject(with: Data(quakes.lines[0].utf8)) as? [String: Any])
        let distance = try #require(e["distance_km"] as? Double)
        #expect(abs(distance - 135.4) < 0.5, "hypocentral: √(132² + 30²)")
        #expect(e["intensity"] as? Double == 4.2)
        #expect(e["intensity_source"] as? String == "aw2007-california")
        #expect(e["cdi"] as? Double == 4.3)
        #expect(e["mmi"] as? Double == 5.1)

        let text = try await klaxonAsync(["quakes", "--db", db, "--since", "2026-10-01", "--at", "35.6762,139.6503"])
        #expect(text.stdout.contains("estimated intensity IV (light shaking"), "\(text.stdout)")
        #expect(text.stdout.contains("event max: DYFI 4.3, ShakeMap 5.1"), "\(text.stdout)")
        let model = try await klaxonAsync(["quakes", "--db", db, "--at", "35.6,139.6", "--intensity-model", "x"])
        #expect(model.status == 64)
    }

    @Test func dryRunDerivesTheNowCastOfAReadingsFile() async throws {
        let scratch = try Scratch()
        // Clean air, then smoke: the NowCast AQI passes 150 (Unhealthy) a few hours into it.
        var csv = "station,metric,time,value,unit\n"
        for h in 0..<12 { csv += "omak,pm25,2026-11-01T\(String(format: "%02d", h)):00:00Z,8,ug/m3\n" }
        for h in 12..<18 { csv += "omak,pm25,2026-11-01T\(h):00:00Z,180,ug/m3\n" }
        let readings = try scratch.write("smoke.csv", csv)
        let rules = try scratch.write(
            "r.yaml", "name: smoke\nkind: threshold\nmetric: aqi.pm25.nowcast\nabove: 150\nseverity: warning\n")
        let r = try await klaxonAsync(["dry-run", "--readings", readings, "--rules", rules, "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let firing = r.lines.filter { $0.contains("\"firing\"") }
        #expect(firing.count == 1, "\(r.stdout)")
        #expect(firing.first?.contains("aqi.pm25.nowcast") == true)
    }
}
