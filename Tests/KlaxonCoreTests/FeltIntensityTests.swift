import Foundation
import Testing

@testable import KlaxonCore

/// Atkinson & Wald (2007) felt intensity (issue 42, item 3). The expected values were computed apart
/// from this code, by a separate script written from the paper's equation 1 and Table 1.
@Suite struct FeltIntensityTests {
    func near(_ a: Double?, _ b: Double, _ tolerance: Double = 0.0005) -> Bool {
        guard let a else { return false }
        return abs(a - b) < tolerance
    }

    @Test func californiaCoefficients() {
        // M6.8 at 132 km, 30 km deep (the demo's Tokyo office): hypocentral 135.366 km.
        let d = FeltIntensity.hypocentralKm(epicentralKm: 132, depthKm: 30)
        #expect(abs(d - 135.366) < 0.001)
        #expect(near(FeltIntensity.aw2007(magnitude: 6.8, hypocentralKm: d, region: .california), 4.2076))
        #expect(near(FeltIntensity.aw2007(magnitude: 7.0, hypocentralKm: 10, region: .california), 8.0611))
        #expect(near(FeltIntensity.aw2007(magnitude: 5.0, hypocentralKm: 50, region: .california), 3.3795))
        #expect(near(FeltIntensity.aw2007(magnitude: 6.0, hypocentralKm: 100, region: .california), 3.6824))
    }

    @Test func centralAndEasternUSCoefficients() {
        // Mineral, Virginia, 2011 (M5.8, 6 km deep) at Washington, about 130 km: felt IV–V there.
        let d = FeltIntensity.hypocentralKm(epicentralKm: 130, depthKm: 6)
        #expect(near(FeltIntensity.aw2007(magnitude: 5.8, hypocentralKm: d, region: .ceus), 4.6646))
        #expect(near(FeltIntensity.aw2007(magnitude: 4.0, hypocentralKm: 200, region: .ceus), 2.5497))
        // Stable crust carries shaking farther: the same event is felt more strongly at 100 km.
        #expect(near(FeltIntensity.aw2007(magnitude: 6.0, hypocentralKm: 100, region: .ceus), 5.1023))
    }

    @Test func clippedToTheScale() {
        #expect(FeltIntensity.aw2007(magnitude: 9.0, hypocentralKm: 0, region: .california) == 12)
        #expect(FeltIntensity.aw2007(magnitude: 3.0, hypocentralKm: 500, region: .california) == 1)
        #expect(FeltIntensity.aw2007(magnitude: .nan, hypocentralKm: 10, region: .california) == nil)
        #expect(FeltIntensity.aw2007(magnitude: 5, hypocentralKm: -1, region: .california) == nil)
        #expect(FeltIntensity.hypocentralKm(epicentralKm: 30, depthKm: nil) == 30)
    }

    @Test func regionByPlace() {
        #expect(FeltIntensity.Region.forPlace(latitude: 38.9, longitude: -77.0) == .ceus)  // Washington
        #expect(FeltIntensity.Region.forPlace(latitude: 41.9, longitude: -87.6) == .ceus)  // Chicago
        #expect(FeltIntensity.Region.forPlace(latitude: 37.8, longitude: -122.4) == .california)  // San Francisco
        #expect(FeltIntensity.Region.forPlace(latitude: 39.7, longitude: -105.5) == .california)  // west of 105° W
        #expect(FeltIntensity.Region.forPlace(latitude: 35.68, longitude: 139.65) == .california)  // Tokyo: active crust
    }

    @Test func wordsAndNumerals() {
        #expect(FeltIntensity.roman(4.2) == "IV")
        #expect(FeltIntensity.roman(4.5) == "V")
        #expect(FeltIntensity.roman(0.2) == "I")
        #expect(FeltIntensity.roman(13) == "XII")
        #expect(FeltIntensity.shaking(5.1) == "moderate")
        #expect(FeltIntensity.shaking(4.2) == "light")
        #expect(FeltIntensity.shaking(2.6) == "weak")
        #expect(FeltIntensity.shaking(10.4) == "extreme")
        #expect(FeltIntensity.parse("iv") == 4)
        #expect(FeltIntensity.parse("4.5") == 4.5)
        #expect(FeltIntensity.parse("XIII") == nil)
        #expect(FeltIntensity.parse("0") == nil)
    }

    @Test func quakeRuleFiresOnTheIntensityAtAPlace() throws {
        let office = QuakeRule.Place(
            name: "Tokyo office", latitude: 35.6762, longitude: 139.6503, radiusKm: .infinity, minIntensity: 4)
        let rule = QuakeRule(minMagnitude: 5, near: [office])
        func event(_ m: Double, updated: Int64 = 1_000) -> QuakeEvent {
            QuakeEvent(
                id: "us7000demo", time: 1_000, updated: updated, magnitude: m, latitude: 35.6762 + 132 / 111.195,
                longitude: 139.6503, depthKm: 30)
        }
        // M6.8 at 132 km, 30 km deep: estimated 4.2, intensity IV, light shaking: it counts.
        let fired = try #require(rule.assess(event(6.8), announced: nil))
        #expect(fired.change.summary.contains("estimated intensity IV (light shaking) at Tokyo office, 132 km"))
        #expect(fired.change.explanation.contains("estimated intensity IV (4.2) ≥ IV"), "\(fired.change.explanation)")
        // M6.2 there is weaker than IV (3.5): not announced, and the explanation says why.
        #expect(rule.assess(event(6.2), announced: nil) == nil)
        let why = rule.evaluate(event(6.2)).failed.map(\.text).joined()
        #expect(why.contains("< IV") && why.contains("felt enough"), "\(why)")
        // A revision re-estimates: M7.0 is felt more strongly, and the update says so.
        let revised = try #require(rule.assess(event(7.0, updated: 2_000), announced: fired.announced))
        #expect(revised.change.state == .changed)
        let i = try #require(office.intensity(of: event(7.0)))
        #expect(revised.change.summary.contains("estimated intensity \(FeltIntensity.roman(i))"))
    }
}
