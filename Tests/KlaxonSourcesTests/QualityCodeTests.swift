import Foundation
import KlaxonCore
import KlaxonSources
import Testing

/// The sources' own quality codes reach the reading as they were sent.
@Suite struct QualityCodeTests {
    @Test("CWMS: each row's quality code is kept, the glitch's value is not altered")
    func cwmsQualityKept() throws {
        let body = """
            {"name": "KEYS.Flow.Ave.~1Day.1Day.Best", "office-id": "SWT", "units": "cfs",
             "value-columns": [{"name": "date-time", "ordinal": 1}, {"name": "value", "ordinal": 2},
                               {"name": "quality-code", "ordinal": 3}],
             "values": [[1704067200000, 1500, 3], [1704153600000, -8455545, 0], [1704240000000, 1510, 17],
                        [1704326400000, 1520, -2147483645]]}
            """
        let (batch, _) = try CWMSParser.parse(Data(body.utf8))
        #expect(batch.readings.map(\.value) == [1_500, -8_455_545, 1_510, 1_520])
        #expect(batch.readings.map(\.quality) == ["3", "0", "17", "-2147483645"])
        #expect(batch.readings.map(Plausibility.isSuspect) == [false, true, true, false])
    }

    @Test("NWIS IV: qualifiers joined with ':' in the order sent")
    func nwisQualifiersKept() throws {
        let body = """
            {"value": {"timeSeries": [{"sourceInfo": {"siteName": "X", "siteCode": [{"value": "01646500", "agencyCode": "USGS"}]},
              "variable": {"variableCode": [{"value": "00060"}], "unit": {"unitCode": "ft3/s"}, "noDataValue": -999999.0,
                           "options": {"option": [{"name": "Statistic", "optionCode": "00000"}]}},
              "values": [{"value": [
                {"value": "5980", "qualifiers": ["P"], "dateTime": "2020-08-17T17:00:00.000-04:00"},
                {"value": "5910", "qualifiers": ["A", "e"], "dateTime": "2020-08-17T17:15:00.000-04:00"},
                {"value": "5900", "qualifiers": [], "dateTime": "2020-08-17T17:30:00.000-04:00"}],
                "method": [{"methodID": 69929}]}],
              "name": "USGS:01646500:00060:00000"}]}}
            """
        let batch = try USGSIVParser.parse(Data(body.utf8))
        #expect(batch.readings.map(\.quality) == ["P", "A:e", nil])
        #expect(!batch.readings.contains(where: Plausibility.isSuspect))
    }

    @Test("OpenAQ: a measurement with flags keeps quality 'flagged'; it is not suspect for that alone")
    func openAQFlagsKept() throws {
        let body = """
            {"meta": {"found": 2}, "results": [
              {"value": 12.5, "parameter": {"name": "pm25", "units": "µg/m³"}, "flagInfo": {"hasFlags": true},
               "period": {"datetimeTo": {"utc": "2025-11-03T09:00:00Z"}}},
              {"value": 2500, "parameter": {"name": "pm25", "units": "µg/m³"}, "flagInfo": {"hasFlags": false},
               "period": {"datetimeTo": {"utc": "2025-11-03T10:00:00Z"}}}]}
            """
        let batch = try OpenAQParser.measurements(Data(body.utf8), station: "openaq:8118", sensors: [:])
        #expect(batch.readings.map(\.quality) == ["flagged", nil])
        #expect(batch.readings.map(Plausibility.isSuspect) == [false, true])
    }
}
