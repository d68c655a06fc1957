import KlaxonCore
import Testing

@Suite struct AQIScaleTests {
    func name(_ scale: AQIScale, _ aqi: Double) -> String? { scale.level(for: aqi)?.name }

    @Test func usEPABoundaries() {
        let s = AQIScale.usEPA
        let cases: [(Double, String)] = [
            (0, "Good"), (50, "Good"), (51, "Moderate"), (100, "Moderate"),
            (101, "Unhealthy for Sensitive Groups"), (150, "Unhealthy for Sensitive Groups"),
            (151, "Unhealthy"), (200, "Unhealthy"), (201, "Very Unhealthy"), (300, "Very Unhealthy"),
            (301, "Hazardous"), (500, "Hazardous"), (999, "Hazardous"),
            // Fractions round half up before they are placed.
            (50.4, "Good"), (50.49, "Good"), (50.5, "Moderate"), (100.4, "Moderate"),
            (100.5, "Unhealthy for Sensitive Groups"), (150.5, "Unhealthy"), (200.49, "Unhealthy"),
            (200.5, "Very Unhealthy"), (300.5, "Hazardous"), (0.2, "Good"),
        ]
        for (aqi, expected) in cases {
            #expect(name(s, aqi) == expected, "\(aqi)")
        }
        #expect(s.level(for: -0.1) == nil)
        #expect(s.level(for: .nan) == nil)
        #expect(s.level(for: .infinity) == nil)
    }

    @Test func indiaNAQIBoundaries() {
        let s = AQIScale.indiaNAQI
        let cases: [(Double, String)] = [
            (0, "Good"), (50, "Good"), (50.4, "Good"), (50.5, "Satisfactory"), (51, "Satisfactory"),
            (100, "Satisfactory"), (101, "Moderate"), (200, "Moderate"), (200.5, "Poor"), (201, "Poor"),
            (300, "Poor"), (301, "Very Poor"), (400, "Very Poor"), (400.49, "Very Poor"), (401, "Severe"),
            (500, "Severe"), (650, "Severe"),
            // The WebSocket feed's unrounded values.
            (181.3946178595279, "Moderate"), (303.28831346653243, "Very Poor"),
        ]
        for (aqi, expected) in cases {
            #expect(name(s, aqi) == expected, "\(aqi)")
        }
    }

    @Test func levelsAreContiguousAndDescribed() {
        for scale in [AQIScale.usEPA, .indiaNAQI] {
            #expect(scale.levels.count == 6)
            #expect(scale.levels.first?.at == 0)
            #expect(scale.levels.last?.upper == 500)
            for (lower, upper) in zip(scale.levels, scale.levels.dropFirst()) {
                #expect(upper.at == lower.upper + 1, "\(scale.id) \(upper.name)")
            }
            for level in scale.levels {
                #expect(level.colour.count == 7 && level.colour.hasPrefix("#"), "\(level.name)")
                #expect(!level.advice.isEmpty && !level.colourName.isEmpty && !level.emoji.isEmpty)
            }
        }
        #expect(
            AQIScale.usEPA.levels.map(\.colour) == ["#00E400", "#FFFF00", "#FF7E00", "#FF0000", "#8F3F97", "#7E0023"])
        #expect(
            AQIScale.usEPA.levels.map(\.colourName) == ["green", "yellow", "orange", "red", "purple", "maroon"])
        #expect(AQIScale.usEPA.levels.map(\.upper) == [50, 100, 150, 200, 300, 500])
        #expect(
            AQIScale.indiaNAQI.levels.map(\.name) == [
                "Good", "Satisfactory", "Moderate", "Poor", "Very Poor", "Severe",
            ])
        #expect(AQIScale.indiaNAQI.levels.map(\.upper) == [50, 100, 200, 300, 400, 500])
        #expect(AQIScale.usEPA.level(for: 120)?.advice.hasPrefix("Members of sensitive groups") == true)
    }

    @Test func named() {
        #expect(AQIScale.named("us-epa") == .usEPA)
        #expect(AQIScale.named("india-naqi") == .indiaNAQI)
        #expect(AQIScale.named(" US-EPA ") == .usEPA)
        #expect(AQIScale.named("epa") == nil)
        #expect(AQIScale.named("") == nil)
        #expect(AQIScale.usEPA.title == "US EPA AQI")
    }

    @Test func alertLadder() {
        #expect(
            AQIScale.usEPA.alertLadder == [
                LevelsRule.Level(name: "Moderate", at: 50.5),
                LevelsRule.Level(name: "Unhealthy for Sensitive Groups", at: 100.5),
                LevelsRule.Level(name: "Unhealthy", at: 150.5),
                LevelsRule.Level(name: "Very Unhealthy", at: 200.5),
                LevelsRule.Level(name: "Hazardous", at: 300.5),
            ])
        #expect(AQIScale.indiaNAQI.alertLadder.map(\.at) == [50.5, 100.5, 200.5, 300.5, 400.5])
    }

    /// A `levels` rule on the ladder agrees with `level(for:)` on every value, fractions included.
    @Test func ladderAgreesWithLevel() {
        for scale in [AQIScale.usEPA, .indiaNAQI] {
            let rule = LevelsRule(metric: "aqi", levels: scale.alertLadder)
            var v = 0.0
            while v <= 520 {
                let target = rule.target(from: nil, value: v)
                let expected = scale.level(for: v).flatMap { $0.name == scale.levels[0].name ? nil : $0.name }
                #expect(target.map { scale.alertLadder[$0].name } == expected, "\(scale.id) \(v)")
                v += 0.25
            }
        }
    }

    @Test func pm25Breakpoints() {
        let cases: [(Double, Int)] = [
            (0, 0), (4.5, 25), (9.0, 50), (9.05, 50), (9.1, 51), (12.0, 56), (35.4, 100), (35.5, 101),
            (55.4, 150), (55.5, 151), (125.4, 200), (125.5, 201), (225.4, 300), (225.5, 301), (325.4, 500),
            // Beyond the AQI: the top of the scale.
            (325.5, 500), (800, 500),
        ]
        for (c, aqi) in cases {
            #expect(EPAAQI.fromPM25(c) == aqi, "\(c)")
        }
        #expect(EPAAQI.fromPM25(-0.1) == nil)
        #expect(EPAAQI.fromPM25(.nan) == nil)
    }

    @Test func ozoneEightHourBreakpoints() {
        let cases: [(Double, Int)] = [
            (0, 0), (0.054, 50), (0.0549, 50), (0.055, 51), (0.070, 100), (0.071, 101), (0.085, 150),
            (0.086, 151), (0.105, 200), (0.106, 201), (0.200, 300),
        ]
        for (c, aqi) in cases {
            #expect(EPAAQI.fromO3EightHour(c) == aqi, "\(c)")
        }
        // Above 0.200 ppm the 8-hour value is not used: the 1-hour value gives the AQI.
        #expect(EPAAQI.fromO3EightHour(0.201) == nil)
        #expect(EPAAQI.fromO3EightHour(-0.001) == nil)
    }

    @Test func ozoneOneHourBreakpoints() {
        let cases: [(Double, Int)] = [
            (0.125, 101), (0.164, 150), (0.165, 151), (0.204, 200), (0.205, 201), (0.404, 300), (0.405, 301),
            (0.604, 500), (0.605, 500),
        ]
        for (c, aqi) in cases {
            #expect(EPAAQI.fromO3OneHour(c) == aqi, "\(c)")
        }
        // Below 0.125 ppm only the 8-hour table applies.
        #expect(EPAAQI.fromO3OneHour(0.124) == nil)
        #expect(EPAAQI.fromO3OneHour(0) == nil)
        #expect(EPAAQI.fromO3OneHour(-1) == nil)
    }

    /// EPA's worked examples (Technical Assistance Document), checked against the table and formula:
    /// PM2.5 35.9 → 101.98 → 102; O3 8-hour 0.078 → exactly 125.5 → 126 (half up); O3 1-hour
    /// 0.162 → 147.49 → 147. The O3 AQI is the higher of the 8-hour and 1-hour indices: 147.
    @Test func epaWorkedExamples() {
        #expect(EPAAQI.fromPM25(35.9) == 102)
        #expect(EPAAQI.fromO3EightHour(0.078) == 126)
        #expect(EPAAQI.fromO3EightHour(0.0789) == 126)  // truncated to 0.078 first
        #expect(EPAAQI.fromO3OneHour(0.162) == 147)
        let o3 = [EPAAQI.fromO3EightHour(0.078), EPAAQI.fromO3OneHour(0.162)].compactMap { $0 }.max()
        #expect(o3 == 147)
        #expect(AQIScale.usEPA.level(for: Double(o3 ?? 0))?.name == "Unhealthy for Sensitive Groups")
    }
}
