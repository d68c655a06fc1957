import Foundation
import KlaxonCore
import KlaxonSources
import Testing

private let issued: Int64 = 1_773_496_800  // 2026-03-14T14:00:00Z

private func day(
    _ place: String, _ date: String, max: Double?, min: Double?, precipitation: Double?, probability: Double?,
    snow: Double?, wind: Double?, code: Int?, source: String, issued: Int64 = issued, climatology: Bool = false
) -> DayWeather {
    DayWeather(
        place: place, date: date, tempMaxC: max, tempMinC: min, precipitationMm: precipitation,
        precipitationProbability: probability, snowfallCm: snow, windMaxKmh: wind, weatherCode: code,
        source: source, issued: issued, climatology: climatology)
}

@Suite struct OpenMeteoParserTests {
    @Test func forecastInImperialUnitsWithANullDay() throws {
        let data = try ParserFixtures.data("wx_open_meteo_forecast_denver_fahrenheit.json")
        let result = try OpenMeteoParser.forecast(data, place: "Denver", issued: issued)
        #expect(result.timeZone == "America/Denver")
        #expect(result.utcOffsetSeconds == -21_600)
        func om(
            _ date: String, _ max: Double?, _ min: Double?, _ p: Double?, _ pop: Double?, _ snow: Double?,
            _ wind: Double?, _ code: Int?
        ) -> DayWeather {
            day(
                "Denver", date, max: max, min: min, precipitation: p, probability: pop, snow: snow, wind: wind,
                code: code, source: "open-meteo")
        }
        #expect(
            result.days == [
                om("2026-03-14", 10, -2, 0, 5, 0, 19.96, 3),
                om("2026-03-15", 1, -6, 8.99, 90, 9, 32.99, 73),
                om("2026-03-16", nil, nil, nil, nil, nil, nil, nil),
                om("2026-03-17", 15, 2, 1.27, 40, 0, 13.04, 61),
            ])
    }

    @Test func unixTimesOlderKeysAndMetresPerSecond() throws {
        let body = """
            {"utc_offset_seconds":-21600,"timezone":"America/Denver",
             "daily_units":{"time":"unixtime","temperature_2m_max":"°C","windspeed_10m_max":"m/s","weathercode":"wmo code"},
             "daily":{"time":[1773468000,1773554400],"temperature_2m_max":[10.0,11.5],"windspeed_10m_max":[5.0,10.25],
                      "weathercode":[2,null]}}
            """
        let result = try OpenMeteoParser.forecast(Data(body.utf8), place: "X", issued: 7)
        #expect(
            result.days == [
                day(
                    "X", "2026-03-14", max: 10, min: nil, precipitation: nil, probability: nil, snow: nil, wind: 18,
                    code: 2, source: "open-meteo", issued: 7),
                day(
                    "X", "2026-03-15", max: 11.5, min: nil, precipitation: nil, probability: nil, snow: nil, wind: 36.9,
                    code: nil, source: "open-meteo", issued: 7),
            ])
    }

    @Test func climatologyAveragesTheSameDayOverTheYears() throws {
        let data = try ParserFixtures.data("wx_open_meteo_archive_3y.json")
        let days = try OpenMeteoParser.climatology(
            data, place: "Denver", dates: ["2026-02-28", "2028-02-29", "2026-03-05", "2026-03-01", "2026-03-02"],
            issued: issued)
        func clim(
            _ date: String, _ max: Double?, _ min: Double?, _ p: Double?, _ pop: Double?, _ snow: Double?,
            _ wind: Double?
        ) -> DayWeather {
            day(
                "Denver", date, max: max, min: min, precipitation: p, probability: pop, snow: snow, wind: wind,
                code: nil, source: "climatology", climatology: true)
        }
        #expect(
            days == [
                // 2021, 2022, 2024: two of three years with ≥ 1 mm.
                clim("2026-02-28", 4.23, -6.97, 3.13, 66.67, 2.19, 22.37),
                // 2024-02-29, with 28 February of the common years 2021 and 2022.
                clim("2028-02-29", 2.03, -7.9, 4.23, 100, 2.96, 25.17),
                // 5 March is not in the archive: left out.
                clim("2026-03-01", 8.7, -2.97, 0.33, 33.33, 0.23, 15.63),
                // 2024-03-02 is all null: the mean of two years.
                clim("2026-03-02", 13.3, -0.7, 0.15, 0, 0, 13.85),
            ])
        let error = caughtParseError {
            _ = try OpenMeteoParser.climatology(data, place: "Denver", dates: ["2026-02-29"], issued: issued)
        }
        #expect(error?.description == "open-meteo-json: bad wanted date '2026-02-29'")
    }

    @Test func geocodingCandidates() throws {
        let places = try OpenMeteoParser.geocode(ParserFixtures.data("wx_open_meteo_geocoding_denver.json"))
        #expect(
            places == [
                OpenMeteoParser.Place(
                    name: "Denver", latitude: 39.73915, longitude: -104.9847, timeZone: "America/Denver",
                    country: "United States", admin1: "Colorado", population: 715_522),
                OpenMeteoParser.Place(
                    name: "Denver", latitude: 42.67221, longitude: -92.33746, timeZone: "America/Chicago",
                    country: "United States", admin1: "Iowa", population: 1_919),
            ])
        #expect(places.map(\.label) == ["Denver, Colorado, United States", "Denver, Iowa, United States"])
        #expect(try OpenMeteoParser.geocode(ParserFixtures.data("wx_open_meteo_geocoding_none.json")) == [])
        #expect(try OpenMeteoParser.geocode(Data("{}".utf8)) == [])
        let country = try OpenMeteoParser.geocode(
            Data(
                #"{"results":[{"name":"Singapore","latitude":1.28967,"longitude":103.85007,"country":"Singapore","admin1":""}]}"#
                    .utf8))
        #expect(country.map(\.label) == ["Singapore"])
        #expect(country.first?.timeZone == nil && country.first?.population == nil)
    }

    @Test func errors() throws {
        let reason = Data(
            #"{"error":true,"reason":"Cannot initialize WeatherVariable from invalid String value tempeture_2m_max for key daily"}"#
                .utf8)
        let serverError = caughtParseError { _ = try OpenMeteoParser.forecast(reason, place: "X", issued: 0) }
        #expect(serverError?.kind == .serverError)
        #expect(
            serverError?.description
                == "open-meteo-json: the server sent an error, not data: Cannot initialize WeatherVariable from invalid String value…"
        )
        #expect(caughtParseError { _ = try OpenMeteoParser.geocode(reason) }?.kind == .serverError)
        #expect(
            caughtParseError { _ = try OpenMeteoParser.climatology(reason, place: "X", dates: [], issued: 0) }?.kind
                == .serverError)

        let cases: [(String, String)] = [
            (#"{"timezone":"GMT","hourly":{"time":[]}}"#, "open-meteo-json: missing field 'daily'"),
            (
                #"{"daily_units":{"temperature_2m_max":"°R"},"daily":{"time":["2026-01-01"],"temperature_2m_max":[1]}}"#,
                "open-meteo-json: unknown unit '°R' for 'daily.temperature_2m_max'"
            ),
            (
                #"{"daily":{"time":["2026-01-01","2026-01-02"],"precipitation_sum":[1]}}"#,
                "open-meteo-json: 'daily.precipitation_sum' has 1 values for 2 days"
            ),
            (
                #"{"daily":{"time":["2026-01-01","01/02/2026"]}}"#,
                "open-meteo-json: bad date '01/02/2026' in 'daily.time[1]'"
            ),
            (
                #"{"daily":{"time":["2026-01-01"],"snowfall_sum":["a lot"]}}"#,
                "open-meteo-json: field 'daily.snowfall_sum[0]' is not a number"
            ),
            (#"{"daily":{"temperature_2m_max":[1]}}"#, "open-meteo-json: missing field 'daily.time'"),
        ]
        for (body, description) in cases {
            let error = caughtParseError { _ = try OpenMeteoParser.forecast(Data(body.utf8), place: "X", issued: 0) }
            #expect(error?.description == description, "\(body)")
        }
        // A variable Open-Meteo has no data for is `undefined`: read as absent.
        let undefined = try OpenMeteoParser.forecast(
            Data(
                #"{"daily_units":{"temperature_2m_max":"undefined"},"daily":{"time":["2026-01-01"],"temperature_2m_max":[null]}}"#
                    .utf8),
            place: "X", issued: 0)
        #expect(undefined.days.map(\.tempMaxC) == [nil])
        #expect(undefined.timeZone == nil && undefined.utcOffsetSeconds == nil)
    }

    @Test func floodAPIVariablesBecomeReadingsWithTheirUnit() throws {
        // The flood API (`flood-api.open-meteo.com/v1/flood`): only variables a forecast day has not.
        let body = """
            {"latitude":59.9,"longitude":10.75,"generationtime_ms":0.41,"utc_offset_seconds":0,"timezone":"GMT",
             "timezone_abbreviation":"GMT",
             "daily_units":{"time":"iso8601","river_discharge":"m³/s","river_discharge_mean":"m³/s",
                            "river_discharge_max":"m³/s"},
             "daily":{"time":["2025-05-01","2025-05-02","2025-05-03"],"river_discharge":[412.5,398.06,null],
                      "river_discharge_mean":[405.1,401.7,399.2],"river_discharge_max":[430.0,421.9,418.33]}}
            """
        let contents = try OpenMeteoParser.contents(Data(body.utf8), place: "59.90,10.75", issued: 5)
        #expect(contents.days.isEmpty)
        func r(_ metric: String, _ date: String, _ value: Double) -> Reading {
            Reading(
                station: "59.90,10.75", metric: metric, time: utcTime(date + "T00:00:00Z"), value: value,
                unit: "m³/s", source: "open-meteo")
        }
        #expect(
            contents.readings == [
                r("river_discharge", "2025-05-01", 412.5), r("river_discharge", "2025-05-02", 398.06),
                r("river_discharge_max", "2025-05-01", 430), r("river_discharge_max", "2025-05-02", 421.9),
                r("river_discharge_max", "2025-05-03", 418.33), r("river_discharge_mean", "2025-05-01", 405.1),
                r("river_discharge_mean", "2025-05-02", 401.7), r("river_discharge_mean", "2025-05-03", 399.2),
            ])
        #expect(contents.gaps == 1)
        #expect(contents.stored == ["river_discharge", "river_discharge_max", "river_discharge_mean"])
        #expect(contents.ignored.isEmpty)
        #expect(contents.timeZone == "GMT")
    }

    @Test func aForecastWithAVariableOfItsOwnKeepsBoth() throws {
        let body = """
            {"latitude":39.74,"longitude":-104.99,"utc_offset_seconds":-21600,"timezone":"America/Denver",
             "daily_units":{"time":"iso8601","temperature_2m_max":"°C","temperature_2m_min":"°C","uv_index_max":"",
                            "sunrise":"iso8601"},
             "daily":{"time":["2026-03-14","2026-03-15"],"temperature_2m_max":[10.2,1.0],
                      "temperature_2m_min":[-2.0,-6.5],
                      "uv_index_max":[5.35,2.1],"sunrise":["2026-03-14T07:10","2026-03-15T07:08"]}}
            """
        let contents = try OpenMeteoParser.contents(Data(body.utf8), place: "39.74,-104.99", issued: 9)
        #expect(
            contents.days == [
                day(
                    "39.74,-104.99", "2026-03-14", max: 10.2, min: -2, precipitation: nil, probability: nil, snow: nil,
                    wind: nil, code: nil, source: "open-meteo", issued: 9),
                day(
                    "39.74,-104.99", "2026-03-15", max: 1, min: -6.5, precipitation: nil, probability: nil, snow: nil,
                    wind: nil, code: nil, source: "open-meteo", issued: 9),
            ])
        #expect(
            contents.readings == [
                Reading(
                    station: "39.74,-104.99", metric: "uv_index_max", time: utcTime("2026-03-14T00:00:00Z"),
                    value: 5.35,
                    source: "open-meteo"),
                Reading(
                    station: "39.74,-104.99", metric: "uv_index_max", time: utcTime("2026-03-15T00:00:00Z"), value: 2.1,
                    source: "open-meteo"),
            ])
        #expect(contents.stored == ["temperature_2m_max", "temperature_2m_min", "uv_index_max"])
        #expect(contents.ignored == [.init(variable: "sunrise", reason: "times, not values")])
        // `forecast`, which the source reads, gives the same days.
        #expect(try OpenMeteoParser.forecast(Data(body.utf8), place: "39.74,-104.99", issued: 9).days == contents.days)
    }

    @Test func aResponseWithNothingToStoreSaysWhy() throws {
        let body = """
            {"latitude":39.74,"longitude":-104.99,"timezone":"GMT",
             "daily_units":{"time":"iso8601","sunrise":"iso8601","temperature_2m_max_icon_d2":"°C",
                            "wind_direction_10m_dominant":"undefined","river_discharge":"m³/s"},
             "daily":{"time":["2026-03-14"],"sunrise":["2026-03-14T07:10"],"temperature_2m_max_icon_d2":[12.5],
                      "wind_direction_10m_dominant":[null],"river_discharge":[null]}}
            """
        let error = caughtParseError { _ = try OpenMeteoParser.contents(Data(body.utf8), place: "X", issued: 0) }
        #expect(
            error?.description
                == "open-meteo-json: nothing to store: no daily variable with values; left out: "
                + "river_discharge (no values, only nulls), sunrise (times, not values), temperature_2m_max_icon_d2 "
                + "(a model's copy of temperature_2m_max: only the plain variable is read), "
                + "wind_direction_10m_dominant (no data: unit 'undefined')")
        let noDays = caughtParseError {
            _ = try OpenMeteoParser.contents(
                Data(#"{"daily":{"time":[],"river_discharge":[]}}"#.utf8), place: "X", issued: 0)
        }
        #expect(noDays?.description.hasPrefix("open-meteo-json: nothing to store: 'daily.time' holds no days") == true)
        let mismatch = caughtParseError {
            _ = try OpenMeteoParser.contents(
                Data(#"{"daily":{"time":["2026-01-01"],"river_discharge":[1,2]}}"#.utf8), place: "X", issued: 0)
        }
        #expect(mismatch?.description == "open-meteo-json: 'daily.river_discharge' has 2 values for 1 days")
    }

    @Test func htmlAndTruncatedBodies() throws {
        let html = try ParserFixtures.data("error_page.html")
        let title = "got an HTML page, not JSON (title '503 Service Temporarily Unavailable')"
        let errors: [(String, ParseError?)] = [
            ("open-meteo-json", caughtParseError { _ = try OpenMeteoParser.forecast(html, place: "X", issued: 0) }),
            ("open-meteo-json", caughtParseError { _ = try OpenMeteoParser.geocode(html) }),
            ("owm-json", caughtParseError { _ = try OWMParser.fiveDay(html, place: "X", units: "metric", issued: 0) }),
            ("owm-json", caughtParseError { _ = try OWMParser.daily(html, place: "X", units: "metric", issued: 0) }),
            ("nws-alerts-json", caughtParseError { _ = try NWSAlertsParser.parse(html) }),
        ]
        for (format, error) in errors {
            #expect(error?.description == "\(format): \(title)")
            #expect(error?.kind == .notTheFormat)
        }
        let truncated = try ParserFixtures.data("truncated.json")
        #expect(
            caughtParseError { _ = try OpenMeteoParser.forecast(truncated, place: "X", issued: 0) }?.description
                == "open-meteo-json: truncated or malformed JSON")
        #expect(
            caughtParseError {
                _ = try NWSAlertsParser.parse(Data(#"{"type":"FeatureCollection","features":[{"#.utf8))
            }?
            .description == "nws-alerts-json: truncated or malformed JSON")
        #expect(
            caughtParseError { _ = try OWMParser.fiveDay(Data(" ".utf8), place: "X", units: "", issued: 0) }?
                .description
                == "owm-json: empty body")
    }
}

@Suite struct OWMParserTests {
    @Test func fiveDayInKelvinAggregatedToLocalDays() throws {
        let data = try ParserFixtures.data("wx_owm_forecast_5day_denver_standard.json")
        let days = try OWMParser.fiveDay(data, place: "Denver", units: "standard", issued: issued)
        func owm(
            _ date: String, _ max: Double?, _ min: Double?, _ p: Double?, _ pop: Double?, _ snow: Double?,
            _ wind: Double?, _ code: Int?
        ) -> DayWeather {
            day(
                "Denver", date, max: max, min: min, precipitation: p, probability: pop, snow: snow, wind: wind,
                code: code, source: "owm")
        }
        #expect(
            days == [
                // 18:00Z on the 14th to 03:00Z on the 15th: noon to 21:00 MDT. Rain 0.42 + 1.1 (other slots have none).
                owm("2026-03-14", 15.56, 6.65, 1.52, 60, 0, 21.6, 63),
                // Rain 0.6 and snow 1.3 + 2.5 + 1.8 mm: 6.2 mm of precipitation, 0.56 cm of snow; 601 snow → 73.
                owm("2026-03-15", 5.75, -1, 6.2, 85, 0.56, 29.52, 73),
                owm("2026-03-16", -1.65, -2.2, 0, 0, 0, 7.2, 0),
            ])
        // The default units are standard.
        #expect(try OWMParser.fiveDay(data, place: "Denver", units: "", issued: issued) == days)
    }

    @Test func oneCallDailyInImperialWithAlerts() throws {
        let data = try ParserFixtures.data("wx_owm_onecall_chicago_imperial_alerts.json")
        let result = try OWMParser.daily(data, place: "Chicago", units: "imperial", issued: issued)
        func owm(
            _ date: String, _ max: Double?, _ min: Double?, _ p: Double?, _ pop: Double?, _ snow: Double?,
            _ wind: Double?, _ code: Int?
        ) -> DayWeather {
            day(
                "Chicago", date, max: max, min: min, precipitation: p, probability: pop, snow: snow, wind: wind,
                code: code, source: "owm")
        }
        #expect(
            result.days == [
                owm("2026-07-04", 34, 22, 0, 20, 0, 19.79, 0),
                owm("2026-07-05", 32, 23, 12.7, 86, 0, 29.93, 95),
                owm("2026-07-06", 25, 17, 3.05, 55, 0, 15.77, 61),
            ])
        #expect(
            result.alerts == [
                WeatherAlert(
                    id: "Severe Thunderstorm Warning@1783287600", event: "Severe Thunderstorm Warning",
                    severity: "Severe",
                    headline: "SEVERE THUNDERSTORM WARNING IN EFFECT UNTIL 600 PM CDT FOR CENTRAL COOK COUNTY",
                    onset: 1_783_287_600, ends: 1_783_292_400),
                WeatherAlert(
                    id: "Heat Advisory@1783184400", event: "Heat Advisory", severity: "Unknown",
                    onset: 1_783_184_400, ends: 1_783_213_200),
            ])
    }

    @Test func errors() throws {
        let cases: [(String, String)] = [
            (
                #"{"cod":401, "message": "Invalid API key. Please see https://openweathermap.org/faq#error401 for more info."}"#,
                "owm-json: the server sent an error, not data: 401: Invalid API key. Please see https://openweathermap.org/…"
            ),
            (
                #"{"cod":"404","message":"city not found"}"#,
                "owm-json: the server sent an error, not data: 404: city not found"
            ),
        ]
        for (body, description) in cases {
            let five = caughtParseError { _ = try OWMParser.fiveDay(Data(body.utf8), place: "X", units: "", issued: 0) }
            let daily = caughtParseError { _ = try OWMParser.daily(Data(body.utf8), place: "X", units: "", issued: 0) }
            #expect(five?.description == description)
            #expect(daily?.description == description)
            #expect(five?.kind == .serverError && daily?.kind == .serverError)
        }
        let fiveDay = try ParserFixtures.data("wx_owm_forecast_5day_denver_standard.json")
        let mixUp = caughtParseError { _ = try OWMParser.daily(fiveDay, place: "X", units: "standard", issued: 0) }
        #expect(mixUp?.kind == .notTheFormat)
        #expect(
            mixUp?.description
                == "owm-json: got the 5 day / 3 hour forecast, not a daily one ('list[0].main'): read it with fiveDay")
        let oneCall = try ParserFixtures.data("wx_owm_onecall_chicago_imperial_alerts.json")
        #expect(
            caughtParseError { _ = try OWMParser.fiveDay(oneCall, place: "X", units: "imperial", issued: 0) }?
                .description == "owm-json: missing field 'list'")
        #expect(
            caughtParseError {
                _ = try OWMParser.daily(Data(#"{"lat":1,"lon":2}"#.utf8), place: "X", units: "", issued: 0)
            }?
            .description == "owm-json: missing field 'daily' (One Call) or 'list' (forecast/daily)")
        #expect(
            caughtParseError { _ = try OWMParser.fiveDay(fiveDay, place: "X", units: "kelvin", issued: 0) }?.description
                == "owm-json: unknown units 'kelvin' (standard, metric or imperial)")
        #expect(
            caughtParseError {
                _ = try OWMParser.fiveDay(
                    Data(#"{"cod":"200","list":[{"dt":1}]}"#.utf8), place: "X", units: "", issued: 0)
            }?.description == "owm-json: missing field 'list[0].main'")
    }
}

@Suite struct NWSAlertsParserTests {
    @Test func activeAlertsAtAPoint() throws {
        let alerts = try NWSAlertsParser.parse(ParserFixtures.data("wx_nws_alerts_point_denver.json"))
        let base = "https://api.weather.gov/alerts/"
        let storm = "urn:oid:2.49.0.1.840.0.5c1e8a4c0a3f2d1b9e7f6a5b4c3d2e1f0a9b8c7d.001.1"
        let wind = "urn:oid:2.49.0.1.840.0.0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e.001.1"
        // The test message and the cancelled fog advisory are left out.
        #expect(
            alerts == [
                WeatherAlert(
                    id: storm, event: "Winter Storm Warning", severity: "Severe",
                    headline:
                        "Winter Storm Warning issued March 14 at 3:12AM MDT until March 15 at 6:00PM MDT by NWS Denver CO",
                    areaDescription: "Denver; Boulder and Jefferson Counties Below 6000 Feet/West Broomfield County",
                    onset: utcTime("2026-03-15T00:00:00Z"), ends: utcTime("2026-03-16T00:00:00Z"), url: base + storm),
                // No onset or end: effective and expires; no headline: NWSheadline.
                WeatherAlert(
                    id: wind, event: "Wind Advisory", severity: "Moderate",
                    headline: "WIND ADVISORY REMAINS IN EFFECT UNTIL 4 PM MDT THIS AFTERNOON",
                    areaDescription: "Denver",
                    onset: 1_773_482_700, ends: 1_773_525_600, url: base + wind),
            ])
        #expect(alerts.map(\.isCritical) == [true, false])
    }

    @Test func singleFeatureAndEmptyCollection() throws {
        let feature = #"""
            {"id":"https://api.weather.gov/alerts/A1","type":"Feature","geometry":null,
             "properties":{"event":"Flood Warning","severity":null,"effective":"2026-03-14T08:00:00Z"}}
            """#
        #expect(
            try NWSAlertsParser.parse(Data(feature.utf8)) == [
                WeatherAlert(
                    id: "https://api.weather.gov/alerts/A1", event: "Flood Warning", severity: "Unknown",
                    onset: utcTime("2026-03-14T08:00:00Z"), url: "https://api.weather.gov/alerts/A1")
            ])
        let empty = #"{"type":"FeatureCollection","features":[],"title":"Current watches, warnings, and advisories"}"#
        #expect(try NWSAlertsParser.parse(Data(empty.utf8)) == [])
    }

    @Test func errors() {
        let cases: [(String, String)] = [
            (
                #"""
                {"correlationId":"1a2b","title":"Not Found","type":"https://api.weather.gov/problems/NotFound",
                 "status":404,"detail":"Alert with id NWS-IDP-PROD-1 not found",
                 "instance":"https://api.weather.gov/requests/1a2b"}
                """#,
                "nws-alerts-json: the server sent an error, not data: Not Found: Alert with id NWS-IDP-PROD-1 not found"
            ),
            (
                #"{"type":"Feature","properties":{"gridId":"BOU"}}"#,
                "nws-alerts-json: got a GeoJSON Feature that is not an alert (no 'properties.event')"
            ),
            (
                #"{"features":[{"id":"x","properties":{"severity":"Minor"}}]}"#,
                "nws-alerts-json: missing field 'features[0].properties.event'"
            ),
            (#"{"type":"FeatureCollection"}"#, "nws-alerts-json: missing field 'features'"),
            (#"{}"#, "nws-alerts-json: not a GeoJSON FeatureCollection or Feature of alerts"),
            (
                #"{"type":"FeatureCollection","features":[{"properties":{"id":"a","event":"Heat Advisory","onset":"2026-03-14 08:00"}}]}"#,
                "nws-alerts-json: bad time '2026-03-14 08:00' in 'features[0].properties.onset'"
            ),
            (
                #"{"type":"FeatureCollection","features":[{"properties":{"event":"Heat Advisory"}}]}"#,
                "nws-alerts-json: missing field 'features[0].properties.id'"
            ),
        ]
        for (body, description) in cases {
            #expect(caughtParseError { _ = try NWSAlertsParser.parse(Data(body.utf8)) }?.description == description)
        }
    }
}

/// The recorded real payloads in `Tests/Fixtures/real`; every value checked with python3.
@Suite struct RealForecastPayloadTests {
    @Test func everyWeatherFileIsCovered() throws {
        #expect(
            try ParserFixtures.realFiles("open_meteo") == [
                "archive_daily_10y_nyc_fahrenheit.json",
                "forecast_current_hourly_daily_14d_new_york_tz_gmt_cloudcover_nulls_2025-12.json",
                "forecast_current_hourly_daily_melbourne_tz_gmt_2025-10.json",
                "forecast_multimodel_hourly_daily_with_nulls.json",
            ])
        #expect(
            try ParserFixtures.realFiles("openweathermap") == [
                "forecast_5day_3hour_resistencia_metric_2023-08.json", "forecast_daily_cnt7_imperial_2013.json",
                "onecall_2.5_seattle_2020-12_with_alerts.json",
            ])
        #expect(
            try ParserFixtures.realFiles("nws_api") == [
                "alerts_active_zone_flood_watch.json", "gridpoints_TAE_forecast_2019-10_period1_edited.json",
                "gridpoints_TAE_forecast_hourly_2019-10.json", "gridpoints_raw_TAE_58_65.json", "points_30_-85.json",
            ])
    }

    @Test func openMeteoForecastsInGMT() throws {
        let newYork = try OpenMeteoParser.forecast(
            ParserFixtures.realData(
                "open_meteo/forecast_current_hourly_daily_14d_new_york_tz_gmt_cloudcover_nulls_2025-12.json"),
            place: "NY", issued: 1)
        #expect(newYork.timeZone == "GMT" && newYork.utcOffsetSeconds == 0)
        #expect(newYork.days.count == 14)
        func om(_ place: String, _ date: String, _ max: Double, _ min: Double, _ p: Double, _ pop: Double) -> DayWeather
        {
            day(
                place, date, max: max, min: min, precipitation: p, probability: pop, snow: nil, wind: nil, code: nil,
                source: "open-meteo", issued: 1)
        }
        #expect(newYork.days.first == om("NY", "2025-12-28", -1, -10.3, 0, 18))
        #expect(newYork.days.last == om("NY", "2026-01-10", 7.8, 1, 21.1, 25))

        let melbourne = try OpenMeteoParser.forecast(
            ParserFixtures.realData("open_meteo/forecast_current_hourly_daily_melbourne_tz_gmt_2025-10.json"),
            place: "Melbourne", issued: 1)
        #expect(melbourne.days.count == 7)
        #expect(melbourne.days.first == om("Melbourne", "2025-10-25", 18.5, 13.1, 6.6, 93))
        #expect(melbourne.days.last == om("Melbourne", "2025-10-31", 25, 13.4, 7.8, 8))
    }

    @Test func openMeteoMultiModelHasNoPlainVariables() throws {
        // Only `wind_direction_10m_dominant_<model>` keys: seven dates, nothing read.
        let result = try OpenMeteoParser.forecast(
            ParserFixtures.realData("open_meteo/forecast_multimodel_hourly_daily_with_nulls.json"), place: "P",
            issued: 1)
        #expect(result.days.map(\.date) == (24...30).map { "2025-11-\($0)" })
        #expect(
            result.days.allSatisfy {
                $0
                    == day(
                        "P", $0.date, max: nil, min: nil, precipitation: nil, probability: nil, snow: nil, wind: nil,
                        code: nil, source: "open-meteo", issued: 1)
            })
    }

    @Test func openMeteoArchiveInFahrenheit() throws {
        let data = try ParserFixtures.realData("open_meteo/archive_daily_10y_nyc_fahrenheit.json")
        let all = try OpenMeteoParser.forecast(data, place: "NYC", issued: 1)
        #expect(all.timeZone == "America/New_York" && all.utcOffsetSeconds == -18_000)
        #expect(all.days.count == 3_653)
        #expect(all.days.first?.date == "2016-02-15" && all.days.last?.date == "2026-02-14")
        #expect(all.days.first?.tempMaxC == 4.72 && all.days.first?.tempMinC == -10.39)
        #expect(all.days.last?.tempMaxC == 3.78 && all.days.last?.tempMinC == -7.78)
        #expect(all.days.allSatisfy { $0.precipitationMm == nil && $0.weatherCode == nil })

        let climate = try OpenMeteoParser.climatology(
            data, place: "NYC", dates: ["2026-07-04", "2028-02-29", "2026-02-14", "2026-02-15"], issued: 1)
        func clim(_ date: String, _ max: Double, _ min: Double) -> DayWeather {
            day(
                "NYC", date, max: max, min: min, precipitation: nil, probability: nil, snow: nil, wind: nil, code: nil,
                source: "climatology", issued: 1, climatology: true)
        }
        // Ten years each: 2016–2025 (2016, 2020 and 2024 by their 29 February), and 2017–2026 for 14 February.
        #expect(
            climate == [
                clim("2026-07-04", 28.77, 19.69), clim("2028-02-29", 7.55, -0.24), clim("2026-02-14", 4.02, -4),
                clim("2026-02-15", 6.2, -3.08),
            ])
    }

    @Test func owmFiveDayInMetric() throws {
        let days = try OWMParser.fiveDay(
            ParserFixtures.realData("openweathermap/forecast_5day_3hour_resistencia_metric_2023-08.json"),
            place: "Resistencia", units: "metric", issued: 1)
        func owm(_ date: String, _ max: Double, _ min: Double, _ p: Double, _ pop: Double, _ wind: Double, _ code: Int)
            -> DayWeather
        {
            day(
                "Resistencia", date, max: max, min: min, precipitation: p, probability: pop, snow: 0, wind: wind,
                code: code, source: "owm", issued: 1)
        }
        // 40 slots from 15:00 local (UTC−3) on 3 August: 3 + 8 × 4 + 5.
        #expect(
            days == [
                owm("2023-08-03", 32.89, 24.49, 0, 0, 10.15, 0), owm("2023-08-04", 32.57, 20.27, 0, 0, 11.41, 2),
                owm("2023-08-05", 34.3, 19.79, 0, 0, 16.7, 0), owm("2023-08-06", 35.36, 23.72, 0, 0, 19.76, 0),
                owm("2023-08-07", 29.8, 22.4, 0.21, 28, 20.41, 61), owm("2023-08-08", 20.99, 17.69, 0.4, 24, 18.11, 61),
            ])
    }

    @Test func owmOneCallInKelvinWithAlert() throws {
        let result = try OWMParser.daily(
            ParserFixtures.realData("openweathermap/onecall_2.5_seattle_2020-12_with_alerts.json"), place: "Seattle",
            units: "standard", issued: 1)
        func owm(_ date: String, _ max: Double, _ min: Double, _ p: Double, _ pop: Double, _ wind: Double, _ code: Int)
            -> DayWeather
        {
            day(
                "Seattle", date, max: max, min: min, precipitation: p, probability: pop, snow: 0, wind: wind,
                code: code,
                source: "owm", issued: 1)
        }
        #expect(
            result.days == [
                owm("2020-12-12", 6.13, 1.26, 0, 0, 4.46, 3), owm("2020-12-13", 4.93, 2.51, 11.47, 100, 5.15, 63),
                owm("2020-12-14", 7.87, 3.76, 0, 25, 7.52, 3), owm("2020-12-15", 6.91, 4.04, 8.88, 100, 19.04, 63),
                owm("2020-12-16", 7.62, 4.46, 4.68, 100, 4.39, 63), owm("2020-12-17", 6.9, 4.63, 3.26, 99, 5.69, 61),
                owm("2020-12-18", 9.01, 5.64, 8.97, 98, 16.74, 63),
                owm("2020-12-19", 10.69, 7.55, 41.48, 100, 26.21, 65),
            ])
        // The description's line breaks are written `\n` (escaped) in this recording.
        #expect(
            result.alerts == [
                WeatherAlert(
                    id: "Small Craft Advisory@1607839200", event: "Small Craft Advisory", severity: "Unknown",
                    headline: "SMALL CRAFT ADVISORY REMAINS IN EFFECT FROM 10 PM THIS EVENING TO 7 AM PST SUNDAY",
                    onset: 1_607_839_200, ends: 1_607_871_600)
            ])
    }

    @Test func owmLegacyDailyInImperial() throws {
        let result = try OWMParser.daily(
            ParserFixtures.realData("openweathermap/forecast_daily_cnt7_imperial_2013.json"), place: "Earth",
            units: "imperial", issued: 1)
        func owm(_ date: String, _ max: Double, _ min: Double, _ p: Double, _ wind: Double, _ code: Int) -> DayWeather {
            day(
                "Earth", date, max: max, min: min, precipitation: p, probability: nil, snow: 0, wind: wind, code: code,
                source: "owm", issued: 1)
        }
        // No `city.timezone` in 2013: UTC days; no `pop` then either.
        #expect(
            result.days == [
                owm("2013-09-09", 23.55, 23.21, 0, 17.98, 2), owm("2013-09-10", 23.33, 22.88, 0, 13.94, 3),
                owm("2013-09-11", 23.3, 22.87, 0, 12.73, 0), owm("2013-09-12", 23.31, 22.86, 0, 13.07, 2),
                owm("2013-09-13", 23.21, 22.93, 0, 14.29, 0), owm("2013-09-14", 23.19, 22.63, 0, 13.6, 3),
                owm("2013-09-15", 23.23, 23.03, 0.69, 18.39, 61),
            ])
        #expect(result.alerts == [])
    }

    @Test func nwsFloodWatch() throws {
        let alerts = try NWSAlertsParser.parse(ParserFixtures.realData("nws_api/alerts_active_zone_flood_watch.json"))
        #expect(
            alerts == [
                WeatherAlert(
                    id: "NWS-IDP-PROD-3965873-3369046", event: "Flood Watch", severity: "Severe",
                    headline:
                        "Flood Watch issued December 20 at 1:34PM PST until December 22 at 10:00AM PST by NWS Portland OR",
                    areaDescription: [
                        "North Oregon Coast",
                        "Greater Portland Metro Area",
                        "Greater Vancouver Area",
                        "Lower Columbia and I - 5 Corridor in Cowlitz County",
                        "Lower Columbia",
                        "Central Coast Range of Western Oregon",
                        "Willapa Hills",
                        "South Washington Coast",
                        "Central Oregon Coast",
                        "Coast Range of Northwest Oregon",
                        "South Washington Cascade Foothills",
                    ].joined(separator: "; "),
                    onset: 1_576_877_640, ends: 1_577_037_600,
                    url: "https://api.weather.gov/alerts/NWS-IDP-PROD-3965873-3369046")
            ])
    }

    /// Points and gridpoint forecasts are Features too, but not alerts: named as such.
    @Test func nwsPointsAndGridpointsAreNotAlerts() throws {
        for file in [
            "points_30_-85.json", "gridpoints_TAE_forecast_2019-10_period1_edited.json",
            "gridpoints_TAE_forecast_hourly_2019-10.json", "gridpoints_raw_TAE_58_65.json",
        ] {
            let data = try ParserFixtures.realData("nws_api/" + file)
            let error = caughtParseError { _ = try NWSAlertsParser.parse(data) }
            #expect(error?.kind == .notTheFormat, "\(file)")
            #expect(
                error?.description
                    == "nws-alerts-json: got a GeoJSON Feature that is not an alert (no 'properties.event')", "\(file)")
        }
    }
}
