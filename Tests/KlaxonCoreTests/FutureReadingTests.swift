import KlaxonCore
import Testing

@Suite("readings from the future and one unit per series")
struct FutureReadingTests {
    let now = Timestamp.parse("2026-11-27T12:00:00Z")!

    func reading(_ time: Int64, station: String = "S", unit: String? = nil, value: Double = 1) -> Reading {
        Reading(station: station, metric: "gage_height", time: time, value: value, unit: unit)
    }

    @Test("a reading more than the margin after now is refused; one inside it is kept")
    func boundary() {
        let bound = FutureBound.standard
        let cases: [(String, Int64, Bool)] = [
            ("now", now, true), ("now+23h", now + 23 * 3600, true), ("now+24h exactly", now + 86_400, true),
            ("now+24h+1s", now + 86_401, false), ("now+25h", now + 25 * 3600, false),
            ("2199-12-31", Timestamp.parse("2199-12-31T00:00:00Z")!, false),
            ("9999-12-31", Timestamp.parse("9999-12-31T23:59:59Z")!, false), ("Int64.max", Int64.max, false),
            ("the past", now - 10 * 365 * 86_400, true), ("1800", Timestamp.parse("1800-01-01T00:00:00Z")!, true),
        ]
        for (name, time, kept) in cases {
            let problem = bound.problem(time: time, now: now)
            #expect((problem == nil) == kept, "\(name)")
            if let problem {
                #expect(problem.contains("more than 1d after now (2026-11-27T12:00:00Z)"), "\(problem)")
                #expect(problem.contains("readings.max_future"))
            }
        }
        // A margin is configurable, and now near Int64.max cannot overflow.
        #expect(FutureBound(margin: 3600).problem(time: now + 3601, now: now) != nil)
        #expect(FutureBound(margin: 0).problem(time: now + 1, now: now) != nil)
        #expect(FutureBound.standard.latest(now: Int64.max - 5) == Int64.max)
    }

    @Test("partition keeps the good readings in order and names the bad ones with their index")
    func partition() {
        let far = Timestamp.parse("2199-12-31T00:00:00Z")!
        let batch = [reading(now - 60), reading(far), reading(now), reading(now + 25 * 3600), reading(now + 3600)]
        let (kept, refused) = FutureBound.standard.partition(batch, now: now)
        #expect(kept.map(\.time) == [now - 60, now, now + 3600])
        #expect(refused.map(\.index) == [1, 3])
        #expect(refused[0].reason.hasPrefix("time 2199-12-31T00:00:00Z is more than 1d after now"))
        // Nothing to refuse: the same readings back.
        let fine = FutureBound.standard.partition([reading(now)], now: now)
        #expect(fine.kept.count == 1 && fine.refused.isEmpty)
    }

    @Test("a source batch drops its future readings, keeps the rest and its forecasts")
    func sourceBatch() {
        var batch = SourceBatch(readings: [reading(now, station: "A"), reading(now + 40 * 86_400, station: "B<x>")])
        batch.weather = [DayWeather(place: "1.00,2.00", date: "2027-01-05", source: "open-meteo", issued: now)]
        let refused = batch.refuseFuture(.standard, now: now)
        #expect(batch.readings.map(\.station) == ["A"])
        #expect(batch.weather.count == 1)
        #expect(refused.count == 1)
        #expect(refused[0].contains("gage_height: time 2027-01-06T12:00:00Z is more than 1d after now"), "\(refused)")
    }

    @Test("a forecast's readings may be dated up to its horizon ahead, not further")
    func forecastReadings() {
        let far = Timestamp.parse("2199-12-31T00:00:00Z")!
        var batch = SourceBatch(readings: [
            reading(now + 10 * 86_400, station: "1.00,2.00"), reading(now + 210 * 86_400, station: "1.00,2.00"),
            reading(now + 401 * 86_400, station: "1.00,2.00"), reading(far, station: "1.00,2.00"),
        ])
        batch.readingsAreForecast = true
        let refused = batch.refuseFuture(.standard, now: now)
        #expect(batch.readings.map(\.time) == [now + 10 * 86_400, now + 210 * 86_400])
        #expect(refused.count == 2, "\(refused)")
        // The same readings as observations: refused past the day's margin.
        var observed = SourceBatch(readings: [reading(now + 10 * 86_400)])
        #expect(observed.refuseFuture(.standard, now: now).count == 1)
    }

    @Test("units convert only within what they measure, and round trips give back the number")
    func conversions() throws {
        let f = try #require(Units.conversion(from: "°C", to: "°F"))
        #expect(f.apply(-35) == -31)
        let c = try #require(Units.conversion(from: "°F", to: "°C"))
        #expect(c.apply(-31) == -35)
        #expect(c.apply(37.76) == 3.2)
        #expect(try #require(Units.conversion(from: "mph", to: "km/h")).apply(10) == 16.09344)
        #expect(try #require(Units.conversion(from: "inHg", to: "hPa")).apply(29.92) == 1013.20759)
        #expect(try #require(Units.conversion(from: "ft", to: "m")).apply(10) == 3.048)
        #expect(try #require(Units.conversion(from: "in", to: "mm")).apply(1) == 25.4)
        #expect(try #require(Units.conversion(from: "ft³/s", to: "m3/s")).apply(1000) == 28.3168466)
        #expect(try #require(Units.conversion(from: "K", to: "°C")).apply(273.15) == 0)
        #expect(Units.conversion(from: "deg C", to: "°C") == Units.Conversion(scale: 1, offset: 0))
        // Different things, or units Klaxon does not know: no conversion.
        for (a, b) in [("ft", "°C"), ("mph", "hPa"), ("%", "m"), ("furlongs", "m"), ("ug/m3", "ppm"), ("", "m")] {
            #expect(Units.conversion(from: a, to: b) == nil, "\(a) → \(b)")
        }
        #expect(Units.Conversion(scale: 1e308, offset: 0).apply(1e10) == nil)
    }

    @Test("a batch in another unit is converted to the series' unit, or refused; never relabelled")
    func seriesUnitRule() {
        let key = SeriesKey(station: "KBOS", metric: "temperature")
        var batch = [
            Reading(station: "KBOS", metric: "temperature", time: 1, value: -31, unit: "°F"),
            Reading(station: "KBOS", metric: "temperature", time: 2, value: 5, unit: nil),
            Reading(station: "KBOS", metric: "temperature", time: 3, value: 4, unit: "ft"),
            Reading(station: "KBOS", metric: "temperature", time: 4, value: 2, unit: "deg C"),
            Reading(station: "NEW", metric: "temperature", time: 1, value: 50, unit: "°F"),
            Reading(station: "NEW", metric: "temperature", time: 2, value: 10, unit: "°C"),
            Reading(station: "NEW", metric: "temperature", time: 3, value: 1, unit: "hPa"),
        ]
        let out = SeriesUnitRule.apply(&batch, stored: [key: "°C"])
        #expect(batch[0].value == -35 && batch[0].unit == "°C")
        #expect(batch[1].value == 5 && batch[1].unit == nil)
        #expect(batch[3].value == 2 && batch[3].unit == "°C")
        // A new series takes its first reading's unit; later ones are converted to it.
        #expect(out.adopted == [SeriesKey(station: "NEW", metric: "temperature"): "°F"])
        #expect(batch[4].value == 50 && batch[4].unit == "°F")
        #expect(batch[5].value == 50 && batch[5].unit == "°F")
        #expect(out.refusedIndices == [false, false, true, false, false, false, true])
        #expect(out.refusedCount == 2)
        #expect(
            out.refused.map(\.description).contains { $0.hasPrefix("KBOS/temperature: 1 reading in ft not stored") })
        #expect(out.converted.map(\.count) == [1, 1])
        // No units anywhere: nothing to do.
        var plain = [Reading(station: "A", metric: "m", time: 1, value: 1)]
        let none = SeriesUnitRule.apply(&plain, stored: [:])
        #expect(none.refusedIndices == nil && none.adopted.isEmpty)
    }
}
