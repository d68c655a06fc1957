import KlaxonCore
import Testing

@Suite("Timestamp")
struct TimestampTests {
    @Test(
        "parses UTC, offsets and fractions to the same instant",
        arguments: [
            ("2026-01-01T00:00:00Z", t0),
            ("2026-01-01T00:00:00z", t0),
            ("2026-01-01t00:00:00Z", t0),
            ("2026-01-01 00:00:00Z", t0),
            ("2026-01-01T00:00Z", t0),
            ("2026-01-01T05:30:00+05:30", t0),
            ("2026-01-01T05:30:00+0530", t0),
            ("2025-12-31T16:00:00-0800", t0),
            ("2025-12-31T16:00:00-08:00", t0),
            ("2026-01-01T03:00:00+03", t0),
            ("2026-01-01T00:00:00+00:00", t0),
            ("2026-01-01T00:00:00.5Z", t0),
            ("2026-01-01T00:00:00.999999Z", t0),
            ("2026-01-01T00:00:00,25Z", t0),
            ("2026-01-01T05:30:00.123+05:30", t0),
            ("2026-01-01T00:15:42Z", t0 + 15 * 60 + 42),
            ("2026-01-01T00:15:42.9Z", t0 + 15 * 60 + 42),
            ("1970-01-01T00:00:00Z", 0),
            ("1969-12-31T23:59:59Z", -1),
            ("2024-02-29T00:00:00Z", 1_709_164_800),
            ("2024-03-01T00:00:00Z", 1_709_164_800 + 86_400),
            ("2000-02-29T12:00:00Z", 951_825_600),
        ] as [(String, Int64)])
    func parses(text: String, expected: Int64) {
        #expect(Timestamp.parse(text) == expected)
    }

    @Test(
        "rejects malformed or impossible times",
        arguments: [
            "",
            "now",
            "2026-01-01",
            "2026-01-01T00:00:00",  // no zone
            "2026-01-01T00:00",  // no zone
            "2026-01-01T00:00:00.123",  // no zone
            "2026-13-01T00:00:00Z",  // month 13
            "2026-00-10T00:00:00Z",  // month 0
            "2026-02-30T00:00:00Z",  // 30 February
            "2025-02-29T00:00:00Z",  // not a leap year
            "1900-02-29T00:00:00Z",  // century, not a leap year
            "2026-04-31T00:00:00Z",
            "2026-01-32T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-01T25:00:00Z",
            "2026-01-01T24:01:00Z",
            "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:61Z",
            "2026-01-01T00:00:00.Z",  // a dot without digits
            "2026-01-01T00:00:00+5:30",
            "2026-01-01T00:00:00+05:3",
            "2026-01-01T00:00:00+",
            "2026-01-01T00:00:00+24:00",
            "2026-01-01T00:00:00+05:60",
            "2026-01-01T00:00:00ZZ",
            "2026-01-01T00:00:00 Z",
            "2026-01-01T00:00:00UTC",
            "2026/01/01T00:00:00Z",
            "2026-1-1T00:00:00Z",
            "2026-01-01X00:00:00Z",
            " 2026-01-01T00:00:00Z",
        ])
    func rejects(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }

    @Test("the leap day 2024-02-29 is a real day: one day after the 28th, one before 1 March")
    func leapDay() throws {
        let feb28 = try #require(Timestamp.parse("2024-02-28T12:00:00Z"))
        let feb29 = try #require(Timestamp.parse("2024-02-29T12:00:00Z"))
        let mar1 = try #require(Timestamp.parse("2024-03-01T12:00:00Z"))
        #expect(feb29 - feb28 == 86_400)
        #expect(mar1 - feb29 == 86_400)
        #expect(Timestamp.format(feb29) == "2024-02-29T12:00:00Z")
    }

    @Test(
        "formats as UTC with a Z",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (-86_400, "1969-12-31T00:00:00Z"),
            (t0, "2026-01-01T00:00:00Z"),
            (1_709_164_800 + 3_723, "2024-02-29T01:02:03Z"),
            (951_825_600, "2000-02-29T12:00:00Z"),
            (253_402_300_799, "9999-12-31T23:59:59Z"),
            (-62_135_596_800, "0001-01-01T00:00:00Z"),
        ] as [(Int64, String)])
    func formats(time: Int64, text: String) {
        #expect(Timestamp.format(time) == text)
        #expect(Timestamp.parse(text) == time)
    }

    @Test("format then parse gives back the same second across years 1 to 9999")
    func roundTripTimes() {
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        let low: Int64 = -62_135_596_800
        let span = UInt64(253_402_300_799 - low)
        var failures: [Int64] = []
        for _ in 0..<5_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let t = low + Int64(bitPattern: (seed >> 11) % span)
            if Timestamp.parse(Timestamp.format(t)) != t { failures.append(t) }
        }
        #expect(failures == [])
    }

    /// The piecewise form `format` had before it wrote its 20 bytes directly (issue 44).
    static func referenceFormat(_ t: Int64) -> String {
        var days = t / 86400
        var rem = Int(t % 86400)
        if rem < 0 {
            days -= 1
            rem += 86400
        }
        let (y, m, d) = Timestamp.civilFromDays(Int(days))
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        var year = String(y)
        while year.count < 4 { year = "0" + year }
        return "\(year)-\(two(m))-\(two(d))T\(two(rem / 3600)):\(two(rem / 60 % 60)):\(two(rem % 60))Z"
    }

    @Test("format and append write what the piecewise form wrote, in years 0 to 9999 and beyond them either way")
    func formatMatchesPiecewise() {
        var times: [Int64] = [
            0, -1, 1, 86_399, 86_400, -86_400, -86_401, 951_782_400, 1_767_225_600, -62_167_219_200,
            -62_167_219_201, -62_135_596_800, 253_402_300_799, 253_402_300_800, .max, .min, .max - 1, .min + 1,
        ]
        var seed: UInt64 = 44
        for _ in 0..<20_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            times.append(-70_000_000_000 + Int64(bitPattern: (seed >> 11) % 400_000_000_000))
            times.append(Int64(bitPattern: seed) >> Int64(seed % 40))
        }
        var failures: [Int64] = []
        for t in times {
            var bytes: [UInt8] = [0x2A]
            Timestamp.append(t, to: &bytes)
            let reference = Self.referenceFormat(t)
            if Timestamp.format(t) != reference || bytes != [0x2A] + Array(reference.utf8) { failures.append(t) }
        }
        #expect(failures == [])
    }

    @Test(
        "parse then format gives back the same UTC text",
        arguments: [
            "2026-01-01T00:15:00Z", "1999-12-31T23:59:59Z", "2024-02-29T23:59:59Z", "2038-01-19T03:14:08Z",
            "1601-03-01T00:00:00Z",
        ])
    func roundTripTexts(text: String) throws {
        let t = try #require(Timestamp.parse(text))
        #expect(Timestamp.format(t) == text)
    }

    @Test("an offset time formats as the equivalent UTC time")
    func offsetToUTC() throws {
        let t = try #require(Timestamp.parse("2026-03-10T08:45:30-0800"))
        #expect(Timestamp.format(t) == "2026-03-10T16:45:30Z")
        let u = try #require(Timestamp.parse("2026-03-10T01:15:00+05:30"))
        #expect(Timestamp.format(u) == "2026-03-09T19:45:00Z")
    }

    @Test("parsing from bytes matches parsing from a String")
    func bytes() {
        for text in ["2026-01-01T05:30:00+05:30", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00.5Z"] {
            let viaBytes = Array(text.utf8).withUnsafeBufferPointer { Timestamp.parse(bytes: $0) }
            #expect(viaBytes == Timestamp.parse(text), "\(text)")
        }
    }
}

@Suite("DurationText")
struct DurationTextTests {
    @Test(
        "parses durations",
        arguments: [
            ("30s", Int64(30)), ("15m", 900), ("6h", 21_600), ("2d", 172_800), ("1w", 604_800), ("1h30m", 5_400),
            ("1d2h3m4s", 93_784), ("0s", 0), ("90s", 90), ("120m", 7_200),
        ] as [(String, Int64)])
    func parses(text: String, seconds: Int64) {
        #expect(DurationText.parse(text) == seconds)
    }

    @Test(
        "rejects what is not a duration",
        arguments: ["", "15", "m", "1.5h", "-5m", "+5m", "5 m", " 5m", "5m ", "5M", "5x", "h5", "1h30", "5mm", "1e3s"])
    func rejects(text: String) {
        #expect(DurationText.parse(text) == nil)
    }

    @Test(
        "formats the shortest exact text",
        arguments: [
            (Int64(0), "0s"), (30, "30s"), (60, "1m"), (90, "1m30s"), (900, "15m"), (5_400, "1h30m"),
            (86_400, "1d"), (93_784, "1d2h3m4s"), (604_800, "7d"),
        ] as [(Int64, String)])
    func formats(seconds: Int64, text: String) {
        #expect(DurationText.format(seconds) == text)
        #expect(DurationText.parse(text) == seconds)
    }
}

@Suite struct DurationTextOverflowTests {
    @Test("a sum of terms too large for Int64 is rejected instead of trapping")
    func overflowingSum() {
        // 16 000 × 999 999 999 weeks ≈ 9.7e18 seconds > Int64.max.
        #expect(DurationText.parse(String(repeating: "999999999w", count: 16_000)) == nil)
    }
}
