import Foundation
import KlaxonCore
import KlaxonSources
import Testing

@Suite struct CWMSParserTests {
    @Test func pageWithNullAndNextPage() throws {
        // `KEYS.Flow-Out.Inst.1Hour.0.Best`: the sub-parameter is kept.
        let (batch, nextPage) = try CWMSParser.parse(try ParserFixtures.data("cwms_page_null_next.json"))
        #expect(
            batch.readings == [
                Reading(
                    station: "KEYS", metric: "discharge.out", time: utcTime("2024-01-01T00:00:00Z"), value: 1520.5,
                    unit: "ft³/s",
                    source: "cwms", quality: "0"),
                // 1704074400999 ms: the fraction of a second is dropped.
                Reading(
                    station: "KEYS", metric: "discharge.out", time: utcTime("2024-01-01T02:00:00Z"), value: 1530,
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
        // A parameter alone keeps its name; a sub-parameter is kept after a dot.
        let cases = [
            "Elev": "elevation", "Elev-Pool": "elevation.pool", "Elev-Tailwater": "elevation.tailwater",
            "Stage": "gage_height", "Flow": "discharge", "Flow-In": "discharge.in", "Flow-Res In": "discharge.res_in",
            "Flow-Res Out": "discharge.res_out", "Precip": "precipitation", "Precip-Inc": "precipitation.inc",
            "Precip-Mean Areal": "precipitation.mean_areal", "Temp-Water": "water_temperature",
            "Temp-Water-Surface": "water_temperature.surface", "Temp-Air": "temp_air", "Stor-Flood": "stor_flood",
            "%-Opening": "pct_opening", "Opening": "opening",
        ]
        for (parameter, metric) in cases {
            let body =
                #"{"name": "LOC.\#(parameter).Inst.1Hour.0.Best", "office-id": "SWT", "units": "ft", "values": [[0, 1.5, 0]]}"#
            let (batch, nextPage) = try CWMSParser.parse(Data(body.utf8))
            #expect(batch.readings.map(\.metric) == [metric], "\(parameter)")
            #expect(nextPage == nil)
        }
    }

    @Test func seriesOfOneLocationLoadedTogetherKeepTheirOwnNames() {
        let ids = [
            "KEYS.Flow-Res In.Ave.1Hour.1Hour.Rev-Regi", "KEYS.Flow-Res Out.Ave.1Hour.1Hour.Rev-Regi",
            "KEYS.Elev.Inst.1Hour.0.Ccp-Rev", "KEYS.Elev-Tailwater.Inst.1Hour.0.Ccp-Rev",
            // One parameter at two intervals: type, interval and duration tell them apart.
            "KEYS.Flow.Inst.1Hour.0.Ccp-Rev", "KEYS.Flow.Ave.1Day.1Day.Ccp-Rev",
            // Two versions of one series: the version too.
            "KEYS.Stage.Inst.1Hour.0.Raw", "KEYS.Stage.Inst.1Hour.0.Ccp-Rev",
            // Another location's plain Flow stays plain; an id given twice is one series.
            "ARBU.Flow.Inst.1Hour.0.Ccp-Rev", "arbu.flow.inst.1hour.0.ccp-rev", "ARBU.Precip-Inc.Total.1Hour.1Hour.Raw",
        ]
        let names = CWMSParser.MetricNames(ids.map { ($0, nil) })
        #expect(
            ids.map { names[$0] } == [
                "discharge.res_in", "discharge.res_out", "elevation", "elevation.tailwater", "discharge.inst.1hour.0",
                "discharge.ave.1day.1day", "gage_height.inst.1hour.0.raw", "gage_height.inst.1hour.0.ccp_rev",
                "discharge", "discharge", "precipitation.inc",
            ])
        #expect(names["KEYS.FLOW-RES IN.AVE.1HOUR.1HOUR.REV-REGI"] == "discharge.res_in")
        #expect(names["KEYS.Flow-Res In.Inst.1Hour.0.Rev-Regi"] == nil)
        // Alone, each keeps its plain name: the same as the parser derives.
        for id in ids {
            let alone = CWMSParser.MetricNames([(id, nil)])[id]
            #expect(alone == CWMSParser.metricName(seriesID: id), "\(id)")
        }
    }

    @Test func configuredMetricsAreKeptAndDerivedOnesStepAside() {
        let names = CWMSParser.MetricNames([
            ("KEYS.Flow.Inst.1Hour.0.Ccp-Rev", "discharge"), ("KEYS.Flow.Ave.1Day.1Day.Ccp-Rev", nil),
            ("KEYS.Flow-Res Out.Ave.1Hour.1Hour.Rev-Regi", "outflow"), ("KEYS.Elev.Inst.1Hour.0.Ccp-Rev", nil),
        ])
        #expect(names["KEYS.Flow.Inst.1Hour.0.Ccp-Rev"] == "discharge")
        #expect(names["KEYS.Flow.Ave.1Day.1Day.Ccp-Rev"] == "discharge.ave.1day.1day")
        #expect(names["KEYS.Flow-Res Out.Ave.1Hour.1Hour.Rev-Regi"] == "outflow")
        #expect(names["KEYS.Elev.Inst.1Hour.0.Ccp-Rev"] == "elevation")
    }

    @Test func pageOfASubParameterAndItsSeriesID() throws {
        let body = """
            {"name": "KEYS.Flow-Res Out.Ave.1Hour.1Hour.Rev-Regi", "office-id": "SWT", "units": "cfs",
             "values": [[1704067200000, 4100, 0]]}
            """
        #expect(try CWMSParser.seriesID(Data(body.utf8)) == "KEYS.Flow-Res Out.Ave.1Hour.1Hour.Rev-Regi")
        let (batch, _) = try CWMSParser.parse(Data(body.utf8))
        #expect(
            batch.readings == [
                Reading(
                    station: "KEYS", metric: "discharge.res_out", time: utcTime("2024-01-01T00:00:00Z"), value: 4100,
                    unit: "ft³/s", source: "cwms", quality: "0")
            ])
        let long = #"{"name": "KEYS.\#(String(repeating: "x", count: 300)).Inst.1Hour.0.Raw", "values": []}"#
        #expect(caughtParseError { _ = try CWMSParser.parse(Data(long.utf8)) }?.kind == .badValue)
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

    @Test func recordedFiles() throws {
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

    @Test func recordedARBUPages() throws {
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

    @Test func recordedNullValue() throws {
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
