import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSources
import KlaxonStore
import KlaxonTesting
import Testing

/// An Open-Meteo daily forecast response for Denver (°C, mm, cm, km/h).
func denverForecast(_ days: [(date: String, max: Double, min: Double, rain: Double, pop: Double, snow: Double)])
    -> String
{
    func list(_ f: ((date: String, max: Double, min: Double, rain: Double, pop: Double, snow: Double)) -> String)
        -> String
    {
        "[" + days.map(f).joined(separator: ",") + "]"
    }
    return """
        {"latitude":39.74,"longitude":-104.99,"generationtime_ms":0.2,"utc_offset_seconds":-25200,"timezone":"America/Denver","timezone_abbreviation":"MST","elevation":1609.0,"daily_units":{"time":"iso8601","temperature_2m_max":"°C","temperature_2m_min":"°C","precipitation_sum":"mm","precipitation_probability_max":"%","snowfall_sum":"cm","wind_speed_10m_max":"km/h","weather_code":"wmo code"},"daily":{"time":\(list { "\"\($0.date)\"" }),"temperature_2m_max":\(list { "\($0.max)" }),"temperature_2m_min":\(list { "\($0.min)" }),"precipitation_sum":\(list { "\($0.rain)" }),"precipitation_probability_max":\(list { "\($0.pop)" }),"snowfall_sum":\(list { "\($0.snow)" }),"wind_speed_10m_max":\(list { _ in "12.0" }),"weather_code":\(list { $0.pop > 50 ? "61" : "1" })}}
        """
}

let denverTrip = """
    name: denver
    purpose: leisure
    activities: [hiking]
    stops:
      - {place: "Denver, Colorado", latitude: 39.7392, longitude: -104.9903, arrive: 2026-12-01, nights: 2}
    preferences: {units: imperial}
    """

@Suite("trips from the command line", .serialized)
struct TripCLITests {
    let now = "2026-11-25T00:00:00Z"

    func dry() -> String {
        denverForecast([
            ("2026-12-01", 16, 4, 0, 5, 0), ("2026-12-02", 17, 5, 0, 10, 0), ("2026-12-03", 15, 3, 0, 5, 0),
        ])
    }

    func wet() -> String {
        denverForecast([
            ("2026-12-01", 16, 4, 0, 5, 0), ("2026-12-02", 12, 4, 6, 80, 0), ("2026-12-03", 15, 3, 0, 5, 0),
        ])
    }

    @Test("a forecast sequence where rain appears and disappears gives exactly the expected transitions")
    func rainAppearsAndDisappears() async throws {
        let s = try Scratch()
        let db = s.path("t.sqlite")
        let trip = try s.write("denver.yaml", denverTrip)
        let add = try await klaxonAsync(["trip", "add", trip, "--db", db, "--owner", "alice"])
        #expect(add.status == 0, "\(add.stderr)")
        #expect(add.stdout.contains("saved trip \"denver\" for alice"))

        func step(_ forecast: String, now: String? = nil) async throws -> [[String: Any]] {
            let file = try s.write("f-\(UUID().uuidString).json", forecast)
            let ingest = await InProcess.ingest(db: db, format: .openMeteoJSON, file)
            #expect(ingest.status == 0, "\(ingest.stderr)")
            let eval = await InProcess.evaluate(
                db: db, rules: [repoPath("Rules/trips.yaml")], now: now ?? self.now, format: .json)
            #expect(eval.status == 0, "\(eval.stderr)")
            return try jsonObjects(eval.lines)
        }
        // Before any forecast: nothing yet (a list of essentials alone is not announced).
        let early = await InProcess.evaluate(db: db, rules: [repoPath("Rules/trips.yaml")], now: now, format: .json)
        #expect(early.status == 0, "\(early.stderr)")
        #expect(early.lines.isEmpty, "\(early.stdout)")

        let ready = try await step(dry())
        #expect(ready.map { $0["state"] as? String } == ["firing"])
        #expect(ready.first?["station"] as? String == "alice/denver")
        #expect((ready.first?["message"] as? String)?.contains("packing list ready") == true)

        #expect(try await step(dry()).isEmpty)  // the same forecast, issued again: nothing

        let rain = try await step(wet())
        #expect(rain.map { $0["state"] as? String } == ["changed"])
        let added = try #require(rain.first?["message"] as? String)
        #expect(added.contains("+ umbrella"), "\(added)")
        #expect(added.contains("80 %"), "\(added)")

        #expect(try await step(wet()).isEmpty)

        let dryAgain = try await step(dry())
        #expect(dryAgain.map { $0["state"] as? String } == ["changed"])
        #expect((dryAgain.first?["message"] as? String)?.contains("− umbrella") == true)

        // After the trip: nothing, whatever the forecast.
        #expect(try await step(wet(), now: "2026-12-10T00:00:00Z").isEmpty)

        // dry-run over the stored trips and forecasts: the list as it would be announced from scratch.
        let dry = await InProcess.dryRun(rules: [repoPath("Rules/trips.yaml")], db: db, to: now, format: .json)
        #expect(dry.status == 0, "\(dry.stderr)")
        let replayed = try jsonObjects(dry.lines)
        #expect(replayed.map { $0["state"] as? String } == ["firing"])
        #expect((replayed.first?["message"] as? String)?.contains("packing list ready") == true)
    }

    @Test("owners: another owner's trip is not found; --all is for admins; show, list, export and import")
    func ownersAndViews() async throws {
        let s = try Scratch()
        let db = s.path("t.sqlite")
        let trip = try s.write("denver.yaml", denverTrip)
        #expect(try await klaxonAsync(["trip", "add", trip, "--db", db, "--owner", "alice"]).status == 0)
        let forecast = try s.write("f.json", wet())
        #expect(await InProcess.ingest(db: db, format: .openMeteoJSON, forecast).status == 0)

        let show = try await klaxonAsync(["trip", "show", "denver", "--db", db, "--owner", "alice", "--format", "json"])
        #expect(show.status == 0, "\(show.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any])
        let items = try #require(o["items"] as? [[String: Any]])
        let umbrella = try #require(items.first { $0["item"] as? String == "umbrella" })
        #expect(umbrella["quantity"] as? Int == 1)
        #expect((umbrella["reason"] as? String)?.contains("2026-12-02") == true)
        #expect(items.allSatisfy { $0["item"] is String && $0["quantity"] is Int && $0["reason"] is String })
        let text = try await klaxonAsync(["trip", "show", "denver", "--db", db, "--owner", "alice"])
        #expect(text.stdout.contains("2026-12-02 Denver, Colorado: high 54 °F, low 39 °F, rain 80 %"))

        let bob = try await klaxonAsync(["trip", "show", "denver", "--db", db, "--owner", "bob"])
        #expect(bob.status == 1)
        #expect(bob.stderr.contains("trip \"denver\" not found for bob"))
        let notAdmin = try await klaxonAsync(["trip", "list", "--db", db, "--owner", "bob", "--all"])
        #expect(notAdmin.status == 1)
        #expect(notAdmin.stderr.contains("--all is for admins"))
        #expect(
            try await klaxonAsync(["trip", "list", "--db", db, "--owner", "alice"]).stdout.contains(
                "denver  2026-12-01 → 2026-12-03"))

        let export = try await klaxonAsync([
            "trip", "export", "denver", "--db", db, "--owner", "alice", "--format", "json",
        ])
        #expect(export.status == 0, "\(export.stderr)")
        let file = try s.write("export.json", export.stdout)
        let other = s.path("other.sqlite")
        let imported = try await klaxonAsync(["trip", "import", file, "--db", other, "--owner", "carol"])
        #expect(imported.status == 0, "\(imported.stderr)")
        let again = try await klaxonAsync([
            "trip", "show", "denver", "--db", other, "--owner", "carol", "--format", "json",
        ])
        let o2 = try #require(try JSONSerialization.jsonObject(with: Data(again.stdout.utf8)) as? [String: Any])
        #expect((o2["items"] as? [[String: Any]])?.count == items.count)

        let removed = try await klaxonAsync(["trip", "remove", "denver", "--db", db, "--owner", "alice"])
        #expect(removed.status == 0)
        #expect(try await klaxonAsync(["trip", "show", "denver", "--db", db, "--owner", "alice"]).status == 1)
    }

    @Test("trip files are checked strictly, naming the field and why")
    func badTripFile() async throws {
        let s = try Scratch()
        let bad = try s.write(
            "bad.yaml",
            """
            name: x
            purpose: holiday
            stops:
              - {place: Denver, latitude: 39.7, arrive: 2026-12-05, nights: -1}
              - {place: Boulder, latitude: 40, longitude: -105.3, arrive: 2026-12-01, nights: 1, colour: red}
            preferences: {feels: freezing}
            """)
        let run = try await klaxonAsync(["trip", "add", bad, "--db", s.path("t.sqlite"), "--owner", "alice"])
        #expect(run.status == 1)
        let e = run.stderr
        #expect(e.contains("bad.yaml:2:10: error: purpose must be business or leisure, not \"holiday\""))
        #expect(e.contains("give both latitude and longitude"))
        #expect(e.contains("nights must be 0 or more, not -1"))
        #expect(e.contains("stops must be in date order"))
        #expect(e.contains("unknown key \"colour\""))
        #expect(e.contains("feels must be one of runs-cold, cold, neutral, warm, runs-hot"))
    }

    @Test("a place is geocoded; an ambiguous or unknown one is an error listing candidates")
    func geocoding() async throws {
        try await HTTPSink.with { sink in try await geocoding(sink: sink) }
    }

    func geocoding(sink: HTTPSink) async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            "database: t.sqlite\nsources:\n  - {name: wx, kind: open-meteo, geocoding_url: \"\(sink.url)/v1/\"}\n")
        let springfield =
            #"{"results":[{"id":1,"name":"Springfield","latitude":39.80,"longitude":-89.64,"country":"United States","admin1":"Illinois","timezone":"America/Chicago","population":114394},{"id":2,"name":"Springfield","latitude":37.22,"longitude":-93.30,"country":"United States","admin1":"Missouri","timezone":"America/Chicago","population":169176}],"generationtime_ms":0.5}"#
        await sink.script([
            .respond(status: 200, body: springfield), .respond(status: 200, body: springfield),
            .respond(status: 200, body: #"{"generationtime_ms":0.3}"#),
        ])
        let ambiguous = try await klaxonAsync([
            "trip", "add", "--config", config, "--owner", "alice", "--name", "x", "--place", "Springfield", "--arrive",
            "2026-12-01",
        ])
        #expect(ambiguous.status == 1)
        #expect(ambiguous.stderr.contains("\"Springfield\" is ambiguous"))
        #expect(ambiguous.stderr.contains("Springfield, Illinois, United States (39.8, -89.64)"))
        let picked = try await klaxonAsync([
            "trip", "add", "--config", config, "--owner", "alice", "--name", "x", "--place", "Springfield, Missouri",
            "--arrive", "2026-12-01",
        ])
        #expect(picked.status == 0, "\(picked.stderr)")
        #expect(picked.stdout.contains("Springfield, Missouri (37.22, -93.3)"))
        let unknown = try await klaxonAsync([
            "trip", "add", "--config", config, "--owner", "alice", "--name", "y", "--place", "Atlantis", "--arrive",
            "2026-12-01",
        ])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no place called \"Atlantis\""))
        #expect(await sink.requests().first?.query.contains("name=Springfield") == true)
    }

    @Test("a severe NWS alert at a stop during the trip is announced once")
    func nwsAlert() async throws {
        try await HTTPSink.with { sink in try await nwsAlert(sink: sink) }
    }

    func nwsAlert(sink: HTTPSink) async throws {
        let store = try tempStore()
        let now = Timestamp.parse("2026-11-25T00:00:00Z")!
        try await store.save(
            trip: Trip(
                name: "denver", owner: "alice",
                stops: [
                    .init(place: "Denver", latitude: 39.7392, longitude: -104.9903, arrive: "2026-12-01", nights: 2)
                ]),
            at: now)
        let alert =
            #"{"type":"FeatureCollection","features":[{"id":"https://api.weather.gov/alerts/urn:oid:1","type":"Feature","geometry":null,"properties":{"@id":"https://api.weather.gov/alerts/urn:oid:1","id":"urn:oid:1","areaDesc":"Denver","sent":"2026-11-30T10:00:00-07:00","effective":"2026-11-30T10:00:00-07:00","onset":"2026-12-01T06:00:00-07:00","expires":"2026-12-02T06:00:00-07:00","ends":"2026-12-02T18:00:00-07:00","status":"Actual","messageType":"Alert","category":"Met","severity":"Severe","certainty":"Likely","urgency":"Expected","event":"Winter Storm Warning","headline":"Winter Storm Warning until December 2","description":"Heavy snow.","parameters":{}}}]}"#
        await sink.script([.respond(status: 200, body: alert), .respond(status: 200, body: alert)])
        let source = ConfiguredSource(source: NWSAlertsSource(name: "nws", baseURL: sink.url + "/"))
        let rules = [Rule(name: "trip-packing", kind: TripPackingRule())]
        _ = await Fetch.run(sources: [source], store: store, now: now)
        let first = try await Evaluate.run(store: store, rules: rules, now: now).transitions
        let alerts = first.filter { $0.transition.metric.hasPrefix("alert:") }
        #expect(alerts.count == 1)
        #expect(alerts.first?.message.contains("Winter Storm Warning") == true)
        #expect(await sink.requests().first?.query == "point=39.739,-104.99")
        let refetch = await Fetch.run(sources: [source], store: store, now: now + 900)
        #expect(refetch.first?.error == nil)
        #expect(await sink.requests().count == 2)
        let second = try await Evaluate.run(store: store, rules: rules, now: now + 900).transitions
        #expect(second.filter { $0.transition.metric.hasPrefix("alert:") }.isEmpty)
    }
}

@Suite("trip weather sources from a local server", .serialized)
struct TripWeatherFetchTests {
    @Test("open-meteo: forecast up to the horizon, climatology from the archive beyond it")
    func forecastAndClimatology() async throws {
        try await HTTPSink.with { sink in try await forecastAndClimatology(sink: sink) }
    }

    func forecastAndClimatology(sink: HTTPSink) async throws {
        let store = try tempStore()
        let now = Timestamp.parse("2026-11-25T00:00:00Z")!
        try await store.save(
            trip: Trip(
                name: "long", owner: "alice",
                stops: [
                    .init(place: "Denver", latitude: 39.7392, longitude: -104.9903, arrive: "2026-12-01", nights: 20)
                ]),
            at: now)
        // Forecast: 16 days from 2026-11-25 (horizon 2026-12-10).
        var days: [(date: String, max: Double, min: Double, rain: Double, pop: Double, snow: Double)] = []
        for i in 0..<16 {
            days.append((String(Timestamp.format(now + Int64(i) * 86_400).prefix(10)), 10, 0, 0, 10, 0))
        }
        // Archive: every day from 2016-12-11 to 2025-12-21, a cold wet 5/-3 °C.
        var dates: [String] = []
        var t = Timestamp.parse("2016-12-11T00:00:00Z")!
        while t <= Timestamp.parse("2025-12-21T00:00:00Z")! {
            dates.append(String(Timestamp.format(t).prefix(10)))
            t += 86_400
        }
        func repeated(_ v: String) -> String {
            "[" + Array(repeating: v, count: dates.count).joined(separator: ",") + "]"
        }
        let archive = """
            {"latitude":39.74,"longitude":-104.99,"utc_offset_seconds":-25200,"timezone":"America/Denver","daily_units":{"time":"iso8601","temperature_2m_max":"°C","temperature_2m_min":"°C","precipitation_sum":"mm","snowfall_sum":"cm","wind_speed_10m_max":"km/h","weather_code":"wmo code"},"daily":{"time":[\(dates.map { "\"\($0)\"" }.joined(separator: ","))],"temperature_2m_max":\(repeated("5.0")),"temperature_2m_min":\(repeated("-3.0")),"precipitation_sum":\(repeated("1.5")),"snowfall_sum":\(repeated("0.0")),"wind_speed_10m_max":\(repeated("10.0")),"weather_code":\(repeated("61"))}}
            """
        await sink.script([.respond(status: 200, body: denverForecast(days)), .respond(status: 200, body: archive)])
        let source = ConfiguredSource(
            source: OpenMeteoSource(name: "wx", baseURL: sink.url + "/v1/", archiveURL: sink.url + "/archive/v1/"))
        let out = await Fetch.run(sources: [source], store: store, now: now)
        #expect(out[0].error == nil, "\(out[0].error ?? "")")
        #expect(out[0].requests == 2)
        let requests = await sink.requests()
        #expect(requests.map(\.path) == ["/v1/forecast", "/archive/v1/archive"])
        #expect(requests[0].query.contains("latitude=39.739&longitude=-104.99"))
        #expect(requests[0].query.contains("timezone=auto&forecast_days=16"))
        #expect(requests[1].query.contains("start_date=2016-12-11&end_date=2025-12-21"))
        let trip = try await #require(try store.trip(owner: "alice", name: "long"))
        let weather = try await store.weather(for: trip)
        #expect(weather.count == 21)
        #expect(weather.filter(\.climatology).map(\.date).first == "2026-12-11")
        #expect(weather.filter { !$0.climatology }.map(\.date).last == "2026-12-10")
        let clim = try #require(weather.first { $0.date == "2026-12-15" })
        #expect(clim.tempMaxC == 5 && clim.tempMinC == -3)
        #expect(clim.precipitationProbability == 100)
        let list = Packer.pack(trip, weather: weather)
        let umbrella = list.items.first { $0.item == "umbrella" }
        #expect(umbrella?.reasons.joined().contains("climatology") == true)
    }
}
