import Foundation
import KlaxonCore
import KlaxonSources
import Testing

@Suite struct OGCParserTests {
    func reading(
        _ station: String, _ metric: String, _ time: String, _ value: Double, _ unit: String?, _ quality: String?
    ) -> Reading {
        Reading(
            station: station, metric: metric, time: utcTime(time), value: value, unit: unit, source: "usgs-ogc",
            quality: quality)
    }

    @Test func continuousPageWithNextLink() throws {
        let (batch, next) = try OGCParser.parse(try ParserFixtures.data("ogc_continuous_page.json"))
        #expect(
            batch.readings == [
                reading("06904500", "gage_height", "2025-01-01T00:00:00Z", 1.76, "ft", "A"),
                reading("06904500", "gage_height.d00dfeed", "2025-01-01T00:00:00Z", 1.80, "ft", "P:ESTIMATED"),
                reading("06904500", "discharge", "2025-01-01T12:00:00Z", 535, "ft³/s", "P"),
            ])
        // A null value and a non-numeric one.
        #expect(batch.gaps == 2)
        // The observations' station, with the position of the features' point.
        #expect(
            batch.stations == [
                StationInfo(
                    id: "06904500", source: "usgs-ogc", latitude: 40.2343333333333, longitude: -92.6863888888889,
                    usgsID: "06904500")
            ])
        #expect(
            next
                == URL(
                    string:
                        "https://api.waterdata.usgs.gov/ogcapi/v0/collections/continuous/items?f=json&monitoring_location_id=USGS-06904500&limit=5&cursor=MjAyNS0wMS0wMVQxMjoxNQ"
                ))
    }

    @Test func dailyLastPage() throws {
        let (batch, next) = try OGCParser.parse(try ParserFixtures.data("ogc_daily_last_page.json"))
        #expect(
            batch.readings == [
                reading("05427718", "discharge.mean", "2025-12-26T00:00:00Z", 20.2, "ft³/s", "P"),
                reading("05427718", "discharge.max", "2025-12-26T00:00:00Z", 25, "ft³/s", "A:ICE:ESTIMATED"),
                reading("05427718", "water_temperature.mean", "2025-12-27T00:00:00Z", 1.5, "°C", "P"),
            ])
        #expect(batch.gaps == 0)
        #expect(next == nil)
    }

    @Test func monitoringLocations() throws {
        let (batch, next) = try OGCParser.parse(try ParserFixtures.data("ogc_monitoring_locations.json"))
        #expect(batch.readings.isEmpty)
        #expect(next == nil)
        #expect(
            batch.stations == [
                StationInfo(
                    id: "09512500", source: "usgs-ogc", name: "AGUA FRIA RIVER NEAR MAYER, AZ", latitude: 34.3155,
                    longitude: -112.0648, timeZone: "America/Phoenix", usgsID: "09512500",
                    attributes: ["state_name": "Arizona", "site_type": "Stream", "site_type_code": "ST"]),
                StationInfo(
                    id: "01646500", source: "usgs-ogc", name: "POTOMAC RIVER NEAR WASH, DC LITTLE FALLS PUMP STA",
                    latitude: 38.94977778, longitude: -77.12763889, timeZone: "America/New_York", usgsID: "01646500",
                    attributes: ["state_name": "Maryland", "site_type": "Stream", "site_type_code": "ST"]),
            ])
    }

    @Test func daylightSavingFlagAsBoolean() throws {
        let body = """
            {"type": "FeatureCollection", "features": [{"type": "Feature", "id": "USGS-09512500",
              "geometry": {"type": "Point", "coordinates": [-112.0648, 34.3155]},
              "properties": {"id": "USGS-09512500", "monitoring_location_number": "09512500",
                "monitoring_location_name": " AGUA FRIA RIVER NEAR MAYER, AZ ", "time_zone_abbreviation": "MST",
                "uses_daylight_savings": false, "altitude": 3800.0, "drainage_area": null}}]}
            """
        let station = try OGCParser.parse(Data(body.utf8)).batch.stations
        #expect(station.map(\.timeZone) == ["America/Phoenix"])
        #expect(station.map(\.name) == ["AGUA FRIA RIVER NEAR MAYER, AZ"])
        #expect(station.map(\.attributes) == [[:]])
    }

    @Test func badTimeIsAnError() {
        let body = """
            {"type": "FeatureCollection", "features": [{"type": "Feature", "properties": {
              "monitoring_location_id": "USGS-06904500", "parameter_code": "00065", "statistic_id": "00011",
              "time": "yesterday", "time_series_id": "b36569a0", "unit_of_measure": "ft", "value": "1.76"}}]}
            """
        let error = caughtParseError { _ = try OGCParser.parse(Data(body.utf8)) }
        #expect(error?.description == "usgs-ogc-json: bad time 'yesterday' in features[0].properties.time")
        let missing = caughtParseError { _ = try OGCParser.parse(Data(#"{"type": "FeatureCollection"}"#.utf8)) }
        #expect(missing?.description == "usgs-ogc-json: missing field 'features'")
    }

    // MARK: - Recorded payloads

    /// The recorded file is `{collection: FeatureCollection}`; each entry is parsed as its own page.
    func recordedCollections() throws -> [String: Data] {
        let data = try ParserFixtures.realData(
            "usgs_waterdata_ogc/ogc_collections_items_trimmed_combined_dataretrieval.json")
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return try object.mapValues { try JSONSerialization.data(withJSONObject: $0) }
    }

    @Test func recordedFileHoldsTheKnownCollections() throws {
        #expect(
            try ParserFixtures.realFiles("usgs_waterdata_ogc") == [
                "ogc_collections_items_trimmed_combined_dataretrieval.json"
            ])
        #expect(
            try recordedCollections().keys.sorted() == [
                "agency-codes", "channel-measurements", "combined-metadata", "continuous", "daily",
                "field-measurements",
                "field-measurements-metadata", "latest-continuous", "latest-daily", "monitoring-locations",
                "observationIntervals", "observationNormals", "peaks", "time-series-metadata",
            ])
    }

    @Test func recordedObservationCollections() throws {
        let pages = try recordedCollections()
        let continuous = try OGCParser.parse(try #require(pages["continuous"]))
        #expect(
            continuous.batch.readings == [
                reading("06904500", "gage_height", "2025-01-01T00:00:00Z", 1.76, "ft", "A"),
                reading("06904500", "gage_height", "2025-01-01T00:15:00Z", 1.76, "ft", "A"),
            ])
        #expect(continuous.next == nil)

        let latest = try OGCParser.parse(try #require(pages["latest-continuous"]))
        #expect(
            latest.batch.readings == [
                reading("06904500", "gage_height", "2026-08-07T18:45:00Z", 1.59, "ft", "P"),
                reading("06904500", "discharge", "2026-08-07T18:45:00Z", 535, "ft³/s", "P"),
            ])

        let daily = try OGCParser.parse(try #require(pages["daily"]))
        #expect(
            daily.batch.readings == [
                reading("05427718", "discharge.mean", "2025-12-26T00:00:00Z", 20.2, "ft³/s", "P"),
                reading("05427718", "discharge.mean", "2026-03-19T00:00:00Z", 27.1, "ft³/s", "P"),
            ])

        let latestDaily = try OGCParser.parse(try #require(pages["latest-daily"]))
        #expect(
            latestDaily.batch.readings == [
                reading("05427718", "p91061.mean", "2025-09-30T00:00:00Z", 774, "lbs/day", "A"),
                reading("05427718", "p91060.mean", "2025-09-30T00:00:00Z", 5.41, "lbs/day", "A"),
            ])
        for batch in [continuous.batch, latest.batch, daily.batch, latestDaily.batch] {
            #expect(batch.gaps == 0)
            // Each page's station, placed where its features' point says.
            #expect(batch.stations.count == 1)
            #expect(batch.stations.allSatisfy { $0.latitude != nil && $0.longitude != nil && $0.name == nil })
        }
        #expect(continuous.batch.stations.first?.latitude == 40.2343333333333)
        #expect(daily.batch.stations.first?.longitude == -89.35249999999999)
    }

    @Test func recordedMonitoringLocations() throws {
        let page = try OGCParser.parse(try #require(try recordedCollections()["monitoring-locations"]))
        #expect(page.batch.readings.isEmpty)
        #expect(
            page.batch.stations == [
                StationInfo(
                    id: "410252073314801", source: "usgs-ogc", name: "CT-STM    2", latitude: 41.04777271320483,
                    longitude: -73.52955169969904, timeZone: "America/New_York", usgsID: "410252073314801",
                    attributes: ["state_name": "Connecticut", "site_type": "Well", "site_type_code": "GW"]),
                StationInfo(
                    id: "410257073251001", source: "usgs-ogc", name: "CT-NW    35", latitude: 41.04916115609651,
                    longitude: -73.41899256198708, timeZone: "America/New_York", usgsID: "410257073251001",
                    attributes: ["state_name": "Connecticut", "site_type": "Well", "site_type_code": "GW"]),
            ])
    }

    @Test func recordedOtherCollectionsAreIgnored() throws {
        let pages = try recordedCollections()
        for name in [
            "agency-codes", "channel-measurements", "combined-metadata", "field-measurements",
            "field-measurements-metadata", "observationIntervals", "observationNormals", "peaks",
            "time-series-metadata",
        ] {
            let page = try OGCParser.parse(try #require(pages[name]))
            #expect(page.batch.readings.isEmpty, "\(name)")
            #expect(page.batch.stations.isEmpty, "\(name)")
            #expect(page.batch.gaps == 0, "\(name)")
            #expect(page.next == nil, "\(name)")
        }
    }
}
