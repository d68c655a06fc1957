import Foundation
import KlaxonCore
import KlaxonSources
import Testing

@Suite struct NWPSParserTests {
    @Test func gaugeWithAnUndefinedCategory() throws {
        let gauge = try NWPSParser.gauge(try ParserFixtures.data("nwps_gauge_undefined_major.json"))
        #expect(
            gauge
                == GaugeInfo(
                    lid: "STLM7", usgsID: "07010000", name: "Mississippi River at St. Louis",
                    description: "Mississippi River at St. Louis, MO", state: "MO", latitude: 38.628611,
                    longitude: -90.179722, timeZone: "America/Chicago",
                    categories: FloodCategories(
                        stage: ["action": 28, "minor": 30, "moderate": 35],
                        flow: ["minor": 500_000, "moderate": 700_000],
                        stageUnit: "ft", flowUnit: "cfs"),
                    observedStage: 12.34, observedFlow: 123_400, observedCategory: "no_flooding",
                    observedTime: utcTime("2024-05-01T12:00:00Z")))
        #expect(gauge.stationID == "07010000")
        #expect(gauge.categories.ladder(forMetric: "gage_height")?.map(\.name) == ["action", "minor", "moderate"])
        #expect(gauge.categories.ladder(forMetric: "discharge")?.map(\.at) == [500_000, 700_000])
    }

    static let stageflowReadings = [
        Reading(
            station: "07010000", metric: "gage_height", time: utcTime("2024-05-01T11:00:00Z"), value: 12.30, unit: "ft",
            source: "nwps"),
        Reading(
            station: "07010000", metric: "discharge", time: utcTime("2024-05-01T11:00:00Z"), value: 123_100,
            unit: "ft³/s",
            source: "nwps"),
        Reading(
            station: "07010000", metric: "gage_height", time: utcTime("2024-05-01T11:15:00Z"), value: 12.31, unit: "ft",
            source: "nwps"),
        Reading(
            station: "07010000", metric: "discharge", time: utcTime("2024-05-01T11:30:00Z"), value: 123_400,
            unit: "ft³/s",
            source: "nwps"),
        Reading(
            station: "07010000", metric: "gage_height", time: utcTime("2024-05-01T11:45:00Z"), value: 12.34, unit: "ft",
            source: "nwps"),
        Reading(
            station: "07010000", metric: "discharge", time: utcTime("2024-05-01T11:45:00Z"), value: 2, unit: "ft³/s",
            source: "nwps"),
    ]

    @Test func stageflowUsesOnlyObserved() throws {
        let batch = try NWPSParser.stageflow(try ParserFixtures.data("nwps_stageflow.json"), station: "07010000")
        #expect(batch.readings == Self.stageflowReadings)
        // A -999 flow and a -999 stage.
        #expect(batch.gaps == 2)
        #expect(batch.stations.isEmpty)
    }

    @Test func stageflowObservedEndpoint() throws {
        // `/stageflow/observed` returns the observed object itself.
        let combined = try ParserFixtures.data("nwps_stageflow.json")
        let object = try #require(try JSONSerialization.jsonObject(with: combined) as? [String: Any])
        let observed = try JSONSerialization.data(withJSONObject: try #require(object["observed"]))
        let batch = try NWPSParser.stageflow(observed, station: "07010000")
        #expect(batch.readings == Self.stageflowReadings)
        #expect(batch.gaps == 2)
    }

    @Test func stageflowWithoutObserved() {
        let error = caughtParseError {
            _ = try NWPSParser.stageflow(Data(#"{"forecast": {"data": []}}"#.utf8), station: "X")
        }
        #expect(error?.description == "nwps-json: missing field 'observed'")
        #expect(error?.kind == .missingField)
        let gauge = caughtParseError { _ = try NWPSParser.gauge(Data(#"{"name": "Somewhere"}"#.utf8)) }
        #expect(gauge?.description == "nwps-json: missing field 'lid'")
    }

    // MARK: - Recorded payloads

    @Test func recordedFiles() throws {
        #expect(
            try ParserFixtures.realFiles("nwps") == [
                "gauge_DURO3_action_minor_only_no_forecast.json", "gauge_KCMO3_no_usgsId_no_categories.json",
                "gauge_PRTO3_full_categories_with_forecast.json",
            ])
    }

    @Test func recordedPRTO3() throws {
        let gauge = try NWPSParser.gauge(
            try ParserFixtures.realData("nwps/gauge_PRTO3_full_categories_with_forecast.json"))
        #expect(
            gauge
                == GaugeInfo(
                    lid: "PRTO3", usgsID: "14211720", name: "Willamette River at Portland",
                    description: "Willamette R at Portland, OR", state: "OR", latitude: 45.5175,
                    longitude: -122.669166667,
                    timeZone: "America/Los_Angeles",
                    categories: FloodCategories(
                        stage: ["action": 17, "minor": 18, "moderate": 24, "major": 28], flow: [:]),
                    observedStage: 1.76, observedFlow: nil, observedCategory: "no_flooding",
                    observedTime: utcTime("2026-08-29T22:05:00Z")))
        #expect(gauge.stationID == "14211720")
        #expect(gauge.categories.ladder(forMetric: "discharge") == [])
    }

    @Test func recordedDURO3() throws {
        let gauge = try NWPSParser.gauge(
            try ParserFixtures.realData("nwps/gauge_DURO3_action_minor_only_no_forecast.json"))
        #expect(
            gauge
                == GaugeInfo(
                    lid: "DURO3", usgsID: "14206950", name: "Fanno Creek at Durham", description: "FANNO CR AT DURHAM",
                    state: "OR", latitude: 45.403452, longitude: -122.754819, timeZone: "America/Los_Angeles",
                    categories: FloodCategories(
                        stage: ["action": 7.4, "minor": 9.1], flow: ["action": 700, "minor": 1050]),
                    observedStage: 1.81, observedFlow: 2, observedCategory: "no_flooding",
                    observedTime: utcTime("2026-08-29T21:45:00Z")))
    }

    @Test func recordedKCMO3() throws {
        let gauge = try NWPSParser.gauge(try ParserFixtures.realData("nwps/gauge_KCMO3_no_usgsId_no_categories.json"))
        #expect(
            gauge
                == GaugeInfo(
                    lid: "KCMO3", usgsID: nil, name: "Kellogg Creek near Milwaukie", description: nil, state: "OR",
                    latitude: 45.4317, longitude: -122.6275, timeZone: "UTC", categories: FloodCategories(),
                    observedStage: 3.53, observedFlow: nil, observedCategory: "not_defined",
                    observedTime: utcTime("2026-08-29T22:15:00Z")))
        #expect(gauge.stationID == "KCMO3")
        #expect(gauge.categories.isEmpty)
    }
}
