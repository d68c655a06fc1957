import Foundation
import KlaxonCore
import KlaxonSources
import Testing

/// River forecasts from NWPS stageflow JSON, the HML product and AHPS XML (issue 42, item 1). The
/// payloads are written from the formats' documentation (NWPS OpenAPI, the HML and AHPS schemas).
@Suite struct FloodForecastParserTests {
    typealias P = FloodForecast.Point

    @Test func nwpsForecastAlone() throws {
        let batch = try FloodForecastParser.nwps(
            try ParserFixtures.data("nwps_PRTO3_stageflow_forecast.json"), station: "14211720", site: "PRTO3")
        #expect(batch.readings.isEmpty)
        #expect(
            batch.forecasts == [
                FloodForecast(
                    station: "14211720", metric: "gage_height", issued: utcTime("2024-05-01T15:10:00Z"), unit: "ft",
                    source: "nwps",
                    points: [
                        P(time: utcTime("2024-05-02T00:00:00Z"), value: 16.2),
                        P(time: utcTime("2024-05-02T06:00:00Z"), value: 18.4),
                        P(time: utcTime("2024-05-02T18:00:00Z"), value: 17.9),
                    ]),
                FloodForecast(
                    station: "14211720", metric: "discharge", issued: utcTime("2024-05-01T15:10:00Z"), unit: "ft³/s",
                    source: "nwps",
                    points: [
                        P(time: utcTime("2024-05-02T00:00:00Z"), value: 150_500),
                        P(time: utcTime("2024-05-02T12:00:00Z"), value: 171_000),
                        P(time: utcTime("2024-05-02T18:00:00Z"), value: 168_250),
                    ]),
            ])
        // One -9999 stage and one -999 flow.
        #expect(batch.gaps == 2)
        #expect(batch.forecastSkips.isEmpty)
    }

    @Test func nwpsCombinedStageflow() throws {
        let batch = try FloodForecastParser.nwps(try ParserFixtures.data("nwps_stageflow.json"), station: "07010000")
        // The observed half is read exactly as NWPSParser.stageflow reads it.
        #expect(batch.readings == NWPSParserTests.stageflowReadings)
        #expect(batch.forecasts.map(\.metric) == ["gage_height", "discharge"])
        #expect(batch.forecasts.allSatisfy { $0.issued == utcTime("2024-05-01T12:05:00Z") })
        #expect(batch.forecasts[0].crest?.value == 13.0)
    }

    @Test func nwpsUnitsAndMissingIssueTime() throws {
        let body = #"""
            {"forecast": {"primaryName": "Stage", "primaryUnits": "m", "secondaryName": "Flow",
              "secondaryUnits": "cfs", "issuedTime": "0001-01-01T00:00:00Z",
              "data": [{"validTime": "2024-05-02T00:00:00Z", "generatedTime": "2024-05-01T09:00:00Z",
                        "primary": 2.0, "secondary": 1200}]}}
            """#
        let batch = try FloodForecastParser.nwps(Data(body.utf8), station: "X1")
        // No issue time: the newest generatedTime stands for it.
        #expect(batch.forecasts.map(\.issued) == [utcTime("2024-05-01T09:00:00Z"), utcTime("2024-05-01T09:00:00Z")])
        #expect(batch.forecasts[0].points == [P(time: utcTime("2024-05-02T00:00:00Z"), value: 6.562)])
        #expect(batch.forecasts[0].unit == "ft")
        #expect(batch.forecasts[1].points.map(\.value) == [1200])

        let none =
            #"{"forecast": {"primaryUnits": "ft", "data": [{"validTime": "2024-05-02T00:00:00Z", "primary": 3}]}}"#
        let skipped = try FloodForecastParser.nwps(Data(none.utf8), station: "X1", site: "ABCD1")
        #expect(skipped.forecasts.isEmpty)
        #expect(skipped.forecastSkips == [ForecastSkip(site: "ABCD1", reason: "the forecast has no issuedTime")])

        let odd =
            #"{"forecast": {"issuedTime": "2024-05-01T09:00:00Z", "primaryName": "Stage", "primaryUnits": "furlongs", "data": [{"validTime": "2024-05-02T00:00:00Z", "primary": 3}]}}"#
        let unknown = try FloodForecastParser.nwps(Data(odd.utf8), station: "X1")
        #expect(unknown.forecasts.isEmpty)
        #expect(unknown.forecastSkips.count == 1)
        #expect(unknown.forecastSkips.first?.reason.contains("furlongs") == true)
    }

    @Test func nwpsDirectSeriesByPEDTS() throws {
        let observed =
            #"{"pedts": "HGIRG", "primaryUnits": "ft", "data": [{"validTime": "2024-05-02T00:00:00Z", "primary": 3}]}"#
        let a = try FloodForecastParser.nwps(Data(observed.utf8), station: "S")
        #expect(a.readings.count == 1)
        #expect(a.forecasts.isEmpty)
        let object = try #require(JSONValue.parse(Data(observed.utf8))?.object)
        #expect(!FloodForecastParser.isNWPSForecast(object))
        let fc = try #require(JSONValue.parse(try ParserFixtures.data("nwps_PRTO3_stageflow_forecast.json"))?.object)
        #expect(FloodForecastParser.isNWPSForecast(fc))
    }

    @Test func gaugeIDFromFileName() {
        #expect(FloodForecastParser.gaugeID(fileName: "/tmp/x/nwps_PRTO3_stageflow_forecast.json") == "PRTO3")
        #expect(FloodForecastParser.gaugeID(fileName: "gauges-prto3-stageflow.json") == "PRTO3")
        #expect(FloodForecastParser.gaugeID(fileName: "stageflow.json") == nil)
        #expect(FloodForecastParser.gaugeID(fileName: "PRTO3_vs_EADM7.json") == nil)
    }

    @Test func hmlProductWithHeaderAndControlCharacters() throws {
        let data = try ParserFixtures.data("hml_lsx_product.txt")
        #expect(data.contains(0x01) && data.contains(0x03))
        let batch = try FloodForecastParser.hml(data)
        #expect(
            batch.readings == [
                Reading(
                    station: "EADM7", metric: "gage_height", time: utcTime("2024-05-01T12:00:00Z"), value: 14.2,
                    unit: "ft", source: "hml"),
                Reading(
                    station: "EADM7", metric: "discharge", time: utcTime("2024-05-01T12:00:00Z"), value: 25_100,
                    unit: "ft³/s", source: "hml"),
                Reading(
                    station: "EADM7", metric: "gage_height", time: utcTime("2024-05-01T13:00:00Z"), value: 14.9,
                    unit: "ft", source: "hml"),
                Reading(
                    station: "VLLM7", metric: "gage_height", time: utcTime("2024-05-01T12:00:00Z"), value: 13.123,
                    unit: "ft", source: "hml"),
            ])
        let issued = utcTime("2024-05-01T13:29:00Z")
        #expect(
            batch.forecasts == [
                FloodForecast(
                    station: "EADM7", metric: "gage_height", issued: issued, unit: "ft", source: "hml",
                    points: [
                        P(time: utcTime("2024-05-01T18:00:00Z"), value: 16),
                        P(time: utcTime("2024-05-02T00:00:00Z"), value: 18.5),
                        P(time: utcTime("2024-05-02T12:00:00Z"), value: 17.25),
                    ]),
                FloodForecast(
                    station: "EADM7", metric: "discharge", issued: issued, unit: "ft³/s", source: "hml",
                    points: [
                        P(time: utcTime("2024-05-01T18:00:00Z"), value: 30_200),
                        P(time: utcTime("2024-05-02T00:00:00Z"), value: 38_000),
                        P(time: utcTime("2024-05-02T12:00:00Z"), value: 35_500),
                    ]),
                FloodForecast(
                    station: "VLLM7", metric: "gage_height", issued: issued, unit: "ft", source: "hml",
                    points: [P(time: utcTime("2024-05-02T00:00:00Z"), value: 16.404)]),
            ])
        #expect(batch.forecastSkips.map(\.site) == ["ARNM7", "BYRM7"])
        #expect(batch.forecastSkips[0].reason.contains("furlongs"))
        #expect(batch.forecastSkips[1].reason == "a <forecast> without a readable issued time")
        // EADM7: a -999 observed flow, a -999 stage and flow; VLLM7: a -999 observed flow.
        #expect(batch.gaps == 4)
    }

    @Test func ahpsHydrograph() throws {
        let batch = try FloodForecastParser.ahps(try ParserFixtures.data("ahps_hydrograph_milc1.xml"))
        #expect(batch.readings.map(\.station) == ["MILC1", "MILC1"])
        #expect(batch.forecasts.map(\.metric) == ["gage_height", "discharge"])
        let stage = batch.forecasts[0]
        #expect(stage.issued == utcTime("2024-05-01T12:30:00Z"))
        #expect(stage.source == "ahps")
        #expect(stage.crest == P(time: utcTime("2024-05-02T12:00:00Z"), value: 13.2))
        let ladder = [
            LevelsRule.Level(name: "action", at: 9), LevelsRule.Level(name: "minor", at: 12),
            LevelsRule.Level(name: "moderate", at: 15),
        ]
        #expect(
            stage.crossings(ladder) == [
                FloodForecast.Crossing(category: "action", time: utcTime("2024-05-02T00:00:00Z")),
                FloodForecast.Crossing(category: "minor", time: utcTime("2024-05-02T12:00:00Z")),
            ])
        // An HML reader takes an AHPS document too (a product of one site); AHPS refuses a product.
        #expect(try FloodForecastParser.hml(try ParserFixtures.data("ahps_hydrograph_milc1.xml")).forecasts.count == 2)
        let error = caughtParseError {
            _ = try FloodForecastParser.ahps(try ParserFixtures.data("hml_lsx_product.txt"))
        }
        #expect(error?.description == "ahps-xml: the root element is <HydroMetData>, not <site>")
    }

    @Test func hostileXML() {
        func fails(_ text: String) -> String? {
            caughtParseError { _ = try FloodForecastParser.hml(Data(text.utf8)) }?.description
        }
        #expect(fails("{\"a\": 1}") == "hml: not XML: no element at all")
        #expect(fails("<site id=\"A\"><observed></site>")?.contains("closes <observed>") == true)
        #expect(fails("<site id=\"A\"><observed>") == "hml: not well-formed XML at byte 23: <observed> is not closed")
        #expect(
            fails(String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100))?
                .contains("nested deeper than 64") == true)
        #expect(fails("<root><x/></root>") == "hml: no <site> in the product")
        // Entities are never defined: a DOCTYPE's are skipped, and a reference to one is kept as text.
        let doc = """
            <!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>
            <site id="&lol2;"><forecast issued="2024-05-01T00:00:00Z"><datum><valid>2024-05-01T06:00:00Z</valid>
            <primary name="Stage" units="ft">1&amp;</primary></datum></forecast></site>
            """
        let batch = try? FloodForecastParser.hml(Data(doc.utf8))
        #expect(batch?.forecasts.isEmpty == true)
        #expect(batch?.forecastSkips.first?.reason.hasPrefix("a <site> without a usable id") == true)
    }

    @Test func manyPointsAreCut() throws {
        var datums = ""
        for i in 0..<(FloodForecast.maxPoints + 5) {
            datums += "<datum><valid timezone=\"UTC\">\(Timestamp.format(1_700_000_000 + Int64(i) * 60))</valid>"
            datums += "<primary name=\"Stage\" units=\"ft\">\(i)</primary></datum>"
        }
        let doc = "<site id=\"ABCD1\"><forecast issued=\"2024-05-01T00:00:00Z\">\(datums)</forecast></site>"
        let batch = try FloodForecastParser.ahps(Data(doc.utf8))
        #expect(batch.forecasts.first?.points.count == FloodForecast.maxPoints)
        #expect(batch.forecastSkips == [ForecastSkip(site: "ABCD1", reason: "5 forecast points past the first 2000")])
    }
}
