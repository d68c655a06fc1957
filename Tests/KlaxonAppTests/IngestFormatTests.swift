import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonSources
import KlaxonStore
import KlaxonTesting
import Testing

/// A CWMS Data API v2 page, hourly rows from `start`: `[epoch_ms, value, quality]`, nil for null.
func cwmsPage(_ name: String, units: String = "cfs", start: String, values: [Double?], next: String? = nil) -> String {
    let t0 = Timestamp.parse(start)! * 1000
    let rows = values.enumerated().map { i, v in "[\(t0 + Int64(i) * 3_600_000),\(v.map { "\($0)" } ?? "null"),0]" }
    let nextPage = next.map { #","next-page":"\#($0)""# } ?? ""
    let columns =
        #"[{"name":"date-time","ordinal":1,"datatype":"java.sql.Timestamp"},"#
        + #"{"name":"value","ordinal":2,"datatype":"java.lang.Double"},"#
        + #"{"name":"quality-code","ordinal":3,"datatype":"int"}]"#
    return #"{"name":"\#(name)","office-id":"SWT","units":"\#(units)","interval":"PT1H","interval-offset":0,"#
        + #""time-zone":"UTC","page":"p0","page-size":500,"total":\#(values.count)\#(nextPage),"#
        + #""value-columns":\#(columns),"values":[\#(rows.joined(separator: ","))]}"#
}

/// Every stored reading as `station|metric|time|value|unit`, sorted: two stores compare as text.
func storedReadings(_ store: any Store) async throws -> [String] {
    var out: [String] = []
    try await store.forEachReading(from: nil, to: nil, page: 1_000) { series, unit, readings in
        for r in readings {
            out.append("\(series.station)|\(series.metric)|\(Timestamp.format(r.time))|\(r.value)|\(unit ?? "")")
        }
    }
    return out.sorted()
}

@Suite("ingest --format: CWMS series, Open-Meteo variables, air-quality payloads", .serialized)
struct IngestFormatTests {
    static let inflow = "KEYS.Flow-Res In.Ave.1Hour.1Hour.Rev-Regi"
    static let outflow = "KEYS.Flow-Res Out.Ave.1Hour.1Hour.Rev-Regi"

    // MARK: - CWMS

    @Test("cwms: a reservoir's outflow loaded after its inflow is a series of its own")
    func cwmsInflowThenOutflow() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let inflowValues = (0..<24).map { Double(5_000 + $0 * 10) }
        let outflowValues = (0..<24).map { Double(4_100 - $0 * 5) }
        let inflow = try s.write(
            "in.json", cwmsPage(Self.inflow, start: "2024-05-01T00:00:00Z", values: inflowValues))
        let outflow = try s.write(
            "out.json", cwmsPage(Self.outflow, start: "2024-05-01T00:00:00Z", values: outflowValues))
        let first = await InProcess.ingest(db: db, format: .cwmsJSON, inflow)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.contains("ingest: 24 new, 0 revised, 0 unchanged, 0 rejected"))
        let second = await InProcess.ingest(db: db, format: .cwmsJSON, outflow)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("ingest: 24 new, 0 revised, 0 unchanged, 0 rejected"))

        let store = try SQLiteStore.open(path: db)
        let series = try await store.series(station: "KEYS")
        #expect(series.map(\.metric) == ["discharge.res_in", "discharge.res_out"])
        #expect(series.map(\.unit) == ["ft³/s", "ft³/s"])
        let t0 = Timestamp.parse("2024-05-01T00:00:00Z")!
        let storedIn = try await store.readings(station: "KEYS", metric: "discharge.res_in")
        #expect(storedIn.map(\.value) == inflowValues)
        #expect(storedIn.map(\.time) == (0..<24).map { t0 + Int64($0) * 3_600 })
        #expect(storedIn.allSatisfy { !$0.revised && $0.quality == "0" })
        let storedOut = try await store.readings(station: "KEYS", metric: "discharge.res_out")
        #expect(storedOut.map(\.value) == outflowValues)
        #expect(storedOut.allSatisfy { !$0.revised })
    }

    @Test("cwms: Elev and Elev-Tailwater stay apart; two intervals of one parameter loaded together get both")
    func cwmsElevationAndTailwater() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let pool = try s.write(
            "pool.json",
            cwmsPage(
                "KEYS.Elev.Inst.1Hour.0.Ccp-Rev", units: "ft", start: "2024-05-01T00:00:00Z", values: [723.5, 723.6]))
        let tail = try s.write(
            "tail.json",
            cwmsPage(
                "KEYS.Elev-Tailwater.Inst.1Hour.0.Ccp-Rev", units: "ft", start: "2024-05-01T00:00:00Z",
                values: [612.25, nil]))
        let r = await InProcess.ingest(db: db, format: .cwmsJSON, pool, tail)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 3 new, 0 revised, 0 unchanged, 0 rejected, 1 missing values skipped"))
        let store = try SQLiteStore.open(path: db)
        #expect(try await store.series(station: "KEYS").map(\.metric) == ["elevation", "elevation.tailwater"])
        #expect(try await store.readings(station: "KEYS", metric: "elevation").map(\.value) == [723.5, 723.6])
        #expect(try await store.readings(station: "KEYS", metric: "elevation.tailwater").map(\.value) == [612.25])

        // Hourly and daily flow in one load: each gets its type, interval and duration.
        let hourly = try s.write(
            "hourly.json", cwmsPage("ARBU.Flow.Inst.1Hour.0.Ccp-Rev", start: "2024-05-01T00:00:00Z", values: [10, 11]))
        let daily = try s.write(
            "daily.json", cwmsPage("ARBU.Flow.Ave.1Day.1Day.Ccp-Rev", start: "2024-05-01T00:00:00Z", values: [12]))
        let both = await InProcess.ingest(db: db, format: .cwmsJSON, hourly, daily)
        #expect(both.stderr.contains("ingest: 3 new, 0 revised"), "\(both.stderr)")
        #expect(
            try await store.series(station: "ARBU").map(\.metric) == [
                "discharge.ave.1day.1day", "discharge.inst.1hour.0",
            ])
        #expect(try await store.readings(station: "ARBU", metric: "discharge.ave.1day.1day").map(\.value) == [12])
    }

    @Test("cwms: metric: in the config names the series, for ingest --config and for the source")
    func cwmsConfiguredMetric() async throws {
        try await HTTPSink.with { sink in try await cwmsConfiguredMetric(sink: sink) }
    }

    func cwmsConfiguredMetric(sink: HTTPSink) async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            sources:
              - name: corps
                kind: cwms
                base_url: \(sink.url)/cwms-data/
                office: SWT
                timeseries:
                  - {name: "\(Self.outflow)", metric: release}
                  - KEYS.Flow.Inst.1Hour.0.Ccp-Rev
            """)
        let out = try s.write(
            "out.json", cwmsPage(Self.outflow, start: "2024-05-01T00:00:00Z", values: [4_100, 4_095]))
        let flow = try s.write(
            "flow.json", cwmsPage("KEYS.Flow.Inst.1Hour.0.Ccp-Rev", start: "2024-05-01T00:00:00Z", values: [900]))
        // Not in the config: its plain name is the configured series', so it steps aside.
        let daily = try s.write(
            "daily.json", cwmsPage("KEYS.Flow.Ave.1Day.1Day.Ccp-Rev", start: "2024-05-01T00:00:00Z", values: [880]))
        let r = await InProcess.ingest(config: config, format: .cwmsJSON, out, flow, daily)
        #expect(r.status == 0, "\(r.stderr)")
        let store = try SQLiteStore.open(path: s.path("k.sqlite"))
        #expect(
            try await store.series(station: "KEYS").map(\.metric) == [
                "discharge", "discharge.ave.1day.1day", "release",
            ])
        #expect(try await store.readings(station: "KEYS", metric: "release").map(\.value) == [4_100, 4_095])
        #expect(try await store.readings(station: "KEYS", metric: "discharge").map(\.value) == [900])

        // The source stores them under the same names.
        let loaded = try Config.load(path: config)
        let fetched = try tempStore()
        await sink.script([
            .respond(status: 200, body: cwmsPage(Self.outflow, start: "2024-05-01T00:00:00Z", values: [4_100, 4_095])),
            .respond(
                status: 200,
                body: cwmsPage("KEYS.Flow.Inst.1Hour.0.Ccp-Rev", start: "2024-05-01T00:00:00Z", values: [900])
            ),
        ])
        let outcome = await Fetch.run(
            sources: loaded.sources, store: fetched, now: Timestamp.parse("2024-05-02T00:00:00Z")!)
        #expect(outcome[0].error == nil, "\(outcome[0].error ?? "")")
        #expect(try await fetched.series(station: "KEYS").map(\.metric) == ["discharge", "release"])
        #expect(try await storedReadings(fetched) == (try await storedReadings(store)).filter { !$0.contains(".ave.") })

        // One metric for two series of a location is a config error.
        let clash = try s.write(
            "clash.yaml",
            """
            sources:
              - name: corps
                kind: cwms
                office: SWT
                timeseries:
                  - {name: "\(Self.inflow)", metric: flow}
                  - {name: "\(Self.outflow)", metric: flow}
            """)
        let check = await InProcess.check(config: clash, rules: [repoPath("Rules/water.yaml")])
        #expect(check.status == 1)
        #expect(
            check.stderr.contains(
                "time series \"\(Self.outflow)\" and \"\(Self.inflow)\" are both given metric \"flow\""),
            "\(check.stderr)")
    }

    @Test("cwms source: inflow, outflow and two intervals of one location fetched together stay apart")
    func cwmsSourceNames() async throws {
        try await HTTPSink.with { sink in
            let store = try tempStore()
            let ids = [Self.inflow, Self.outflow, "KEYS.Flow.Inst.1Hour.0.Best", "KEYS.Flow.Ave.1Day.1Day.Best"]
            await sink.script(
                ids.enumerated().map { i, id in
                    .respond(status: 200, body: cwmsPage(id, start: "2024-05-01T00:00:00Z", values: [Double(100 + i)]))
                })
            let source = CWMSSource(
                name: "corps", baseURL: sink.url + "/cwms-data/", office: "SWT", timeseries: ids.map { .init(name: $0) }
            )
            let out = await Fetch.run(
                sources: [ConfiguredSource(source: source)], store: store, now: Timestamp.parse("2024-05-02T00:00:00Z")!
            )
            #expect(out[0].error == nil, "\(out[0].error ?? "")")
            #expect(out[0].stats.inserted == 4)
            #expect(
                try await storedReadings(store) == [
                    "KEYS|discharge.ave.1day.1day|2024-05-01T00:00:00Z|103.0|ft³/s",
                    "KEYS|discharge.inst.1hour.0|2024-05-01T00:00:00Z|102.0|ft³/s",
                    "KEYS|discharge.res_in|2024-05-01T00:00:00Z|100.0|ft³/s",
                    "KEYS|discharge.res_out|2024-05-01T00:00:00Z|101.0|ft³/s",
                ])
        }
    }

    // MARK: - Open-Meteo

    @Test("open-meteo: a fresh forecast's days ahead are stored; the bound for observations does not apply")
    func openMeteoForecastAhead() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let today = Int64(Date().timeIntervalSince1970)
        func day(_ n: Int64) -> String { String(Timestamp.format(today + n * 86_400).prefix(10)) }
        let flood = try s.write(
            "flood.json",
            """
            {"latitude":59.9,"longitude":10.75,"utc_offset_seconds":0,"timezone":"GMT",
             "daily_units":{"time":"iso8601","river_discharge":"m³/s"},
             "daily":{"time":["\(day(0))","\(day(7))","\(day(90))"],"river_discharge":[412.5,398.06,120.0]}}
            """)
        let r = await InProcess.ingest(db: db, format: .openMeteoJSON, flood)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 3 new, 0 revised, 0 unchanged, 0 rejected"), "\(r.stderr)")
    }

    @Test("open-meteo: the flood API's variables are stored as readings with their unit")
    func openMeteoFloodAPI() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let flood = try s.write(
            "flood.json",
            """
            {"latitude":59.9,"longitude":10.75,"generationtime_ms":0.41,"utc_offset_seconds":0,"timezone":"GMT",
             "timezone_abbreviation":"GMT",
             "daily_units":{"time":"iso8601","river_discharge":"m³/s","river_discharge_mean":"m³/s",
                            "river_discharge_p75":"m³/s"},
             "daily":{"time":["2025-05-01","2025-05-02"],"river_discharge":[412.5,398.06],
                      "river_discharge_mean":[405.1,null],"river_discharge_p75":[430.0,421.9]}}
            """)
        let r = await InProcess.ingest(db: db, format: .openMeteoJSON, flood)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(
            r.stderr.contains(
                "\(flood): open-meteo-json: stored as readings of station 59.90,10.75: river_discharge (m³/s), "
                    + "river_discharge_mean (m³/s), river_discharge_p75 (m³/s)"), "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 5 new, 0 revised, 0 unchanged, 0 rejected, 1 missing values skipped"))
        let store = try SQLiteStore.open(path: db)
        #expect(
            try await storedReadings(store) == [
                "59.90,10.75|river_discharge_mean|2025-05-01T00:00:00Z|405.1|m³/s",
                "59.90,10.75|river_discharge_p75|2025-05-01T00:00:00Z|430.0|m³/s",
                "59.90,10.75|river_discharge_p75|2025-05-02T00:00:00Z|421.9|m³/s",
                "59.90,10.75|river_discharge|2025-05-01T00:00:00Z|412.5|m³/s",
                "59.90,10.75|river_discharge|2025-05-02T00:00:00Z|398.06|m³/s",
            ])
        #expect(try await store.forecasts(place: "59.90,10.75").isEmpty)
        let station = try #require(try await store.stationInfos()["59.90,10.75"])
        #expect(station.latitude == 59.9 && station.longitude == 10.75 && station.timeZone == "GMT")
        let again = await InProcess.ingest(db: db, format: .openMeteoJSON, flood)
        #expect(again.stderr.contains("ingest: 0 new, 0 revised, 5 unchanged"))
    }

    @Test("open-meteo: a response with nothing usable exits 1 and says why; an extra variable is stored and named")
    func openMeteoNothingUsableAndExtraVariable() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let useless = try s.write(
            "useless.json",
            """
            {"latitude":39.74,"longitude":-104.99,"timezone":"GMT","daily_units":{"time":"iso8601","sunset":"iso8601"},
             "daily":{"time":["2026-03-14","2026-03-15"],"sunset":["2026-03-14T19:10","2026-03-15T19:11"]}}
            """)
        let bad = await InProcess.ingest(db: db, format: .openMeteoJSON, useless)
        #expect(bad.status == 1)
        #expect(
            bad.stderr.contains(
                "\(useless): open-meteo-json: nothing to store: no daily variable with values; left out: "
                    + "sunset (times, not values)"), "\(bad.stderr)")
        #expect(bad.stderr.contains("ingest: 0 new, 0 revised, 0 unchanged, 1 rejected"))

        let forecast = try s.write(
            "forecast.json",
            """
            {"latitude":39.74,"longitude":-104.99,"utc_offset_seconds":-21600,"timezone":"America/Denver",
             "daily_units":{"time":"iso8601","temperature_2m_max":"°F","temperature_2m_min":"°F","uv_index_max":""},
             "daily":{"time":["2026-03-14","2026-03-15"],"temperature_2m_max":[50.0,33.8],
                      "temperature_2m_min":[28.4,21.2],"uv_index_max":[5.35,2.1]}}
            """)
        let ok = await InProcess.ingest(db: db, format: .openMeteoJSON, forecast)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stderr.contains("stored as readings of station 39.74,-104.99: uv_index_max"), "\(ok.stderr)")
        #expect(ok.stderr.contains("ingest: 4 new, 0 revised"))
        let store = try SQLiteStore.open(path: db)
        let days = try await store.forecasts(place: "39.74,-104.99")
        #expect(days.map(\.date) == ["2026-03-14", "2026-03-15"])
        #expect(days.map(\.tempMaxC) == [10, 1])
        #expect(days.map(\.tempMinC) == [-2, -6])
        #expect(
            try await storedReadings(store) == [
                "39.74,-104.99|uv_index_max|2026-03-14T00:00:00Z|5.35|",
                "39.74,-104.99|uv_index_max|2026-03-15T00:00:00Z|2.1|",
            ])
    }

    // MARK: - Air quality

    static let airnowBody = """
        [{"DateObserved":"2025-08-14 ","HourObserved":10,"LocalTimeZone":"PST","ReportingArea":"Central LA CO",
          "StateCode":"CA","Latitude":34.0663,"Longitude":-118.2266,"ParameterName":"O3","AQI":162,
          "Category":{"Number":4,"Name":"Unhealthy"}},
         {"DateObserved":"2025-08-14 ","HourObserved":10,"LocalTimeZone":"PST","ReportingArea":"Central LA CO",
          "StateCode":"CA","Latitude":34.0663,"Longitude":-118.2266,"ParameterName":"PM2.5","AQI":71,
          "Category":{"Number":2,"Name":"Moderate"}},
         {"DateObserved":"2025-08-14 ","HourObserved":10,"LocalTimeZone":"PST","ReportingArea":"Central LA CO",
          "StateCode":"CA","Latitude":34.0663,"Longitude":-118.2266,"ParameterName":"PM10","AQI":-1,
          "Category":{"Number":1,"Name":"Good"}},
         {"DateObserved":"2025-08-14 ","HourObserved":11,"LocalTimeZone":"PST","ReportingArea":"Central LA CO",
          "StateCode":"CA","Latitude":34.0663,"Longitude":-118.2266,"ParameterName":"O3","AQI":165,
          "Category":{"Number":4,"Name":"Unhealthy"}},
         {"DateObserved":"2025-08-14 ","HourObserved":11,"LocalTimeZone":"PST","ReportingArea":"Central LA CO",
          "StateCode":"CA","Latitude":34.0663,"Longitude":-118.2266,"ParameterName":"PM2.5","AQI":80,
          "Category":{"Number":2,"Name":"Moderate"}}]
        """

    static let waqiBody = """
        {"status":"ok","data":{"aqi":178,"idx":7024,"attributions":[{"url":"https://cpcb.nic.in/",
          "name":"CPCB - India Central Pollution Control Board"}],
          "city":{"geo":[19.0728,72.8826],"name":"Kurla, Mumbai, India",
                  "url":"https://aqicn.org/city/india/mumbai/kurla"},
          "dominentpol":"pm25","iaqi":{"pm25":{"v":178},"pm10":{"v":96},"no2":{"v":"-"},"t":{"v":31}},
          "time":{"s":"2025-11-03 18:00:00","tz":"+05:30","v":1762192800,"iso":"2025-11-03T18:00:00+05:30"}}}
        """

    static let openAQLocation = """
        {"meta":{"name":"openaq-api","website":"/","page":1,"limit":100,"found":1},
         "results":[{"id":2178,"name":"Del Norte","locality":"Albuquerque","timezone":"America/Denver",
           "country":{"id":13,"code":"US","name":"United States of America"},"provider":{"id":119,"name":"AirNow"},
           "isMobile":false,"isMonitor":true,
           "sensors":[{"id":3920,"name":"pm25 µg/m³","parameter":{"id":2,"name":"pm25","units":"µg/m³"}},
                      {"id":3917,"name":"o3 ppm","parameter":{"id":10,"name":"o3","units":"ppm"}},
                      {"id":4272999,"name":"pm25 µg/m³","parameter":{"id":2,"name":"pm25","units":"µg/m³"}}],
           "coordinates":{"latitude":35.1353,"longitude":-106.584702}}]}
        """

    static let openAQLatest = """
        {"meta":{"name":"openaq-api","website":"/","page":1,"limit":100,"found":4},
         "results":[
          {"datetime":{"utc":"2025-11-03T10:00:00Z","local":"2025-11-03T03:00:00-07:00"},"value":35.2,
           "coordinates":{"latitude":35.1353,"longitude":-106.584702},"sensorsId":3920,"locationsId":2178},
          {"datetime":{"utc":"2025-11-03T10:00:00Z","local":"2025-11-03T03:00:00-07:00"},"value":0.041,
           "coordinates":null,"sensorsId":3917,"locationsId":2178},
          {"datetime":{"utc":"2025-11-03T09:00:00+00:00","local":"2025-11-03T02:00:00-07:00"},"value":33.0,
           "coordinates":null,"sensorsId":4272999,"locationsId":2178},
          {"datetime":{"utc":"2025-11-03T10:00:00Z","local":"2025-11-03T03:00:00-07:00"},"value":-9999.0,
           "coordinates":null,"sensorsId":3917,"locationsId":2178}]}
        """

    static let openAQHours = """
        {"meta":{"name":"openaq-api","website":"/","page":1,"limit":100,"found":2},
         "results":[
          {"period":{"label":"1hour","interval":"01:00:00","datetimeFrom":{"utc":"2025-11-03T07:00:00Z"},
                     "datetimeTo":{"utc":"2025-11-03T08:00:00Z"}},
           "value":28.5,"parameter":{"id":2,"name":"pm25","units":"µg/m³"},"coordinates":null},
          {"period":{"label":"1hour","interval":"01:00:00","datetimeFrom":{"utc":"2025-11-03T08:00:00Z"},
                     "datetimeTo":{"utc":"2025-11-03T09:00:00Z"}},
           "value":31.25,"parameter":{"id":2,"name":"pm25","units":"µg/m³"},"coordinates":null}]}
        """

    @Test("airnow-json, waqi-json, openaq-json: a saved body lands exactly as the source stores it")
    func airBodiesLandAsTheSourcesStoreThem() async throws {
        try await HTTPSink.with { sink in try await airBodies(sink: sink) }
    }

    func airBodies(sink: HTTPSink) async throws {
        let s = try Scratch()
        let now = Timestamp.parse("2025-11-03T12:00:00Z")!
        let db = s.path("k.sqlite")
        let airnow = try s.write("airnow.json", Self.airnowBody)
        let waqi = try s.write("waqi.json", Self.waqiBody)
        let latest = try s.write("latest.json", Self.openAQLatest)
        let location = try s.write("location.json", Self.openAQLocation)

        let a = await InProcess.ingest(db: db, format: .airnowJSON, airnow)
        #expect(a.status == 0, "\(a.stderr)")
        #expect(a.stderr.contains("ingest: 6 new, 0 revised, 0 unchanged, 0 rejected, 1 missing values skipped"))
        let w = await InProcess.ingest(db: db, format: .waqiJSON, waqi)
        #expect(w.status == 0, "\(w.stderr)")
        #expect(w.stderr.contains("ingest: 3 new, 0 revised, 0 unchanged, 0 rejected, 1 missing values skipped"))
        // The readings before the location that names their sensors: order does not matter.
        let o = await InProcess.ingest(db: db, format: .openaqJSON, latest, location)
        #expect(o.status == 0, "\(o.stderr)")
        #expect(o.stderr.contains("ingest: 3 new, 0 revised, 0 unchanged, 0 rejected, 1 missing values skipped"))

        let ingested = try SQLiteStore.open(path: db)
        #expect(
            try await storedReadings(ingested) == [
                "Central LA CO|aqi.o3|2025-08-14T18:00:00Z|162.0|",
                "Central LA CO|aqi.o3|2025-08-14T19:00:00Z|165.0|",
                "Central LA CO|aqi.pm25|2025-08-14T18:00:00Z|71.0|",
                "Central LA CO|aqi.pm25|2025-08-14T19:00:00Z|80.0|",
                "Central LA CO|aqi|2025-08-14T18:00:00Z|162.0|",
                "Central LA CO|aqi|2025-08-14T19:00:00Z|165.0|",
                "openaq:2178|o3|2025-11-03T10:00:00Z|0.041|ppm",
                "openaq:2178|pm25.4272999|2025-11-03T09:00:00Z|33.0|µg/m³",
                "openaq:2178|pm25|2025-11-03T10:00:00Z|35.2|µg/m³",
                "waqi:7024|aqi.pm10|2025-11-03T12:30:00Z|96.0|",
                "waqi:7024|aqi.pm25|2025-11-03T12:30:00Z|178.0|",
                "waqi:7024|aqi|2025-11-03T12:30:00Z|178.0|",
            ])

        // The same bodies fetched by the sources.
        let fetched = try tempStore()
        await sink.script([
            .respond(status: 200, body: Self.airnowBody), .respond(status: 200, body: Self.waqiBody),
            .respond(status: 200, body: Self.openAQLocation), .respond(status: 200, body: Self.openAQLatest),
        ])
        let sources = [
            ConfiguredSource(
                source: AirNowSource(
                    name: "airnow", baseURL: sink.url + "/", apiKey: "k",
                    locations: [.init(latitude: 34.05, longitude: -118.24)])),
            ConfiguredSource(
                source: WAQISource(name: "waqi", baseURL: sink.url + "/", token: "t", stations: ["@7024"])),
            ConfiguredSource(
                source: OpenAQSource(name: "openaq", baseURL: sink.url + "/v3/", apiKey: "k", locations: [2178])),
        ]
        let outcomes = await Fetch.run(sources: sources, store: fetched, now: now)
        #expect(outcomes.allSatisfy { $0.error == nil }, "\(outcomes.map(\.line))")
        #expect(try await storedReadings(fetched) == (try await storedReadings(ingested)))
        let fetchedStations = try await fetched.stationInfos()
        let ingestedStations = try await ingested.stationInfos()
        #expect(fetchedStations.keys.sorted() == ingestedStations.keys.sorted())
        for (id, station) in fetchedStations {
            let other = ingestedStations[id]
            #expect(other?.name == station.name && other?.latitude == station.latitude, "\(id)")
            #expect(other?.longitude == station.longitude && other?.timeZone == station.timeZone, "\(id)")
            #expect(other?.attributes == station.attributes, "\(id)")
        }

        // Hourly measurements name neither sensor nor location: the file's name says which sensor they
        // were asked for, and the location that lists it takes them. A location's sensors list says
        // nothing of whose sensors they are.
        let hours = try s.write("sensors_3920_hours.json", Self.openAQHours)
        let h = await InProcess.ingest(db: db, format: .openaqJSON, location, hours)
        #expect(h.stderr.contains("ingest: 2 new, 0 revised, 0 unchanged, 0 rejected"), "\(h.stderr)")
        #expect(
            try await ingested.readings(station: "openaq:2178", metric: "pm25").map(\.value) == [28.5, 31.25, 35.2])
        let alone = await InProcess.ingest(db: db, format: .openaqJSON, hours)
        #expect(alone.status == 1)
        #expect(
            alone.stderr.contains(
                "openaq-json: 2 values not stored: sensor 3920 is listed by no location loaded"),
            "\(alone.stderr)")
        let sensorList = try s.write(
            "sensors.json",
            #"{"meta":{},"results":[{"id":3920,"name":"pm25 µg/m³","#
                + #""parameter":{"id":2,"name":"pm25","units":"µg/m³"}}]}"#
        )
        let list = await InProcess.ingest(db: db, format: .openaqJSON, sensorList)
        #expect(list.status == 1)
        #expect(list.stderr.contains("give the /v3/locations/{id} body instead"), "\(list.stderr)")
    }

    @Test("openaq-json: a sensor's measurements go under the location that lists the sensor, or are refused")
    func openAQMeasurementsOnlyUnderTheirOwnLocation() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let location = try s.write("location.json", Self.openAQLocation)
        // Measurements of sensor 9999, which Del Norte (2178) does not list, and of no named sensor.
        let foreign = try s.write(
            "sensors_9999_measurements.json",
            Self.openAQHours.replacingOccurrences(of: "28.5", with: "90.5"))
        let unnamed = try s.write(
            "hours.json", Self.openAQHours.replacingOccurrences(of: "28.5", with: "80.5"))
        let o = await InProcess.ingest(db: db, format: .openaqJSON, location, foreign, unnamed)
        #expect(o.status == 1)
        #expect(
            o.stderr.contains(
                "sensors_9999_measurements.json: openaq-json: 2 values not stored: sensor 9999 is listed by no "
                    + "location loaded: give the /v3/locations/{id} body of the location that lists it"),
            "\(o.stderr)")
        #expect(
            o.stderr.contains(
                "hours.json: openaq-json: 2 values not stored: no sensor named: a /v3/sensors/{id}/measurements "
                    + "body does not say whose values it holds; name the file after the sensor it was asked for "
                    + "(sensors_<id>_measurements.json)"),
            "\(o.stderr)")
        #expect(o.stderr.contains("ingest: 0 new, 0 revised, 0 unchanged, 4 rejected"), "\(o.stderr)")
        let store = try SQLiteStore.open(path: db)
        #expect(try await storedReadings(store) == [])

        // Sensor 9999 belongs to another location: loaded with it, its values go there; the owned
        // sensor 3920's go to Del Norte; an o3 sensor's file holding pm25 values is refused.
        let other = try s.write(
            "other.json",
            Self.openAQLocation.replacingOccurrences(of: #""id":2178"#, with: #""id":9000"#)
                .replacingOccurrences(of: #""id":3920"#, with: #""id":9999"#)
                .replacingOccurrences(of: #""id":3917"#, with: #""id":9998"#)
                .replacingOccurrences(of: #""id":4272999"#, with: #""id":99997"#))
        let owned = try s.write("v3_sensors_3920_hours.json", Self.openAQHours)
        let mislabelled = try s.write(
            "sensors_3917_measurements.json", Self.openAQHours.replacingOccurrences(of: "28.5", with: "70.5"))
        let p = await InProcess.ingest(db: db, format: .openaqJSON, location, other, foreign, owned, mislabelled)
        #expect(p.status == 1)
        #expect(
            p.stderr.contains(
                "sensors_3917_measurements.json: openaq-json: 2 values not stored: sensor 3917 of openaq:2178 "
                    + "measures o3, the result 'pm25'"),
            "\(p.stderr)")
        #expect(p.stderr.contains("ingest: 4 new, 0 revised, 0 unchanged, 2 rejected"), "\(p.stderr)")
        #expect(
            try await storedReadings(store) == [
                // With each hour's NowCast (issue 42): 09:00 has 2 of its 3 most recent hours, 08:00 only one.
                "openaq:2178|aqi.pm25.nowcast|2025-11-03T09:00:00Z|90.0|",
                "openaq:2178|pm25.nowcast|2025-11-03T09:00:00Z|29.9|µg/m³",
                "openaq:2178|pm25|2025-11-03T08:00:00Z|28.5|µg/m³",
                "openaq:2178|pm25|2025-11-03T09:00:00Z|31.25|µg/m³",
                "openaq:9000|aqi.pm25.nowcast|2025-11-03T09:00:00Z|139.0|",
                "openaq:9000|pm25.nowcast|2025-11-03T09:00:00Z|51.0|µg/m³",
                "openaq:9000|pm25|2025-11-03T08:00:00Z|90.5|µg/m³",
                "openaq:9000|pm25|2025-11-03T09:00:00Z|31.25|µg/m³",
            ])
    }

    @Test(
        "without --format each file is read as what it looks like: readings, AirNow, WAQI and OpenAQ together (issue 42)"
    )
    func formatsByContent() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let csv = try s.write("r.csv", "station,metric,time,value\nx,gage_height,2025-11-03T08:00:00Z,1.5\n")
        let airnow = try s.write("airnow.json", Self.airnowBody)
        let waqi = try s.write("waqi.json", Self.waqiBody)
        let location = try s.write("location.json", Self.openAQLocation)
        let hours = try s.write("v3_sensors_3920_hours.json", Self.openAQHours)
        let r = await InProcess.ingest(db: db, csv, airnow, waqi, location, hours)
        #expect(r.status == 0, "\(r.stderr)")
        let store = try SQLiteStore.open(path: db)
        let series = Set(
            try await storedReadings(store).map { $0.split(separator: "|").prefix(2).joined(separator: "|") })
        #expect(series.contains("x|gage_height"))
        #expect(series.contains { $0.hasPrefix("Central LA CO|aqi") }, "\(series)")
        #expect(series.contains("openaq:2178|pm25"), "\(series)")
        #expect(series.contains { $0.hasSuffix("|aqi") && !$0.hasPrefix("Central LA CO") }, "WAQI: \(series)")
        // --format still decides when given: the AirNow body read as readings is refused, not guessed.
        let forced = await InProcess.ingest(db: db, format: .readings, airnow)
        #expect(forced.status == 1)
        #expect(forced.stderr.contains("try --format airnow-json"), "\(forced.stderr)")
    }

    @Test("airnow-json then an AQI rule: evaluate and dry-run fire on the ingested readings")
    func airNowRuleFires() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let rules = try s.write(
            "la.yaml", "name: la-air\nkind: levels\nmetric: aqi\nstations: [Central LA CO]\nscale: us-epa\n")
        let airnow = try s.write("airnow.json", Self.airnowBody)
        #expect(await InProcess.ingest(db: db, format: .airnowJSON, airnow).status == 0)
        let dry = await InProcess.dryRun(rules: [rules], db: db, format: .json)
        #expect(dry.status == 0, "\(dry.stderr)")
        let replayed = try jsonObjects(dry.lines)
        #expect(replayed.map { $0["state"] as? String } == ["firing"], "\(dry.stdout)")
        #expect(replayed.first?["station"] as? String == "Central LA CO")
        let eval = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        #expect(eval.status == 0, "\(eval.stderr)")
        let firing = try jsonObjects(eval.lines)
        #expect(firing.map { $0["state"] as? String } == ["firing"], "\(eval.stdout)")
        #expect((firing.first?["message"] as? String)?.contains("Unhealthy") == true, "\(eval.stdout)")
    }

    /// Frames every 20 s for 15 minutes from 10:00:00Z: Delhi from 303.25 up by 0.5, Mumbai 181.5 down by 0.25.
    static func recording() -> (text: String, start: Int64) {
        let t0 = Timestamp.parse("2025-11-03T10:00:00Z")!
        var lines: [String] = []
        for i in 0...45 {
            let t = Timestamp.format(t0 + Int64(i) * 20)
            let delhi = 303.25 + Double(i) * 0.5
            let mumbai = 181.5 - Double(i) * 0.25
            let frame =
                #"[{"city": "Delhi", "aqi": \#(delhi)}, {"city": "Mumbai", "aqi": \#(mumbai)}, {"city": "Pune"}]"#
            lines.append(#"{"received": "\#(t)", "frame": \#(frame)}"#)
        }
        return (lines.joined(separator: "\n") + "\n", t0)
    }

    @Test("aqi-frames: a recording lands as the WebSocket source keeps it, and an AQI rule fires on it")
    func aqiFrames() async throws {
        let s = try Scratch()
        let db = s.path("k.sqlite")
        let (text, t0) = Self.recording()
        let file = try s.write("frames.jsonl", text)
        let r = await InProcess.ingest(db: db, format: .aqiFrames, file)
        #expect(r.status == 0, "\(r.stderr)")
        // Per city: the first two samples, then one per 30 s (every other frame, 40 s apart).
        let kept = [0, 1] + Array(stride(from: 3, through: 45, by: 2))
        #expect(kept.count == 24)
        #expect(r.stderr.contains("\(file): aqi-frames: 44 samples thinned out (sample_every 30 s"), "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 48 new, 0 revised, 0 unchanged, 0 rejected, 46 missing values skipped"))
        let store = try SQLiteStore.open(path: db)
        let delhi = try await store.readings(station: "Delhi", metric: "aqi")
        #expect(delhi.map(\.time) == kept.map { t0 + Int64($0) * 20 })
        #expect(delhi.map(\.value) == kept.map { 303.25 + Double($0) * 0.5 })
        #expect(delhi.allSatisfy { $0.unit == nil && $0.quality == nil })
        let mumbai = try await store.readings(station: "Mumbai", metric: "aqi")
        #expect(mumbai.map(\.value) == kept.map { 181.5 - Double($0) * 0.25 })
        #expect(try await store.stationInfos()["Delhi"]?.source == "aqi-websocket")

        let rules = try s.write(
            "india.yaml", "name: india-air\nkind: levels\nmetric: aqi\nstations: [Delhi]\nscale: india-naqi\n")
        let eval = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        #expect(eval.status == 0, "\(eval.stderr)")
        let firing = try jsonObjects(eval.lines)
        #expect(firing.map { $0["state"] as? String } == ["firing"], "\(eval.stdout)")
        #expect(firing.first?["station"] as? String == "Delhi")
        #expect((firing.first?["message"] as? String)?.contains("Very Poor") == true, "\(eval.stdout)")
    }

    @Test("aqi-frames: --config gives the source's name and sample_every; bad lines are reported by line")
    func aqiFramesWithConfigAndBadLines() async throws {
        let s = try Scratch()
        let config = try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            sources:
              - {name: cities, kind: aqi-websocket, url: "ws://127.0.0.1:9/", sample_every: 2m}
            """)
        let (text, t0) = Self.recording()
        let bad = text + "not a frame\n" + #"{"received": "2025-11-03T10:20:00Z", "frame": {"city": "Delhi"}}"# + "\n"
        let file = try s.write("frames.jsonl", bad)
        let r = await InProcess.ingest(config: config, format: .aqiFrames, file)
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(file):47: not a recorded frame: truncated or malformed JSON"), "\(r.stderr)")
        #expect(r.stderr.contains("\(file):48: aqi-websocket: the frame is not a JSON array of objects"), "\(r.stderr)")
        #expect(r.stderr.contains("2 rejected"), "\(r.stderr)")
        // The first two samples, then one per 2 minutes: 0, 20 s, 140 s, 260 s, … 860 s.
        let kept = [0, 1] + Array(stride(from: 7, through: 45, by: 6))
        let store = try SQLiteStore.open(path: s.path("k.sqlite"))
        #expect(
            try await store.readings(station: "Delhi", metric: "aqi").map(\.time) == kept.map { t0 + Int64($0) * 20 })
        #expect(try await store.stationInfos()["Delhi"]?.source == "cities")
    }
}
