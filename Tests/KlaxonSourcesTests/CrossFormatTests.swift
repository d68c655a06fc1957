import Foundation
import KlaxonCore
import KlaxonSources
import Testing

/// The same data in different formats gives the same readings; layouts and fields the first parsers
/// missed (issue 15). Every payload here is written for the test, in the services' real formats.
@Suite struct CrossFormatTests {
    /// Specific conductance (00095) at one site, 15-minute values, as NWIS RDB writes it: no unit.
    static let conductanceRDB = """
        # ---------------------------------- WARNING ----------------------------------------
        # Some of the data that you have obtained from this U.S. Geological Survey database
        # may not have received Director's approval.
        #
        # Data for the following 1 site(s) are contained in this file
        #    USGS 01491000 CHOPTANK RIVER NEAR GREENSBORO, MD
        # -----------------------------------------------------------------------------------
        #
        # Data provided for site 01491000
        #            TS   parameter     Description
        #        142512       00095     Specific cond at 25C, water, unfiltered, microsiemens per centimeter
        #
        # Data-value qualification codes included in this output:
        #     P  Provisional data subject to revision.
        #
        agency_cd\tsite_no\tdatetime\ttz_cd\t142512_00095\t142512_00095_cd
        5s\t15s\t20d\t6s\t14n\t10s
        USGS\t01491000\t2024-02-14 00:00\tEST\t121\tP
        USGS\t01491000\t2024-02-14 00:15\tEST\t122\tP
        USGS\t01491000\t2024-02-14 00:30\tEST\t\tP
        USGS\t01491000\t2024-02-14 00:45\tEST\t124\tP:e

        """

    /// The same series as WaterServices JSON (`/nwis/iv/?format=json`): unit `uS/cm @25C`.
    static let conductanceJSON = """
        {"name": "ns1:timeSeriesResponseType", "value": {"queryInfo": {"note": []}, "timeSeries": [
          {"sourceInfo": {"siteName": "CHOPTANK RIVER NEAR GREENSBORO, MD",
            "siteCode": [{"value": "01491000", "network": "NWIS", "agencyCode": "USGS"}],
            "timeZoneInfo": {"defaultTimeZone": {"zoneOffset": "-05:00", "zoneAbbreviation": "EST"},
              "daylightSavingsTimeZone": {"zoneOffset": "-04:00", "zoneAbbreviation": "EDT"},
              "siteUsesDaylightSavingsTime": true},
            "geoLocation": {"geogLocation": {"srs": "EPSG:4326", "latitude": 38.99719444, "longitude": -75.7858056}}},
           "variable": {"variableCode": [{"value": "00095", "network": "NWIS", "variableID": 45807295}],
             "variableName": "Specific conductance, water, unfiltered, microsiemens per centimeter at 25&#176;C",
             "unit": {"unitCode": "uS/cm @25C"},
             "options": {"option": [{"name": "Statistic", "optionCode": "00000"}]}, "noDataValue": -999999.0},
           "values": [{"value": [
               {"value": "121", "qualifiers": ["P"], "dateTime": "2024-02-14T00:00:00.000-05:00"},
               {"value": "122", "qualifiers": ["P"], "dateTime": "2024-02-14T00:15:00.000-05:00"},
               {"value": "-999999", "qualifiers": ["P"], "dateTime": "2024-02-14T00:30:00.000-05:00"},
               {"value": "124", "qualifiers": ["P", "e"], "dateTime": "2024-02-14T00:45:00.000-05:00"}],
             "method": [{"methodDescription": "", "methodID": 142512}]}],
           "name": "USGS:01491000:00095:00000"}]}}
        """

    /// The same series from the OGC API `continuous` collection, which spells the unit `uS/cm`.
    static let conductanceOGC = """
        {"type": "FeatureCollection", "numberReturned": 2, "features": [
          {"type": "Feature", "id": "6c1b6d8e-1f11-4b7e-9a51-0c2d7a1e0001",
           "geometry": {"type": "Point", "coordinates": [-75.7858056, 38.99719444]},
           "properties": {"monitoring_location_id": "USGS-01491000", "parameter_code": "00095",
             "statistic_id": "00011", "time": "2024-02-14T05:00:00+00:00", "value": "121",
             "unit_of_measure": "uS/cm", "approval_status": "Provisional", "qualifier": null,
             "time_series_id": "0b9f2c0e5d7a4f36b1e8c3a2d4f60001"}},
          {"type": "Feature", "id": "6c1b6d8e-1f11-4b7e-9a51-0c2d7a1e0002",
           "geometry": {"type": "Point", "coordinates": [-75.7858056, 38.99719444]},
           "properties": {"monitoring_location_id": "USGS-01491000", "parameter_code": "00095",
             "statistic_id": "00011", "time": "2024-02-14T05:15:00+00:00", "value": "122",
             "unit_of_measure": "uS/cm", "approval_status": "Provisional", "qualifier": null,
             "time_series_id": "0b9f2c0e5d7a4f36b1e8c3a2d4f60001"}}],
         "links": [{"rel": "self", "href": "https://api.waterdata.usgs.gov/ogcapi/v0/collections/continuous/items"}]}
        """

    struct Row: Equatable {
        var station: String
        var metric: String
        var time: Int64
        var value: Double
        var unit: String?
        init(_ r: Reading) {
            (station, metric, time, value, unit) = (r.station, r.metric, r.time, r.value, r.unit)
        }
    }

    @Test func specificConductanceHasOneUnitWhateverTheFormat() throws {
        let rdb = try RDBParser.parse(Self.conductanceRDB)
        let json = try USGSIVParser.parse(Data(Self.conductanceJSON.utf8))
        #expect(rdb.readings.count == 3)
        #expect(rdb.readings.map(Row.init) == json.readings.map(Row.init))
        #expect(rdb.readings.map(\.quality) == json.readings.map(\.quality))
        #expect(Set(rdb.readings.map(\.unit)) == ["uS/cm @25C"])
        #expect(rdb.readings.map(\.metric) == ["p00095", "p00095", "p00095"])
        #expect(rdb.gaps == 1 && json.gaps == 1)
        let ogc = try OGCParser.parse(Data(Self.conductanceOGC.utf8)).batch
        #expect(ogc.readings.map(Row.init) == Array(json.readings.map(Row.init).prefix(2)))
    }

    @Test func theUnitTableCoversWhatTheServicesSpellDifferently() throws {
        // A listed parameter takes the table's unit; an unlisted one keeps what the payload says.
        let page = """
            {"type": "FeatureCollection", "features": [
              {"type": "Feature", "geometry": null, "properties": {"monitoring_location_id": "USGS-05427718",
                "parameter_code": "00060", "statistic_id": "00003", "time": "2025-12-26", "value": "20.2",
                "unit_of_measure": "ft^3/s", "time_series_id": "90a0ea0b"}},
              {"type": "Feature", "geometry": null, "properties": {"monitoring_location_id": "USGS-05427718",
                "parameter_code": "91061", "statistic_id": "00003", "time": "2025-12-26", "value": "774",
                "unit_of_measure": "lbs/day", "time_series_id": "700d7858"}}]}
            """
        let batch = try OGCParser.parse(Data(page.utf8)).batch
        #expect(batch.readings.map(\.unit) == ["ft³/s", "lbs/day"])
    }

    /// Daily mean streamflow saved before 2005: `dv_dt`, `dv_va`, `dv_cd`, the parameter named in words.
    static let legacyDaily = """
        #
        # U.S. Geological Survey
        # National Water Information System
        # Retrieved: 2003-03-11 09:12:44 EST
        #
        # This file contains published daily mean streamflow data.
        #
        # This information includes the following fields:
        #
        #  agency_cd   Agency Code
        #  site_no     USGS station number
        #  dv_dt       date of daily mean streamflow
        #  dv_va       daily mean streamflow value, in cubic-feet per-second
        #  dv_cd       daily mean streamflow value qualification code
        #
        # Sites in this file include:
        #  USGS 02087500 NEUSE RIVER NEAR CLAYTON, NC
        #
        #
        agency_cd\tsite_no\tdv_dt\tdv_va\tdv_cd
        5s\t15s\t10d\t12n\t3s
        USGS\t02087500\t1927-08-01\t395\t
        USGS\t02087500\t1927-08-02\t381\t
        USGS\t02087500\t1927-08-03\t\t
        USGS\t02087500\t1977-01-20\t210\te
        USGS\t02087500\t2002-09-30\t688

        """

    @Test func pre2005DailyValuesLayout() throws {
        let batch = try RDBParser.parse(Self.legacyDaily)
        func day(_ d: String, _ v: Double, _ q: String?) -> Reading {
            Reading(
                station: "02087500", metric: "discharge.mean", time: utcTime(d + "T00:00:00Z"), value: v,
                unit: "ft³/s", source: "usgs-rdb", quality: q)
        }
        #expect(
            batch.readings == [
                day("1927-08-01", 395, nil), day("1927-08-02", 381, nil), day("1977-01-20", 210, "e"),
                day("2002-09-30", 688, nil),
            ])
        #expect(batch.gaps == 1)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "02087500", source: "usgs-rdb", name: "NEUSE RIVER NEAR CLAYTON, NC", usgsID: "02087500")
            ])
    }

    @Test func pre2005LayoutNamesItsParameterByCodeOrFailsClearly() throws {
        let byCode = Self.legacyDaily.replacingOccurrences(
            of: "#  dv_va       daily mean streamflow value, in cubic-feet per-second",
            with: "#  dv_va       daily maximum value of parameter code 00065")
        #expect(try RDBParser.parse(byCode).readings.first?.metric == "gage_height.max")
        #expect(try RDBParser.parse(byCode).readings.first?.unit == "ft")
        let unnamed = Self.legacyDaily.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.contains("streamflow") }.joined(separator: "\n")
        let error = #expect(throws: ParseError.self) { try RDBParser.parse(unnamed) }
        #expect(error?.description.contains("pre-2005 layout (dv_dt, dv_va) whose header names no parameter") == true)
    }

    @Test func observationPagesKeepTheStationsPosition() throws {
        let (batch, _) = try OGCParser.parse(Data(Self.conductanceOGC.utf8))
        #expect(
            batch.stations == [
                StationInfo(
                    id: "01491000", source: "usgs-ogc", latitude: 38.99719444, longitude: -75.7858056,
                    usgsID: "01491000")
            ])
        // A point off the globe is no position.
        let odd = Self.conductanceOGC.replacingOccurrences(of: "38.99719444", with: "138.99719444")
        #expect(try OGCParser.parse(Data(odd.utf8)).batch.stations.map(\.latitude) == [nil])
    }

    @Test func cwmsPagingFields() {
        let first = """
            {"begin": "2018-01-05T00:00:00+0000[Z]", "end": "2018-02-05T00:00:00+0000[Z]", "interval": "PT0S",
             "name": "KEYS.Elev.Inst.1Hour.0.Ccp-Rev", "next-page": "MTUxNTEyODQwMDAwMHx8NzQ1fHwz",
             "office-id": "SWT", "page": "MTUxNTExMDQwMDAwMHx8NzQ1fHwz", "page-size": 3, "total": 745,
             "units": "m", "values": [[1515110400000, 220.1, 0], [1515114000000, 220.2, 0], [1515117600000, null, 5]]}
            """
        #expect(
            CWMSParser.pageInfo(Data(first.utf8))
                == CWMSParser.PageInfo(nextPage: "MTUxNTEyODQwMDAwMHx8NzQ1fHwz", total: 745, pageSize: 3))
        let last = first.replacingOccurrences(of: "\"next-page\": \"MTUxNTEyODQwMDAwMHx8NzQ1fHwz\",", with: "")
        #expect(CWMSParser.pageInfo(Data(last.utf8))?.nextPage == nil)
        // An odd total does not hide the next page.
        let odd = first.replacingOccurrences(of: "\"total\": 745", with: "\"total\": \"many\"")
        #expect(CWMSParser.pageInfo(Data(odd.utf8))?.nextPage == "MTUxNTEyODQwMDAwMHx8NzQ1fHwz")
        #expect(CWMSParser.pageInfo(Data("[1, 2]".utf8)) == nil)
    }
}
