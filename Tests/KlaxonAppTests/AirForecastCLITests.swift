import Foundation
import KlaxonCore
import Testing

/// `klaxon ingest` of AirNow forecast answers and OpenAQ v1/v2 bodies (by content or `--format`), and
/// `klaxon aqi AREA --forecast -o json` (issue 42).
@Suite(.timeLimit(.minutes(10))) struct AirForecastCLITests {
    static func record(
        issue: String, date: String, parameter: String, aqi: Int, category: Int, actionDay: Bool = false
    ) -> String {
        """
        {"DateIssue": "\(issue) ", "DateForecast": "\(date) ", "ReportingArea": "Denver-Boulder", "StateCode": "CO",
         "Latitude": 39.768, "Longitude": -105.0092, "ParameterName": "\(parameter)", "AQI": \(aqi),
         "Category": {"Number": \(category), "Name": ""}, "ActionDay": \(actionDay), "Discussion": "Inversion."}
        """
    }

    @Test func ingestByContentAndPrintTheForecast() async throws {
        let s = try Scratch()
        let db = s.path("klaxon.sqlite")
        let monday = try s.write(
            "denver_forecast.json",
            "["
                + [
                    Self.record(issue: "2026-12-07", date: "2026-12-08", parameter: "O3", aqi: -1, category: 2),
                    Self.record(
                        issue: "2026-12-07", date: "2026-12-08", parameter: "PM2.5", aqi: 125, category: 3,
                        actionDay: true),
                ].joined(separator: ",") + "]")
        let ingest = try await klaxonAsync(["ingest", monday, "--db", db])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        #expect(ingest.stderr.contains("ingest: 2 new"), "\(ingest.stderr)")

        let json = try await klaxonAsync(["aqi", "denver-boulder", "--forecast", "--db", db, "-o", "json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect(
            json.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
                == #"[{"date":"2026-12-08","issued":"2026-12-07","parameter":"O3","aqi":null,"category":"Moderate","action_day":false},"#
                + #"{"date":"2026-12-08","issued":"2026-12-07","parameter":"PM2.5","aqi":125,"category":"Unhealthy for Sensitive Groups","action_day":true}]"#
        )

        // An answer with two issue dates, one record absurd: the later issuance wins, the absurd
        // record is refused (exit 1), the earlier issuance is a note.
        let mixed = try s.write(
            "mixed.json",
            "["
                + [
                    Self.record(issue: "2026-12-08", date: "2026-12-08", parameter: "PM2.5", aqi: 160, category: 4),
                    Self.record(issue: "2026-12-06", date: "2026-12-08", parameter: "PM2.5", aqi: 50, category: 1),
                    Self.record(issue: "2026-12-08", date: "2026-12-09", parameter: "O3", aqi: 9999, category: 6),
                ].joined(separator: ",") + "]")
        let second = try await klaxonAsync(["ingest", "--format", "airnow-forecast", mixed, "--db", db])
        #expect(second.status == 1)
        #expect(
            second.stderr.contains("1 record not stored: an AQI that is not -1 or a whole number 0–500"),
            "\(second.stderr)")
        #expect(second.stderr.contains("the answer holds two issue dates"), "\(second.stderr)")
        // Monday's issuance arriving again, late: nothing changes.
        let late = try await klaxonAsync(["ingest", monday, "--db", db])
        #expect(late.status == 0, "\(late.stderr)")
        let after = try await klaxonAsync(["aqi", "Denver-Boulder", "--forecast", "--db", db, "--format", "json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows[1]["aqi"] as? Int == 160)
        #expect(rows[1]["issued"] as? String == "2026-12-08")
        #expect(Set(rows[1].keys) == ["date", "issued", "parameter", "aqi", "category", "action_day"])

        let text = try await klaxonAsync(["aqi", "Denver-Boulder", "--forecast", "--db", db])
        #expect(text.stdout.contains("2026-12-08 Tue  PM2.5  AQI 160  Unhealthy"), "\(text.stdout)")
        let none = try await klaxonAsync(["aqi", "Atlantis", "--forecast", "--db", db])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no air-quality forecasts for \"Atlantis\""), "\(none.stderr)")
    }

    @Test func tripShowPacksForABadAirDay() async throws {
        let s = try Scratch()
        let db = s.path("klaxon.sqlite")
        let trip = try s.write("denver.yaml", denverTrip)  // Denver, 2026-12-01 for 2 nights
        #expect(try await klaxonAsync(["trip", "add", trip, "--db", db, "--owner", "alice"]).status == 0)
        let answer = try s.write(
            "forecast.json",
            "["
                + Self.record(
                    issue: "2026-12-01", date: "2026-12-02", parameter: "PM2.5", aqi: 160, category: 4, actionDay: true)
                + "]")
        #expect(try await klaxonAsync(["ingest", answer, "--db", db]).status == 0)
        let show = try await klaxonAsync(["trip", "show", "denver", "--db", db, "--owner", "alice", "--format", "json"])
        #expect(show.status == 0, "\(show.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        let items = try #require(o["items"] as? [[String: Any]])
        let mask = try #require(items.first { $0["item"] as? String == "N95 mask" })
        #expect(mask["quantity"] as? Int == 1)
        #expect(
            mask["reason"] as? String
                == "Action Day forecast for Denver, Colorado, Wed (PM2.5 AQI 160, Unhealthy)")
        #expect(items.contains { $0["item"] as? String == "indoor activity plan" })
    }

    @Test func openAQv1AndV2BodiesIngestAsReadings() async throws {
        let s = try Scratch()
        let db = s.path("klaxon.sqlite")
        let v2 = try s.write(
            "v2_measurements.json",
            """
            {"meta": {"name": "openaq-api", "page": 1, "limit": 100, "found": 2},
             "results": [
              {"locationId": 8118, "location": "New Delhi", "parameter": "pm25", "value": 142.0,
               "date": {"utc": "2022-11-01T05:00:00+00:00", "local": "2022-11-01T10:30:00+05:30"}, "unit": "µg/m³",
               "coordinates": {"latitude": 28.63576, "longitude": 77.22445}, "country": "IN", "city": null},
              {"locationId": 8118, "location": "New Delhi", "parameter": "pm25", "value": 150.0,
               "date": {"utc": "2022-11-01T06:00:00+00:00", "local": "2022-11-01T11:30:00+05:30"}, "unit": "µg/m³",
               "coordinates": {"latitude": 28.63576, "longitude": 77.22445}, "country": "IN", "city": null}]}
            """)
        let v1 = try s.write(
            "v1_measurements.json",
            """
            {"meta": {"name": "openaq-api", "found": 1},
             "results": [{"location": "US Diplomatic Post: Hanoi", "parameter": "pm25",
               "date": {"utc": "2019-03-14T10:00:00.000Z", "local": "2019-03-14T17:00:00+07:00"}, "value": 57,
               "unit": "µg/m³", "coordinates": {"latitude": 21.02, "longitude": 105.85}, "country": "VN", "city": "Hanoi"}]}
            """)
        let ingest = try await klaxonAsync(["ingest", v2, v1, "--db", db])
        #expect(ingest.status == 0, "\(ingest.stderr)")
        #expect(ingest.stderr.contains("ingest: 3 new"), "\(ingest.stderr)")
        let series = try await klaxonAsync(["series", "openaq:8118", "pm25", "--db", db, "-o", "json"])
        #expect(series.status == 0, "\(series.stderr)")
        let points = try #require(try JSONSerialization.jsonObject(with: Data(series.stdout.utf8)) as? [[String: Any]])
        #expect(points.map { $0["value"] as? Double } == [142, 150])
        let forced = try await klaxonAsync(["ingest", "--format", "openaq-json", v1, "--db", db])
        #expect(forced.status == 0, "\(forced.stderr)")
    }
}
