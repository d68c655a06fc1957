import Foundation
import KlaxonCore
import KlaxonSources
import Testing

@Suite struct USGSIVParserTests {
    func reading(
        _ station: String, _ metric: String, _ time: String, _ value: Double, _ unit: String?, _ quality: String?
    ) -> Reading {
        Reading(
            station: station, metric: metric, time: utcTime(time), value: value, unit: unit, source: "usgs-iv",
            quality: quality)
    }

    @Test func twoMethodsGapsAndDaylightSavingTime() throws {
        let batch = try USGSIVParser.parse(try ParserFixtures.data("iv_two_methods_dst.json"))
        // 01:45 EST and 03:00 EDT on the spring-forward morning are 15 minutes apart.
        #expect(
            batch.readings == [
                reading("01646500", "gage_height", "2024-03-10T06:45:00Z", 5.10, "ft", "P"),
                reading("01646500", "gage_height", "2024-03-10T07:00:00Z", 5.12, "ft", "P:e"),
                reading("01646500", "gage_height.69930", "2024-03-10T06:45:00Z", 5.20, "ft", "P"),
                reading("01646500", "gage_height.69930", "2024-03-10T07:00:00Z", 5.25, "ft", "A"),
                reading("01646500", "discharge", "2024-03-10T06:45:00Z", 12300, "ft³/s", "P"),
                reading("01646500", "discharge", "2024-03-10T07:00:00Z", 12100, "ft³/s", "P"),
                reading("09512500", "water_temperature", "2024-03-10T07:00:00Z", 11.5, "°C", "P"),
                reading("09512500", "p00095", "2024-03-10T07:00:00Z", 412, "uS/cm @25C", "P"),
            ])
        // -999999, a value with `Ice`, and an empty value with `Eqp`.
        #expect(batch.gaps == 3)
        #expect(batch.gauges.isEmpty)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "01646500", source: "usgs-iv", name: "POTOMAC RIVER NEAR WASH, DC LITTLE FALLS PUMP STA",
                    latitude: 38.94977778, longitude: -77.12763889, timeZone: "America/New_York", usgsID: "01646500",
                    attributes: ["site_type_code": "ST", "huc": "02070008", "state_code": "24", "county_code": "24031"]),
                StationInfo(
                    id: "09512500", source: "usgs-iv", name: "AGUA FRIA RIVER NEAR MAYER, AZ", latitude: 34.3155,
                    longitude: -112.0648, timeZone: "America/Phoenix", usgsID: "09512500",
                    attributes: ["site_type_code": "ST"]),
            ])
    }

    @Test func dailyValues() throws {
        let batch = try USGSIVParser.parse(try ParserFixtures.data("dv_two_sites.json"))
        #expect(
            batch.readings == [
                reading("01491000", "discharge.max", "2020-02-14T00:00:00Z", 520, "ft³/s", "P"),
                reading("01491000", "discharge.mean", "2020-02-14T00:00:00Z", 466, "ft³/s", "A:e"),
                reading("01491000", "discharge.mean", "2020-02-15T00:00:00Z", 362, "ft³/s", "P"),
                reading("01645000", "discharge.mean", "2020-02-15T00:00:00Z", 136, "ft³/s", "P"),
                reading("01645000", "precipitation.sum", "2020-02-15T00:00:00Z", 0.42, "in", "P"),
                reading("01645000", "gage_height.s00021", "2020-02-15T00:00:00Z", 3.50, "ft", "P"),
            ])
        #expect(batch.gaps == 1)
        #expect(batch.stations.map(\.id) == ["01491000", "01645000"])
        #expect(batch.stations.map(\.timeZone) == ["America/New_York", "America/New_York"])
    }

    @Test func missingFieldIsNamed() {
        let error = caughtParseError { _ = try USGSIVParser.parse(Data(#"{"value": {"queryInfo": {}}}"#.utf8)) }
        #expect(error?.description == "usgs-iv-json: missing field 'value.timeSeries'")
        #expect(error?.kind == .missingField)
        let noValue = caughtParseError {
            _ = try USGSIVParser.parse(Data(#"{"name": "ns1:timeSeriesResponseType"}"#.utf8))
        }
        #expect(noValue?.description == "usgs-iv-json: missing field 'value'")
        let noVariable = caughtParseError {
            _ = try USGSIVParser.parse(
                Data(#"{"value": {"timeSeries": [{"sourceInfo": {"siteCode": [{"value": "1"}]}, "values": []}]}}"#.utf8)
            )
        }
        #expect(noVariable?.description == "usgs-iv-json: missing field 'value.timeSeries[0].variable'")
        let badSite = caughtParseError {
            _ = try USGSIVParser.parse(
                Data(#"{"value": {"timeSeries": [{"sourceInfo": {"siteCode": [{"value": 1}]}}]}}"#.utf8))
        }
        #expect(
            badSite?.description
                == "usgs-iv-json: field 'value.timeSeries[0].sourceInfo.siteCode[0].value' is not a string")
    }

    @Test func instantaneousTimeWithoutOffsetIsRejected() {
        let body = """
            {"value": {"timeSeries": [{"name": "USGS:01646500:00065:00000",
              "sourceInfo": {"siteName": "X", "siteCode": [{"value": "01646500"}]},
              "variable": {"variableCode": [{"value": "00065"}], "unit": {"unitCode": "ft"}, "noDataValue": -999999.0,
                           "options": {"option": [{"name": "Statistic", "optionCode": "00000"}]}},
              "values": [{"value": [{"value": "1.0", "qualifiers": ["P"], "dateTime": "2024-03-10T01:45:00.000"}],
                          "method": [{"methodID": 1}]}]}]}}
            """
        let error = caughtParseError { _ = try USGSIVParser.parse(Data(body.utf8)) }
        #expect(
            error?.description
                == "usgs-iv-json: bad dateTime '2024-03-10T01:45:00.000' in series USGS:01646500:00065:00000")
    }

    // MARK: - Recorded payloads

    @Test func everyRecordedNWISFileParses() throws {
        let files = try ParserFixtures.realFiles("usgs_nwis")
        #expect(
            files == [
                "dv_json_2sites_dataretrieval.json", "dv_rdb_03451500_00045_00060_00065_blanks_2022.rdb",
                "iv_json_2sites_00060_00065_P1D_streamflow-api.json", "iv_json_2sites_00060_P1D_hydrotools.json",
                "iv_json_2sites_all_params_trimmed_dataretrieval.json", "iv_rdb_09512500_00060_15min_2016.rdb",
                "site_rdb_2sites_dataretrieval.rdb",
            ])
        var counts: [String: Int] = [:]
        for file in files {
            let data = try ParserFixtures.realData("usgs_nwis/" + file)
            let batch =
                file.hasSuffix(".json")
                ? try USGSIVParser.parse(data) : try RDBParser.parse(String(decoding: data, as: UTF8.self))
            counts[file] = batch.readings.count
        }
        #expect(
            counts == [
                "dv_json_2sites_dataretrieval.json": 4, "dv_rdb_03451500_00045_00060_00065_blanks_2022.rdb": 24602,
                "iv_json_2sites_00060_00065_P1D_streamflow-api.json": 376,
                "iv_json_2sites_00060_P1D_hydrotools.json": 186,
                "iv_json_2sites_all_params_trimmed_dataretrieval.json": 20, "iv_rdb_09512500_00060_15min_2016.rdb": 714,
                "site_rdb_2sites_dataretrieval.rdb": 0,
            ])
    }

    @Test func recordedStreamflowAPI() throws {
        let batch = try USGSIVParser.parse(
            try ParserFixtures.realData("usgs_nwis/iv_json_2sites_00060_00065_P1D_streamflow-api.json"))
        #expect(batch.readings.count == 376)
        #expect(batch.gaps == 0)
        #expect(batch.readingsOf("08055000", "discharge").count == 93)
        #expect(batch.readingsOf("08055000", "gage_height").count == 93)
        #expect(batch.readingsOf("08061540", "discharge").count == 95)
        #expect(batch.readingsOf("08061540", "gage_height").count == 95)
        #expect(batch.readings.first == reading("08055000", "discharge", "2021-04-06T22:30:00Z", 321, "ft³/s", "P"))
        #expect(batch.readings.last == reading("08061540", "gage_height", "2021-04-07T22:00:00Z", 5.19, "ft", "P"))
        #expect(batch.readingsOf("08055000", "gage_height").first?.value == 6.60)
        #expect(batch.readingsOf("08055000", "gage_height").last?.time == utcTime("2021-04-07T21:30:00Z"))
        #expect(
            batch.stations == [
                StationInfo(
                    id: "08055000", source: "usgs-iv", name: "Denton Ck nr Grapevine, TX", latitude: 32.9870677,
                    longitude: -97.0127857, timeZone: "America/Chicago", usgsID: "08055000",
                    attributes: ["site_type_code": "ST", "huc": "12030104", "state_code": "48", "county_code": "48121"]),
                StationInfo(
                    id: "08061540", source: "usgs-iv", name: "Rowlett Ck nr Sachse, TX", latitude: 32.95984447,
                    longitude: -96.6144378, timeZone: "America/Chicago", usgsID: "08061540",
                    attributes: ["site_type_code": "ST", "huc": "12030106", "state_code": "48", "county_code": "48113"]),
            ])
    }

    @Test func recordedHydrotoolsTwoZones() throws {
        let batch = try USGSIVParser.parse(
            try ParserFixtures.realData("usgs_nwis/iv_json_2sites_00060_P1D_hydrotools.json"))
        #expect(batch.readings.count == 186)
        #expect(batch.gaps == 0)
        #expect(batch.readingsOf("01646500", "discharge").count == 92)
        #expect(batch.readingsOf("02458502", "discharge").count == 94)
        // EDT (-04:00) and CDT (-05:00) sites.
        #expect(batch.readings.first == reading("01646500", "discharge", "2020-08-17T21:00:00Z", 5980, "ft³/s", "P"))
        #expect(batch.readings.last == reading("02458502", "discharge", "2020-08-18T20:15:00Z", 35.5, "ft³/s", "P"))
        #expect(batch.readingsOf("02458502", "discharge").first?.time == utcTime("2020-08-17T21:00:00Z"))
        #expect(batch.stations.map(\.timeZone) == ["America/New_York", "America/Chicago"])
        #expect(batch.stationInfo("02458502")?.name == "VILLAGE CREEK NEAR PRATT CITY, ALABAMA")
    }

    @Test func recordedTrimmedAllParameters() throws {
        let batch = try USGSIVParser.parse(
            try ParserFixtures.realData("usgs_nwis/iv_json_2sites_all_params_trimmed_dataretrieval.json"))
        #expect(batch.readings.count == 20)
        #expect(batch.gaps == 0)
        #expect(Set(batch.readings.map(\.metric)) == ["discharge", "gage_height"])
        #expect(batch.readings.first == reading("01491000", "discharge", "2019-02-14T05:00:00Z", 974, "ft³/s", "A"))
        #expect(batch.readings.last == reading("01645000", "gage_height", "2019-02-14T05:20:00Z", 3.13, "ft", "A"))
        #expect(batch.stations.map(\.id) == ["01491000", "01645000"])
    }

    @Test func recordedDailyValues() throws {
        let batch = try USGSIVParser.parse(try ParserFixtures.realData("usgs_nwis/dv_json_2sites_dataretrieval.json"))
        #expect(
            batch.readings == [
                reading("01491000", "discharge.mean", "2020-02-14T00:00:00Z", 466, "ft³/s", "P"),
                reading("01491000", "discharge.mean", "2020-02-15T00:00:00Z", 362, "ft³/s", "P"),
                reading("01645000", "discharge.mean", "2020-02-14T00:00:00Z", 179, "ft³/s", "P"),
                reading("01645000", "discharge.mean", "2020-02-15T00:00:00Z", 136, "ft³/s", "P"),
            ])
        #expect(batch.gaps == 0)
        #expect(
            batch.stationInfo("01491000")
                == StationInfo(
                    id: "01491000", source: "usgs-iv", name: "CHOPTANK RIVER NEAR GREENSBORO, MD",
                    latitude: 38.99719444,
                    longitude: -75.7858056, timeZone: "America/New_York", usgsID: "01491000",
                    attributes: ["site_type_code": "ST", "huc": "02060005", "state_code": "24", "county_code": "24011"])
        )
    }
}
