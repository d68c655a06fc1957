import KlaxonCore
import Testing

@Suite("NumberParser")
struct NumberParserTests {
    @Test(
        "parses decimal numbers exactly as Swift does",
        arguments: [
            ("12.34", 12.34), ("-0.5", -0.5), ("1e3", 1000), ("1E3", 1000), ("007", 7), ("12.", 12), (".5", 0.5),
            ("-.5", -0.5), ("+3", 3), ("0", 0), ("-0", 0), ("1.5e-2", 0.015), ("2.5e+1", 25),
            ("123456.789", 123_456.789),
            ("0.1", 0.1), ("999999999999999", 999_999_999_999_999),
            ("12345678901234567890", 12_345_678_901_234_567_168),  // the nearest Double
            ("0.000000000000000000001", 1e-21), ("3.141592653589793238", 3.141592653589793238),
            ("  12.5  ", 12.5),
        ] as [(String, Double)])
    func parses(text: String, expected: Double) {
        #expect(NumberParser.parse(text) == expected)
    }

    @Test(
        "rejects what is not a finite number",
        arguments: [
            "", "abc", "1.2.3", "inf", "-inf", "Infinity", "nan", "NaN", ".", "-", "+", "1e", "e5", "12a", "1,5",
            "0x1A",
            "1e400", "--1", "1-2", "1 2", "١٢",
        ])
    func rejects(text: String) {
        #expect(NumberParser.parse(text) == nil)
    }

    @Test("a sign followed only by a dot is not a number")
    func signAndDot() {
        #expect(NumberParser.parse("-.") == nil)
        #expect(NumberParser.parse("+.") == nil)
    }

    @Test("the byte entry point agrees with the String one")
    func bytes() {
        for text in ["12.34", "-0.5", "1e3", "007", "12.", ".5", "abc", "1.2.3", "inf", "nan"] {
            let viaBytes = Array(text.utf8).withUnsafeBufferPointer { NumberParser.parse($0) }
            #expect(viaBytes == NumberParser.parse(text), "\(text)")
        }
        let empty: [UInt8] = []
        #expect(empty.withUnsafeBufferPointer { NumberParser.parse($0) } == nil)
    }

    @Test("the sign is kept")
    func sign() throws {
        let v = try #require(NumberParser.parse("-12.25"))
        #expect(v == -12.25)
        #expect(v.sign == .minus)
    }
}

@Suite("NumberParser: edge cases")
struct NumberParserKnownIssueTests {
    @Test("a CSV value of \"-.\" is rejected rather than read as zero")
    func csvSignAndDot() {
        let rows = parse("station,metric,time,value\ns1,m,2026-01-01T00:00:00Z,-.\n", .csv)
        #expect(rows.count == 1)
        #expect(rows.first?.reading == nil)
    }

    @Test("a valid number of 64 or more characters falls back to strtod like any other unusual number")
    func longNumber() {
        let text = "1." + String(repeating: "0", count: 70)
        #expect(text.utf8.count >= 64)
        #expect(NumberParser.parse(text) == 1)
    }
}
