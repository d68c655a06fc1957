import KlaxonCore
import Testing

/// EPA's PM NowCast (issue 42, item 4). Expected values were computed apart from this code, by a
/// separate script from the fact sheet's formula, and the first is the published worked example of
/// the PWFSLSmoke NowCast vignette (Omak, WA, 2015-08-21 hour 11: 54.8 µg/m³).
@Suite struct NowCastTests {
    func value(_ p: NowCast.Pollutant, _ hours: [Double?]) -> NowCast.Result? {
        if case .success(let r) = NowCast.compute(p, hourly: hours) { return r }
        return nil
    }

    func invalid(_ p: NowCast.Pollutant, _ hours: [Double?]) -> NowCast.Invalid? {
        if case .failure(let e) = NowCast.compute(p, hourly: hours) { return e }
        return nil
    }

    @Test func publishedOmakExample() {
        let hours: [Double?] = [46.3, 27.4, 59.8, 129.2, 130.6, 215.4, 143.2, 93.7, 101.8, 49.3, 80.2, 123.3]
        let r = value(.pm25, hours)
        #expect(r?.nowcast == 54.8)
        #expect(r?.aqi == 149)
        #expect(r?.category == "Unhealthy for Sensitive Groups")
    }

    @Test func steadyAirIsTheTwelveHourMean() {
        #expect(value(.pm25, Array(repeating: 10.0, count: 12)) == .init(nowcast: 10.0, aqi: 53, category: "Moderate"))
        #expect(value(.pm25, Array(repeating: 0.0, count: 12)) == .init(nowcast: 0, aqi: 0, category: "Good"))
    }

    @Test func weightAboveTheFloor() {
        // c_min/c_max = 9/13 > ½: w is the ratio itself; 11.2788… truncates to 11.2.
        let hours: [Double?] = [12, 11, 10, 10.5, 11.5, 12.5, 13, 12, 11, 10, 9.5, 9]
        #expect(value(.pm25, hours) == .init(nowcast: 11.2, aqi: 55, category: "Moderate"))
    }

    @Test func missingHoursAreInNeitherSum() {
        let hours: [Double?] = [40, nil, 35, nil, nil, 20, 18, nil, 15, 14, 13, 12]
        #expect(value(.pm25, hours) == .init(nowcast: 38.1, aqi: 107, category: "Unhealthy for Sensitive Groups"))
        // Fewer than 12 given: the older hours are missing, as an empty item would say.
        #expect(value(.pm25, [40, nil, 35]) == value(.pm25, [40, nil, 35, nil, nil, nil]))
    }

    @Test func pm10TruncatesToWholeMicrograms() {
        let hours: [Double?] = [160, 150, 140, 120, 100, 90, 80, 70, 60, 55, 50, 45]
        #expect(value(.pm10, hours) == .init(nowcast: 148, aqi: 97, category: "Moderate"))
    }

    @Test func twoOfTheThreeMostRecentHours() {
        #expect(value(.pm25, [20, 22]) != nil)
        #expect(value(.pm25, [nil, 22, 21, 20]) != nil)
        #expect(value(.pm25, [20, nil, 21, 20]) != nil)
        #expect(invalid(.pm25, [20, nil, nil, 20, 20]) == .tooFewRecentHours(present: 1))
        #expect(invalid(.pm25, [nil, nil, nil, 20, 20]) == .tooFewRecentHours(present: 0))
        #expect(invalid(.pm25, [20]) == .tooFewRecentHours(present: 1))
        #expect(invalid(.pm25, []) == .tooFewRecentHours(present: 0))
    }

    @Test func implausibleHoursAreRefusedByName() {
        #expect(invalid(.pm25, [10, -3, 10]) == .implausible(hour: 2, value: -3, range: 0...2_000))
        #expect(invalid(.pm25, [10, 10, 5_000]) == .implausible(hour: 3, value: 5_000, range: 0...2_000))
        if case .implausible(let hour, _, _) = invalid(.pm10, [.nan, 10]) {
            #expect(hour == 1)
        } else {
            Issue.record("NaN accepted")
        }
        #expect(invalid(.pm25, Array(repeating: 1, count: 13)) == .tooManyHours(13))
        #expect("\(NowCast.Invalid.tooFewRecentHours(present: 1))".contains("2 of the 3 most recent hours"))
    }

    @Test func beyondTheIndexIsItsTop() {
        #expect(value(.pm25, [900, 900, 900])?.aqi == 500)
        #expect(value(.pm25, [900, 900, 900])?.category == "Hazardous")
    }

    @Test func pm10Breakpoints() {
        let cases: [(Double, Int)] = [
            (0, 0), (54, 50), (54.9, 50), (55, 51), (154, 100), (155, 101), (254, 150), (255, 151),
            (354, 200), (355, 201), (424, 300), (425, 301), (604, 500), (605, 500),
        ]
        for (c, aqi) in cases { #expect(EPAAQI.fromPM10(c) == aqi, "\(c)") }
        #expect(EPAAQI.fromPM10(-1) == nil)
    }

    @Test func pollutantNames() {
        #expect(NowCast.Pollutant(name: "PM2.5") == .pm25)
        #expect(NowCast.Pollutant(name: "pm25") == .pm25)
        #expect(NowCast.Pollutant(name: "pm10") == .pm10)
        #expect(NowCast.Pollutant(name: "o3") == nil)
        #expect(NowCast.Pollutant.pm25.aqiMetric == "aqi.pm25.nowcast")
    }
}
