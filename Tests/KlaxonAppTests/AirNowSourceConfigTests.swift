import Foundation
import KlaxonApp
import KlaxonSources
import KlaxonTesting
import Testing

/// `kind: airnow` with `forecast:` and locations by ZIP code (issue 42).
@Suite("config: the airnow source's forecast and ZIP codes")
struct AirNowSourceConfigTests {
    @Test("forecast: true and zip_code locations are read; a bad ZIP or a ZIP beside a point is an error")
    func forecastAndZipCodes() throws {
        let scratch = try Scratch()
        let good = try scratch.write(
            "good.yaml",
            """
            sources:
              - name: air
                kind: airnow
                api_key: k
                forecast: true
                locations: [{latitude: 39.74, longitude: -104.99}, {zip_code: "02134", distance: 10}]
            """)
        let config = try Config.load(path: good, environment: [:])
        let source = try #require(config.sources.first?.source as? AirNowSource)
        #expect(source.forecast)
        #expect(source.locations.map(\.zipCode) == [nil, "02134"])
        #expect(source.locations.map(\.shown) == ["39.74,-104.99", "02134"])
        #expect(source.locations[1].distance == 10)

        let bad = try scratch.write(
            "bad.yaml",
            """
            sources:
              - name: air
                kind: airnow
                api_key: k
                forecast: maybe
                locations: [{zip_code: "2134"}, {zip_code: "02134", latitude: 1}]
            """)
        let diagnostics = Diagnostics()
        _ = Config.load(path: bad, environment: [:], diagnostics: diagnostics)
        let got = diagnostics.items.map(\.message)
        #expect(got.contains { $0.contains("forecast must be true or false") }, "\(got)")
        #expect(got.contains { $0.contains("zip_code must be a 5-digit US ZIP code") }, "\(got)")
        #expect(got.contains("a location has zip_code or latitude/longitude, not both"), "\(got)")
    }
}
