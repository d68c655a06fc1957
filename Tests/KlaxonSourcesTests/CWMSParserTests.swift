import Foundation
import KlaxonCore
import KlaxonSources
import Testing

@Suite struct CWMSParserTests {
    @Test func pageWithNullAndNextPage() throws {
        let (batch, nextPage) = try CWMSParser.parse(try ParserFixtures.data("cwms_page_null_next.json"))
        #expect(
            batch.readings == [
                Reading(
                    station: "KEYS", metric: "discharge", time: utcTime("2024-01-01T00:00:00Z"), value: 1520.5,
                    unit: "ft³/s",
                    source: "cwms", quality: "0"),
                // 1704074400999 ms: the fraction of a second is dropped.
                Reading(
                    station: "KEYS", metric: "discharge", time: utcTime("2024-01-01T02:00:00Z"), value: 1530,
                    unit: "ft³/s",
                    source: "cwms", quality: "3"),
            ])
        #expect(batch.gaps == 1)
        #expect(nextPage == "MTcwNDA3NDQwMDAwMHx8N3x8Mw==")
        #expect(batch.stations == [StationInfo(id: "KEYS", source: "cwms", attributes: ["office": "SWT"])])
    }

    @Test func metricArgumentOverridesTheName() throws {
        let (batch, _) = try CWMSParser.parse(try ParserFixtures.data("cwms_page_null_next.json"), metric: "outflow")
        #expect(batch.readings.map(\.metric) == ["outflow", "outflow"])
    }

    @Test func metricFromParameter() throws {
        let cases = [
            "Elev": "elevation", "Elev-Pool": "elevation", "Stage": "gage_height", "Flow-In": "discharge",
            "Precip-Inc": "precipitation", "Temp-Water": "water_temperature", "Stor-Flood": "stor_flood",
            "Opening": "opening",
        ]
        for (parameter, metric) in cases {
            let body =
                #"{"name": "LOC.\#(parameter).Inst.1Hour.0.Best", "office-id": "SWT", "units": "ft", "values": [[0, 1.5, 0]]}"#
            let (batch, nextPage) = try CWMSParser.parse(Data(body.utf8))
            #expect(batch.readings.map(\.metric) == [metric], "\(parameter)")
            #expect(nextPage == nil)
        }
    }

    @Test func missingValues() {
        let error = caughtParseError {
            _ = try CWMSParser.parse(Data(#"{"name": "ARBU.Elev.Inst.1Hour.0.Ccp-Rev", "units": "m"}"#.utf8))
        }
        #expect(error?.description == "cwms-json: missing field 'values'")
        #expect(error?.kind == .missingField)
        let stringValue = caughtParseError {
            _ = try CWMSParser.parse(
                Data(#"{"name": "ARBU.Elev.Inst.1Hour.0.Ccp-Rev", "values": [[0, 1, 0], [1, "x", 0]]}"#.utf8))
        }
        #expect(stringValue?.description == "cwms-json: field 'values[1][1]' is not a number")
        let badName = caughtParseError { _ = try CWMSParser.parse(Data(#"{"name": "ARBU", "values": []}"#.utf8)) }
        #expect(badName?.description == "cwms-json: bad time-series name 'ARBU'")
    }

    // MARK: - Recorded payloads

    @Test(.enabled(if: ParserFixtures.hasReal)) func recordedFiles() throws {
        #expect(
            try ParserFixtures.realFiles("cwms") == [
                "cda_timeseries_ARBU_elev_page1.json", "cda_timeseries_ARBU_elev_page2.json",
                "cda_timeseries_CHCR_null_value.json",
            ])
    }

    func elevation(_ time: String, _ value: Double) -> Reading {
        Reading(
            station: "ARBU", metric: "elevation", time: utcTime(time), value: value, unit: "m", source: "cwms",
            quality: "0"
        )
    }

    @Test(.enabled(if: ParserFixtures.hasReal)) func recordedARBUPages() throws {
        let first = try CWMSParser.parse(try ParserFixtures.realData("cwms/cda_timeseries_ARBU_elev_page1.json"))
        #expect(first.batch.readings.count == 500)
        #expect(first.batch.gaps == 0)
        #expect(first.batch.readings.first == elevation("2018-01-05T00:00:00Z", 265.54785599999997))
        #expect(first.batch.readings.last == elevation("2018-01-25T19:00:00Z", 265.489944))
        #expect(first.nextPage == "MTUxNjkxMDQwMDAwMHx8NzQ1fHw1MDA=")
        #expect(first.batch.stations == [StationInfo(id: "ARBU", source: "cwms", attributes: ["office": "SWT"])])

        let second = try CWMSParser.parse(try ParserFixtures.realData("cwms/cda_timeseries_ARBU_elev_page2.json"))
        #expect(second.batch.readings.count == 245)
        #expect(second.batch.gaps == 0)
        #expect(second.batch.readings.first == elevation("2018-01-25T20:00:00Z", 265.489944))
        #expect(second.batch.readings.last == elevation("2018-02-05T00:00:00Z", 265.456416))
        #expect(second.nextPage == nil)
        // Together: the `total` of 745, hourly, without overlap.
        let times = (first.batch.readings + second.batch.readings).map(\.time)
        #expect(Set(times).count == 745)
    }

    @Test(.enabled(if: ParserFixtures.hasReal)) func recordedNullValue() throws {
        let page = try CWMSParser.parse(try ParserFixtures.realData("cwms/cda_timeseries_CHCR_null_value.json"))
        #expect(page.batch.readings.isEmpty)
        #expect(page.batch.gaps == 1)
        #expect(page.nextPage == nil)
        #expect(
            page.batch.stations == [
                StationInfo(id: "CHCR-Cherry_Creek_Dam-Cherry", source: "cwms", attributes: ["office": "NWD"])
            ])
    }
}
