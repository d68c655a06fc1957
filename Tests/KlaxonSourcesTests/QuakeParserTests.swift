import Foundation
import KlaxonCore
import KlaxonSources
import Testing

@Suite struct QuakeParserTests {
    @Test func summaryFeed() throws {
        let events = try QuakeParser.parse(try ParserFixtures.data("quakes_all_day.geojson"))
        #expect(
            events.map(\.id) == ["us6000a92u", "nc72719920", "ci37516791", "pr16308003", "us6000ldpm", "nn00565300"])

        // Float artifact, alias ids, PAGER level in capitals.
        #expect(
            events[0]
                == QuakeEvent(
                    id: "us6000a92u", ids: ["us6000a92u", "at00qbn7xz", "ew1591759465"], time: 1_591_759_464_390,
                    updated: 1_591_760_121_040, magnitude: 4.4, magType: "mb", place: "57 km SSW of Lithakia, Greece",
                    title: "M 4.4 - 57 km SSW of Lithakia, Greece", latitude: 37.2791, longitude: 20.4836, depthKm: 10,
                    sig: 298, alert: "green", tsunami: false, status: "reviewed", type: "earthquake",
                    url: "https://earthquake.usgs.gov/earthquakes/eventpage/us6000a92u", felt: 3, cdi: 2.7, mmi: nil,
                    tz: 60))
        #expect(events[0].magnitude == 4.4)
        #expect(events[0].timeSeconds == 1_591_759_464)

        // A negative magnitude.
        #expect(events[1].magnitude == -0.38)
        #expect(events[1].ids == ["nc72719920"])
        #expect(events[1].felt == nil && events[1].cdi == nil && events[1].alert == nil)
        #expect(events[1].tz == -480)

        // A quarry blast above the surface (negative depth).
        #expect(events[2].type == "quarry blast")
        #expect(events[2].depthKm == -0.77)

        // Null magnitude and sig, REVIEWED, a capitalised type.
        #expect(events[3].magnitude == nil)
        #expect(events[3].sig == nil)
        #expect(events[3].status == "reviewed")
        #expect(events[3].type == "earthquake")
        #expect(events[3].magType == "Md")
        #expect(events[3].time == 1_478_185_000_500)

        // PAGER orange, tsunami flag, null tz (newer feeds).
        #expect(events[4].alert == "orange")
        #expect(PagerLevel(events[4].alert) == .orange)
        #expect(events[4].tsunami)
        #expect(events[4].tz == nil)
        #expect(events[4].mmi == 8.1)

        // Deleted.
        #expect(events[5].isDeleted)
        #expect(!events[0].isDeleted)
    }

    @Test func detailFeature() throws {
        let events = try QuakeParser.parse(try ParserFixtures.data("quakes_detail.geojson"))
        #expect(
            events == [
                QuakeEvent(
                    id: "uw61965081", ids: ["ew1696818070", "at00s28p79", "uw61965081", "us6000le56"],
                    time: 1_696_818_068_750, updated: 1_697_053_294_041, magnitude: 4.32, magType: "ml",
                    place: "Port Townsend, WA", title: "M 4.3 - Port Townsend, WA", latitude: 48.02433333333333,
                    longitude: -122.70166666666667, depthKm: 57.17, sig: 757, alert: "green", tsunami: true,
                    status: "reviewed", type: "earthquake",
                    url: "https://earthquake.usgs.gov/earthquakes/eventpage/uw61965081", felt: 10825, cdi: 4.7,
                    mmi: 3.866, tz: nil)
            ])
    }

    @Test func idsAndOddValues() throws {
        // No feature id: net + code; ids repeated and spaced; tsunami as a boolean; a null depth.
        let body = """
            {"type":"FeatureCollection","features":[{"type":"Feature","properties":{"mag":5.0999999999999996,
             "time":1700000000000,"updated":1700000001000,"tsunami":true,"status":" Automatic ","type":"explosion",
             "net":"us","code":"7000abcd","ids":",us7000abcd, at00abcd,us7000abcd,,","alert":""},
             "geometry":{"type":"Point","coordinates":[-179.5,-12.25,null]}}]}
            """
        let events = try QuakeParser.parse(Data(body.utf8))
        // Two numbers could be [lon, lat] or a shifted [lat, depth]: USGS always gives three.
        let two = body.replacingOccurrences(of: "[-179.5,-12.25,null]", with: "[-179.5,-12.25]")
        #expect(throws: ParseError.self) { try QuakeParser.parse(Data(two.utf8)) }
        #expect(events.count == 1)
        let e = try #require(events.first)
        #expect(e.id == "us7000abcd")
        #expect(e.ids == ["us7000abcd", "at00abcd"])
        #expect(e.magnitude == 5.1)
        #expect(e.tsunami)
        #expect(e.status == "automatic")
        #expect(e.type == "explosion")
        #expect(e.alert == nil)
        #expect(e.depthKm == nil)
        #expect(e.longitude == -179.5 && e.latitude == -12.25)
        #expect(e.place == nil && e.url == nil)

        // The feature id is added to `ids` when the feed leaves it out.
        let other = """
            {"type":"Feature","id":"ci1","properties":{"time":1700000000000,"updated":1700000000000,"ids":",ci2,"},
             "geometry":{"type":"Point","coordinates":[-117,34,5]}}
            """
        #expect(try QuakeParser.parse(Data(other.utf8)).map(\.ids) == [["ci1", "ci2"]])
    }

    @Test func emptyCollection() throws {
        let body = #"{"type":"FeatureCollection","metadata":{"count":0},"features":[],"bbox":[]}"#
        #expect(try QuakeParser.parse(Data(body.utf8)).isEmpty)
    }

    @Test func htmlPageIsNotTheFormat() throws {
        let error = caughtParseError { _ = try QuakeParser.parse(try ParserFixtures.data("error_page.html")) }
        #expect(error?.kind == .notTheFormat)
        #expect(error?.format == "usgs-quakes")
        #expect(error?.description.contains("HTML") == true)
    }

    @Test func truncatedIsMalformed() throws {
        var data = try ParserFixtures.data("quakes_all_day.geojson")
        data = data.prefix(data.count / 2)
        let error = caughtParseError { _ = try QuakeParser.parse(data) }
        #expect(error?.kind == .malformed)
        #expect(error?.description == "usgs-quakes: truncated or malformed JSON")
        #expect(caughtParseError { _ = try QuakeParser.parse(Data()) }?.kind == .malformed)
    }

    @Test func fdsnErrorText() {
        let body = "Error 400: Bad Request\n\nBad starttime value \"yesterday\".\n\nUsage details are available from …"
        let error = caughtParseError { _ = try QuakeParser.parse(Data(body.utf8)) }
        #expect(error?.kind == .serverError)
        #expect(error?.description.hasPrefix("usgs-quakes: the server sent an error, not data: Error 400") == true)
    }

    @Test func missingFields() {
        let noTime = """
            {"type":"FeatureCollection","features":[{"type":"Feature","id":"a","properties":{"mag":1},
             "geometry":{"type":"Point","coordinates":[1,2,3]}},
             {"type":"Feature","id":"b","properties":{"mag":1},"geometry":{"type":"Point","coordinates":[1,2,3]}}]}
            """
        let e1 = caughtParseError { _ = try QuakeParser.parse(Data(noTime.utf8)) }
        #expect(e1?.kind == .missingField)
        #expect(e1?.description == "usgs-quakes: missing field 'features[0].properties.time'")

        let noGeometry = #"{"type":"Feature","id":"a","properties":{"time":1}}"#
        let e2 = caughtParseError { _ = try QuakeParser.parse(Data(noGeometry.utf8)) }
        #expect(e2?.description == "usgs-quakes: missing field 'geometry.coordinates'")

        let badTime = #"{"type":"FeatureCollection","features":[{"id":"a","properties":{"time":"yesterday"}}]}"#
        let e3 = caughtParseError { _ = try QuakeParser.parse(Data(badTime.utf8)) }
        #expect(e3?.kind == .badValue)
        #expect(e3?.description == "usgs-quakes: field 'features[0].properties.time' is not a number")

        let notGeoJSON = #"{"count": 3}"#
        let e4 = caughtParseError { _ = try QuakeParser.parse(Data(notGeoJSON.utf8)) }
        #expect(e4?.description == "usgs-quakes: missing field 'features'")

        let badLatitude = #"{"type":"Feature","id":"a","properties":{"time":1},"geometry":{"coordinates":[10,95,1]}}"#
        #expect(caughtParseError { _ = try QuakeParser.parse(Data(badLatitude.utf8)) }?.kind == .badValue)
    }

    // MARK: - Recorded payloads (counts checked independently with python3's json module)

    /// Tallies of one recorded file.
    struct Tally: Equatable {
        var count = 0
        var nullMagnitude = 0
        var nullFelt = 0
        var nullCDI = 0
        var nullMMI = 0
        var nullAlert = 0
        var nullTZ = 0
        var negative: [String] = []
        var types: [String: Int] = [:]
        var statuses: [String: Int] = [:]
        var alerts: [String: Int] = [:]
        var tsunami = 0
        var withAliases = 0
        var allIDs = 0

        init(_ events: [QuakeEvent]) {
            count = events.count
            for e in events {
                if e.magnitude == nil { nullMagnitude += 1 }
                if e.felt == nil { nullFelt += 1 }
                if e.cdi == nil { nullCDI += 1 }
                if e.mmi == nil { nullMMI += 1 }
                if e.tz == nil { nullTZ += 1 }
                if let a = e.alert { alerts[a, default: 0] += 1 } else { nullAlert += 1 }
                if let m = e.magnitude, m < 0 { negative.append(e.id) }
                types[e.type, default: 0] += 1
                statuses[e.status, default: 0] += 1
                if e.tsunami { tsunami += 1 }
                if e.ids.count > 1 { withAliases += 1 }
                allIDs += e.ids.count
            }
        }

        init() {}
    }

    @Test func recordedFiles() throws {
        #expect(
            try ParserFixtures.realFiles("usgs_earthquakes") == [
                "fdsn_query_geojson_M2.5_2020-06-03_to_06-10.geojson", "summary_all_day_2016-11.geojson",
                "summary_significant_month_2023-10.geojson",
            ])
        for name in try ParserFixtures.realFiles("usgs_earthquakes") {
            let events = try QuakeParser.parse(try ParserFixtures.realData("usgs_earthquakes/" + name))
            #expect(!events.isEmpty, "\(name)")
            // Event ids are unique within a file.
            #expect(Set(events.map(\.id)).count == events.count, "\(name)")
        }
    }

    @Test func recordedFDSNQuery() throws {
        let events = try QuakeParser.parse(
            try ParserFixtures.realData("usgs_earthquakes/fdsn_query_geojson_M2.5_2020-06-03_to_06-10.geojson"))
        var want = Tally()
        want.count = 388
        want.nullFelt = 291
        want.nullCDI = 291
        want.nullMMI = 347
        want.nullAlert = 367
        want.types = ["earthquake": 388]
        want.statuses = ["reviewed": 356, "automatic": 32]
        want.alerts = ["green": 20, "yellow": 1]
        want.tsunami = 8
        want.withAliases = 166
        want.allIDs = 572
        #expect(Tally(events) == want)

        let first = try #require(events.first)
        #expect(first.id == "us6000a92u")
        #expect(first.time == 1_591_759_464_390)
        #expect(first.updated == 1_591_760_121_040)
        #expect(first.magnitude == 4.4)  // 4.4000000000000004 in the file
        #expect(first.tz == 60)
        #expect(first.latitude == 37.2791 && first.longitude == 20.4836 && first.depthKm == 10)
        let last = try #require(events.last)
        #expect(last.id == "nc73401346")
        #expect(last.time == 1_591_144_962_880)
        #expect(last.ids == ["nc73401346", "nn00741634", "us6000a4ti"])
        #expect(last.magnitude == 2.52)
        #expect(last.depthKm == 2.7)
        #expect(events.max { ($0.magnitude ?? 0) < ($1.magnitude ?? 0) }?.id == "us6000a4yi")
        #expect(events.compactMap(\.magnitude).min() == 2.5)
        #expect(events.filter { $0.alert == "yellow" }.map(\.id) == ["us6000a8nh"])
        #expect(events.compactMap(\.sig).reduce(0, +) == 83096)
        #expect(events.compactMap(\.felt).reduce(0, +) == 17805)
        // Ordered newest first (`orderby=time`).
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.time >= $1.time })
    }

    @Test func recordedAllDay2016() throws {
        let events = try QuakeParser.parse(
            try ParserFixtures.realData("usgs_earthquakes/summary_all_day_2016-11.geojson"))
        var want = Tally()
        want.count = 151
        want.nullFelt = 143
        want.nullCDI = 143
        want.nullMMI = 150
        want.nullAlert = 151
        want.negative = ["nc72719920", "mb80188134", "nn00565300"]
        want.types = ["earthquake": 143, "quarry blast": 5, "explosion": 3]
        // 99 `reviewed` and 5 `REVIEWED`.
        want.statuses = ["reviewed": 104, "automatic": 47]
        want.tsunami = 1
        want.withAliases = 1
        want.allIDs = 152
        #expect(Tally(events) == want)

        #expect(events.first?.id == "ci37517303")
        #expect(events.first?.time == 1_478_198_296_090)
        #expect(events.first?.updated == 1_478_198_670_585)
        #expect(events.first?.tz == -420)
        #expect(events.last?.id == "nn00565265")
        #expect(events.last?.time == 1_478_113_011_327)
        #expect(events.first { $0.id == "nc72719920" }?.magnitude == -0.38)
        #expect(events.filter { $0.tsunami }.map(\.id) == ["us100073yc"])
        #expect(
            events.filter { $0.type != "earthquake" }.map(\.id) == [
                "ci37516791", "uw61227711", "mb80188139", "ci37516703", "uw61227596", "ci37516663", "uw61227581",
                "mb80188054",
            ])
        #expect(events.filter { $0.magType == "Md" }.count == 5)
        #expect(events.compactMap(\.depthKm).min() == -2.58)
        #expect(events.compactMap(\.sig).reduce(0, +) == 7444)
    }

    @Test func recordedSignificantMonth2023() throws {
        let events = try QuakeParser.parse(
            try ParserFixtures.realData("usgs_earthquakes/summary_significant_month_2023-10.geojson"))
        var want = Tally()
        want.count = 18
        want.nullFelt = 5
        want.nullCDI = 5
        want.nullMMI = 1
        want.nullAlert = 1
        want.nullTZ = 18
        want.types = ["earthquake": 18]
        want.statuses = ["reviewed": 18]
        want.alerts = ["green": 10, "yellow": 4, "orange": 2, "red": 1]
        want.tsunami = 4
        want.withAliases = 5
        want.allIDs = 30
        #expect(Tally(events) == want)

        let first = try #require(events.first)
        #expect(first.id == "us6000len8")
        #expect(first.time == 1_696_984_916_160)
        #expect(first.updated == 1_697_054_252_893)
        #expect(first.alert == "red")
        #expect(first.magnitude == 6.3 && first.magType == "mww")
        #expect(first.place == "western Afghanistan")
        #expect(first.sig == 2029 && first.felt == 49 && first.cdi == 6 && first.mmi == 7.857)
        #expect(events.last?.id == "us7000kv90")
        #expect(events.last?.time == 1_694_516_598_873)
        #expect(
            events.first { $0.id == "uw61965081" }?.ids == ["ew1696818070", "at00s28p79", "uw61965081", "us6000le56"])
        #expect(
            events.filter { $0.tsunami }.map(\.id) == ["uw61965081", "us6000ldqd", "nc73943821", "nc73938736"])
        #expect(events.filter { $0.alert == "orange" }.map(\.id) == ["us6000ldpm", "us6000ldpg"])
        #expect(events.compactMap(\.sig).reduce(0, +) == 14333)
    }
}
