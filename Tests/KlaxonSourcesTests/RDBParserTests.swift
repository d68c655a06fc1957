import Foundation
import KlaxonCore
import KlaxonSources
import Testing

@Suite struct RDBParserTests {
    func reading(
        _ station: String, _ metric: String, _ time: String, _ value: Double, _ unit: String?, _ quality: String?
    ) -> Reading {
        Reading(
            station: station, metric: metric, time: utcTime(time), value: value, unit: unit, source: "usgs-rdb",
            quality: quality)
    }

    @Test func instantaneousAcrossTheFallBackHour() throws {
        let batch = try RDBParser.parse(try ParserFixtures.text("iv_est_edt.rdb"))
        // 01:00 EDT and 01:00 EST on 2023-11-05 are an hour apart.
        #expect(
            batch.readings == [
                reading("01646500", "gage_height", "2023-11-05T04:45:00Z", 4.10, "ft", "P"),
                reading("01646500", "gage_height.69930", "2023-11-05T04:45:00Z", 4.12, "ft", "P"),
                reading("01646500", "discharge", "2023-11-05T04:45:00Z", 10200, "ft³/s", "P"),
                reading("01646500", "gage_height", "2023-11-05T05:00:00Z", 4.11, "ft", "P"),
                reading("01646500", "gage_height.69930", "2023-11-05T05:00:00Z", 4.13, "ft", "P"),
                reading("01646500", "discharge", "2023-11-05T05:00:00Z", 10300, "ft³/s", "P"),
                reading("01646500", "gage_height", "2023-11-05T06:00:00Z", 4.15, "ft", "P"),
                reading("01646500", "discharge", "2023-11-05T06:00:00Z", 10400, "ft³/s", "P:e"),
                reading("01646500", "gage_height", "2023-11-05T06:15:00Z", 4.16, "ft", "P"),
                reading("01646500", "gage_height.69930", "2023-11-05T06:15:00Z", 4.18, "ft", "P"),
                reading("01646500", "discharge", "2023-11-05T06:30:00Z", 11000, "ft³/s", "P"),
                reading("09512500", "discharge", "2016-05-09T07:00:00Z", 1.0, "ft³/s", "P"),
            ])
        // Two empty fields, an `Ice` code and an `Eqp` value.
        #expect(batch.gaps == 4)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "01646500", source: "usgs-rdb", name: "POTOMAC RIVER NEAR WASH, DC LITTLE FALLS PUMP STA",
                    usgsID: "01646500"),
                StationInfo(
                    id: "09512500", source: "usgs-rdb", name: "AGUA FRIA RIVER NEAR MAYER, AZ", usgsID: "09512500"),
            ])
    }

    @Test func crlfLineEnds() throws {
        let lf = try ParserFixtures.text("iv_est_edt.rdb")
        let crlf = try RDBParser.parse(lf.replacingOccurrences(of: "\n", with: "\r\n"))
        let expected = try RDBParser.parse(lf)
        #expect(crlf.readings.count == 12)
        #expect(crlf.readings == expected.readings)
        #expect(crlf.stations == expected.stations)
        #expect(crlf.gaps == 4)
    }

    @Test func dailyValues() throws {
        let batch = try RDBParser.parse(try ParserFixtures.text("dv.rdb"))
        #expect(
            batch.readings == [
                reading("03451500", "discharge.mean", "2022-01-03T00:00:00Z", 1040, "ft³/s", "A"),
                reading("03451500", "discharge.max", "2022-01-03T00:00:00Z", 1180, "ft³/s", "A"),
                reading("03451500", "discharge.mean.99001", "2022-01-03T00:00:00Z", 1045, "ft³/s", "A"),
                reading("03451500", "gage_height.mean", "2022-01-03T00:00:00Z", 1.49, "ft", "A"),
                reading("03451500", "discharge.mean", "2022-01-04T00:00:00Z", 990, "ft³/s", "A:e"),
                reading("03451500", "gage_height.mean", "2022-01-04T00:00:00Z", 1.45, "ft", "A"),
            ])
        #expect(batch.gaps == 2)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "03451500", source: "usgs-rdb", name: "FRENCH BROAD RIVER AT ASHEVILLE, NC", usgsID: "03451500")
            ])
    }

    static let header = """
        # Data for the following 1 site(s) are contained in this file
        #    USGS 01646500 POTOMAC RIVER NEAR WASH, DC LITTLE FALLS PUMP STA
        # ----------------------------------------------------------------
        agency_cd\tsite_no\tdatetime\ttz_cd\t69928_00060\t69928_00060_cd
        5s\t15s\t20d\t6s\t14n\t10s

        """

    @Test func unknownTimeZoneNamesTheLine() {
        let text =
            Self.header + "USGS\t01646500\t2023-11-05 01:00\tEST\t1\tP\nUSGS\t01646500\t2023-11-05 01:15\tXST\t1\tP\n"
        let error = caughtParseError { _ = try RDBParser.parse(text) }
        #expect(error?.description == "usgs-rdb:7: unknown time zone 'XST'")
        #expect(error?.kind == .badValue)
    }

    @Test func badTimeNamesTheLine() {
        let text = Self.header + "USGS\t01646500\t2023-13-05 01:00\tEST\t1\tP\n"
        #expect(
            caughtParseError { _ = try RDBParser.parse(text) }?.description == "usgs-rdb:6: bad time '2023-13-05 01:00'"
        )
    }

    @Test func textThatIsNotRDB() {
        let error = caughtParseError { _ = try RDBParser.parse("Service Unavailable\n") }
        #expect(
            error?.description
                == "usgs-rdb:1: expected the column-name row (agency_cd site_no …), got 'Service Unavailable'")
        let json = caughtParseError { _ = try RDBParser.parse(#"{"value": {}}"#) }
        #expect(json?.description == #"usgs-rdb: got JSON, not RDB ('{"value": {}}')"#)
        let noFormatRow = caughtParseError {
            _ = try RDBParser.parse("agency_cd\tsite_no\tdatetime\nUSGS\t1\t2020-01-01\n")
        }
        #expect(
            noFormatRow?.description
                == "usgs-rdb:2: expected the column-format row (5s 15s 20d …), got 'USGS 1 2020-01-01'")
    }

    @Test func commentsOnlyIsAnEmptyBatch() throws {
        let batch = try RDBParser.parse("#\n# No sites found matching all criteria\n#\n")
        #expect(batch.readings.isEmpty)
        #expect(batch.stations.isEmpty)
        #expect(batch.gaps == 0)
    }

    // MARK: - Recorded payloads

    @Test func recordedInstantaneousMST() throws {
        let text = String(
            decoding: try ParserFixtures.realData("usgs_nwis/iv_rdb_09512500_00060_15min_2016.rdb"), as: UTF8.self)
        let batch = try RDBParser.parse(text)
        #expect(batch.readings.count == 714)
        #expect(batch.gaps == 0)
        #expect(Set(batch.readings.map(\.metric)) == ["discharge"])
        #expect(batch.readings.first == reading("09512500", "discharge", "2016-05-09T07:00:00Z", 1.0, "ft³/s", "P"))
        #expect(batch.readings.last == reading("09512500", "discharge", "2016-05-16T17:30:00Z", 0.82, "ft³/s", "P"))
        #expect(
            batch.stations == [
                StationInfo(
                    id: "09512500", source: "usgs-rdb", name: "AGUA FRIA RIVER NEAR MAYER, AZ", usgsID: "09512500")
            ])
    }

    @Test func recordedDailyWithBlanks() throws {
        let text = String(
            decoding: try ParserFixtures.realData("usgs_nwis/dv_rdb_03451500_00045_00060_00065_blanks_2022.rdb"),
            as: UTF8.self)
        let batch = try RDBParser.parse(text)
        #expect(batch.readings.count == 24602)
        #expect(batch.gaps == 3524)
        let counts = Dictionary(grouping: batch.readings, by: \.metric).mapValues(\.count)
        #expect(
            counts == [
                "precipitation.sum": 3986, "discharge.max": 2281, "discharge.min": 2281, "discharge.mean": 4018,
                "gage_height.max": 4012, "gage_height.min": 4012, "gage_height.mean": 4012,
            ])
        let precipitation = batch.readingsOf("03451500", "precipitation.sum")
        #expect(precipitation.first == reading("03451500", "precipitation.sum", "2000-01-01T00:00:00Z", 0, "in", "A"))
        #expect(precipitation.last == reading("03451500", "precipitation.sum", "2010-12-28T00:00:00Z", 0, "in", "A"))
        let maxima = batch.readingsOf("03451500", "discharge.max")
        #expect(maxima.first == reading("03451500", "discharge.max", "2004-10-01T00:00:00Z", 8070, "ft³/s", "A"))
        #expect(maxima.last == reading("03451500", "discharge.max", "2010-12-31T00:00:00Z", 1060, "ft³/s", "A"))
        #expect(batch.readingsOf("03451500", "discharge.min").first?.value == 5700)
        let means = batch.readingsOf("03451500", "discharge.mean")
        #expect(means.first == reading("03451500", "discharge.mean", "2000-01-01T00:00:00Z", 1040, "ft³/s", "A"))
        #expect(means.last == reading("03451500", "discharge.mean", "2010-12-31T00:00:00Z", 1040, "ft³/s", "A"))
        #expect(Set(means.compactMap(\.quality)) == ["A", "A:e"])
        #expect(batch.readings.last == reading("03451500", "gage_height.mean", "2010-12-31T00:00:00Z", 1.62, "ft", "A"))
        #expect(
            batch.stations == [
                StationInfo(
                    id: "03451500", source: "usgs-rdb", name: "FRENCH BROAD RIVER AT ASHEVILLE, NC", usgsID: "03451500")
            ])
    }

    @Test func recordedSiteServiceGivesStations() throws {
        // CRLF line ends; the site service's columns and no `datetime`.
        let text = String(
            decoding: try ParserFixtures.realData("usgs_nwis/site_rdb_2sites_dataretrieval.rdb"), as: UTF8.self)
        let batch = try RDBParser.parse(text)
        #expect(batch.readings.isEmpty)
        #expect(batch.gaps == 0)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "01491000", source: "usgs-rdb", name: "CHOPTANK RIVER NEAR GREENSBORO, MD",
                    latitude: 38.99719444,
                    longitude: -75.7858056, usgsID: "01491000", attributes: ["site_type_code": "ST", "huc": "02060005"]),
                StationInfo(
                    id: "01645000", source: "usgs-rdb", name: "SENECA CREEK AT DAWSONVILLE, MD", latitude: 39.1280833,
                    longitude: -77.33577778, usgsID: "01645000",
                    attributes: ["site_type_code": "ST", "huc": "02070008"]),
            ])
    }
}
