import KlaxonCore
import Testing

/// The forecast alert of a `levels: nws` rule with `forecast:` (issue 42, item 1): golden issuance
/// sequences — earlier, later, cancelled, stale, missing, the observed river taking over — and the
/// lead time a replay measures (item 2).
@Suite struct FloodForecastRuleTests {
    typealias P = FloodForecast.Point
    static let ladder = [
        LevelsRule.Level(name: "action", at: 10), LevelsRule.Level(name: "minor", at: 14),
        LevelsRule.Level(name: "moderate", at: 18),
    ]
    static let context = SeriesContext(station: "MILC1", metric: "gage_height", unit: "ft")
    static let option = ForecastOption(horizon: 48 * 3_600, staleAfter: 24 * 3_600)

    /// Monday 2026-11-30 at `hh:mm` UTC, plus `days`.
    static func mon(_ hhmm: String, days: Int64 = 0) -> Int64 {
        Timestamp.parse("2026-11-30T\(hhmm):00Z")! + days * 86_400
    }

    static func issuance(_ issued: Int64, _ points: [(Int64, Double)]) -> FloodForecast {
        FloodForecast(
            station: "MILC1", metric: "gage_height", issued: issued, unit: "ft", source: "nwps",
            points: points.map { P(time: $0.0, value: $0.1) })
    }

    /// Issued Mon 09:12: action Tue 02:00, minor Tue 14:00, crest 16.5 ft Wed 06:00.
    static let first = issuance(
        mon("09:12"),
        [
            (mon("12:00"), 9), (mon("02:00", days: 1), 10.4), (mon("14:00", days: 1), 14.2),
            (mon("06:00", days: 2), 16.5),
            (mon("00:00", days: 3), 13),
        ])

    func step(_ alert: inout FloodForecastAlert, _ f: FloodForecast?, now: Int64, observed: Double? = nil) -> Change? {
        alert.step(
            FloodForecastAlert.Look(forecast: f, ladder: Self.ladder, observed: observed, now: now),
            option: Self.option,
            context: Self.context)
    }

    @Test func firesWithCrossingCrestAndIssue() throws {
        var alert = FloodForecastAlert()
        let c = try #require(step(&alert, Self.first, now: Self.mon("12:00")))
        #expect(c.state == .firing)
        #expect(c.level == "minor")
        #expect(c.at == Self.mon("09:12"))
        #expect(c.value == 16.5)
        #expect(
            c.summary
                == "forecast: minor flood stage Tue 14:00 UTC (in 26 h), crest 16.5 ft Wed 06:00 UTC, issued Mon 09:12 UTC"
        )
        // The same issuance looked at again: nothing new.
        #expect(step(&alert, Self.first, now: Self.mon("13:00")) == nil)
    }

    @Test func aNewIssuanceEarlierOrLaterChangesTheSameAlert() throws {
        var alert = FloodForecastAlert()
        _ = step(&alert, Self.first, now: Self.mon("12:00"))
        // Earlier and higher: minor at Tue 08:00, crest 17.2 ft Tue 20:00.
        let earlier = Self.issuance(
            Self.mon("15:00"), [(Self.mon("08:00", days: 1), 14.1), (Self.mon("20:00", days: 1), 17.2)])
        let c1 = try #require(step(&alert, earlier, now: Self.mon("15:30")))
        #expect(c1.state == .changed)
        #expect(c1.level == "minor" && c1.fromLevel == "minor")
        #expect(
            c1.summary.hasPrefix("forecast: minor flood stage Tue 08:00 UTC (in 17 h), crest 17.2 ft Tue 20:00 UTC"))
        #expect(
            c1.explanation.hasSuffix(
                "Earlier by 6 h; crest higher by 0.7 ft (was minor Tue 14:00 UTC, crest 16.5 ft, issued Mon 09:12 UTC)."
            ))
        // Later and into moderate.
        let later = Self.issuance(
            Self.mon("21:00"), [(Self.mon("18:00", days: 1), 14.5), (Self.mon("00:00", days: 2), 18.6)])
        let c2 = try #require(step(&alert, later, now: Self.mon("21:00")))
        #expect(c2.state == .changed)
        #expect(c2.level == "moderate" && c2.fromLevel == "minor")
        #expect(c2.explanation.contains("Now moderate, was minor; later by 16 h; crest higher by 1.4 ft"))
        // An issuance arriving late does not count when a newer one is stored: the store hands the newest.
    }

    @Test func cancelledResolves() throws {
        var alert = FloodForecastAlert()
        _ = step(&alert, Self.first, now: Self.mon("12:00"))
        let cancelled = Self.issuance(
            Self.mon("18:00"), [(Self.mon("06:00", days: 1), 9.8), (Self.mon("18:00", days: 1), 9.1)])
        let c = try #require(step(&alert, cancelled, now: Self.mon("18:10")))
        #expect(c.state == .resolved)
        #expect(c.fromLevel == "minor")
        #expect(
            c.summary == "gage_height forecast at MILC1 no longer reaches action within 48 h (issued Mon 18:00 UTC)")
        #expect(!alert.isFiring)
        #expect(step(&alert, cancelled, now: Self.mon("19:00")) == nil)
    }

    @Test func staleOrMissingIsNeverAResolve() throws {
        var alert = FloodForecastAlert()
        _ = step(&alert, Self.first, now: Self.mon("12:00"))
        // 23 h after issue: fresh still.
        #expect(step(&alert, Self.first, now: Self.mon("08:12", days: 1)) == nil)
        // 25 h: stale, said once, the alert stands.
        let c = try #require(step(&alert, Self.first, now: Self.mon("10:12", days: 1)))
        #expect(c.state == .changed)
        #expect(c.headline == "forecast stale")
        #expect(c.summary.contains("issued Mon 09:12 UTC, is 25 h old"))
        #expect(alert.isFiring)
        #expect(step(&alert, Self.first, now: Self.mon("20:00", days: 1)) == nil)
        #expect(step(&alert, nil, now: Self.mon("21:00", days: 1)) == nil)
        // A fresh issuance with the same outlook: the alert says it is current again.
        var again = Self.first
        again.issued = Self.mon("11:00", days: 1)
        let fresh = try #require(step(&alert, again, now: Self.mon("11:30", days: 1)))
        #expect(fresh.state == .changed)
        #expect(fresh.explanation.contains("Reissued unchanged"))

        // No forecast stored at all while firing: stale, not resolved.
        var other = FloodForecastAlert()
        _ = step(&other, Self.first, now: Self.mon("12:00"))
        let missing = try #require(step(&other, nil, now: Self.mon("13:00")))
        #expect(missing.headline == "forecast stale")
        #expect(missing.summary.contains("none is stored"))
        // Not firing and stale: nothing at all.
        var quiet = FloodForecastAlert()
        #expect(step(&quiet, Self.first, now: Self.mon("12:00", days: 2)) == nil)
    }

    @Test func observedTakesOver() throws {
        var alert = FloodForecastAlert()
        _ = step(&alert, Self.first, now: Self.mon("12:00"))
        // Action observed: below what the forecast reaches, the forecast alert stays.
        #expect(step(&alert, Self.first, now: Self.mon("03:00", days: 1), observed: 11) == nil)
        let c = try #require(step(&alert, Self.first, now: Self.mon("14:00", days: 1), observed: 14.2))
        #expect(c.state == .resolved)
        #expect(
            c.summary
                == "gage_height at MILC1 reached minor flood stage as forecast (14.2 ft): the observed alert takes over"
        )
        // A later issuance still at minor while the river is there: quiet.
        var next = Self.first
        next.issued = Self.mon("16:00", days: 1)
        #expect(step(&alert, next, now: Self.mon("16:00", days: 1), observed: 14.6) == nil)
    }

    @Test func beyondTheHorizonOrWithoutCategoriesNothing() {
        var alert = FloodForecastAlert()
        let far = Self.issuance(Self.mon("09:00"), [(Self.mon("12:00", days: 3), 15)])
        #expect(step(&alert, far, now: Self.mon("10:00")) == nil)
        var bare = FloodForecastAlert()
        #expect(
            bare.step(
                FloodForecastAlert.Look(forecast: Self.first, ladder: [], observed: nil, now: Self.mon("12:00")),
                option: Self.option, context: Self.context) == nil)
    }

    @Test func replayMeasuresLeadTime() {
        let replay = FloodForecastReplay(option: Self.option, ladder: Self.ladder, context: Self.context)
        // Observed hourly from Mon 12:00: rises through action Tue 02:00 and minor Tue 14:00, then
        // to moderate Wed 12:00, which no forecast foresaw.
        var observed: [(time: Int64, value: Double)] = []
        for h in 0..<60 {
            let t = Self.mon("12:00") + Int64(h) * 3_600
            let v: Double = h < 14 ? 9 : h < 26 ? 10.5 : h < 48 ? 14.2 : 18.1
            observed.append((t, v))
        }
        let out = replay.run(issuances: [Self.first], observed: observed)
        #expect(out.crossings.map(\.category) == ["action", "minor", "moderate"])
        #expect(out.crossings[0].time == Self.mon("02:00", days: 1))
        // Warned from the first look after the issue (the issuance at Mon 09:12).
        let early: Int64 = 16 * 3_600 + 48 * 60
        #expect(out.crossings[0].lead == early)
        let minor: Int64 = 28 * 3_600 + 48 * 60
        #expect(out.crossings[1].lead == minor)
        #expect(out.crossings[2].lead == nil)
        #expect(out.changes.map(\.state) == [.firing, .changed, .resolved])
    }
}
