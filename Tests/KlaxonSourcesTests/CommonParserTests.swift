import Foundation
import KlaxonCore
import KlaxonSources
import Testing

/// Fixture files: our own in `Fixtures/`, and the recorded real payloads in `Tests/Fixtures/real`
/// (public services' bodies copied byte for byte; their provenance is `Tests/Fixtures/real/SOURCES.md`).
enum ParserFixtures {
    /// This test folder, with symlinks resolved (a scratch package may link to it).
    static let directory = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath().deletingLastPathComponent()
    static let own = directory.appendingPathComponent("Fixtures")
    /// `Tests/` is one level above a test file.
    static let real = directory.deletingLastPathComponent().appendingPathComponent("Fixtures/real")

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: own.appendingPathComponent(name))
    }

    static func text(_ name: String) throws -> String {
        String(decoding: try data(name), as: UTF8.self)
    }

    static func realData(_ path: String) throws -> Data {
        try Data(contentsOf: real.appendingPathComponent(path))
    }

    static func realFiles(_ folder: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: real.appendingPathComponent(folder).path).sorted()
    }
}

func utcTime(_ text: String) -> Int64 {
    guard let t = Timestamp.parse(text) else { fatalError("bad test time \(text)") }
    return t
}

/// The error a parser threw, or nil when it did not throw a `ParseError`.
func caughtParseError(_ body: () throws -> Void) -> ParseError? {
    do {
        try body()
        return nil
    } catch let error as ParseError {
        return error
    } catch {
        return nil
    }
}

extension SourceBatch {
    func readingsOf(_ station: String, _ metric: String) -> [Reading] {
        readings.filter { $0.station == station && $0.metric == metric }
    }

    func stationInfo(_ id: String) -> StationInfo? { stations.first { $0.id == id } }
}

@Suite struct CommonParserTests {
    @Test func parameterNames() {
        #expect(USGSParameters.metric(forCode: "00065") == "gage_height")
        #expect(USGSParameters.metric(forCode: "00060") == "discharge")
        #expect(USGSParameters.metric(forCode: "00045") == "precipitation")
        #expect(USGSParameters.metric(forCode: "00010") == "water_temperature")
        #expect(USGSParameters.metric(forCode: "00095") == "p00095")
        #expect(USGSParameters.code(for: "gage_height") == "00065")
        #expect(USGSParameters.code(for: "00065") == "00065")
        #expect(USGSParameters.code(for: "discharge") == "00060")
        #expect(USGSParameters.code(for: "p00095") == "00095")
        #expect(USGSParameters.code(for: "00095") == "00095")
        #expect(USGSParameters.code(for: "stage") == nil)
        #expect(USGSParameters.code(for: "0006") == nil)
    }

    @Test func posixTimeZones() {
        #expect(TimeZones.iana(posix: "EST5EDT") == "America/New_York")
        #expect(TimeZones.iana(posix: "CST6CDT") == "America/Chicago")
        #expect(TimeZones.iana(posix: "MST7MDT") == "America/Denver")
        #expect(TimeZones.iana(posix: "MST7") == "America/Phoenix")
        #expect(TimeZones.iana(posix: "PST8PDT") == "America/Los_Angeles")
        #expect(TimeZones.iana(posix: "AKST9AKDT") == "America/Anchorage")
        #expect(TimeZones.iana(posix: "HST10") == "Pacific/Honolulu")
        #expect(TimeZones.iana(posix: "GMT0GMT") == "UTC")
        #expect(TimeZones.iana(posix: "UTC0") == "UTC")
        #expect(TimeZones.iana(posix: "GMT0") == "UTC")
        #expect(TimeZones.iana(posix: "XYZ3") == nil)
    }

    @Test func abbreviationTimeZones() {
        #expect(TimeZones.iana(abbreviation: "EST", usesDST: true) == "America/New_York")
        #expect(TimeZones.iana(abbreviation: "CST", usesDST: true) == "America/Chicago")
        #expect(TimeZones.iana(abbreviation: "MST", usesDST: true) == "America/Denver")
        #expect(TimeZones.iana(abbreviation: "MST", usesDST: false) == "America/Phoenix")
        #expect(TimeZones.iana(abbreviation: "PST", usesDST: true) == "America/Los_Angeles")
        #expect(TimeZones.iana(abbreviation: "AKST", usesDST: true) == "America/Anchorage")
        #expect(TimeZones.iana(abbreviation: "HST", usesDST: false) == "Pacific/Honolulu")
        #expect(TimeZones.iana(abbreviation: "AST", usesDST: false) == "America/Puerto_Rico")
        #expect(TimeZones.iana(abbreviation: "XST", usesDST: true) == nil)
    }

    @Test func offsets() {
        let expected: [String: Int] = [
            "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
            "AKST": -9, "AKDT": -8, "HST": -10, "AST": -4, "UTC": 0, "GMT": 0, "Z": 0,
        ]
        for (abbreviation, hours) in expected {
            #expect(TimeZones.offsetSeconds(abbreviation: abbreviation) == hours * 3600, "\(abbreviation)")
        }
        #expect(TimeZones.offsetSeconds(abbreviation: "XST") == nil)
    }

    @Test func htmlPageIsNamedForEveryJSONFormat() throws {
        let html = try ParserFixtures.data("error_page.html")
        let title = "got an HTML page, not JSON (title '503 Service Temporarily Unavailable')"
        let errors: [(String, ParseError?)] = [
            ("usgs-iv-json", caughtParseError { _ = try USGSIVParser.parse(html) }),
            ("usgs-ogc-json", caughtParseError { _ = try OGCParser.parse(html) }),
            ("nwps-json", caughtParseError { _ = try NWPSParser.gauge(html) }),
            ("nwps-json", caughtParseError { _ = try NWPSParser.stageflow(html, station: "X") }),
            ("cwms-json", caughtParseError { _ = try CWMSParser.parse(html) }),
        ]
        for (format, error) in errors {
            #expect(error?.description == "\(format): \(title)")
            #expect(error?.kind == .notTheFormat)
        }
        let rdb = caughtParseError { _ = try RDBParser.parse(String(decoding: html, as: UTF8.self)) }
        #expect(rdb?.description == "usgs-rdb: got an HTML page, not RDB (title '503 Service Temporarily Unavailable')")
    }

    @Test func xmlDocumentIsNamed() {
        let xml = Data(#"  <?xml version="1.0" encoding="UTF-8"?><ns1:timeSeriesResponse xmlns:ns1="x">"#.utf8)
        let error = caughtParseError { _ = try USGSIVParser.parse(xml) }
        #expect(error?.kind == .notTheFormat)
        #expect(
            error?.description
                == #"usgs-iv-json: got an XML document, not JSON ('<?xml version="1.0" encoding="UTF-8"?><ns1:timeSeriesRespons…')"#
        )
    }

    @Test func quotesAtMostAShortExcerpt() {
        let page = "<html><head><title>" + String(repeating: "Very long title ", count: 50) + "</title></head></html>"
        let error = caughtParseError { _ = try CWMSParser.parse(Data(page.utf8)) }
        let description = error?.description ?? ""
        #expect(description.hasPrefix("cwms-json: got an HTML page, not JSON (title 'Very long title Very"))
        #expect(description.count < 130)
        #expect(description.hasSuffix("…')"))
    }

    @Test func truncatedJSON() throws {
        let data = try ParserFixtures.data("truncated.json")
        let error = caughtParseError { _ = try USGSIVParser.parse(data) }
        #expect(error?.description == "usgs-iv-json: truncated or malformed JSON")
        #expect(error?.kind == .malformed)
        let cwms = caughtParseError {
            _ = try CWMSParser.parse(Data(#"{"name": "ARBU.Elev.Inst.1Hour.0.Ccp-Rev", "values": [[1"#.utf8))
        }
        #expect(cwms?.description == "cwms-json: truncated or malformed JSON")
    }

    @Test func emptyBody() {
        #expect(
            caughtParseError { _ = try OGCParser.parse(Data(" \n".utf8)) }?.description == "usgs-ogc-json: empty body")
    }

    @Test func serverErrorDocument() {
        let body = Data(#"{"error":{"code":"OVER_RATE_LIMIT","message":"API rate limit exceeded"}}"#.utf8)
        let error = caughtParseError { _ = try OGCParser.parse(body) }
        #expect(error?.kind == .serverError)
        #expect(
            error?.description
                == "usgs-ogc-json: the server sent an error, not data: OVER_RATE_LIMIT: API rate limit exceeded")
    }

    @Test func topLevelNotAnObject() {
        let error = caughtParseError { _ = try NWPSParser.gauge(Data("[1, 2]".utf8)) }
        #expect(error?.description == "nwps-json: the JSON is not an object with the expected fields")
    }
}
