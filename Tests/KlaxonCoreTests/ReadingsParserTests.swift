import KlaxonCore
import Testing

/// `ParsedRow` in a form `#expect` can compare.
enum Row: Equatable, CustomStringConvertible {
    case reading(Reading, line: Int)
    case rejected(line: Int, reason: String)

    init(_ row: ParsedRow) {
        switch row {
        case .reading(let r, let line): self = .reading(r, line: line)
        case .rejected(let line, let reason): self = .rejected(line: line, reason: reason)
        }
    }

    var line: Int {
        switch self {
        case .reading(_, let line), .rejected(let line, _): line
        }
    }

    var reading: Reading? {
        if case .reading(let r, _) = self { return r }
        return nil
    }

    var reason: String? {
        if case .rejected(_, let reason) = self { return reason }
        return nil
    }

    var description: String {
        switch self {
        case .reading(let r, let line):
            "\(line): \(r.station) \(r.metric) \(r.time) \(r.value) unit=\(r.unit ?? "-") source=\(r.source ?? "-") quality=\(r.quality ?? "-")"
        case .rejected(let line, let reason): "\(line): rejected: \(reason)"
        }
    }
}

func parse(_ text: String, _ format: ReadingsParser.Format) -> [Row] {
    ReadingsParser.parseAll(text, format: format).map(Row.init)
}

/// Feeds `bytes` to a parser in chunks of `size` bytes, as a file reader would.
func parseInChunks(_ bytes: [UInt8], size: Int, _ format: ReadingsParser.Format) -> [Row] {
    var parser = ReadingsParser(format: format)
    var rows: [Row] = []
    var start = 0
    while start < bytes.count {
        let end = min(start + size, bytes.count)
        bytes[start..<end].withUnsafeBufferPointer { chunk in
            parser.feed(chunk) { rows.append(Row($0)) }
        }
        start = end
    }
    parser.finish { rows.append(Row($0)) }
    return rows
}

private let t0Text = "2026-01-01T00:00:00Z"

@Suite("ReadingsParser: CSV")
struct CSVParserTests {
    @Test("a minimal file gives one reading per data line with its line number")
    func minimal() {
        let rows = parse(
            "station,metric,time,value\ns1,m,2026-01-01T00:00:00Z,1.5\ns2,n,2026-01-01T00:15:00Z,-2\n", .csv)
        #expect(
            rows == [
                .reading(Reading(station: "s1", metric: "m", time: t0, value: 1.5), line: 2),
                .reading(Reading(station: "s2", metric: "n", time: t0 + 900, value: -2), line: 3),
            ])
    }

    @Test("optional unit, source and quality columns in any order; header names are case-insensitive")
    func columnsInAnyOrder() {
        let text = """
            Value,unit,TIME,source,metric,quality,station
            12.4,ft,2026-01-01T00:00:00Z,usgs,gage_height,P,01646500
            3,,2026-01-01T00:05:00Z,,gage_height,,01646500
            """
        #expect(
            parse(text, .csv) == [
                .reading(
                    Reading(
                        station: "01646500", metric: "gage_height", time: t0, value: 12.4, unit: "ft", source: "usgs",
                        quality: "P"), line: 2),
                .reading(Reading(station: "01646500", metric: "gage_height", time: t0 + 300, value: 3), line: 3),
            ])
    }

    @Test("only some optional columns")
    func someOptionalColumns() {
        let rows = parse("source,station,metric,time,value\nnoaa,s1,m,2026-01-01T00:00:00Z,7\n", .csv)
        #expect(rows == [.reading(Reading(station: "s1", metric: "m", time: t0, value: 7, source: "noaa"), line: 2)])
    }

    @Test("quoted fields may hold commas and doubled quotes; a quoted header works too")
    func quoted() {
        let text =
            "\"station\",\"metric\",\"time\",\"value\",\"unit\"\n"
            + "\"s,1\",\"m\",\"2026-01-01T00:00:00Z\",\"2.5\",\"ft \"\"gage\"\"\"\n"
            + "s2,m, \"2026-01-01T00:00:00Z\" ,\"3\",\n"
        #expect(
            parse(text, .csv) == [
                .reading(Reading(station: "s,1", metric: "m", time: t0, value: 2.5, unit: "ft \"gage\""), line: 2),
                .reading(Reading(station: "s2", metric: "m", time: t0, value: 3), line: 3),
            ])
    }

    @Test("spaces around unquoted fields are trimmed")
    func trimmed() {
        let rows = parse("station , metric,time ,value\n s1 , m , 2026-01-01T00:00:00Z , 4.25 \n", .csv)
        #expect(rows == [.reading(Reading(station: "s1", metric: "m", time: t0, value: 4.25), line: 2)])
    }

    @Test("CRLF line endings, a BOM and blank lines; line numbers count every physical line")
    func crlfBomBlank() {
        let text =
            "\u{FEFF}station,metric,time,value\r\n\r\ns1,m,2026-01-01T00:00:00Z,1\r\n   \r\n\t\ns1,m,2026-01-01T00:05:00Z,2\r\n\r\n"
        #expect(
            parse(text, .csv) == [
                .reading(Reading(station: "s1", metric: "m", time: t0, value: 1), line: 3),
                .reading(Reading(station: "s1", metric: "m", time: t0 + 300, value: 2), line: 6),
            ])
    }

    @Test("a last line without a newline is read")
    func noFinalNewline() {
        let rows = parse("station,metric,time,value\ns1,m,2026-01-01T00:00:00Z,9", .csv)
        #expect(rows == [.reading(Reading(station: "s1", metric: "m", time: t0, value: 9), line: 2)])
    }

    @Test(
        "a bad time rejects its line with the right line number",
        arguments: ["2026-01-01T00:00:00", "2026-13-01T00:00:00Z", "yesterday", "2026-02-30T00:00:00Z", ""])
    func badTime(time: String) throws {
        let text =
            "station,metric,time,value\ns1,m,2026-01-01T00:00:00Z,1\n\ns1,m,\(time),2\ns1,m,2026-01-01T01:00:00Z,3\n"
        let rows = parse(text, .csv)
        #expect(rows.count == 3)
        #expect(rows.map(\.line) == [2, 4, 5])
        #expect(rows[0].reading?.value == 1)
        let reason = try #require(rows[1].reason)
        #expect(reason.contains("time"))
        #expect(rows[2].reading?.value == 3)
    }

    @Test("a bad time in a quoted line is rejected too")
    func badTimeQuoted() {
        let rows = parse("station,metric,time,value\n\"s1\",m,\"2026-01-01T00:00:00\",1\n", .csv)
        #expect(rows.count == 1)
        #expect(rows.first?.line == 2)
        #expect(rows.first?.reason?.contains("time") == true)
    }

    @Test(
        "a value that is not a finite number is rejected",
        arguments: ["NaN", "nan", "inf", "-Infinity", "abc", "1.2.3", "", "1e999"])
    func badValue(value: String) {
        let rows = parse("station,metric,time,value\ns1,m,\(t0Text),\(value)\n", .csv)
        #expect(rows.count == 1)
        #expect(rows.first?.line == 2)
        #expect(rows.first?.reason?.contains("value") == true)
    }

    @Test("an unknown column rejects the header on line 1 and every data line after it")
    func unknownColumn() throws {
        let rows = parse("station,metric,time,value,colour\ns1,m,\(t0Text),1,red\n\ns1,m,\(t0Text),2,blue\n", .csv)
        #expect(rows.map(\.line) == [1, 2, 4])
        #expect(rows.allSatisfy { $0.reading == nil })
        let header = try #require(rows.first?.reason)
        #expect(header.contains("unknown column"))
        #expect(header.contains("colour"))
    }

    @Test(
        "headers that are rejected",
        arguments: [
            ("station,metric,time", "missing column"),
            ("station,metric,value", "missing column"),
            ("station,metric,time,value,station", "twice"),
            ("station,metric,time,val", "unknown column"),
            ("\"station,metric,time,value", "unterminated"),
        ])
    func badHeaders(header: String, reasonContains: String) throws {
        let rows = parse("\(header)\ns1,m,\(t0Text),1\n", .csv)
        #expect(rows.count == 2)
        let first = try #require(rows.first)
        #expect(first.line == 1)
        #expect(first.reason?.contains(reasonContains) == true, "\(first)")
        #expect(rows.last?.reading == nil)
    }

    @Test(
        "a line with the wrong number of fields is rejected",
        arguments: ["s1,m,\(t0Text)", "s1,m,\(t0Text),1,extra", "s1", "\"s1\",m,\(t0Text),1,\"x\""])
    func wrongFieldCount(line: String) {
        let rows = parse("station,metric,time,value\n\(line)\ns1,m,\(t0Text),5\n", .csv)
        #expect(rows.count == 2)
        #expect(rows.first?.line == 2)
        #expect(rows.first?.reason?.contains("expected 4 fields") == true)
        #expect(rows.last == .reading(Reading(station: "s1", metric: "m", time: t0, value: 5), line: 3))
    }

    @Test(
        "other malformed lines",
        arguments: [
            (",m,\(t0Text),1", "station"), ("s1,,\(t0Text),1", "metric"), ("s1,m,\(t0Text),\"1", "unterminated"),
            ("s1,m,\(t0Text),1\"", "quote"),
        ])
    func malformed(line: String, reasonContains: String) {
        let rows = parse("station,metric,time,value\n\(line)\n", .csv)
        #expect(rows.count == 1)
        #expect(rows.first?.line == 2)
        #expect(rows.first?.reason?.contains(reasonContains) == true, "\(rows)")
    }
}

@Suite("ReadingsParser: JSON Lines")
struct JSONLinesParserTests {
    @Test("a good object, with and without optional keys")
    func good() {
        let text = """
            {"station":"01646500","metric":"gage_height","time":"2026-01-01T00:00:00Z","value":12.4,"unit":"ft","source":"usgs","quality":"P"}
            {"station":"s1","metric":"m","time":"2026-01-01T05:30:00+05:30","value":-3}
            """
        #expect(
            parse(text, .jsonLines) == [
                .reading(
                    Reading(
                        station: "01646500", metric: "gage_height", time: t0, value: 12.4, unit: "ft", source: "usgs",
                        quality: "P"), line: 1),
                .reading(Reading(station: "s1", metric: "m", time: t0, value: -3), line: 2),
            ])
    }

    @Test("a value given as a numeric string is read as a number")
    func numericString() {
        let rows = parse(#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":"12.5"}"#, .jsonLines)
        #expect(rows == [.reading(Reading(station: "s1", metric: "m", time: t0, value: 12.5), line: 1)])
    }

    @Test("null optional keys are absent")
    func nullOptional() {
        let rows = parse(
            #"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":1,"unit":null}"#, .jsonLines)
        #expect(rows == [.reading(Reading(station: "s1", metric: "m", time: t0, value: 1), line: 1)])
    }

    @Test(
        "objects that are rejected, and why",
        arguments: [
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":1,"colour":"red"}"#, "unknown key"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z"}"#, "value is missing"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":null}"#, "value is missing"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":true}"#, "value"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":false}"#, "value"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":"abc"}"#, "value"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":"NaN"}"#, "value"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":[1]}"#, "value"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":1e400}"#, "value"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":"inf"}"#, "value"),
            (#"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00","value":1}"#, "time"),
            (#"{"station":"s1","metric":"m","value":1}"#, "time"),
            (#"{"station":"s1","metric":"m","time":1767225600,"value":1}"#, "time must be a string"),
            (#"{"station":7,"metric":"m","time":"2026-01-01T00:00:00Z","value":1}"#, "station must be a string"),
            (#"{"metric":"m","time":"2026-01-01T00:00:00Z","value":1}"#, "station"),
            (#"{"station":"s1","metric":"","time":"2026-01-01T00:00:00Z","value":1}"#, "metric"),
            (#"["s1","m"]"#, "JSON object"),
            (#"{"station":"s1""#, "JSON object"),
            ("station,metric,time,value", "JSON object"),
        ])
    func rejected(line: String, reasonContains: String) {
        let rows = parse(line + "\n", .jsonLines)
        #expect(rows.count == 1)
        #expect(rows.first?.line == 1)
        #expect(rows.first?.reason?.contains(reasonContains) == true, "\(rows)")
    }

    @Test("CRLF, a BOM and blank lines; line numbers count every line")
    func crlfBomBlank() {
        let good = #"{"station":"s1","metric":"m","time":"2026-01-01T00:00:00Z","value":2}"#
        let text = "\u{FEFF}\(good)\r\n\r\n  \r\nnot json\r\n\(good)"
        let rows = parse(text, .jsonLines)
        #expect(rows.map(\.line) == [1, 4, 5])
        #expect(rows[0].reading?.value == 2)
        #expect(rows[1].reading == nil)
        #expect(rows[2].reading?.value == 2)
    }
}

@Suite("ReadingsParser: chunked input")
struct ChunkedParserTests {
    static func csvText() -> String {
        var text = "\u{FEFF}station,unit,metric,time,value,source\r\n"
        for i in 0..<300 {
            let time = Timestamp.format(t0 + Int64(i) * 300)
            switch i % 10 {
            case 0: text += "\"st,\(i)\",ft,m,\(time),\(i).25,\"usgs \"\"x\"\"\"\r\n"
            case 3: text += "s\(i),ft,m,\(time),NaN,usgs\n"
            case 5: text += "\n   \n"
            case 7: text += "s\(i),ft,m,\(time.dropLast()),1,usgs\n"
            case 8: text += "s\(i),m,\(time),1\n"
            default: text += "s\(i),ft,m,\(time),\(Double(i) / 8),noaa\n"
            }
        }
        return text + "last,ft,m,\(Timestamp.format(t0)),42,usgs"
    }

    static func jsonText() -> String {
        var text = "\u{FEFF}"
        for i in 0..<300 {
            let time = Timestamp.format(t0 + Int64(i) * 60)
            switch i % 6 {
            case 1: text += "{\"station\":\"s\(i)\",\"metric\":\"m\",\"time\":\"\(time)\",\"value\":\"\(i).5\"}\r\n"
            case 2: text += "{\"station\":\"s\(i)\",\"metric\":\"m\",\"time\":\"\(time)\",\"value\":true}\n"
            case 3: text += "\n"
            case 4: text += "{\"station\":\"s\(i)\",\"metric\":\"m\",\"time\":\"\(time)\",\"value\":1,\"x\":1}\n"
            default:
                text +=
                    "{\"station\":\"s\(i)\",\"metric\":\"m\",\"time\":\"\(time)\",\"value\":\(i),\"unit\":\"°C\"}\n"
            }
        }
        return text + "{\"station\":\"end\",\"metric\":\"m\",\"time\":\"\(Timestamp.format(t0))\",\"value\":0}"
    }

    @Test(
        "feeding in chunks of 1, 7 and 4096 bytes gives the same rows as the whole text",
        arguments: [ReadingsParser.Format.csv, .jsonLines], [1, 7, 4096])
    func chunks(format: ReadingsParser.Format, size: Int) {
        let text = format == .csv ? Self.csvText() : Self.jsonText()
        let bytes = Array(text.utf8)
        let whole = parse(text, format)
        let chunked = parseInChunks(bytes, size: size, format)
        #expect(chunked == whole)
        // The file spans several 4096-byte chunks, and has both readings and rejections.
        #expect(bytes.count > 2 * 4096)
        #expect(whole.contains { $0.reading != nil })
        #expect(whole.contains { $0.reason != nil })
    }

    @Test("the chunked CSV text gives the rows it was built from")
    func csvContent() throws {
        let rows = parse(Self.csvText(), .csv)
        let readings = rows.compactMap(\.reading)
        let rejected = rows.filter { $0.reason != nil }
        #expect(readings.count == 300 - 30 - 30 - 30 - 30 + 1)
        #expect(rejected.count == 90)
        let first = try #require(readings.first)
        #expect(first == Reading(station: "st,0", metric: "m", time: t0, value: 0.25, unit: "ft", source: "usgs \"x\""))
        #expect(readings.last == Reading(station: "last", metric: "m", time: t0, value: 42, unit: "ft", source: "usgs"))
        // Line numbers are strictly increasing and account for blank lines (two per blank block).
        #expect(rows.map(\.line) == rows.map(\.line).sorted())
        #expect(Set(rows.map(\.line)).count == rows.count)
        #expect(rows.last?.line == 1 + 300 + 30 + 1)
    }

    @Test("the chunked JSON Lines text gives the rows it was built from")
    func jsonContent() {
        let rows = parse(Self.jsonText(), .jsonLines)
        #expect(rows.compactMap(\.reading).count == 150 + 1)
        #expect(rows.filter { $0.reason != nil }.count == 100)
        #expect(rows.compactMap(\.reading).first?.unit == "°C")
        #expect(rows.compactMap(\.reading).contains { $0.station == "s1" && $0.value == 1.5 })
        #expect(rows.last?.line == 301)
    }

    @Test("a BOM, a CRLF and a multi-byte character split across chunks are handled")
    func splitAcrossChunks() {
        let text = "\u{FEFF}station,metric,time,value,unit\r\nß,m,\(t0Text),1,°C\r\n"
        let bytes = Array(text.utf8)
        for size in 1...bytes.count {
            #expect(
                parseInChunks(bytes, size: size, .csv) == [
                    .reading(Reading(station: "ß", metric: "m", time: t0, value: 1, unit: "°C"), line: 2)
                ], "chunk size \(size)")
        }
    }
}
