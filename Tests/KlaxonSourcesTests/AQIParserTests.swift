import Foundation
import KlaxonCore
import KlaxonSources
import Testing

/// The recorded AQI payloads live in `Tests/Fixtures/real/{airnow,openaq,waqi}`.

@Suite struct AQIParserTests {
    // MARK: - AirNow

    func airnow(_ station: String, _ metric: String, _ time: String, _ value: Double) -> Reading {
        Reading(station: station, metric: metric, time: utcTime(time), value: value, source: "airnow")
    }

    @Test func airNowLegacy() throws {
        let batch = try AirNowParser.parse(try ParserFixtures.data("aqi_airnow_legacy.json"))
        let dc = "Metropolitan Washington"
        #expect(
            batch.readings == [
                // "2024-07-04 " (trailing space), hour 13 EDT = 17:00Z.
                airnow(dc, "aqi.o3", "2024-07-04T17:00:00Z", 112),
                airnow(dc, "aqi.pm25", "2024-07-04T17:00:00Z", 57),
                // Hour 23 MST (Arizona) on the 4th is 06:00Z on the 5th.
                airnow("Phoenix", "aqi.pm25", "2024-07-05T06:00:00Z", 48),
                // The area's AQI: the highest pollutant; PM10's -1 is a gap, not a value.
                airnow(dc, "aqi", "2024-07-04T17:00:00Z", 112),
                airnow("Phoenix", "aqi", "2024-07-05T06:00:00Z", 48),
            ])
        #expect(batch.gaps == 1)
        #expect(
            batch.stations == [
                StationInfo(
                    id: dc, source: "airnow", name: dc, latitude: 38.919, longitude: -77.013,
                    timeZone: "America/New_York", attributes: ["state": "DC"]),
                StationInfo(
                    id: "Phoenix", source: "airnow", name: "Phoenix", latitude: 33.4484, longitude: -112.074,
                    timeZone: "America/Phoenix", attributes: ["state": "AZ"]),
            ])
    }

    @Test func airNow2026() throws {
        let batch = try AirNowParser.parse(try ParserFixtures.data("aqi_airnow_2026.json"))
        let la = "Los Angeles-South Coastal"
        #expect(
            batch.readings == [
                // Two sites of one area report ozone for the hour: the higher is kept.
                airnow(la, "aqi.o3", "2026-06-18T22:00:00Z", 81),
                airnow(la, "aqi.pm25", "2026-06-18T22:00:00Z", 63),
                airnow(la, "aqi", "2026-06-18T22:00:00Z", 81),
            ])
        #expect(batch.gaps == 1)  // PM10 nowcastAQI null
        #expect(
            batch.stations == [
                StationInfo(
                    id: la, source: "airnow", name: la, latitude: 33.8, longitude: -118.2,
                    timeZone: "America/Los_Angeles",
                    attributes: [
                        "state": "CA", "site_id": "060371103", "site_name": "Los Angeles-N. Main",
                        "agency": "South Coast AQMD",
                    ])
            ])
    }

    @Test func airNowFormatsMixAndVariants() throws {
        let body = """
            [{"DateObserved": "2024-01-15 ", "HourObserved": 0, "LocalTimeZone": "HST", "ReportingArea": "Honolulu",
              "StateCode": "HI", "ParameterName": "PM2.5", "AQI": 20, "Category": {"Number": 1, "Name": "Good"}},
             {"dateObserved": "01/15/2024", "hourObserved": 9, "localTimeZone": "AKST", "reportingAreaName": "Fairbanks",
              "parameterName": "PM2.5", "aqi": 160}]
            """
        let batch = try AirNowParser.parse(Data(body.utf8))
        #expect(
            batch.readings == [
                airnow("Honolulu", "aqi.pm25", "2024-01-15T10:00:00Z", 20),
                airnow("Fairbanks", "aqi.pm25", "2024-01-15T18:00:00Z", 160),
                airnow("Honolulu", "aqi", "2024-01-15T10:00:00Z", 20),
                airnow("Fairbanks", "aqi", "2024-01-15T18:00:00Z", 160),
            ])
        #expect(try AirNowParser.parse(Data("[]".utf8)).readings.isEmpty)
    }

    @Test func airNowErrors() {
        func error(_ body: String) -> String? {
            caughtParseError { _ = try AirNowParser.parse(Data(body.utf8)) }?.description
        }
        #expect(
            error(#"{"WebServiceError":[{"Message":"Invalid request or API key"}]}"#)
                == "airnow-json: the server sent an error, not data: Invalid request or API key")
        #expect(
            error(
                #"[{"DateObserved": "2024-07-04", "HourObserved": 13, "ReportingArea": "X", "ParameterName": "O3", "AQI": 1}]"#
            )
                == "airnow-json: missing field '[0].LocalTimeZone'")
        #expect(
            error(
                #"[{"DateObserved": "2024-07-04", "HourObserved": 13, "LocalTimeZone": "XST", "ReportingArea": "X", "ParameterName": "O3", "AQI": 1}]"#
            )
                == "airnow-json: unknown time zone 'XST' in [0].LocalTimeZone")
        #expect(
            error(
                #"[{"dateObserved": "2024-07-04", "hourObserved": "25:00", "localTimeZone": "PDT", "reportingAreaName": "X", "parameterName": "O3", "nowcastAQI": 1}]"#
            )
                == "airnow-json: bad hour in [0].hourObserved")
        #expect(
            error(
                #"[{"DateObserved": "2024-13-04", "HourObserved": 1, "LocalTimeZone": "PST", "ReportingArea": "X", "ParameterName": "O3", "AQI": 1}]"#
            )
                == "airnow-json: bad date '2024-13-04' in [0].DateObserved")
        #expect(error(#"{"a": 1}"#) == "airnow-json: the JSON is not an array of observations")
        #expect(error("[{") == "airnow-json: truncated or malformed JSON")
        #expect(error("<html><title>502 Bad Gateway</title></html>")?.contains("got an HTML page") == true)
    }

    // MARK: - OpenAQ

    @Test func openAQLocationAndSensors() throws {
        let data = try ParserFixtures.data("aqi_openaq_location.json")
        #expect(
            try OpenAQParser.locations(data) == [
                StationInfo(
                    id: "openaq:8118", source: "openaq", name: "New Delhi - DPCC", latitude: 28.63576,
                    longitude: 77.22445, timeZone: "Asia/Kolkata", attributes: ["country": "IN", "provider": "CPCB"])
            ])
        let sensors = try OpenAQParser.sensors(data)
        #expect(sensors.count == 3)
        #expect(sensors[23534]?.parameter == "pm25" && sensors[23534]?.unit == "µg/m³")
        #expect(sensors[23533]?.parameter == "o3" && sensors[23533]?.unit == "ppm")
        #expect(sensors[9_911_001]?.parameter == "pm25")
    }

    @Test func openAQLatest() throws {
        let sensors = try OpenAQParser.sensors(try ParserFixtures.data("aqi_openaq_location.json"))
        let batch = try OpenAQParser.measurements(
            try ParserFixtures.data("aqi_openaq_latest.json"), station: "openaq:8118", sensors: sensors)
        #expect(
            batch.readings == [
                Reading(
                    station: "openaq:8118", metric: "pm25", time: utcTime("2025-11-03T10:00:00Z"), value: 187.5,
                    unit: "µg/m³", source: "openaq"),
                // A second PM2.5 sensor: the higher sensor id is named apart.
                Reading(
                    station: "openaq:8118", metric: "pm25.9911001", time: utcTime("2025-11-03T09:45:00Z"),
                    value: 201.25, unit: "µg/m³", source: "openaq"),
            ])
        // O3 -9999, PM2.5 null, and sensor 777 that the map does not know.
        #expect(batch.gaps == 3)
        #expect(batch.stations.isEmpty)
    }

    @Test func openAQHourlyMeasurements() throws {
        let batch = try OpenAQParser.measurements(
            try ParserFixtures.data("aqi_openaq_hours.json"), station: "openaq:8118", sensors: [:])
        #expect(
            batch.readings == [
                // Stamped at the end of the hour (period.datetimeTo).
                Reading(
                    station: "openaq:8118", metric: "o3", time: utcTime("2025-11-03T08:00:00Z"), value: 0.041,
                    unit: "ppm", source: "openaq"),
                Reading(
                    station: "openaq:8118", metric: "o3", time: utcTime("2025-11-03T10:00:00Z"), value: 0.058,
                    unit: "ppm", source: "openaq"),
            ])
        #expect(batch.gaps == 1)
    }

    @Test func openAQErrors() {
        let noResults = caughtParseError {
            _ = try OpenAQParser.measurements(Data(#"{"meta": {}}"#.utf8), station: "x", sensors: [:])
        }
        #expect(noResults?.description == "openaq-json: missing field 'results'")
        let unauthorized = caughtParseError {
            _ = try OpenAQParser.locations(Data(#"{"message": "Unauthorized"}"#.utf8))
        }
        #expect(unauthorized?.kind == .serverError)
        #expect(unauthorized?.description == "openaq-json: the server sent an error, not data: Unauthorized")
        let badTime = caughtParseError {
            _ = try OpenAQParser.measurements(
                Data(#"{"results": [{"value": 1, "datetime": {"utc": "2025-11-03 10:00"}, "sensorsId": 1}]}"#.utf8),
                station: "x", sensors: [1: ("pm25", "µg/m³")])
        }
        #expect(badTime?.description == "openaq-json: bad time '2025-11-03 10:00' in results[0]")
    }

    // MARK: - WAQI

    func waqi(_ station: String, _ metric: String, _ time: String, _ value: Double) -> Reading {
        Reading(station: station, metric: metric, time: utcTime(time), value: value, source: "waqi")
    }

    @Test func waqiFeed() throws {
        let batch = try WAQIParser.parse(try ParserFixtures.data("aqi_waqi_ok.json"))
        // 15:00 at +05:30 is 09:30Z (time.v would say 15:00Z).
        let t = "2025-11-03T09:30:00Z"
        #expect(
            batch.readings == [
                waqi("waqi:2554", "aqi", t, 162), waqi("waqi:2554", "aqi.pm25", t, 162),
                waqi("waqi:2554", "aqi.pm10", t, 96), waqi("waqi:2554", "aqi.o3", t, 12.8),
                waqi("waqi:2554", "aqi.no2", t, 21.5), waqi("waqi:2554", "aqi.co", t, 9.1),
            ])
        #expect(batch.gaps == 1)  // so2 "-"
        #expect(
            batch.stations == [
                StationInfo(
                    id: "waqi:2554", source: "waqi", name: "Mandir Marg, Delhi, Delhi, India", latitude: 28.63576,
                    longitude: 77.22445,
                    attributes: [
                        "url": "https://aqicn.org/city/delhi/mandir-marg",
                        "attribution": "CPCB - India Central Pollution Control Board; World Air Quality Index Project",
                    ])
            ])
    }

    @Test func waqiUnavailableAQI() throws {
        let batch = try WAQIParser.parse(try ParserFixtures.data("aqi_waqi_dash.json"))
        #expect(batch.readings.isEmpty)
        #expect(batch.gaps == 1)
        #expect(batch.stations.map(\.id) == ["waqi:8397"])
        #expect(batch.stations.first?.name == "Amsterdam-Vondelpark")
    }

    @Test func waqiErrors() throws {
        let unknown = caughtParseError { _ = try WAQIParser.parse(try ParserFixtures.data("aqi_waqi_error.json")) }
        #expect(unknown?.kind == .serverError)
        #expect(unknown?.description == "waqi-json: the server sent an error, not data: Unknown station")
        let nested = caughtParseError {
            _ = try WAQIParser.parse(try ParserFixtures.data("aqi_waqi_nested_error.json"))
        }
        #expect(nested?.kind == .serverError)
        #expect(nested?.description == "waqi-json: the server sent an error, not data: Unknown ID")
        let noTZ = caughtParseError {
            _ = try WAQIParser.parse(
                Data(
                    #"{"status": "ok", "data": {"aqi": 5, "idx": 1, "time": {"s": "2025-01-01 00:00:00", "v": 1}}}"#
                        .utf8))
        }
        #expect(noTZ?.description == "waqi-json: missing field 'data.time.tz'")
        let badTime = caughtParseError {
            _ = try WAQIParser.parse(
                Data(
                    #"{"status": "ok", "data": {"aqi": 5, "idx": 1, "time": {"s": "yesterday", "tz": "+01:00"}}}"#.utf8)
            )
        }
        #expect(badTime?.description == "waqi-json: bad time 'yesterday' '+01:00' in data.time")
        let noIdx = caughtParseError {
            _ = try WAQIParser.parse(Data(#"{"status": "ok", "data": {"aqi": 5}}"#.utf8))
        }
        #expect(noIdx?.description == "waqi-json: missing field 'data.idx'")
        let html = caughtParseError { _ = try WAQIParser.parse(try ParserFixtures.data("error_page.html")) }
        #expect(html?.kind == .notTheFormat)
    }

    // MARK: - AQI WebSocket frames

    @Test func webSocketFrame() throws {
        let t: Int64 = 1_762_182_000
        let (readings, skipped) = try AQIFrameParser.parse(try ParserFixtures.data("aqi_ws_frame.json"), receivedAt: t)
        func r(_ city: String, _ aqi: Double) -> Reading {
            Reading(station: city, metric: "aqi", time: t, value: aqi, source: "aqi-websocket")
        }
        #expect(
            readings == [
                r("Mumbai", 181.3946178595279),
                // Delhi appears twice: the later value wins, in the first one's place.
                r("Delhi", 305.1),
                r("Bengaluru", 50.49),
            ])
        // Kolkata without aqi, an entry without city, an empty city, Pune's string aqi, Chennai's
        // negative aqi, the first Delhi, Jaipur's null aqi.
        #expect(skipped == 7)
    }

    @Test func webSocketGarbage() throws {
        func error(_ frame: String) -> ParseError? {
            caughtParseError { _ = try AQIFrameParser.parse(Data(frame.utf8), receivedAt: 0) }
        }
        #expect(
            error(#"{"city": "Delhi", "aqi": 300}"#)?.description
                == "aqi-websocket: the frame is not a JSON array of objects")
        #expect(error("[1, 2]")?.description == "aqi-websocket: the frame is not a JSON array of objects ([0])")
        #expect(error(#"[{"city": "Delhi", "aqi": 3"#)?.description == "aqi-websocket: truncated or malformed JSON")
        #expect(error("")?.description == "aqi-websocket: empty body")
        #expect(error("hello")?.kind == .malformed)
        let empty = try AQIFrameParser.parse(Data("[]".utf8), receivedAt: 5)
        #expect(empty.readings.isEmpty && empty.skipped == 0)
    }

    @Test func recordedFramesLineByLine() throws {
        let recording = """
            {"received": "2025-11-03T10:00:05Z", "frame": [{"city": "Delhi", "aqi": 303.2883134665}, {"city": "Pune"}]}

            {"received": 1762164010.75, "frame": "[{\\"city\\": \\"Delhi\\", \\"aqi\\": 305.1}]"}\r
            {"received": "2025-11-03T10:00:01Z", "frame": []}
            {"received": "2025-11-03T15:30:20+05:30", "frame": {"city": "Delhi", "aqi": 1}}
            [{"city": "Delhi", "aqi": 300}]
            {"frame": []}
            {"received": "soon", "frame": []}
            {"received": "2025-11-03T10:00:30Z", "frame": "not json"}
            {"received": "2025-11-03T10:00:40Z", "frame": [{"city": "Mumbai", "aqi": 181.4}]}
            """
        let lines = AQIFrameParser.recording(Data(recording.utf8))
        let frames = lines.compactMap { try? $0.get() }
        #expect(frames.map(\.line) == [1, 3, 10])
        #expect(frames.map(\.receivedAt) == [1_762_164_005, 1_762_164_010, 1_762_164_040])
        #expect(
            frames.flatMap(\.readings) == [
                Reading(
                    station: "Delhi", metric: "aqi", time: 1_762_164_005, value: 303.2883134665,
                    source: "aqi-websocket"),
                Reading(station: "Delhi", metric: "aqi", time: 1_762_164_010, value: 305.1, source: "aqi-websocket"),
                Reading(station: "Mumbai", metric: "aqi", time: 1_762_164_040, value: 181.4, source: "aqi-websocket"),
            ])
        #expect(frames.map(\.skipped) == [1, 0, 0])
        let errors = lines.compactMap { line -> String? in
            guard case .failure(let error) = line else { return nil }
            return error.description
        }
        #expect(
            errors == [
                "aqi-frames:4: received 2025-11-03T10:00:01Z, before the line above (2025-11-03T10:00:10Z): "
                    + "a recording is in the order received",
                "aqi-frames:5: aqi-websocket: the frame is not a JSON array of objects",
                #"aqi-frames:6: the line is not a recorded frame ({"received": …, "frame": […]})"#,
                "aqi-frames:7: missing field 'received'",
                "aqi-frames:8: bad time 'soon' in 'received'",
                "aqi-frames:9: aqi-websocket: truncated or malformed JSON",
            ])
        let long = #"{"received": "2025-11-03T10:00:05Z", "frame": "\#(String(repeating: " ", count: 200))[]"}"#
        let tooLong = AQIFrameParser.recording(Data(long.utf8), maxFrame: 100)
        #expect(tooLong.count == 1)
        #expect((try? tooLong[0].get()) == nil)
    }

    @Test func openAQBodiesToldApartAndReadingsByLocation() throws {
        let location = try ParserFixtures.data("aqi_openaq_location.json")
        let latest = try ParserFixtures.data("aqi_openaq_latest.json")
        let hours = try ParserFixtures.data("aqi_openaq_hours.json")
        #expect(try OpenAQParser.bodyKind(location) == .locations)
        #expect(try OpenAQParser.bodyKind(latest) == .measurements)
        #expect(try OpenAQParser.bodyKind(hours) == .measurements)
        let sensorList = """
            {"meta": {}, "results": [{"id": 3916, "name": "no2 ppm",
                                      "parameter": {"id": 7, "name": "no2", "units": "ppm"},
                                      "latest": {"value": 0.0007}}]}
            """
        #expect(try OpenAQParser.bodyKind(Data(sensorList.utf8)) == .sensors)

        let byLocation = try OpenAQParser.sensorsByLocation(location)
        #expect(byLocation.keys.sorted() == [8118])
        // `/latest` results name their location: the same readings as the source's own reading.
        let sensors = try OpenAQParser.sensors(location)
        let live = try OpenAQParser.measurements(latest, station: "openaq:8118", sensors: sensors)
        let saved = try OpenAQParser.measurements(latest, sensorsByLocation: byLocation, sensor: nil)
        #expect(saved.batch.readings == live.readings)
        // Sensor 777, which the location does not list, is refused here and not stored live either.
        #expect(saved.refused.map(\.reason) == ["sensor 777 is not listed by location 8118 (openaq:8118)"])
        #expect(saved.batch.gaps + saved.refusedCount == live.gaps)
        // Hourly results name no sensor: the one the body was asked for (its file's name) says whose.
        let hourly = try OpenAQParser.measurements(hours, sensorsByLocation: byLocation, sensor: 23533)
        #expect(
            hourly.batch.readings
                == (try OpenAQParser.measurements(hours, station: "openaq:8118", sensors: [:])).readings)
        #expect(hourly.refused.isEmpty)
        let noSensor = try OpenAQParser.measurements(hours, sensorsByLocation: byLocation, sensor: nil)
        #expect(noSensor.batch.readings.isEmpty)
        #expect(noSensor.refusedCount == 3)
        let notLoaded = try OpenAQParser.measurements(latest, sensorsByLocation: [:], sensor: nil)
        #expect(notLoaded.batch.readings.isEmpty)
        #expect(
            notLoaded.refused.first?.reason
                == "sensor 23534 of location 8118: that location is not loaded; its /v3/locations/8118 body lists "
                + "its sensors")
    }

    @Test func openAQReadingsOnlyUnderTheLocationThatListsTheirSensor() throws {
        let location = try ParserFixtures.data("aqi_openaq_location.json")  // 8118: 23533 o3, 23534 pm25
        let hours = try ParserFixtures.data("aqi_openaq_hours.json")  // o3, no sensor, no location
        let byLocation = try OpenAQParser.sensorsByLocation(location)
        // A sensor the one loaded location does not list: refused, not guessed into that location.
        let foreign = try OpenAQParser.measurements(hours, sensorsByLocation: byLocation, sensor: 3917)
        #expect(foreign.batch.readings.isEmpty)
        #expect(
            foreign.refused.map { "\($0.count) \($0.reason)" } == [
                "3 sensor 3917 is listed by no location loaded: give the /v3/locations/{id} body of the "
                    + "location that lists it"
            ])
        // No sensor known: not "the only o3 sensor of the location".
        let unnamed = try OpenAQParser.measurements(hours, sensorsByLocation: byLocation, sensor: nil)
        #expect(unnamed.batch.readings.isEmpty)
        #expect(unnamed.refused.map(\.count) == [3])
        #expect(unnamed.refused.first?.reason.hasPrefix("no sensor named: ") == true)
        // The location's pm25 sensor cannot hold o3 values.
        let mislabelled = try OpenAQParser.measurements(hours, sensorsByLocation: byLocation, sensor: 23534)
        #expect(
            mislabelled.refused.map(\.reason) == ["sensor 23534 of openaq:8118 measures pm25, the result 'o3'"])
        // Another location loaded that lists the sensor takes its values; 8118 gets none.
        var two = byLocation
        two[2178] = [3917: ("o3", "ppm")]
        let owned = try OpenAQParser.measurements(hours, sensorsByLocation: two, sensor: 3917)
        #expect(owned.refused.isEmpty)
        #expect(owned.batch.readings.map(\.station) == ["openaq:2178", "openaq:2178"])
        #expect(owned.batch.gaps == 1)
        // Two locations listing one sensor: neither is guessed.
        two[2178] = [23533: ("o3", "ppm")]
        let ambiguous = try OpenAQParser.measurements(hours, sensorsByLocation: two, sensor: 23533)
        #expect(
            ambiguous.refused.map(\.reason) == [
                "sensor 23533 is listed by several locations loaded (openaq:2178, openaq:8118)"
            ])
        // A result naming its sensor: it must be the one the file was asked for, and listed by its location.
        let latest = try ParserFixtures.data("aqi_openaq_latest.json")
        let other = try OpenAQParser.measurements(latest, sensorsByLocation: byLocation, sensor: 23534)
        #expect(other.refused.first?.reason == "the result names sensor 23533, the file name sensor 23534")
        // Live, a /latest result of another location or of a sensor the location does not list is not
        // stored under it (counted with the values not stored).
        let sensors = try OpenAQParser.sensors(location)
        let elsewhere = try OpenAQParser.measurements(latest, station: "openaq:2178", sensors: sensors)
        #expect(elsewhere.readings.isEmpty)
        #expect(elsewhere.gaps == 5)

        // The recorded sensor measurements, with the recorded location that lists sensor 3920.
        let real = try OpenAQParser.measurements(
            try ParserFixtures.realData("openaq/v3_sensor_measurements_hourly.json"),
            sensorsByLocation: try OpenAQParser.sensorsByLocation(ParserFixtures.realData("openaq/v3_locations.json")),
            sensor: OpenAQParser.sensorID(fileName: "saved/v3_sensors_3920_measurements_hourly.json"))
        #expect(real.refused.isEmpty)
        #expect(
            real.batch.readings.map { "\($0.station) \($0.metric) \($0.value)" } == [
                "openaq:2178 pm25 6.0", "openaq:2178 pm25 7.5",
            ])
    }

    @Test func openAQSensorFromFileName() {
        #expect(OpenAQParser.sensorID(fileName: "sensors_3920_measurements.json") == 3920)
        #expect(OpenAQParser.sensorID(fileName: "/tmp/x/v3_Sensors-3920_hours.json") == 3920)
        #expect(OpenAQParser.sensorID(fileName: "sensor_42.json") == 42)
        #expect(OpenAQParser.sensorID(fileName: "sensors_3920/hours.json") == nil)
        #expect(OpenAQParser.sensorID(fileName: "v3_location_sensors.json") == nil)
        #expect(OpenAQParser.sensorID(fileName: "hours_2178.json") == nil)
        #expect(OpenAQParser.sensorID(fileName: "sensors_1_vs_sensors_2.json") == nil)
        #expect(OpenAQParser.sensorID(fileName: "sensors_7_sensor-7.json") == 7)
        #expect(OpenAQParser.sensorID(fileName: "sensors_99999999999999999999.json") == nil)
    }

    // MARK: - Recorded payloads

    @Test func recordedFileLists() throws {
        #expect(try ParserFixtures.realFiles("airnow") == ["observation_latLong_current_legacy_HA.json"])
        #expect(
            try ParserFixtures.realFiles("openaq") == [
                "v3_location_sensors.json", "v3_locations.json", "v3_sensor_measurements_hourly.json",
            ])
        #expect(
            try ParserFixtures.realFiles("waqi") == [
                "feed_city_utrecht_ok.json", "feed_error_invalid_key.json", "feed_error_unknown_station.json",
                "feed_station_372382_purpleair_ok.json", "search_keyword_klundert.json",
            ])
    }

    @Test func recordedAirNow() throws {
        let batch = try AirNowParser.parse(
            try ParserFixtures.realData("airnow/observation_latLong_current_legacy_HA.json"))
        // 2020-12-20 hour 15 PST = 23:00Z.
        let t = "2020-12-20T23:00:00Z"
        #expect(
            batch.readings == [
                airnow("Central LA CO", "aqi.o3", t, 44), airnow("Central LA CO", "aqi.pm25", t, 37),
                airnow("Central LA CO", "aqi.pm10", t, 11), airnow("Central LA CO", "aqi", t, 44),
            ])
        #expect(batch.gaps == 0)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "Central LA CO", source: "airnow", name: "Central LA CO", latitude: 34.0663,
                    longitude: -118.2266, timeZone: "America/Los_Angeles", attributes: ["state": "CA"])
            ])
    }

    @Test func recordedOpenAQ() throws {
        let fromSensors = try OpenAQParser.sensors(try ParserFixtures.realData("openaq/v3_location_sensors.json"))
        let fromLocations = try OpenAQParser.sensors(try ParserFixtures.realData("openaq/v3_locations.json"))
        let expected: [Int: String] = [
            3916: "no2 ppm", 3917: "o3 ppm", 3918: "so2 ppm", 3919: "pm10 µg/m³", 3920: "pm25 µg/m³",
            25227: "co ppm", 4_272_103: "nox ppm", 4_272_226: "no ppm",
        ]
        #expect(fromSensors.mapValues { "\($0.parameter) \($0.unit)" } == expected)
        #expect(fromLocations.mapValues { "\($0.parameter) \($0.unit)" } == expected)

        #expect(
            try OpenAQParser.locations(try ParserFixtures.realData("openaq/v3_locations.json")) == [
                StationInfo(
                    id: "openaq:2178", source: "openaq", name: "Del Norte", latitude: 35.1353, longitude: -106.584702,
                    timeZone: "America/Denver",
                    attributes: ["locality": "Albuquerque", "country": "US", "provider": "AirNow"])
            ])

        let batch = try OpenAQParser.measurements(
            try ParserFixtures.realData("openaq/v3_sensor_measurements_hourly.json"), station: "openaq:2178",
            sensors: fromSensors)
        #expect(
            batch.readings == [
                Reading(
                    station: "openaq:2178", metric: "pm25", time: utcTime("2023-10-16T13:00:00Z"), value: 6,
                    unit: "µg/m³", source: "openaq"),
                Reading(
                    station: "openaq:2178", metric: "pm25", time: utcTime("2023-10-16T14:00:00Z"), value: 7.5,
                    unit: "µg/m³", source: "openaq"),
            ])
        #expect(batch.gaps == 0)
    }

    @Test func recordedWAQIUtrecht() throws {
        let batch = try WAQIParser.parse(try ParserFixtures.realData("waqi/feed_city_utrecht_ok.json"))
        // s "2023-08-07 17:00:00" at +02:00 = 15:00Z; time.v (1691427600) would say 17:00Z.
        let t = "2023-08-07T15:00:00Z"
        #expect(
            batch.readings == [
                waqi("waqi:6332", "aqi", t, 29), waqi("waqi:6332", "aqi.pm25", t, 1),
                waqi("waqi:6332", "aqi.pm10", t, 12), waqi("waqi:6332", "aqi.o3", t, 29.4),
                waqi("waqi:6332", "aqi.no2", t, 0.7), waqi("waqi:6332", "aqi.so2", t, 0.1),
            ])
        #expect(batch.gaps == 0)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "waqi:6332", source: "waqi", name: "Griftpark, Utrecht", latitude: 52.101308,
                    longitude: 5.128183,
                    attributes: [
                        "url": "https://aqicn.org/city/netherland/utrecht/griftpark",
                        "attribution":
                            "RIVM - Rijksinstituut voor Volksgezondheid en Milieum, Landelijk Meetnet Luchtkwaliteit; World Air Quality Index Project",
                    ])
            ])
    }

    @Test func recordedWAQIPurpleAir() throws {
        let batch = try WAQIParser.parse(try ParserFixtures.realData("waqi/feed_station_372382_purpleair_ok.json"))
        // s "2023-08-20 12:20:22" at -07:00 = 19:20:22Z, which time.v agrees with for this station.
        let t = "2023-08-20T19:20:22Z"
        #expect(
            batch.readings == [
                waqi("waqi:-372382", "aqi", t, 155), waqi("waqi:-372382", "aqi.pm25", t, 155),
                waqi("waqi:-372382", "aqi.pm10", t, 59),
            ])
        #expect(batch.gaps == 0)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "waqi:-372382", source: "waqi", name: "Building Cure", latitude: 47.616673,
                    longitude: -122.33384,
                    attributes: [
                        "url": "https://aqicn.org/station/@372382",
                        "location": "Terry Avenue, Belltown, Seattle, King County, Washington, 98101, USA",
                        "attribution": "Purple Air; World Air Quality Index Project",
                    ])
            ])
    }

    @Test func recordedWAQIErrorsAndSearch() throws {
        let invalidKey = caughtParseError {
            _ = try WAQIParser.parse(try ParserFixtures.realData("waqi/feed_error_invalid_key.json"))
        }
        #expect(invalidKey?.kind == .serverError)
        #expect(invalidKey?.description == "waqi-json: the server sent an error, not data: Invalid key")
        let unknown = caughtParseError {
            _ = try WAQIParser.parse(try ParserFixtures.realData("waqi/feed_error_unknown_station.json"))
        }
        #expect(unknown?.description == "waqi-json: the server sent an error, not data: Unknown station")
        let search = caughtParseError {
            _ = try WAQIParser.parse(try ParserFixtures.realData("waqi/search_keyword_klundert.json"))
        }
        #expect(search?.kind == .notTheFormat)
        #expect(
            search?.description == "waqi-json: got a list of stations (a /search answer), not a /feed body")
    }
}
