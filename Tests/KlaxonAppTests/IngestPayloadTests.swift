import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import Testing

/// Payloads of kinds the first parsers never saw (issue 15), written for the tests in the services'
/// real formats: quakes sharing an associated id, wrong `--format`s, the pre-2005 RDB layout,
/// paged CWMS answers, OGC observation pages.
@Suite("ingest: real payloads never seen before", .serialized)
struct IngestPayloadTests {
    // MARK: Quakes

    /// A M2.9 off western Puerto Rico and, 230 km away, a M4.1 in the Dominican Republic: both list
    /// the associated id `us7000nabc`, neither lists the other's own id.
    static let puertoRico = quakeFeature(
        id: "pr2024123001", ids: ["pr2024123001", "us7000nabc"], mag: 2.9, time: 1_735_560_000_000,
        updated: 1_735_560_600_000, status: "reviewed", lon: -67.25, lat: 18.05, depth: 12,
        place: "9 km SW of Boquerón, Puerto Rico")
    static let dominicanRepublic = quakeFeature(
        id: "us7000nxyz", ids: ["us7000nxyz", "pr2024123045", "us7000nabc"], mag: 4.1, time: 1_735_600_000_000,
        updated: 1_735_620_000_000, lon: -69.30, lat: 18.95, depth: 35,
        place: "5 km N of Hato Mayor del Rey, Dominican Republic")

    func westPuertoRicoRule(_ s: Scratch) throws -> String {
        try s.write(
            "pr.yaml",
            """
            name: west-pr
            kind: quake
            min_magnitude: 2.5
            near: [{name: Mayagüez, latitude: 18.2013, longitude: -67.1452, radius_km: 100}]
            """)
    }

    @Test("two events sharing a third associated id stay two events; the rule announces no update")
    func sharedAssociatedIDKeepsTwoEvents() async throws {
        let s = try Scratch()
        let db = s.path("q.sqlite")
        let rules = try westPuertoRicoRule(s)
        let day = try s.write("day.geojson", quakeFeed([Self.puertoRico]))
        let week = try s.write("week.geojson", quakeFeed([Self.dominicanRepublic, Self.puertoRico]))

        let first = await InProcess.ingest(db: db, format: .usgsQuakes, day)
        #expect(first.status == 0, "\(first.stderr)")
        let e1 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        let fired = try jsonObjects(e1.lines)
        #expect(fired.map { $0["state"] as? String } == ["firing"])
        #expect(fired.first?["station"] as? String == "pr2024123001")

        let second = await InProcess.ingest(db: db, format: .usgsQuakes, week)
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("ingest: 1 new, 0 revised, 1 unchanged"), "\(second.stderr)")
        #expect(second.stderr.contains("1 quake id conflicts (kept as separate events)"))
        let warning = try #require(second.errorLines.first { $0.contains("warning:") })
        #expect(warning.hasPrefix(week + ": warning: quake us7000nxyz and stored event pr2024123001"))
        #expect(warning.contains("'us7000nabc'") && warning.contains("kept as two events"))

        let e2 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        #expect(e2.status == 0, "\(e2.stderr)")
        #expect(e2.lines.isEmpty, "no update, no resolve: \(e2.stdout)")

        let store = try SQLiteStore.open(path: db)
        let stored = try await store.quakes().sorted { $0.key < $1.key }
        #expect(stored.map(\.key) == ["pr2024123001", "us7000nxyz"])
        #expect(stored.map(\.event.magnitude) == [2.9, 4.1])
        #expect(stored.first?.event.place == "9 km SW of Boquerón, Puerto Rico")
        #expect(try await store.quakeRevisionCounts() == ["pr2024123001": 1, "us7000nxyz": 1])

        // Polling the week again changes nothing and says nothing more.
        let again = await InProcess.ingest(db: db, format: .usgsQuakes, week)
        #expect(again.stderr.contains("ingest: 0 new, 0 revised, 2 unchanged"), "\(again.stderr)")
        #expect(!again.stderr.contains("warning"))

        // dry-run over the files keeps them apart too: one firing, no update.
        let replay = await InProcess.dryRun(rules: [rules], events: [day, week], format: .json)
        #expect(replay.status == 0, "\(replay.stderr)")
        #expect(try jsonObjects(replay.lines).map { $0["state"] as? String } == ["firing"])
    }

    @Test("a true revision (network switch us → pr, the new ids listing the old id) is still one event")
    func networkSwitchIsARevision() async throws {
        let s = try Scratch()
        let db = s.path("q.sqlite")
        let rules = try westPuertoRicoRule(s)
        let v1 = try s.write(
            "v1.geojson",
            quakeFeed([
                quakeFeature(
                    id: "us7000nabc", ids: ["us7000nabc", "at00sq1x2y"], mag: 3.4, time: 1_735_560_000_000,
                    updated: 1_735_560_300_000, lon: -67.3, lat: 18.1, place: "Puerto Rico region")
            ]))
        let v2 = try s.write(
            "v2.geojson",
            quakeFeed([
                quakeFeature(
                    id: "pr2024123001", ids: ["pr2024123001", "us7000nabc", "at00sq1x2y"], mag: 3.2,
                    time: 1_735_560_000_000, updated: 1_735_563_000_000, status: "reviewed", lon: -67.25, lat: 18.05,
                    place: "9 km SW of Boquerón, Puerto Rico")
            ]))
        #expect(await InProcess.ingest(db: db, format: .usgsQuakes, v1).status == 0)
        let e1 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        #expect(try jsonObjects(e1.lines).map { $0["state"] as? String } == ["firing"])
        let r = await InProcess.ingest(db: db, format: .usgsQuakes, v2)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 0 new, 1 revised, 0 unchanged"), "\(r.stderr)")
        #expect(!r.stderr.contains("warning"))
        let e2 = await InProcess.evaluate(db: db, rules: [rules], format: .json)
        let update = try jsonObjects(e2.lines)
        #expect(update.map { $0["state"] as? String } == ["changed"])
        #expect(update.first?["station"] as? String == "us7000nabc")
        let stored = try await SQLiteStore.open(path: db).quakes()
        #expect(stored.map(\.key) == ["us7000nabc"])
        #expect(stored.first?.event.id == "pr2024123001")
    }

    // MARK: Wrong and empty formats

    static let ogcPage = """
        {"type": "FeatureCollection", "numberReturned": 1, "features": [
          {"type": "Feature", "id": "0f3c1b2a-9d41-4c7e-8b21-5a6e7d8c0001",
           "geometry": {"type": "Point", "coordinates": [-92.6863888888889, 40.2343333333333]},
           "properties": {"monitoring_location_id": "USGS-06904500", "parameter_code": "00065",
             "statistic_id": "00011", "time": "2025-01-01T00:15:00+00:00", "value": "1.76", "unit_of_measure": "ft",
             "approval_status": "Approved", "qualifier": null, "time_series_id": "b36569a0067443ac9425e850a3ac7baa",
             "last_modified": "2025-08-28T11:10:36.529563+00:00"}}],
         "links": [{"rel": "self", "type": "application/geo+json",
           "href": "https://api.waterdata.usgs.gov/ogcapi/v0/collections/continuous/items?f=json"}]}
        """

    static func cwmsPage(next: String?, total: Int) -> String {
        let nextField = next.map { "\"next-page\": \"\($0)\", " } ?? ""
        return """
            {"begin": "2018-01-05T00:00:00+0000[Z]", "end": "2018-02-05T00:00:00+0000[Z]", "interval": "PT0S",
             "name": "KEYS.Elev.Inst.1Hour.0.Ccp-Rev", \(nextField)"office-id": "SWT",
             "page": "MTUxNTExMDQwMDAwMHx8NzQ1fHwz", "page-size": 3, "total": \(total), "units": "m",
             "value-columns": [{"name": "date-time", "ordinal": 1, "datatype": "java.sql.Timestamp"},
               {"name": "value", "ordinal": 2, "datatype": "java.lang.Double"},
               {"name": "quality-code", "ordinal": 3, "datatype": "int"}],
             "values": [[1515110400000, 220.1, 0], [1515114000000, 220.2, 0], [1515117600000, null, 5]]}
            """
    }

    static let ivJSON = """
        {"name": "ns1:timeSeriesResponseType", "value": {"queryInfo": {"note": []}, "timeSeries": [
          {"sourceInfo": {"siteName": "WILLAMETTE RIVER AT PORTLAND, OR",
            "siteCode": [{"value": "14211720", "network": "NWIS", "agencyCode": "USGS"}]},
           "variable": {"variableCode": [{"value": "00060"}], "unit": {"unitCode": "ft3/s"},
             "options": {"option": [{"name": "Statistic", "optionCode": "00000"}]}, "noDataValue": -999999.0},
           "values": [{"value": [{"value": "9870", "qualifiers": ["P"], "dateTime": "2025-02-01T10:00:00.000-08:00"}],
             "method": [{"methodID": 158340}]}],
           "name": "USGS:14211720:00060:00000"}]}}
        """

    static let nwpsGauge = """
        {"lid": "PTLO3", "usgsId": "14211720", "name": "Willamette River at Portland",
         "latitude": 45.5175, "longitude": -122.6692, "timeZone": "PST8PDT",
         "flood": {"stageUnits": "ft", "flowUnits": "kcfs", "categories": {
           "action": {"stage": 15}, "minor": {"stage": 18}, "moderate": {"stage": 23}, "major": {"stage": 28.5}}}}
        """

    static let openMeteo = """
        {"latitude": 39.7392, "longitude": -104.9903, "generationtime_ms": 0.31, "utc_offset_seconds": -25200,
         "timezone": "America/Denver", "timezone_abbreviation": "MST", "elevation": 1609.0,
         "daily_units": {"time": "iso8601", "temperature_2m_max": "°F", "temperature_2m_min": "°F"},
         "daily": {"time": ["2026-03-01", "2026-03-02"], "temperature_2m_max": [51.3, 48.2],
           "temperature_2m_min": [28.4, 25.9]}}
        """

    @Test("a file read as the wrong format is an error naming the format it looks like")
    func wrongFormats() async throws {
        let s = try Scratch()
        let db = s.path("w.sqlite")
        let quakes = try s.write("quakes.geojson", quakeFeed([Self.puertoRico, Self.dominicanRepublic]))
        let ogc = try s.write("ogc.json", Self.ogcPage)
        let cwms = try s.write("cwms.json", Self.cwmsPage(next: nil, total: 3))
        let iv = try s.write("iv.json", Self.ivJSON)
        let nwps = try s.write("nwps.json", Self.nwpsGauge)
        let meteo = try s.write("meteo.json", Self.openMeteo)
        let rdb = try s.write("legacy.rdb", Self.legacyRDB(days: 3))
        let pairs: [(file: String, given: String, looksLike: String)] = [
            (quakes, "usgs-ogc-json", "usgs-quakes"),
            (ogc, "usgs-quakes", "usgs-ogc-json"),
            (iv, "cwms-json", "usgs-iv-json"),
            (cwms, "usgs-iv-json", "cwms-json"),
            (nwps, "cwms-json", "nwps-json"),
            (meteo, "owm-json", "open-meteo-json"),
            (rdb, "usgs-iv-json", "usgs-rdb"),
            (quakes, "usgs-rdb", "usgs-quakes"),
        ]
        for (file, given, looksLike) in pairs {
            let r = await InProcess.ingest(db: db, format: try #require(IngestFormat(rawValue: given)), file)
            #expect(r.status == 1, "\(given) \(file): \(r.stderr)")
            #expect(r.stderr.contains("try --format \(looksLike)"), "\(given) \(file): \(r.stderr)")
            #expect(r.stderr.contains("0 new, 0 revised, 0 unchanged, 1 rejected"), "\(r.stderr)")
        }
        // The case that used to pass in silence: the quake feed read as OGC parses, but yields nothing.
        let r = await InProcess.ingest(db: db, format: .usgsOGCJSON, quakes)
        #expect(
            r.errorLines.first
                == quakes + ": nothing to store: read as usgs-ogc-json it yields no readings, stations or events; "
                + "it looks like a USGS earthquake GeoJSON feed (features with mag and ids): try --format usgs-quakes")
        // Nothing was stored by the wrong formats.
        let store = try SQLiteStore.open(path: db)
        #expect(try await store.readingCount() == 0)
        #expect(try await store.quakes().isEmpty)
        // Given as readings, the feed is not a readings file: one rejected line, and a hint.
        let asReadings = await InProcess.ingest(db: db, format: .readings, quakes)
        #expect(asReadings.status == 1)
        #expect(asReadings.stderr.contains("try --format usgs-quakes"), "\(asReadings.stderr)")
        // Without --format it is read as what it looks like (issue 42): its quakes are stored.
        let plain = await InProcess.ingest(db: db, quakes)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(try await store.quakes().isEmpty == false)
    }

    @Test("an empty answer of the format given is fine: 0 new, exit 0")
    func emptyAnswers() async throws {
        let s = try Scratch()
        let db = s.path("e.sqlite")
        let feed = try s.write("none.geojson", quakeFeed([]))
        let r = await InProcess.ingest(db: db, format: .usgsQuakes, feed)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("an empty answer, nothing to store (a USGS earthquake GeoJSON feed with no events)"))
        #expect(r.stderr.contains("ingest: 0 new, 0 revised, 0 unchanged, 0 rejected"))
        // The same empty feed is not an empty OGC page.
        let wrong = await InProcess.ingest(db: db, format: .usgsOGCJSON, feed)
        #expect(wrong.status == 1)
        #expect(wrong.stderr.contains("try --format usgs-quakes"))
        let page = try s.write(
            "empty-page.json",
            #"{"type": "FeatureCollection", "features": [], "numberReturned": 0, "links": []}"#)
        let ogc = await InProcess.ingest(db: db, format: .usgsOGCJSON, page)
        #expect(ogc.status == 0, "\(ogc.stderr)")
        let iv = try s.write(
            "iv-empty.json", #"{"name": "ns1:timeSeriesResponseType", "value": {"timeSeries": []}}"#)
        #expect(await InProcess.ingest(db: db, format: .usgsIVJSON, iv).status == 0)
    }

    // MARK: RDB, pre-2005 layout

    /// Daily mean streamflow in the pre-2005 RDB layout, `days` days from 1990-01-01.
    static func legacyRDB(days: Int) -> String {
        var text = """
            #
            # U.S. Geological Survey
            # National Water Information System
            # Retrieved: 2004-06-02 10:41:07 EDT
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
            #  USGS 14211720 WILLAMETTE RIVER AT PORTLAND, OR
            #
            #
            agency_cd\tsite_no\tdv_dt\tdv_va\tdv_cd
            5s\t15s\t10d\t12n\t3s

            """
        let start = Timestamp.parse("1990-01-01T00:00:00Z")!
        for d in 0..<days {
            let date = Timestamp.format(start + Int64(d) * 86_400).prefix(10)
            text += "USGS\t14211720\t\(date)\t\(20_000 + d * 10)\t\(d % 7 == 3 ? "e" : "")\n"
        }
        return text
    }

    @Test("an old-layout RDB file given as readings: ten rejected lines, a count, and what it looks like")
    func boundedRejectionReport() async throws {
        let s = try Scratch()
        let db = s.path("r.sqlite")
        let file = try s.write("14211720_dv.rdb", Self.legacyRDB(days: 400))
        let r = await InProcess.ingest(db: db, format: .readings, file)
        #expect(r.status == 1)
        let lines = r.errorLines
        #expect(lines.count == 13, "\(r.stderr)")
        #expect(lines.prefix(10).allSatisfy { $0.hasPrefix(file + ":") })
        #expect(lines.first?.hasPrefix(file + ":1: header: unknown column") == true)
        // 19 comment lines, the column names and formats, 400 days: 421 lines.
        #expect(lines[10] == file + ": 411 more rejected lines not listed (421 in all)")
        #expect(
            lines[11]
                == file + ": it looks like an NWIS RDB daily-values file in the pre-2005 layout (dv_dt, dv_va): "
                + "try --format usgs-rdb")
        #expect(lines[12].hasPrefix("ingest: 0 new, 0 revised, 0 unchanged, 421 rejected"))

        // dry-run reports the same way.
        let rules = try s.write("q.yaml", "name: high\nkind: threshold\nmetric: discharge\nabove: 1\n")
        let dry = await InProcess.dryRun(rules: [rules], readings: [file])
        #expect(dry.status == 1)
        #expect(dry.errorLines.count == 13, "\(dry.stderr)")
        #expect(dry.stderr.contains("411 more rejected lines not listed (421 in all)"))
        #expect(dry.stderr.contains("klaxon ingest --format usgs-rdb"))

        // Read as what it is, every day is stored.
        let ok = await InProcess.ingest(db: db, format: .usgsRDB, file)
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stderr.contains("ingest: 400 new, 0 revised, 0 unchanged, 0 rejected"), "\(ok.stderr)")
        let store = try SQLiteStore.open(path: db)
        let readings = try await store.readings(station: "14211720", metric: "discharge.mean")
        #expect(readings.count == 400)
        #expect(readings.first?.time == Timestamp.parse("1990-01-01T00:00:00Z"))
        #expect(readings.first?.value == 20_000)
        #expect(readings.first?.unit == "ft³/s")
        #expect(readings[3].quality == "e")
        #expect(try await store.stationInfos()["14211720"]?.name == "WILLAMETTE RIVER AT PORTLAND, OR")
    }

    // MARK: CWMS pages, OGC positions

    @Test("a CWMS page that is not the last is loaded with a warning naming the pages after it")
    func cwmsPages() async throws {
        let s = try Scratch()
        let db = s.path("c.sqlite")
        let first = try s.write("keys-1.json", Self.cwmsPage(next: "MTUxNTEyODQwMDAwMHx8NzQ1fHwz", total: 745))
        let r = await InProcess.ingest(db: db, format: .cwmsJSON, first)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 2 new"), "\(r.stderr)")
        #expect(
            r.errorLines.first
                == first + ": warning: one page of several: 3 values on this page of 745 in all; the rest are on "
                + "the pages after it (ask again with page=<next-page>), not in this file")
        let last = try s.write("keys-last.json", Self.cwmsPage(next: nil, total: 745))
        let l = await InProcess.ingest(db: db, format: .cwmsJSON, last)
        #expect(l.status == 0)
        #expect(!l.stderr.contains("warning"), "\(l.stderr)")
    }

    @Test("an OGC observation page keeps its station's position")
    func ogcPositions() async throws {
        let s = try Scratch()
        let db = s.path("o.sqlite")
        let page = try s.write("continuous.json", Self.ogcPage)
        let r = await InProcess.ingest(db: db, format: .usgsOGCJSON, page)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("ingest: 1 new, 0 revised, 0 unchanged, 0 rejected, 1 station records"))
        let station = try #require(try await SQLiteStore.open(path: db).stationInfos()["06904500"])
        #expect(station.latitude == 40.2343333333333)
        #expect(station.longitude == -92.6863888888889)
        #expect(station.usgsID == "06904500")
    }
}
