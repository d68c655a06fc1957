import KlaxonCore
import Testing

func rateRule(
    _ threshold: Double, _ direction: RateRule.Direction = .rising, name: String = "rise", clear: Double? = nil,
    window: Int64 = 3_600, per: Int64 = 3_600, for hold: Int64 = 0
) -> Rule {
    Rule(
        name: name,
        kind: RateRule(
            metric: "gage_height", direction: direction, threshold: threshold, clear: clear, window: window, per: per,
            holdFor: hold))
}

@Suite("rate rule")
struct RateRuleTests {
    @Test("rising 1 ft/h over an hour fires at the first reading whose hour-long rate reaches it")
    func risingFires() throws {
        var h = try Harness([rateRule(1.0)], metric: "gage_height", unit: "ft")
        // 15-minute readings rising 0.2 ft each (0.8 ft/h), then 0.3 ft each (1.2 ft/h).
        #expect(h.feed([(m(0), 10), (m(15), 10.2), (m(30), 10.4), (m(45), 10.6), (m(60), 10.8)]) == [])
        // At 75 min: from 10.2 at 15 min to 11.1: 0.9 ft/h. At 90 min: from 10.4 to 11.4: 1.0 ft/h.
        #expect(h.feed([(m(75), 11.1)]) == [])
        #expect(h.feed([(m(90), 11.4)]) == [.firing("rise", m(90), 11.4)])
        let t = try #require(h.transitions.last)
        #expect(t.summary.contains("rising 1 ft/h"))
        #expect(t.details.contains("10.4 ft at 2026-01-01T00:30:00Z → 11.4 ft at 2026-01-01T01:30:00Z"))
    }

    @Test("clear resolves below the clear rate, not before")
    func clearHysteresis() throws {
        var h = try Harness([rateRule(1.0, clear: 0.5)], metric: "gage_height")
        h.feed([(m(0), 10), (m(30), 10.6), (m(60), 11.2)])
        #expect(h.firing == ["rise"])
        // Rate over the last hour: 11.2 → 11.9 = 0.7 ft/h: below 1 but not below 0.5: still firing.
        #expect(h.feed([(m(90), 11.6), (m(120), 11.9)]) == [])
        #expect(h.firing == ["rise"])
        // 11.6 → 12.0 over the hour to 150 min: 0.4 ft/h < 0.5: resolved.
        #expect(h.feed([(m(150), 12.0)]) == [.resolved("rise", m(150), 12.0)])
    }

    @Test("falling fires on a drop at the rate, and a rise does not fire it")
    func falling() throws {
        var h = try Harness([rateRule(2, .falling, name: "drop")], metric: "gage_height")
        #expect(h.feed([(m(0), 20), (m(30), 21), (m(60), 22)]) == [])
        #expect(h.feed([(m(90), 20), (m(120), 19.9)]) == [.firing("drop", m(120), 19.9)])
    }

    @Test("for: the rate must hold before it fires; a break cancels the wait")
    func holdFor() throws {
        var h = try Harness([rateRule(1.0, for: 1_800)], metric: "gage_height")
        h.feed([(m(0), 0), (m(30), 0.2)])  // 0.4 ft/h
        #expect(h.state("rise")?.status == .inactive)
        h.feed([(m(60), 2.2)])  // 2.2 ft/h: pending
        #expect(h.state("rise")?.status == .pending)
        #expect(h.feed([(m(75), 2.5)]) == [])  // 2 ft/h, held 15 min
        #expect(h.feed([(m(90), 3)]) == [.firing("rise", m(90), 3)])  // 2.8 ft/h, held 30 min
        // A second rise that breaks before `for` never fires.
        h.feed([(m(120), 3), (m(180), 3)])
        #expect(h.firing == [])
        #expect(h.feed([(m(240), 4.5)]) == [])  // 1.5 ft/h: pending
        #expect(h.state("rise")?.status == .pending)
        #expect(h.feed([(m(300), 4.6)]) == [])  // 0.1 ft/h after 60 min: the wait is cancelled
        #expect(h.state("rise")?.status == .inactive)
    }

    @Test("a gap longer than two windows gives no rate: the alert neither fires nor resolves")
    func gapGivesNoRate() throws {
        var h = try Harness([rateRule(1.0)], metric: "gage_height")
        h.feed([(m(0), 0), (m(30), 1), (m(60), 2)])
        #expect(h.firing == ["rise"])
        // Six hours later the river is far lower, but there is no reading in the window to measure from.
        #expect(h.feed([(m(420), 0.5)]) == [])
        #expect(h.firing == ["rise"])
        // One more reading 30 minutes on: half the window is covered, the rate (0 ft/h) resolves it.
        #expect(h.feed([(m(450), 0.5)]) == [.resolved("rise", m(450), 0.5)])
    }

    @Test("a series just started has no rate until half a window is covered")
    func startNeedsHalfAWindow() throws {
        var h = try Harness([rateRule(1.0)], metric: "gage_height")
        // A steep 5-minute jump at the start is not a rate per hour.
        #expect(h.feed([(m(0), 0), (m(5), 3), (m(10), 6)]) == [])
        #expect(h.feed([(m(30), 9)]) == [.firing("rise", m(30), 9)])
    }

    @Test("per: window states the threshold as the change over the window")
    func perWindow() throws {
        // 6 h window, 2 ft per 6 h (not per hour).
        var h = try Harness([rateRule(2, window: 6 * 3_600, per: 6 * 3_600)], metric: "gage_height")
        // Half a window or more of data is scaled to the window: 0.5 ft in 3 h is 1 ft per 6 h.
        #expect(h.feed([(m(0), 10), (m(180), 10.5), (m(300), 11)]) == [])
        // 10 → 12 over 6 h exactly.
        #expect(h.feed([(m(360), 12)]) == [.firing("rise", m(360), 12)])
    }
}

@Suite("recent readings")
struct RecentReadingsTests {
    @Test("keeps one reading at or before the window edge and drops older ones")
    func keepsEdge() {
        var r = RecentReadings(span: 3_600)
        for k in 0...8 { r.append(time: m(Int64(k) * 15), value: Double(k)) }
        // Newest at 120 min; the edge is 60 min: readings from 60 min on are kept.
        #expect(r.readings.map(\.time) == [m(60), m(75), m(90), m(105), m(120)])
        let rate = r.rate(window: 3_600, per: 3_600)
        #expect(rate?.rate == 4)
        #expect(rate?.from.time == m(60))
    }

    @Test("sparkline scales between min and max and leaves empty buckets blank")
    func sparkline() {
        #expect(RecentReadings.sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█")
        #expect(RecentReadings.sparkline([1, nil, 1]) == "▄ ▄")
        #expect(RecentReadings.sparkline([]) == "")
        var r = RecentReadings(span: 86_400)
        for k in 0..<24 { r.append(time: m(Int64(k) * 60), value: Double(k)) }
        let s = r.sparkline(over: 86_400)
        #expect(s.count == 24)
        #expect(s.hasSuffix("█"))
    }

    @Test("compacts storage without losing order over a long run")
    func longRun() {
        var r = RecentReadings(span: 600)
        for k in 0..<10_000 { r.append(time: Int64(k) * 60, value: Double(k)) }
        #expect(r.count == 11)
        #expect(r.readings.first?.time == Int64(9_989 * 60))
    }
}
