import Foundation
import KlaxonCore
import Testing

@testable import KlaxonSources

/// api.weather.gov documents unit codes as `{namespace}:{unit}`: `wmoUnit:`/`wmo:` WMO codes, `nwsUnit:`,
/// and UCUM with `uc:` or no namespace; observations before October 2021 wrote WMO codes as `unit:degC`.
@Suite("NWS observations: historical and documented unit-code spellings")
struct NWSUnitVariantTests {
    func value(_ b: SourceBatch, _ metric: String, _ time: String) -> Reading? {
        b.readings.first { $0.metric == metric && $0.time == utcTime(time) }
    }

    @Test("2019 payloads (unit:degC, unit:m_s-1, unit:Pa, unit:percent, unit:degree_(angle), unit:m) are read")
    func legacyUnitNamespace() throws {
        let data = try ParserFixtures.data("wx_nws_observations_2019_unit_codes.json")
        let b = try NWSObservationsParser.parse(data, units: .metric)
        let t = "2019-01-21T12:54:00Z"
        #expect(value(b, "temperature", t)?.value == -35)
        #expect(value(b, "temperature", t)?.unit == "°C")
        #expect(value(b, "dewpoint", t)?.value == -38.3)
        #expect(value(b, "wind_speed", t)?.value == 45)  // 12.5 m/s
        #expect(value(b, "wind_speed", t)?.unit == "km/h")
        #expect(value(b, "wind_speed", "2019-01-21T11:54:00Z")?.value == 36)
        #expect(value(b, "pressure", t)?.value == 1013.2)  // 101320 Pa
        #expect(value(b, "humidity", t)?.value == 72.4)
        #expect(value(b, "wind_direction", t)?.value == 290)
        #expect(value(b, "visibility", t)?.value == 16090)
        #expect(value(b, "precipitation.1h", t)?.value == 2.5)  // 0.0025 m
        #expect(b.readings.count == 2 * 8)
        #expect(b.gaps == 2 * 2)  // the null gust and sea-level pressure: missing, not unknown
        let us = try NWSObservationsParser.parse(data, units: .us)
        #expect(value(us, "temperature", t)?.value == -31)
        #expect(value(us, "temperature", t)?.unit == "°F")
        let reported = try NWSObservationsParser.parseReporting(data)
        #expect(reported.unknownUnits.isEmpty)
    }

    @Test("UCUM codes, with uc: or no namespace (Cel, m/s, km/h, Pa, %, deg, m), read the same")
    func ucum() throws {
        let legacy = try NWSObservationsParser.parse(
            try ParserFixtures.data("wx_nws_observations_2019_unit_codes.json"))
        let ucum = try NWSObservationsParser.parse(try ParserFixtures.data("wx_nws_observations_ucum_codes.json"))
        #expect(ucum.readings == legacy.readings)
        #expect(ucum.gaps == legacy.gaps)
    }

    @Test("every spelling of one unit converts alike; other namespaces and unknown codes do not")
    func spellings() {
        for code in ["wmoUnit:degC", "wmo:degC", "unit:degC", "uc:Cel", "Cel", "degC", nil] {
            #expect(
                NWSObservationsParser.convert(3, from: code, quantity: .temperature, to: .metric) == 3,
                "\(code ?? "nil")")
        }
        for code in ["wmoUnit:degF", "unit:degF", "[degF]", "uc:[degF]"] {
            #expect(NWSObservationsParser.convert(50, from: code, quantity: .temperature, to: .metric) == 10, "\(code)")
        }
        for code in ["unit:km_h-1", "wmoUnit:km_h-1", "uc:km/h", "km/h"] {
            #expect(NWSObservationsParser.convert(36, from: code, quantity: .speed, to: .metric) == 36, "\(code)")
        }
        for code in ["unit:m_s-1", "m/s", "uc:m/s"] {
            #expect(NWSObservationsParser.convert(10, from: code, quantity: .speed, to: .metric) == 36, "\(code)")
        }
        #expect(NWSObservationsParser.convert(100, from: "[in_i'Hg]", quantity: .pressure, to: .metric) == 3386.389)
        // Unknown or hostile codes are never guessed at, whatever the namespace.
        for code in [
            "unit:xyz", "foo:degC", "unit:", ":degC", "wmoUnit:degC ", "WMOUNIT:degC", "unit:degC\u{0}", "unit:km_h-1",
            String(repeating: "unit:", count: 1000) + "degC",
        ] {
            #expect(NWSObservationsParser.convert(3, from: code, quantity: .temperature, to: .metric) == nil, "\(code)")
        }
        #expect(NWSObservationsParser.convert(3, from: "unit:degC", quantity: .speed, to: .metric) == nil)
    }

    @Test("a body whose values are all in unknown units is an error that names what it saw")
    func allUnknown() throws {
        let data = try ParserFixtures.data("wx_nws_observations_unknown_unit_codes.json")
        let error = try #require(caughtParseError { _ = try NWSObservationsParser.parse(data) })
        #expect(
            "\(error)".contains("no observation had a value in a known unit: saw unitCode 'unit:xyz' 32 times"),
            "\(error)")
        // Hostile codes are quoted and cut short in the message.
        let hostile = """
            {"type":"FeatureCollection","features":[{"properties":{"stationId":"K1","timestamp":"2019-01-21T12:54:00Z",
             "temperature":{"unitCode":"unit:\\u001b[31m\(String(repeating: "x", count: 500))","value":3}}}]}
            """
        let e2 = try #require(caughtParseError { _ = try NWSObservationsParser.parse(Data(hostile.utf8)) })
        #expect(!"\(e2)".contains("\u{1b}"), "\(e2)")
        #expect("\(e2)".utf8.count < 600, "\(e2)")
    }

    @Test("a body with some values in unknown units keeps the others and counts the rest apart from gaps")
    func someUnknown() throws {
        let body = """
            {"type":"FeatureCollection","features":[{"properties":{"stationId":"K1","timestamp":"2019-01-21T12:54:00Z",
             "temperature":{"unitCode":"unit:degC","value":3},"dewpoint":{"unitCode":"unit:furlong","value":1},
             "windSpeed":{"unitCode":"unit:km_h-1","value":null}}}]}
            """
        let (batch, unknown) = try NWSObservationsParser.parseReporting(Data(body.utf8))
        #expect(batch.readings.map(\.metric) == ["temperature"])
        #expect(batch.gaps == 1)
        #expect(unknown == ["unit:furlong": 1])
    }
}
