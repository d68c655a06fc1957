import Foundation
import KlaxonCore
import Testing

@testable import KlaxonSources

@Suite("weather stations: NWS observations")
struct NWSObservationsParserTests {
    func batch(_ units: StationUnits, station: String? = nil) throws -> SourceBatch {
        try NWSObservationsParser.parse(
            try ParserFixtures.data("wx_nws_observations_kmwn.json"), units: units, station: station)
    }

    func value(_ b: SourceBatch, _ metric: String, _ time: String) -> Reading? {
        b.readings.first { $0.metric == metric && $0.time == utcTime(time) }
    }

    @Test("metric: NWS units made readable (km/h, °C), Pa → hPa; nulls are gaps, never readings")
    func metric() throws {
        let b = try batch(.metric)
        let noon = "2024-01-15T12:00:00Z"
        #expect(value(b, "wind_speed", noon)?.value == 80.4672)
        #expect(value(b, "wind_speed", noon)?.unit == "km/h")
        #expect(value(b, "wind_gust", noon)?.value == 120.7008)
        #expect(value(b, "temperature", noon)?.value == -20)
        #expect(value(b, "temperature", noon)?.unit == "°C")
        #expect(value(b, "pressure", noon)?.value == 810.6)
        #expect(value(b, "pressure", noon)?.unit == "hPa")
        #expect(value(b, "visibility", noon)?.value == 1609.344)
        #expect(value(b, "visibility", noon)?.unit == "m")
        #expect(value(b, "humidity", noon)?.value == 95.5)
        #expect(value(b, "humidity", noon)?.unit == "%")
        #expect(value(b, "wind_direction", noon)?.value == 290)
        #expect(value(b, "wind_direction", noon)?.unit == "°")
        #expect(value(b, "precipitation.1h", noon)?.value == 2.54)
        #expect(value(b, "precipitation.1h", noon)?.unit == "mm")
        // Null values (sea-level pressure, 24-hour extremes, heat index, 3- and 6-hour precipitation,
        // most gusts) are gaps.
        #expect(!b.readings.contains { $0.metric == "sea_level_pressure" || $0.metric == "heat_index" })
        #expect(b.readings.filter { $0.metric == "wind_gust" }.count == 1)
        #expect(b.readings.count == 4 * 8 + 2)  // 8 values each, one gust and one precipitation more
        #expect(b.gaps == 4 * 8 - 2)
        #expect(b.readings.allSatisfy { $0.station == "KMWN" && $0.source == "nws-observations" })
    }

    @Test("us: °F, mph, inHg, mi and in, converted exactly (to 4 decimals)")
    func us() throws {
        let b = try batch(.us)
        #expect(value(b, "wind_speed", "2024-01-15T12:00:00Z")?.value == 50)
        #expect(value(b, "wind_speed", "2024-01-15T12:00:00Z")?.unit == "mph")
        #expect(value(b, "wind_speed", "2024-01-15T11:50:00Z")?.value == 55)
        #expect(value(b, "wind_speed", "2024-01-15T11:40:00Z")?.value == 45)
        #expect(value(b, "wind_speed", "2024-01-15T11:30:00Z")?.value == 40)
        #expect(value(b, "wind_gust", "2024-01-15T12:00:00Z")?.value == 75)
        #expect(value(b, "temperature", "2024-01-15T12:00:00Z")?.value == -4)
        #expect(value(b, "temperature", "2024-01-15T12:00:00Z")?.unit == "°F")
        #expect(value(b, "dewpoint", "2024-01-15T12:00:00Z")?.value == -7.96)
        #expect(value(b, "pressure", "2024-01-15T12:00:00Z")?.value == 23.937)
        #expect(value(b, "pressure", "2024-01-15T12:00:00Z")?.unit == "inHg")
        #expect(value(b, "visibility", "2024-01-15T12:00:00Z")?.value == 1)
        #expect(value(b, "visibility", "2024-01-15T11:30:00Z")?.value == 10)
        #expect(value(b, "visibility", "2024-01-15T12:00:00Z")?.unit == "mi")
        #expect(value(b, "precipitation.1h", "2024-01-15T12:00:00Z")?.value == 0.1)
        #expect(value(b, "precipitation.1h", "2024-01-15T12:00:00Z")?.unit == "in")
        // Percent and degrees are the same in both.
        #expect(value(b, "humidity", "2024-01-15T12:00:00Z")?.value == 95.5)
        #expect(value(b, "wind_direction", "2024-01-15T12:00:00Z")?.value == 290)
    }

    @Test("other unit codes convert to the same units: m/s, knots, °F, K, hPa, km")
    func unitCodes() {
        typealias P = NWSObservationsParser
        #expect(P.convert(10, from: "wmoUnit:m_s-1", quantity: .speed, to: .metric) == 36)
        #expect(P.convert(10, from: "wmoUnit:kn", quantity: .speed, to: .metric) == 18.52)
        #expect(P.convert(212, from: "wmoUnit:degF", quantity: .temperature, to: .metric) == 100)
        #expect(P.convert(212, from: "wmoUnit:degF", quantity: .temperature, to: .us) == 212)
        #expect(P.convert(273.15, from: "wmoUnit:K", quantity: .temperature, to: .metric) == 0)
        #expect(P.convert(1013.25, from: "wmoUnit:hPa", quantity: .pressure, to: .metric) == 1013.25)
        #expect(P.convert(101_325, from: "wmoUnit:Pa", quantity: .pressure, to: .us) == 29.9213)
        #expect(P.convert(16.09344, from: "wmoUnit:km", quantity: .distance, to: .us) == 10)
        // A missing unit code is the unit NWS documents for the property.
        #expect(P.convert(101_325, from: nil, quantity: .pressure, to: .metric) == 1013.25)
        // A unit the quantity does not come in is not guessed at.
        #expect(P.convert(10, from: "wmoUnit:Pa", quantity: .speed, to: .metric) == nil)
    }

    @Test("quality control: X (rejected) and Q (questioned) make a reading suspect; V, S, C do not")
    func quality() throws {
        let b = try batch(.metric)
        let rejected = try #require(value(b, "temperature", "2024-01-15T11:30:00Z"))
        #expect(rejected.quality == "X")
        #expect(Plausibility.isSuspect(rejected))
        let questioned = try #require(value(b, "wind_speed", "2024-01-15T11:40:00Z"))
        #expect(questioned.quality == "Q")
        #expect(Plausibility.isSuspect(questioned))
        for r in b.readings where r.quality != "X" && r.quality != "Q" {
            #expect(!Plausibility.isSuspect(r), "\(r)")
        }
        // The same letter from another source means nothing; written nws:X it does.
        #expect(!Plausibility.qualityIsSuspect("X", source: "usgs-iv"))
        #expect(Plausibility.qualityIsSuspect("nws:Q", source: nil))
    }

    @Test("plausible ranges of the station metrics, in each unit")
    func ranges() {
        func suspect(_ metric: String, _ value: Double, _ unit: String) -> Bool {
            Plausibility.isSuspect(Reading(station: "S", metric: metric, time: 0, value: value, unit: unit))
        }
        #expect(suspect("humidity", 101, "%"))
        #expect(!suspect("humidity", 100, "%"))
        #expect(suspect("wind_speed", -1, "mph"))
        #expect(!suspect("wind_speed", 231, "mph"))  // Mount Washington's 1934 gust
        #expect(suspect("wind_gust", 600, "km/h"))
        #expect(suspect("temperature", 150, "°C"))
        #expect(!suspect("temperature.max_24h", 120, "°F"))
        #expect(suspect("pressure", 1013.25, "inHg"))
        #expect(!suspect("pressure", 23.9, "inHg"))
        #expect(!suspect("sea_level_pressure", 1013.25, "hPa"))
        #expect(suspect("visibility", -1, "m"))
        #expect(suspect("wind_direction", 361, "°"))
    }

    @Test("the station document: name, position, IANA zone and elevation")
    func station() throws {
        let s = try #require(try NWSObservationsParser.station(try ParserFixtures.data("wx_nws_station_kmwn.json")))
        #expect(s.id == "KMWN")
        #expect(s.name == "Mount Washington")
        #expect(s.latitude == 44.2706)
        #expect(s.longitude == -71.3033)
        #expect(s.timeZone == "America/New_York")
        #expect(s.attributes["elevation_m"] == "1910.1")
        #expect(s.source == "nws-observations")
        // Through parse, the same document is a batch of one station.
        let b = try NWSObservationsParser.parse(try ParserFixtures.data("wx_nws_station_kmwn.json"))
        #expect(b.stations == [s])
        #expect(b.readings.isEmpty)
    }

    @Test("the station id: stationId, else the station URL; the source's own id wins")
    func stationIDs() throws {
        let b = try batch(.metric)
        #expect(Set(b.readings.map(\.station)) == ["KMWN"])
        #expect(b.stations.map(\.name) == ["Mount Washington"])
        let renamed = try batch(.metric, station: "MWN")
        #expect(Set(renamed.readings.map(\.station)) == ["MWN"])
    }

    @Test("/observations/latest: one Feature")
    func latest() throws {
        let body = #"""
            {"id":"https://api.weather.gov/stations/KDEN/observations/2024-07-04T18:53:00+00:00","type":"Feature","geometry":{"type":"Point","coordinates":[-104.65,39.85]},"properties":{"station":"https://api.weather.gov/stations/KDEN","timestamp":"2024-07-04T18:53:00+00:00","temperature":{"unitCode":"wmoUnit:degC","value":33.3,"qualityControl":"V"},"relativeHumidity":{"unitCode":"wmoUnit:percent","value":12.4,"qualityControl":"V"},"windSpeed":{"unitCode":"wmoUnit:km_h-1","value":null,"qualityControl":"Z"}}}
            """#
        let b = try NWSObservationsParser.parse(Data(body.utf8), units: .us)
        #expect(b.readings.map(\.metric) == ["temperature", "humidity"])
        #expect(b.readings.first?.value == 91.94)
        #expect(b.readings.first?.time == utcTime("2024-07-04T18:53:00Z"))
        #expect(b.readings.first?.station == "KDEN")
        #expect(b.gaps == 1)
    }

    @Test(
        "bad bodies are clear errors",
        arguments: [
            ("<html><head><title>Service Unavailable</title></head></html>", "got an HTML page"),
            (#"{"type":"FeatureCollection","features":[{"properties":{"timest"#, "truncated or malformed JSON"),
            (
                #"{"features":[{"properties":{"station":"x/KDEN","timestamp":"yesterday","temperature":{"value":1}}}]}"#,
                "bad time 'yesterday' in features[0].properties.timestamp"
            ),
            (
                #"{"features":[{"properties":{"station":"x/KDEN","timestamp":"2024-07-04T18:53:00+00:00","temperature":{"value":"hot"}}}]}"#,
                "field 'features[0].properties.temperature.value' is not a number"
            ),
            (
                #"{"features":[{"properties":{"timestamp":"2024-07-04T18:53:00+00:00","temperature":{"value":1}}}]}"#,
                "missing field 'features[0].properties.station'"
            ),
            (#"{"correlationId":"x","title":"Not Found","status":404}"#, "missing field 'features'"),
        ])
    func errors(body: String, expected: String) {
        do {
            _ = try NWSObservationsParser.parse(Data(body.utf8))
            Issue.record("\(body) parsed")
        } catch {
            #expect("\(error)".hasPrefix("nws-observations: "), "\(error)")
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    @Test("a value no station measures (1e300 km/h) is a gap; an unknown unit code is named, not a gap")
    func hostileValues() throws {
        let body = #"""
            {"features":[{"properties":{"stationId":"KDEN","timestamp":"2024-07-04T18:53:00+00:00","windSpeed":{"unitCode":"wmoUnit:km_h-1","value":1e300},"windGust":{"unitCode":"wmoUnit:furlong_fortnight-1","value":3},"temperature":{"unitCode":"wmoUnit:degC","value":-1e300}}}]}
            """#
        // Issue 27: a value in an unknown unit is not a missing value; a body with nothing else to
        // store is an error that names the code (it was 3 gaps, stored nothing, exit 0).
        let error = caughtParseError { _ = try NWSObservationsParser.parse(Data(body.utf8), units: .us) }
        #expect("\(error.map { "\($0)" } ?? "parsed")".contains("saw unitCode 'wmoUnit:furlong_fortnight-1' 1 time"))
        let known = body.replacingOccurrences(of: "furlong_fortnight-1", with: "km_h-1")
        let b = try NWSObservationsParser.parse(Data(known.utf8), units: .us)
        #expect(b.readings.map(\.metric) == ["wind_gust"])
        #expect(b.gaps == 2)
    }
}

@Suite("weather stations: http-json")
struct HTTPJSONParserTests {
    static let summit = StationInfo(id: "MWO", source: "http-json", name: "Summit", timeZone: "America/New_York")

    func layout(
        records: String = "/observations", time: String = "/time", format: StationTimeFormat = .iso8601,
        zone: String? = "America/New_York", metrics: [(String, String, String?, Double, Double)]
    ) -> HTTPJSONLayout {
        HTTPJSONLayout(
            records: JSONPointer(records)!, time: JSONPointer(time)!, timeFormat: format, timeZone: zone,
            station: Self.summit,
            metrics: metrics.map {
                .init(name: $0.0, pointer: JSONPointer($0.1)!, unit: $0.2, scale: $0.3, offset: $0.4)
            })
    }

    @Test("records by pointer, values by pointer with scale and offset, local times in the zone")
    func basic() throws {
        let body = #"""
            {"station":"MWO","observations":[
              {"time":"2024-01-15 07:00:00","wind":{"half":25,"dir":290},"temp_f":"-4","rh":95},
              {"time":"2024-01-15T07:10:00-05:00","wind":{"half":null,"dir":280},"temp_f":-5.8,"rh":""},
              {"time":"2024-07-04 12:00:00","wind":{"half":10},"temp_f":50}
            ]}
            """#
        let l = layout(metrics: [
            ("wind_speed", "/wind/half", "mph", 2, 0),
            ("temperature", "/temp_f", "°C", 5.0 / 9.0, -160.0 / 9.0),
            ("humidity", "/rh", "%", 1, 0),
        ])
        let b = try HTTPJSONParser.parse(Data(body.utf8), layout: l)
        let wind = b.readings.filter { $0.metric == "wind_speed" }
        #expect(wind.map(\.time) == [utcTime("2024-01-15T12:00:00Z"), utcTime("2024-07-04T16:00:00Z")])
        #expect(wind.map(\.value) == [50, 20])
        #expect(wind.first?.unit == "mph")
        #expect(b.readings.filter { $0.metric == "temperature" }.map(\.value) == [-20, -21, 10])
        #expect(b.readings.filter { $0.metric == "humidity" }.map(\.value) == [95])
        #expect(b.gaps == 3)  // a null, an empty string and a missing field
        #expect(b.stations == [Self.summit])
        #expect(b.readings.allSatisfy { $0.station == "MWO" && $0.source == "http-json" })
    }

    @Test("a single object is one record; \"\" is the whole document; unix and unix_ms times")
    func shapes() throws {
        let one = try HTTPJSONParser.parse(
            Data(#"{"ts":1705320000,"w":{"s":12.5}}"#.utf8),
            layout: layout(
                records: "", time: "/ts", format: .unix, zone: nil, metrics: [("wind_speed", "/w/s", "mph", 1, 0)]))
        #expect(one.readings.map(\.time) == [utcTime("2024-01-15T12:00:00Z")])
        #expect(one.readings.map(\.value) == [12.5])
        let list = try HTTPJSONParser.parse(
            Data(#"[{"ts":"1705320000123","v":1},{"ts":1705320600999,"v":2}]"#.utf8),
            layout: layout(
                records: "", time: "/ts", format: .unixMilliseconds, zone: nil, metrics: [("x", "/v", nil, 1, 0)]))
        #expect(list.readings.map(\.time) == [utcTime("2024-01-15T12:00:00Z"), utcTime("2024-01-15T12:10:00Z")])
        #expect(list.readings.first?.unit == nil)
    }

    @Test("time patterns: strict fields, 12-hour clocks, month names, offsets; the zone's DST")
    func patterns() throws {
        func utc(_ pattern: String, _ text: String, zone: String? = "America/New_York") -> Int64? {
            guard case .success(let f) = StationTimeFormat.read(pattern) else { return nil }
            guard case .success(let t) = f.time(.string(text), zone: zone.flatMap(TimeZone.init(identifier:)))
            else { return nil }
            return t
        }
        #expect(utc("%Y-%m-%d %H:%M", "2024-01-15 07:00") == utcTime("2024-01-15T12:00:00Z"))
        #expect(utc("%Y-%m-%d %H:%M", "2024-07-15 07:00") == utcTime("2024-07-15T11:00:00Z"))
        #expect(utc("%d/%m/%Y %I:%M %p", "15/01/2024 1:05 PM") == utcTime("2024-01-15T18:05:00Z"))
        #expect(utc("%d/%m/%Y %I:%M %p", "15/01/2024 12:05 am") == utcTime("2024-01-15T05:05:00Z"))
        #expect(utc("%d %b %Y %H:%M:%S.%f%z", "15 Jan 2024 12:00:00.250+0530") == utcTime("2024-01-15T06:30:00Z"))
        #expect(utc("%Y%m%d%H%M%z", "202401151200Z", zone: nil) == utcTime("2024-01-15T12:00:00Z"))
        // The repeated hour when clocks fall back: the first of the two.
        #expect(utc("%Y-%m-%d %H:%M", "2024-11-03 01:30") == utcTime("2024-11-03T05:30:00Z"))
        // The skipped hour in spring: read with the offset before the change.
        #expect(utc("%Y-%m-%d %H:%M", "2024-03-10 02:30") == utcTime("2024-03-10T07:30:00Z"))
        // Strict: trailing text, impossible dates, a missing zone.
        #expect(utc("%Y-%m-%d %H:%M", "2024-01-15 07:00Z") == nil)
        #expect(utc("%Y-%m-%d %H:%M", "2023-02-29 07:00") == nil)
        #expect(utc("%Y-%m-%d %H:%M", "2024-01-15 24:00") == nil)
        #expect(utc("%Y-%m-%d %H:%M", "2024-01-15 07:00", zone: nil) == nil)
        // Patterns that cannot work are refused with a reason.
        for (bad, why) in [
            ("%Y-%m-%d", "needs an hour"), ("%Y-%m %H:%M", "needs a day"), ("%Y-%m-%d %I:%M", "%I and %p go together"),
            ("%Y-%m-%d %H:%M %q", "unknown field %q"), ("%Y-%m-%d %H:%M %", "lone %"),
            ("YYYY-MM-DD", "must be iso8601"),
        ] {
            guard case .failure(let problem) = StationTimeFormat.read(bad) else {
                Issue.record("\(bad) was accepted")
                continue
            }
            #expect("\(problem)".contains(why), "\(bad): \(problem)")
        }
    }

    @Test("JSON pointers follow RFC 6901: escapes, indexes, what names nothing")
    func pointers() throws {
        let doc = JSONValue.object([
            "a/b": .number(1), "m~n": .number(2), "list": .array([.number(10), .number(11)]), "": .number(3),
        ])
        #expect(JSONPointer("/a~1b")!.resolve(doc) == .number(1))
        #expect(JSONPointer("/m~0n")!.resolve(doc) == .number(2))
        #expect(JSONPointer("/list/1")!.resolve(doc) == .number(11))
        #expect(JSONPointer("/")!.resolve(doc) == .number(3))
        #expect(JSONPointer("")!.resolve(doc) == doc)
        #expect(JSONPointer("/list/01")!.resolve(doc) == nil)
        #expect(JSONPointer("/list/-")!.resolve(doc) == nil)
        #expect(JSONPointer("/list/2")!.resolve(doc) == nil)
        #expect(JSONPointer("/missing/x")!.resolve(doc) == nil)
        for bad in ["a/b", "/x~2", "/x~", String(repeating: "/a", count: 600)] {
            #expect(JSONPointer(bad) == nil, "\(bad.prefix(20))")
        }
    }

    @Test(
        "strict: bad bodies and values are errors naming the record and pointer",
        arguments: [
            ("<!doctype html><html><title>Down for maintenance</title></html>", "got an HTML page"),
            (#"{"observations":[{"time":"2024-01-15 07:00:00","#, "truncated or malformed JSON"),
            (#"{"data":[]}"#, "records pointer \"/observations\" names nothing"),
            (#"{"observations":"none"}"#, "names neither a list nor an object"),
            (#"{"observations":[{"wind":1}]}"#, "record 0 has no time at \"/time\""),
            (
                #"{"observations":[{"time":"soon","wind":1}]}"#,
                "record 0: time \"soon\" at \"/time\" is not an ISO 8601 time"
            ),
            (
                #"{"observations":[{"time":"2024-01-15T12:00:00Z","wind":"calm"}]}"#,
                "record 0: wind_speed at \"/wind\" is \"calm\", not a number"
            ),
            (#"{"observations":[{"time":"2024-01-15T12:00:00Z","wind":{"s":1}}]}"#, "is an object, not a number"),
            (#"{"observations":[{"time":"2024-01-15T12:00:00Z","wind":1e300}]}"#, "out of range"),
            (
                #"{"observations":[{"time":"2024-01-15T12:00:00Z","wnd":1}]}"#,
                "wind_speed: pointer \"/wind\" matches nothing in any of the 1 records"
            ),
            (#"{"error":{"code":"OVER_RATE_LIMIT","message":"slow down"}}"#, "the server sent an error"),
        ])
    func errors(body: String, expected: String) {
        let l = layout(metrics: [("wind_speed", "/wind", "mph", 1, 0)])
        do {
            let b = try HTTPJSONParser.parse(Data(body.utf8), layout: l)
            Issue.record("parsed: \(b.readings)")
        } catch {
            #expect("\(error)".hasPrefix("http-json: "), "\(error)")
            #expect("\(error)".contains(expected), "\(error)")
        }
    }

    @Test("unix times outside 1800–2200 are refused, never trapped on")
    func hugeTimes() {
        for value in [1e300, -1e300, 9.3e18, 1e13] {
            let body = #"[{"t":\#(value),"v":1}]"#
            let l = layout(records: "", time: "/t", format: .unix, zone: nil, metrics: [("x", "/v", nil, 1, 0)])
            #expect(throws: ParseError.self) { try HTTPJSONParser.parse(Data(body.utf8), layout: l) }
        }
    }
}
