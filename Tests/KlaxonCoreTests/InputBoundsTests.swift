import KlaxonCore
import Testing

/// Issue 12, item 5: input that hangs or traps. Durations and times are bounded where they are
/// read, time arithmetic cannot trap, and readings' text fields and lines have limits.
@Suite("Input bounds: durations and times")
struct DurationBoundsTests {
    @Test("sixteen 999999999w terms, which fit Int64, are refused as longer than ten years")
    func hugeSumIsTooLong() {
        let text = String(repeating: "999999999w", count: 16)
        #expect(DurationText.parse(text) == nil)
        #expect(DurationText.read(text) == .failure(.tooLong))
    }

    @Test(
        "the limit is ten 365-day years, however it is written",
        arguments: [
            ("3650d", true), ("87600h", true), ("5256000m", true), ("315360000s", true), ("3649d23h59m60s", true),
            ("520w", true), ("3650d1s", false), ("315360001s", false), ("522w", false), ("1000000000s", false),
            ("99999999999999999999s", false), ("3000d3000d", false),
        ])
    func limit(text: String, accepted: Bool) {
        #expect(DurationText.maximum == 315_360_000)
        #expect((DurationText.parse(text) != nil) == accepted)
        if !accepted { #expect(DurationText.read(text) == .failure(.tooLong)) }
    }

    @Test("a malformed text is still malformed, not too long")
    func malformed() {
        #expect(DurationText.read("999999999999w5x") == .failure(.malformed))
        #expect(DurationText.read("") == .failure(.malformed))
        #expect(DurationText.read("15m") == .success(900))
    }

    @Test("formatting any Int64 as a duration or a time does not trap")
    func formatExtremes() {
        #expect(DurationText.format(.min).hasPrefix("-"))
        #expect(DurationText.format(.max).hasSuffix("s"))
        #expect(Timestamp.format(.min).hasSuffix("Z"))
        #expect(Timestamp.format(.max).hasSuffix("Z"))
        #expect(HTTPDate.format(.min).hasSuffix("GMT"))
        #expect(Timestamp.format(-1) == "1969-12-31T23:59:59Z")
        #expect(Timestamp.format(-86_400) == "1969-12-31T00:00:00Z")
    }

    @Test(
        "times with years beyond four digits are rejected, not trapped on",
        arguments: [
            "99999-01-01T00:00:00Z", "-99999-01-01T00:00:00Z", "+99999-01-01T00:00:00Z", "-9999-01-01T00:00:00Z",
            "99999999999999999999-01-01T00:00:00Z",
        ])
    func hugeYears(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test(
        "an HTTP date (a Retry-After header) with an absurd year is unreadable, not a trap",
        arguments: [
            "Sun, 06 Nov 99999999999999999 08:49:37 GMT", "Sun, 06 Nov 9223372036854775807 08:49:37 GMT",
            "Sun, 06 Nov 10000 08:49:37 GMT", "Sun Nov  6 08:49:37 99999999999999",
        ])
    func hugeHTTPYears(text: String) {
        #expect(HTTPDate.parse(text) == nil)
        #expect(Backoff().retryAfter(text, now: 0) == nil)
    }

    @Test("clamped arithmetic pins to Int64's ends instead of trapping")
    func clamped() {
        #expect(Int64.max.addingClamped(1) == .max)
        #expect(Int64.min.addingClamped(-1) == .min)
        #expect(Int64.min.subtractingClamped(1) == .min)
        #expect(Int64.max.subtractingClamped(-1) == .max)
        #expect(Int64.max.multipliedClamped(by: 1000) == .max)
        #expect(Int64.min.multipliedClamped(by: 1000) == .min)
        #expect((-Int64.max).multipliedClamped(by: -2) == .max)
        #expect(Int64(5).addingClamped(-7) == -2)
        #expect(Int64(315_360_000).multipliedClamped(by: 1000) == 315_360_000_000)
    }

    @Test("a stale rule with the longest `after` and a rate rule with the longest window do not trap")
    func longestDurationsInRules() {
        let max = DurationText.maximum
        let stale = StaleRule(metric: "m", after: max)
        var state = AlertState()
        state.lastTime = Int64.max - 10  // not a time Klaxon would read: the arithmetic must still hold
        #expect(stale.advance(&state, to: .min, context: SeriesContext(station: "S", metric: "m")) == nil)
        var recent = RecentReadings(
            span: RateRule(metric: "m", direction: .rising, threshold: 1, window: max).historySpan)
        recent.append(time: Int64.min + 5, value: 1)
        recent.append(time: Int64.max - 5, value: 2)
        #expect(recent.rate(window: max, per: max) == nil)
        #expect(RateRule(metric: "m", direction: .rising, threshold: 1, window: .max).historySpan == .max)
    }

    @Test("a quake with absurd time, longitude, magnitude and tz is described, not trapped on")
    func absurdQuake() throws {
        let e = QuakeEvent(
            id: "x", ids: ["x"], time: .min, updated: .max, magnitude: 1e300, magType: "mw", place: "nowhere",
            latitude: 0, longitude: .infinity, depthKm: 1, sig: 1, alert: nil, status: "reviewed", url: nil,
            tz: Int.max / 120)
        let change = try #require(QuakeRule(minMagnitude: 5).assess(e, announced: nil)).change
        #expect(change.summary.contains("1e+300"))
    }
}

@Suite("Input bounds: readings")
struct ReadingsBoundsTests {
    static let time = "2026-01-01T00:00:00Z"

    @Test("a NUL inside a CSV station id rejects the row instead of cutting the id short")
    func nulInStation() {
        let rows = parse("station,metric,time,value\nS1\u{0}evil,stage,\(Self.time),1\nS2,stage,\(Self.time),2\n", .csv)
        #expect(rows.count == 2)
        #expect(rows[0] == .rejected(line: 2, reason: "station contains the control character U+0000"))
        #expect(rows[1].reading?.station == "S2")
    }

    @Test(
        "control, line-separator and bidi characters are refused in every text field",
        arguments: [
            ("S\t1,stage,\(time),1,ft", "station contains the control character U+0009"),
            ("S1,st\u{7F}age,\(time),1,ft", "metric contains the control character U+007F"),
            ("S1,stage,\(time),1,f\u{1B}[31mt", "unit contains the control character U+001B"),
            ("\u{202E}S1,stage,\(time),1,ft", "station contains the bidirectional formatting character U+202E"),
            ("S\u{2028}1,stage,\(time),1,ft", "station contains the line separator U+2028"),
            ("S\u{85}1,stage,\(time),1,ft", "station contains the control character U+0085"),
            ("\"S1\",\"st\u{0}\",\(time),1,ft", "metric contains the control character U+0000"),
        ])
    func controlCharacters(line: String, reason: String) {
        let rows = parse("station,metric,time,value,unit\n\(line)\n", .csv)
        #expect(rows == [.rejected(line: 2, reason: reason)])
    }

    @Test("ordinary Unicode station names, spaces inside and symbols are fine")
    func unicodeIsFine() {
        let rows = parse(
            "station,metric,time,value,unit\n名前 川,stage,\(Self.time),1,°C\nß-1,m³/s,\(Self.time),2,\n", .csv)
        #expect(rows.map(\.reading?.station) == ["名前 川", "ß-1"])
    }

    @Test(
        "text fields have byte limits: station and metric 128, unit 32, source 128, quality 64",
        arguments: [
            ("station", 128), ("metric", 128), ("unit", 32), ("source", 128), ("quality", 64),
        ])
    func fieldLimits(field: String, limit: Int) {
        func line(_ n: Int) -> String {
            let long = String(repeating: "é", count: n / 2) + (n % 2 == 1 ? "x" : "")  // bytes, not characters
            var values = ["station": "S1", "metric": "stage", "unit": "ft", "source": "usgs", "quality": "P"]
            values[field] = long
            let order = ["station", "metric", "time", "value", "unit", "source", "quality"]
            return order.map { $0 == "time" ? Self.time : $0 == "value" ? "1" : values[$0]! }.joined(separator: ",")
        }
        let header = "station,metric,time,value,unit,source,quality\n"
        let rows = parse(header + line(limit) + "\n" + line(limit + 1) + "\n", .csv)
        #expect(rows.count == 2)
        #expect(rows[0].reading != nil)
        #expect(rows[1] == .rejected(line: 3, reason: "\(field) is \(limit + 1) bytes long; the limit is \(limit)"))
    }

    @Test("a 10 MB station name is refused with its line number, and the lines after it are read")
    func tenMegabyteStation() {
        let huge = String(repeating: "A", count: 10_000_000)
        let text = "station,metric,time,value\n\(huge),stage,\(Self.time),1\nS2,stage,\(Self.time),2\n"
        let expected: [Row] = [
            .rejected(line: 2, reason: "the line is longer than 65536 bytes; not read"),
            .reading(Reading(station: "S2", metric: "stage", time: 1_767_225_600, value: 2), line: 3),
        ]
        #expect(parse(text, .csv) == expected)
        // Streamed in file-sized chunks and in small ones: the same rows.
        #expect(parseInChunks(Array(text.utf8), size: 1 << 20, .csv) == expected)
        #expect(parseInChunks(Array(text.utf8), size: 4096, .csv) == expected)
    }

    @Test("a station name under the line limit but over 128 bytes is refused by the field limit")
    func longStationUnderTheLineLimit() {
        let rows = parse(
            "station,metric,time,value\n\(String(repeating: "B", count: 1_000)),stage,\(Self.time),1\n", .csv)
        #expect(rows == [.rejected(line: 2, reason: "station is 1000 bytes long; the limit is 128")])
    }

    @Test("an over-long header line rejects the header, and with it every row", arguments: [4096, 1 << 20])
    func longHeader(chunk: Int) {
        let header = "station,metric,time,value," + String(repeating: "x", count: 70_000)
        let text = "\(header)\nS1,stage,\(Self.time),1\n"
        let rows = parseInChunks(Array(text.utf8), size: chunk, .csv)
        #expect(
            rows == [
                .rejected(line: 1, reason: "header: the line is longer than 65536 bytes; not read"),
                .rejected(line: 2, reason: "not read: the header on line 1 is invalid"),
            ])
    }

    @Test("an over-long last line without a newline is reported at the end")
    func longLastLine() {
        let text = "station,metric,time,value\nS1,stage,\(Self.time),1\n" + String(repeating: "z", count: 100_000)
        let rows = parseInChunks(Array(text.utf8), size: 4096, .csv)
        #expect(rows.count == 2)
        #expect(rows[1] == .rejected(line: 3, reason: "the line is longer than 65536 bytes; not read"))
    }

    @Test("a line that is not UTF-8 is refused instead of stored with replacement characters")
    func invalidUTF8() {
        var bytes = Array("station,metric,time,value\nS".utf8)
        bytes += [0xFF, 0xFE]
        bytes += Array(",stage,\(Self.time),1\nS\u{FFFD},stage,\(Self.time),2\n".utf8)
        let rows = parseInChunks(bytes, size: 4096, .csv)
        #expect(rows.count == 2)
        #expect(rows[0] == .rejected(line: 2, reason: "the line is not valid UTF-8"))
        #expect(rows[1].reading?.station == "S\u{FFFD}")  // a real U+FFFD is text like any other
    }

    @Test(
        "JSON Lines: escapes cannot smuggle control characters, and lengths are bounded",
        arguments: [
            (
                #"{"station":"S1\u0000x","metric":"m","time":"2026-01-01T00:00:00Z","value":1}"#,
                "station contains the control character U+0000"
            ),
            (
                #"{"station":"S1","metric":"m\n","time":"2026-01-01T00:00:00Z","value":1}"#,
                "metric contains the control character U+000A"
            ),
            (
                #"{"station":"S1","metric":"m","time":"2026-01-01T00:00:00Z","value":1,"unit":"\u202Eft"}"#,
                "unit contains the bidirectional formatting character U+202E"
            ),
            (
                "{\"station\":\"\(String(repeating: "s", count: 129))\",\"metric\":\"m\",\"time\":\"2026-01-01T00:00:00Z\",\"value\":1}",
                "station is 129 bytes long; the limit is 128"
            ),
            (
                #"{"station":"S1","metric":"m","time":"2026-01-01T00:00:00Z","value":1,"source":"a\u0007"}"#,
                "source contains the control character U+0007"
            ),
        ])
    func jsonFields(line: String, reason: String) {
        #expect(parse(line + "\n", .jsonLines) == [.rejected(line: 1, reason: reason)])
    }

    @Test(
        "reading times must fall in the years 1800 to 2199",
        arguments: [
            ("0001-01-01T00:00:00Z", false), ("1799-12-31T23:59:59Z", false), ("1800-01-01T00:00:00Z", true),
            ("2199-12-31T23:59:59Z", true), ("2200-01-01T00:00:00Z", false), ("9999-12-31T23:59:59Z", false),
        ])
    func saneTimes(time: String, accepted: Bool) {
        let csv = parse("station,metric,time,value\nS1,m,\(time),1\n", .csv)
        let json = parse("{\"station\":\"S1\",\"metric\":\"m\",\"time\":\"\(time)\",\"value\":1}\n", .jsonLines)
        for rows in [csv, json] {
            #expect(rows.count == 1)
            if accepted {
                #expect(rows.first?.reading != nil)
            } else {
                #expect(rows.first?.reason == "time \(time) is outside the years 1800 to 2199")
            }
        }
    }

    @Test("values must be finite numbers", arguments: ["1e309", "-1e309", "inf", "NaN", "nan"])
    func finiteValues(value: String) {
        let rows = parse("station,metric,time,value\nS1,m,\(Self.time),\(value)\n", .csv)
        #expect(rows.first?.reason == "value \"\(value)\" is not a finite number")
    }

    @Test("a rejected field is shown shortened and with control characters escaped")
    func shownValues() {
        let rows = parse(
            "station,metric,time,value\nS1,m,\(Self.time),1\u{1B}\(String(repeating: "9", count: 100))\n", .csv)
        #expect(rows.first?.reason == "value \"1\\u{1b}\(String(repeating: "9", count: 38))…\" is not a finite number")
    }
}
