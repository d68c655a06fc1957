import Foundation
import KlaxonCore
import KlaxonSources
import Testing

/// AirNow forecast answers (legacy and current field sets) and OpenAQ v1/v2 measurements (issue 42).
/// The forecast fixtures follow AirNow's documented answers of `/aq/forecast/zipCode/`; the
/// observation answer in `Tests/Fixtures/real/airnow` shows the legacy shape they share.
@Suite struct AirNowForecastParserTests {
    func denver(
        _ date: String, _ parameter: String, aqi: Int?, category: Int, actionDay: Bool = false,
        discussion: String? = nil, issued: String = "2026-12-07"
    ) -> AirForecast {
        AirForecast(
            area: "Denver-Boulder", state: "CO", latitude: 39.768, longitude: -105.0092, date: date,
            parameter: parameter, aqi: aqi, category: category, actionDay: actionDay, discussion: discussion,
            issued: issued)
    }

    @Test func legacyFieldSet() throws {
        let r = try AirNowForecastParser.parse(try ParserFixtures.data("aqi_airnow_forecast_legacy.json"))
        let talk = "Stagnant air under a strong inversion through Tuesday. Ozone and fine particles build."
        #expect(
            r.forecasts == [
                // "2026-12-07 ": AirNow's trailing space.
                denver("2026-12-07", "O3", aqi: 48, category: 1, discussion: talk),
                denver("2026-12-07", "PM2.5", aqi: 87, category: 2, discussion: talk),
                // AQI -1: a category-only forecast.
                denver("2026-12-08", "O3", aqi: nil, category: 2),
                denver("2026-12-08", "PM2.5", aqi: 125, category: 3, actionDay: true),
            ])
        #expect(r.skipped.isEmpty)
        #expect(r.superseded == 0)
    }

    @Test func currentFieldSet() throws {
        let r = try AirNowForecastParser.parse(try ParserFixtures.data("aqi_airnow_forecast_current.json"))
        #expect(
            r.forecasts == [
                // OZONE is O3; a null AQI is category-only.
                denver("2026-12-08", "O3", aqi: nil, category: 2),
                denver(
                    "2026-12-08", "PM2.5", aqi: 125, category: 3, actionDay: true,
                    discussion: "Action Day for fine particles."),
            ])
    }

    @Test func badRecordsAreCountedNotStored() throws {
        let r = try AirNowForecastParser.parse(try ParserFixtures.data("aqi_airnow_forecast_bad.json"))
        // Two issue dates for one area, date and pollutant: the later issuance is kept.
        #expect(r.forecasts == [denver("2026-12-08", "PM2.5", aqi: 125, category: 3, actionDay: true)])
        #expect(r.superseded == 1)
        #expect(
            r.skipped.map { "\($0.count) \($0.reason)" } == [
                "2 an AQI that is not -1 or a whole number 0–500",
                "1 neither an AQI nor a category (unavailable)",
                "1 an AQI whose category is not the category given",
                "1 no issue date",
                "1 a forecast for a day before its issue date",
                "1 no reporting area",
            ])
        #expect(r.skippedCount == 7)
    }

    @Test func olderIssuanceLaterInTheAnswerDoesNotWin() throws {
        let body = """
            [{"DateIssue":"2026-12-07","DateForecast":"2026-12-08","ReportingArea":"Denver-Boulder","ParameterName":"O3",
              "AQI":160,"Category":{"Number":4,"Name":"Unhealthy"},"ActionDay":true},
             {"DateIssue":"2026-12-06","DateForecast":"2026-12-08","ReportingArea":"Denver-Boulder","ParameterName":"O3",
              "AQI":40,"Category":{"Number":1,"Name":"Good"},"ActionDay":false}]
            """
        let r = try AirNowForecastParser.parse(Data(body.utf8))
        #expect(r.forecasts.map(\.aqi) == [160])
        #expect(r.forecasts.map(\.issued) == ["2026-12-07"])
        #expect(r.superseded == 1)
    }

    @Test func errorsNameTheFormat() throws {
        #expect(
            caughtParseError {
                _ = try AirNowForecastParser.parse(Data(#"{"WebServiceError":[{"Message":"Invalid API key"}]}"#.utf8))
            }?
            .description == "airnow-forecast: the server sent an error, not data: Invalid API key")
        #expect(
            caughtParseError { _ = try AirNowForecastParser.parse(Data("[1]".utf8)) }?.description
                == "airnow-forecast: [0] is not an object")
        #expect(try AirNowForecastParser.parse(Data("[]".utf8)).forecasts.isEmpty)
    }

    @Test func categoriesByNumberAndName() {
        #expect(AirForecast.category(aqi: 50) == 1)
        #expect(AirForecast.category(aqi: 101) == 3)
        #expect(AirForecast.category(aqi: 301) == 6)
        #expect(AirForecast.category(named: "unhealthy-for-sensitive-groups") == 3)
        #expect(AirForecast.category(named: "USG") == 3)
        #expect(AirForecast.category(named: "4") == 4)
        #expect(AirForecast.category(named: "smoky") == nil)
    }

    // MARK: - OpenAQ v1 and v2

    @Test func openAQv1Measurements() throws {
        let data = try ParserFixtures.data("aqi_openaq_v1_measurements.json")
        #expect(try OpenAQParser.bodyKind(data) == .legacyMeasurements)
        let r = try OpenAQParser.legacyMeasurements(data)
        let id = "openaq:US Diplomatic Post: Hanoi"
        #expect(
            r.batch.readings == [
                Reading(
                    station: id, metric: "pm25", time: utcTime("2019-03-14T10:00:00Z"), value: 57, unit: "µg/m³",
                    source: "openaq"),
                Reading(
                    station: id, metric: "o3", time: utcTime("2019-03-14T10:00:00Z"), value: 0.031, unit: "ppm",
                    source: "openaq"),
            ])
        #expect(r.batch.gaps == 1)  // -9999
        #expect(r.refused.map { "\($0.count) \($0.reason)" } == ["1 a date.utc that is not a time"])
        #expect(
            r.batch.stations == [
                StationInfo(
                    id: id, source: "openaq", name: "US Diplomatic Post: Hanoi", latitude: 21.02, longitude: 105.85,
                    attributes: ["locality": "Hanoi", "country": "VN"])
            ])
    }

    @Test func openAQv2Measurements() throws {
        let data = try ParserFixtures.data("aqi_openaq_v2_measurements.json")
        #expect(try OpenAQParser.bodyKind(data) == .legacyMeasurements)
        let r = try OpenAQParser.legacyMeasurements(data)
        #expect(
            r.batch.readings == [
                Reading(
                    station: "openaq:8118", metric: "pm25", time: utcTime("2022-11-01T05:00:00Z"), value: 142,
                    unit: "µg/m³", source: "openaq"),
                Reading(
                    station: "openaq:8118", metric: "pm10", time: utcTime("2022-11-01T05:00:00Z"), value: 260,
                    unit: "µg/m³", source: "openaq"),
            ])
        #expect(r.batch.gaps == 1)  // null
        #expect(r.refused.isEmpty)
        #expect(r.batch.stations.map(\.name) == ["New Delhi"])
        // v3 bodies are still told apart as before.
        #expect(try OpenAQParser.bodyKind(try ParserFixtures.data("aqi_openaq_hours.json")) == .measurements)
    }
}
