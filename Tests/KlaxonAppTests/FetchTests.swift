import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonSources
import KlaxonStore
import KlaxonTesting
import Testing

/// A WaterServices IV JSON body for one site's gage height (values as (ISO time with offset, value, qualifiers)).
func ivBody(site: String = "01646500", points: [(String, String, [String])]) -> String {
    let values = points.map { t, v, q in
        #"{"value":"\#(v)","qualifiers":[\#(q.map { "\"\($0)\"" }.joined(separator: ","))],"dateTime":"\#(t)"}"#
    }.joined(separator: ",")
    return #"""
        {"name":"ns1:timeSeriesResponseType","declaredType":"org.cuahsi.waterml.TimeSeriesResponseType","scope":"javax.xml.bind.JAXBElement$GlobalScope","value":{"queryInfo":{"queryURL":"x","criteria":{"locationParam":"[ALL:\#(site)]","variableParam":"[00065]","parameter":[]},"note":[]},"timeSeries":[{"sourceInfo":{"siteName":"POTOMAC RIVER NEAR WASH, DC LITTLE FALLS PUMP STA","siteCode":[{"value":"\#(site)","network":"NWIS","agencyCode":"USGS"}],"timeZoneInfo":{"defaultTimeZone":{"zoneOffset":"-05:00","zoneAbbreviation":"EST"},"daylightSavingsTimeZone":{"zoneOffset":"-04:00","zoneAbbreviation":"EDT"},"siteUsesDaylightSavingsTime":true},"geoLocation":{"geogLocation":{"srs":"EPSG:4326","latitude":38.94977778,"longitude":-77.12763889},"localSiteXY":[]},"note":[],"siteType":[],"siteProperty":[]},"variable":{"variableCode":[{"value":"00065","network":"NWIS","vocabulary":"NWIS:UnitValues","variableID":45807202,"default":true}],"variableName":"Gage height, ft","variableDescription":"Gage height, feet","valueType":"Derived Value","unit":{"unitCode":"ft"},"options":{"option":[{"name":"Statistic","optionCode":"00000"}]},"note":[],"noDataValue":-999999.0,"variableProperty":[],"oid":"45807202"},"values":[{"value":[\#(values)],"qualifier":[],"qualityControlLevel":[],"method":[{"methodDescription":"","methodID":69929}],"source":[],"offset":[],"sample":[],"censorCode":[]}],"name":"USGS:\#(site):00065:00000"}]},"nil":false,"globalScope":true,"typeSubstituted":false}
        """#
}

/// A fresh store in a temporary folder (left for the system to clean, so it outlives the test's
/// last use of the store).
func tempStore() throws -> any Store {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-fetch-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    return try SQLiteStore.open(path: dir.appendingPathComponent("klaxon.sqlite").path)
}

@Suite("fetching sources from a local server", .serialized)
struct FetchTests {
    let now = Timestamp.parse("2024-03-10T12:00:00Z")!

    /// The source with the product's own request timeout (30 s), unless a test gives a short one to a
    /// request meant to hang.
    func iv(_ sink: HTTPSink, timeout: Double? = nil) -> ConfiguredSource {
        let source = USGSIVSource(name: "potomac", baseURL: sink.url + "/nwis/iv/", sites: ["01646500"])
        return timeout.map { ConfiguredSource(source: source, timeout: $0) } ?? ConfiguredSource(source: source)
    }

    @Test("usgs-iv: the first fetch backfills a period, later ones ask from the cursor; values stored in UTC")
    func ivBackfillThenIncremental() async throws {
        try await HTTPSink.with { sink in try await ivBackfillThenIncremental(sink: sink) }
    }

    func ivBackfillThenIncremental(sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([
            .respond(
                status: 200,
                body: ivBody(points: [
                    ("2024-03-10T01:45:00.000-05:00", "4.10", ["P"]),
                    ("2024-03-10T03:00:00.000-04:00", "4.20", ["P"]),
                    ("2024-03-10T03:15:00.000-04:00", "-999999", ["P", "Ice"]),
                ])),
            .respond(status: 200, body: ivBody(points: [("2024-03-10T03:30:00.000-04:00", "4.30", ["P"])])),
        ])
        let first = await Fetch.run(sources: [iv(sink)], store: store, now: now)
        #expect(first.map(\.error) == [nil])
        #expect(first[0].stats.inserted == 2)
        #expect(first[0].gaps == 1)
        let second = await Fetch.run(sources: [iv(sink)], store: store, now: now + 900)
        #expect(second[0].stats.inserted == 1)

        let requests = await sink.requests()
        #expect(requests.count == 2)
        #expect(requests[0].path == "/nwis/iv/")
        #expect(requests[0].query.contains("sites=01646500"))
        #expect(requests[0].query.contains("parameterCd=00065,00060"))
        #expect(requests[0].query.contains("period=P7D"))
        // Cursor 07:00Z (newest reading of the series) less an hour of overlap, in UTC.
        #expect(requests[1].query.contains("startDT=2024-03-10T06:00Z"))
        #expect(!requests[1].query.contains("period="))

        let stored = try await store.readings(station: "01646500", metric: "gage_height")
        #expect(
            stored.map(\.time)
                == ["2024-03-10T06:45:00Z", "2024-03-10T07:00:00Z", "2024-03-10T07:30:00Z"].map {
                    Timestamp.parse($0)!
                })
        #expect(stored.map(\.quality) == ["P", "P", "P"])
        let station = try await #require(try store.stationInfos()["01646500"])
        #expect(station.name == "POTOMAC RIVER NEAR WASH, DC LITTLE FALLS PUMP STA")
        #expect(station.timeZone == "America/New_York")
        #expect(station.latitude == 38.94977778)
        await #expect(try store.sourceState("potomac")?.cursor == "2024-03-10T07:30:00Z")
    }

    @Test(
        "a failed fetch says which source and why, stores nothing, keeps the cursor, and the next cycle asks again",
        arguments: [
            ("500", SinkBehavior.respond(status: 500, body: "Internal Server Error"), "HTTP 500"),
            (
                "html", .respond(status: 200, body: "<html><head><title>Service Unavailable</title></head></html>"),
                "HTML"
            ),
            (
                "truncated", .respond(status: 200, body: #"{"value":{"timeSeries":[{"sourceInfo":{"siteName":"#),
                "truncated or malformed JSON"
            ),
            ("timeout", .never, "timed out after 0.5 s"),
        ])
    func failures(name: String, behavior: SinkBehavior, expected: String) async throws {
        try await HTTPSink.with { sink in
            try await failures(name: name, behavior: behavior, expected: expected, sink: sink)
        }
    }

    func failures(name: String, behavior: SinkBehavior, expected: String, sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([
            .respond(status: 200, body: ivBody(points: [("2024-03-10T03:00:00.000-04:00", "4.20", ["P"])])),
            behavior,
            .respond(status: 200, body: ivBody(points: [("2024-03-10T03:30:00.000-04:00", "4.30", ["P"])])),
        ])
        // Only the request meant to hang (it never gets an answer) has the short timeout: on a loaded
        // machine 0.5 s can pass before an answer that was not meant to hang (a 500, an HTML page).
        _ = await Fetch.run(sources: [iv(sink)], store: store, now: now)
        let before = try await store.readingCount()
        let failed = await Fetch.run(
            sources: [iv(sink, timeout: name == "timeout" ? 0.5 : nil)], store: store, now: now + 900)
        let error = try #require(failed[0].error, "\(name) should fail")
        #expect(error.contains("source potomac"))
        #expect(error.contains(expected), "\(error)")
        #expect(failed[0].line.contains("nothing stored, the next fetch asks again"))
        await #expect(try store.readingCount() == before)
        let state = try await #require(try store.sourceState("potomac"))
        #expect(state.cursor == "2024-03-10T07:00:00Z")
        #expect(state.failures == 1)
        #expect(state.lastError?.contains(expected) == true)

        let retried = await Fetch.run(sources: [iv(sink)], store: store, now: now + 1800)
        #expect(retried[0].error == nil)
        await #expect(try store.readingCount() == before + 1)
        await #expect(try store.sourceState("potomac")?.failures == 0)
        let requests = await sink.waitForRequests(3)
        // The retry asked from the same cursor as the failed fetch.
        #expect(requests[1].query == requests[2].query)
    }

    @Test("HTTP 429 with Retry-After: the source waits that long before it is asked again")
    func rateLimited() async throws {
        try await HTTPSink.with { sink in try await rateLimited(sink: sink) }
    }

    func rateLimited(sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([
            .respond(status: 429, headers: ["Retry-After": "120"], body: #"{"error":{"code":"OVER_RATE_LIMIT"}}"#),
            .respond(status: 200, body: ivBody(points: [("2024-03-10T03:00:00.000-04:00", "4.20", ["P"])])),
        ])
        let limited = await Fetch.run(sources: [iv(sink)], store: store, now: now)
        #expect(limited[0].error?.contains("HTTP 429 rate limited, retry after 120 s") == true)
        await #expect(try store.sourceState("potomac")?.notBefore == now + 120)
        let early = await Fetch.run(sources: [iv(sink)], store: store, now: now + 60)
        #expect(early[0].skipped?.contains("until 2024-03-10T12:02:00Z") == true)
        #expect(await sink.requests().count == 1)
        let later = await Fetch.run(sources: [iv(sink)], store: store, now: now + 121)
        #expect(later[0].error == nil)
        #expect(later[0].stats.inserted == 1)
    }

    @Test("usgs-ogc: monitoring location first, pages followed through links[rel=next], X-Api-Key sent")
    func ogcPagination() async throws {
        try await HTTPSink.with { sink in try await ogcPagination(sink: sink) }
    }

    func ogcPagination(sink: HTTPSink) async throws {
        let store = try tempStore()
        func feature(_ time: String, _ value: String) -> String {
            #"{"type":"Feature","id":"\#(UUID().uuidString)","geometry":{"type":"Point","coordinates":[-92.69,40.23]},"properties":{"approval_status":"Provisional","monitoring_location_id":"USGS-06904500","parameter_code":"00065","qualifier":null,"statistic_id":"00011","time":"\#(time)","time_series_id":"b36569a0067443ac9425e850a3ac7baa","unit_of_measure":"ft","value":"\#(value)","last_modified":"2024-03-10T00:00:00+00:00"}}"#
        }
        let next = sink.url + "/ogcapi/v0/collections/continuous/items?f=json&cursor=abc"
        let page1 =
            #"{"type":"FeatureCollection","features":[\#(feature("2024-03-10T10:00:00+00:00", "1.76")),\#(feature("2024-03-10T10:15:00+00:00", "1.80"))],"links":[{"rel":"next","href":"\#(next)","type":"application/geo+json"}]}"#
        let page2 =
            #"{"type":"FeatureCollection","features":[\#(feature("2024-03-10T10:30:00+00:00", "1.85"))],"links":[{"rel":"self","href":"x"}]}"#
        let location =
            #"{"type":"Feature","id":"USGS-06904500","geometry":{"type":"Point","coordinates":[-92.6863888888889,40.2343333333333]},"properties":{"id":"USGS-06904500","monitoring_location_number":"06904500","monitoring_location_name":"Chariton River at Moulton, IA","time_zone_abbreviation":"CST","uses_daylight_savings":"Y","state_name":"Iowa","site_type":"Stream"}}"#
        await sink.script([
            .respond(status: 200, body: location), .respond(status: 200, body: page1),
            .respond(status: 200, body: page2),
        ])
        let source = USGSOGCSource(
            name: "chariton", baseURL: sink.url + "/ogcapi/v0/", sites: ["06904500"], parameters: ["00065"],
            apiKey: "k-123")
        let out = await Fetch.run(sources: [ConfiguredSource(source: source)], store: store, now: now)
        #expect(out[0].error == nil, "\(out[0].error ?? "")")
        #expect(out[0].requests == 3)
        #expect(out[0].stats.inserted == 3)
        let requests = await sink.requests()
        #expect(
            requests.map(\.path) == [
                "/ogcapi/v0/collections/monitoring-locations/items/USGS-06904500",
                "/ogcapi/v0/collections/continuous/items", "/ogcapi/v0/collections/continuous/items",
            ])
        #expect(requests.allSatisfy { $0.headers["x-api-key"] == "k-123" })
        #expect(requests[1].query.contains("monitoring_location_id=USGS-06904500"))
        #expect(requests[1].query.contains("time=2024-03-03T12:00:00Z/.."))
        #expect(requests[2].query == "f=json&cursor=abc")
        let stored = try await store.readings(station: "06904500", metric: "gage_height")
        #expect(stored.map(\.value) == [1.76, 1.80, 1.85])
        #expect(stored.map(\.quality) == ["P", "P", "P"])
        let info = try await #require(try store.stationInfos()["06904500"])
        #expect(info.name == "Chariton River at Moulton, IA")
        #expect(info.timeZone == "America/Chicago")
    }

    @Test(
        "usgs-ogc: a bad monitoring-locations body is named like any other payload error",
        arguments: [
            (
                "<html><head><title>Service Unavailable</title></head></html>",
                "usgs-ogc-json: got an HTML page, not JSON (title 'Service Unavailable')"
            ),
            (#"{"type":"Feature","id":"USGS-06904500","properties":{"#, "usgs-ogc-json: truncated or malformed JSON"),
        ])
    func ogcLocationPayloadError(body: String, expected: String) async throws {
        try await HTTPSink.with { sink in
            try await ogcLocationPayloadError(body: body, expected: expected, sink: sink)
        }
    }

    func ogcLocationPayloadError(body: String, expected: String, sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([.respond(status: 200, body: body)])
        let source = USGSOGCSource(
            name: "chariton", baseURL: sink.url + "/ogcapi/v0/", sites: ["06904500"], parameters: ["00065"],
            apiKey: "k-123")
        let out = await Fetch.run(sources: [ConfiguredSource(source: source)], store: store, now: now)
        let error = try #require(out[0].error)
        #expect(
            error
                == "source chariton: GET \(sink.url)/ogcapi/v0/collections/monitoring-locations/items/USGS-06904500?f=json: \(expected)"
        )
        #expect(!error.contains("k-123"))
        #expect(await sink.requests().count == 1)
    }

    @Test("cwms: a failure on the second page stores nothing of the first")
    func cwmsNothingHalfWritten() async throws {
        try await HTTPSink.with { sink in try await cwmsNothingHalfWritten(sink: sink) }
    }

    func cwmsNothingHalfWritten(sink: HTTPSink) async throws {
        let store = try tempStore()
        func page(_ rows: String, next: String?) -> String {
            let n = next.map { #","next-page":"\#($0)""# } ?? ""
            return
                #"{"name":"ARBU.Elev.Inst.1Hour.0.Ccp-Rev","office-id":"SWT","units":"ft","interval":"PT0S","interval-offset":0,"time-zone":"UTC","begin":"2024-03-03T12:00:00+0000[UTC]","end":"2024-03-10T12:00:00+0000[UTC]","page":"p0","page-size":2,"total":3\#(n),"value-columns":[{"name":"date-time","ordinal":1,"datatype":"java.sql.Timestamp"},{"name":"value","ordinal":2,"datatype":"java.lang.Double"},{"name":"quality-code","ordinal":3,"datatype":"int"}],"values":[\#(rows)]}"#
        }
        let source = CWMSSource(
            name: "arbuckle", baseURL: sink.url + "/cwms-data/", office: "SWT",
            timeseries: [.init(name: "ARBU.Elev.Inst.1Hour.0.Ccp-Rev")], pageSize: 2)
        let configured = ConfiguredSource(source: source)
        await sink.script([
            .respond(status: 200, body: page("[1710064800000,872.1,0],[1710068400000,null,0]", next: "cursor-2")),
            .respond(status: 503, body: "busy"),
            .respond(status: 200, body: page("[1710064800000,872.1,0],[1710068400000,null,0]", next: "cursor-2")),
            .respond(status: 200, body: page("[1710072000000,872.3,3]", next: nil)),
        ])
        let failed = await Fetch.run(sources: [configured], store: store, now: now)
        #expect(failed[0].error?.contains("HTTP 503") == true)
        await #expect(try store.readingCount() == 0)
        let ok = await Fetch.run(sources: [configured], store: store, now: now + 60)
        #expect(ok[0].error == nil)
        #expect(ok[0].gaps == 1)
        let stored = try await store.readings(station: "ARBU", metric: "elevation")
        #expect(stored.map(\.value) == [872.1, 872.3])
        #expect(stored.map(\.time) == [1_710_064_800, 1_710_072_000])
        let requests = await sink.requests()
        #expect(requests[1].query.contains("page=cursor-2"))
        #expect(requests[0].headers["accept"] == "application/json;version=2")
        #expect(requests[0].query.contains("name=ARBU.Elev.Inst.1Hour.0.Ccp-Rev&office=SWT&unit=EN"))
    }

    @Test("nwps: flood categories and the USGS ↔ NWS mapping are stored; the gauge resolves by either id")
    func nwpsGauge() async throws {
        try await HTTPSink.with { sink in try await nwpsGauge(sink: sink) }
    }

    func nwpsGauge(sink: HTTPSink) async throws {
        let store = try tempStore()
        let body = try String(
            contentsOf: packageRoot.appendingPathComponent(
                "Tests/KlaxonSourcesTests/Fixtures/nwps_gauge_undefined_major.json"),
            encoding: .utf8)
        await sink.script([.respond(status: 200, body: body)])
        let source = NWPSSource(name: "nws", baseURL: sink.url + "/nwps/v1", gauges: ["STLM7"])
        let out = await Fetch.run(sources: [ConfiguredSource(source: source)], store: store, now: now)
        #expect(out[0].error == nil)
        #expect(out[0].gauges == 1)
        #expect(await sink.requests().map(\.path) == ["/nwps/v1/gauges/STLM7"])
        let floods = try await store.floodCategories()
        let f = try #require(floods["07010000"])
        #expect(f.ladder(forMetric: "gage_height")?.map(\.name) == ["action", "minor", "moderate"])
        await #expect(try store.resolveStation("stlm7") == "07010000")
        await #expect(try store.resolveStation("USGS-07010000") == "07010000")
        await #expect(try store.stationInfos()["07010000"]?.nwsLID == "STLM7")
    }

    @Test("nwps forecast: true stores each gauge's forecast issuance under its station; a gauge without one is skipped")
    func nwpsForecast() async throws {
        try await HTTPSink.with { sink in try await nwpsForecast(sink: sink) }
    }

    func nwpsForecast(sink: HTTPSink) async throws {
        let store = try tempStore()
        func fixture(_ name: String) throws -> String {
            try String(
                contentsOf: packageRoot.appendingPathComponent("Tests/KlaxonSourcesTests/Fixtures/\(name)"),
                encoding: .utf8)
        }
        let gauge = try fixture("nwps_gauge_undefined_major.json")
        await sink.script([
            .respond(status: 200, body: gauge),
            .respond(status: 200, body: try fixture("nwps_PRTO3_stageflow_forecast.json")),
            .respond(status: 200, body: gauge), .respond(status: 404, body: "{\"code\": 5}"),
        ])
        let source = NWPSSource(
            name: "nws", baseURL: sink.url + "/nwps/v1", gauges: ["STLM7", "STLM7"], forecast: true)
        let out = await Fetch.run(sources: [ConfiguredSource(source: source)], store: store, now: now)
        #expect(out[0].error == nil, "\(out[0].error ?? "")")
        #expect(
            await sink.requests().map(\.path) == [
                "/nwps/v1/gauges/STLM7", "/nwps/v1/gauges/STLM7/stageflow/forecast", "/nwps/v1/gauges/STLM7",
                "/nwps/v1/gauges/STLM7/stageflow/forecast",
            ])
        let f = try #require(try await store.latestForecast(station: "07010000", metric: "gage_height"))
        #expect(f.issued == Timestamp.parse("2024-05-01T15:10:00Z"))
        #expect(f.points.map(\.value) == [16.2, 18.4, 17.9])
        #expect(try await store.latestForecast(station: "07010000", metric: "discharge") != nil)
    }
}

@Suite("air-quality sources from a local server", .serialized)
struct AirFetchTests {
    let now = Timestamp.parse("2025-11-03T12:00:00Z")!

    func fixture(_ name: String) throws -> String {
        try String(
            contentsOf: packageRoot.appendingPathComponent("Tests/KlaxonSourcesTests/Fixtures/\(name)"), encoding: .utf8
        )
    }

    @Test("airnow: the key goes in the query and never into an error")
    func airNow() async throws {
        try await HTTPSink.with { sink in try await airNow(sink: sink) }
    }

    func airNow(sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([.respond(status: 200, body: try fixture("aqi_airnow_legacy.json")), .respond(status: 500)])
        let source = ConfiguredSource(
            source: AirNowSource(
                name: "airnow", baseURL: sink.url + "/", apiKey: "s3cret-key",
                locations: [.init(latitude: 38.9, longitude: -77.0)]))
        let ok = await Fetch.run(sources: [source], store: store, now: now)
        #expect(ok[0].error == nil, "\(ok[0].error ?? "")")
        #expect(ok[0].stats.inserted > 0)
        await #expect(try store.latest(station: "Metropolitan Washington", metric: "aqi") != nil)
        let request = try #require(await sink.requests().first)
        #expect(request.path == "/aq/observation/latLong/current/")
        #expect(request.query.contains("API_KEY=s3cret-key"))
        let failed = await Fetch.run(sources: [source], store: store, now: now + 3_600)
        let error = try #require(failed[0].error)
        #expect(error.contains("HTTP 500"))
        #expect(!error.contains("s3cret-key"))
        #expect(error.contains("API_KEY=%3Csecret%3E") || error.contains("API_KEY=<secret>"))
    }

    @Test(
        "airnow forecast: true asks each location's forecast (by point or ZIP) and stores it; a place without one, a huge or hostile answer is a counted skip"
    )
    func airNowForecast() async throws {
        try await HTTPSink.with { sink in try await airNowForecast(sink: sink) }
    }

    func airNowForecast(sink: HTTPSink) async throws {
        let store = try tempStore()
        let observations = try fixture("aqi_airnow_legacy.json")
        let source = ConfiguredSource(
            source: AirNowSource(
                name: "airnow", baseURL: sink.url + "/", apiKey: "s3cret-key",
                locations: [
                    .init(latitude: 39.74, longitude: -104.99), .init(zipCode: "80202"),
                    .init(latitude: 10, longitude: 10, distance: 50),
                ],
                forecast: true))
        // The legacy and the current field sets, the same area from two locations; a place AirNow
        // has no forecast for.
        await sink.script([
            .respond(status: 200, body: observations),
            .respond(status: 200, body: try fixture("aqi_airnow_forecast_legacy.json")),
            .respond(status: 200, body: observations),
            .respond(status: 200, body: try fixture("aqi_airnow_forecast_current.json")),
            .respond(status: 200, body: observations),
            .respond(status: 404, body: #"{"WebServiceError":[{"Message":"Not found"}]}"#),
        ])
        let first = await Fetch.run(sources: [source], store: store, now: now)
        #expect(first[0].error == nil, "\(first[0].error ?? "")")
        let requests = await sink.requests()
        #expect(
            requests.map(\.path) == [
                "/aq/observation/latLong/current/", "/aq/forecast/latLong/", "/aq/observation/zipCode/current/",
                "/aq/forecast/zipCode/", "/aq/observation/latLong/current/", "/aq/forecast/latLong/",
            ])
        #expect(requests[1].query.contains("latitude=39.74&longitude=-104.99&distance=25&API_KEY=s3cret-key"))
        #expect(requests[3].query.contains("zipCode=80202&distance=25&API_KEY=s3cret-key"))
        #expect(first[0].requests == 6)
        #expect(first[0].forecastSkipCount == 1)
        let notFound = try #require(first[0].forecastSkips.first)
        #expect(notFound.hasPrefix("10.00,10.00: no forecast: ") && notFound.contains("HTTP 404"), "\(notFound)")
        #expect(!notFound.contains("s3cret-key"))
        #expect(first[0].line.contains("1 forecast item skipped"), "\(first[0].line)")
        let stored = try await store.airForecasts(area: "Denver-Boulder")
        let tuesday = try #require(stored.first { $0.date == "2026-12-08" && $0.parameter == "PM2.5" })
        #expect(tuesday.aqi == 125 && tuesday.actionDay && tuesday.issued == "2026-12-07")
        #expect(first[0].stats.forecasts > 0)

        // Hostile answers: huge; two issue dates, control characters, an absurd AQI; not JSON.
        await sink.clear()
        await sink.script([
            .respond(status: 200, body: observations),
            .respond(status: 200, body: "[" + String(repeating: " ", count: AirNowSource.maxForecastBody) + "]"),
            .respond(status: 200, body: observations),
            .respond(status: 200, body: try fixture("aqi_airnow_forecast_hostile.json")),
            .respond(status: 200, body: observations),
            .respond(status: 200, body: "\u{1B}[31mnot JSON at all"),
        ])
        let second = await Fetch.run(sources: [source], store: store, now: now + 3_600)
        #expect(second[0].error == nil, "\(second[0].error ?? "")")
        let skips = second[0].forecastSkips
        #expect(second[0].forecastSkipCount == 5, "\(skips)")
        #expect(skips.count == 5)
        #expect(skips.first?.hasPrefix("39.74,-104.99: no forecast: ") == true)
        #expect(skips.first?.contains("larger than \(AirNowSource.maxForecastBody) bytes") == true, "\(skips)")
        #expect(skips.contains("80202: 1 record not stored: a reporting area name that is not a short line of text"))
        #expect(skips.contains("80202: 1 record not stored: an AQI that is not -1 or a whole number 0–500"))
        #expect(skips.contains { $0.hasPrefix("80202: the answer holds two issue dates: 1 record") })
        #expect(skips.contains { $0.hasPrefix("10.00,10.00: no forecast: GET ") })
        #expect(!skips.joined().contains("s3cret-key"))
        let after = try await store.airForecasts(area: "Denver-Boulder")
        let worse = try #require(after.first { $0.date == "2026-12-08" && $0.parameter == "PM2.5" })
        #expect(worse.aqi == 155 && worse.category == 4 && worse.issued == "2026-12-07")
        let discussion = try #require(worse.discussion)
        #expect(!discussion.unicodeScalars.contains { $0.properties.generalCategory == .control })
        #expect(try await store.airForecasts(area: "Evil\u{1B}]0;pwned\u{07}Area").isEmpty)
        #expect(!after.contains { $0.aqi == 700 })

        // A server failure other than 404 fails the fetch as an observation's would, key hidden.
        await sink.clear()
        await sink.script([.respond(status: 200, body: observations), .respond(status: 500, body: "oops")])
        let third = await Fetch.run(sources: [source], store: store, now: now + 7_200)
        let error = try #require(third[0].error)
        #expect(error.contains("HTTP 500") && !error.contains("s3cret-key"), "\(error)")
    }

    @Test("waqi: a status:error body with HTTP 200 is an error, and the token stays secret")
    func waqi() async throws {
        try await HTTPSink.with { sink in try await waqi(sink: sink) }
    }

    func waqi(sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([
            .respond(status: 200, body: try fixture("aqi_waqi_error.json")),
            .respond(status: 200, body: try fixture("aqi_waqi_ok.json")),
        ])
        let source = ConfiguredSource(
            source: WAQISource(name: "waqi", baseURL: sink.url + "/", token: "t0ken", stations: ["@372382"]))
        let failed = await Fetch.run(sources: [source], store: store, now: now)
        let error = try #require(failed[0].error)
        #expect(error.contains("Unknown station"))
        #expect(!error.contains("t0ken"))
        await #expect(try store.readingCount() == 0)
        let ok = await Fetch.run(sources: [source], store: store, now: now + 60)
        #expect(ok[0].error == nil, "\(ok[0].error ?? "")")
        #expect(ok[0].stats.inserted > 0)
        #expect(await sink.requests().first?.path == "/feed/@372382/")
    }

    @Test("openaq: the location's sensors name its latest values; X-API-Key header")
    func openAQ() async throws {
        try await HTTPSink.with { sink in try await openAQ(sink: sink) }
    }

    func openAQ(sink: HTTPSink) async throws {
        let store = try tempStore()
        await sink.script([
            .respond(status: 200, body: try fixture("aqi_openaq_location.json")),
            .respond(status: 200, body: try fixture("aqi_openaq_latest.json")),
        ])
        let source = ConfiguredSource(
            source: OpenAQSource(name: "openaq", baseURL: sink.url + "/v3/", apiKey: "k", locations: [8118]))
        let out = await Fetch.run(sources: [source], store: store, now: now)
        #expect(out[0].error == nil, "\(out[0].error ?? "")")
        #expect(out[0].gaps == 3)
        let requests = await sink.requests()
        #expect(requests.map(\.path) == ["/v3/locations/8118", "/v3/locations/8118/latest"])
        #expect(requests.allSatisfy { $0.headers["x-api-key"] == "k" })
        await #expect(try store.latest(station: "openaq:8118", metric: "pm25")?.value == 187.5)
        await #expect(try store.stationInfos()["openaq:8118"]?.name == "New Delhi - DPCC")
    }
}

@Suite("a fetch cut short by a stop")
struct CancelledFetchTests {
    @Test("is no failure of the source: nothing recorded, nothing logged as failing")
    func cancelled() async throws {
        let store = try tempStore()
        // Port 9 (discard) is closed here: the fetch fails at once, inside a cancelled task.
        let source = USGSIVSource(name: "river", baseURL: "http://127.0.0.1:9/nwis/iv/", sites: ["01100500"])
        let outcome = await Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await Fetch.run(sources: [ConfiguredSource(source: source)], store: store, now: 1_700_000_000)[0]
        }.value
        #expect(outcome.error == nil)
        #expect(outcome.skipped == "cancelled: stopping")
        #expect(try await store.sourceState("river")?.failures ?? 0 == 0)
    }
}
