import KlaxonCore
import Testing

@Suite("threshold rule")
struct ThresholdRuleTests {
    // MARK: Boundaries

    @Test("above: a value equal to the threshold fires at that reading")
    func aboveFiresAtEquality() throws {
        var h = try Harness([thresholdRule(10)])
        #expect(h.feed([(m(0), 9), (m(5), 9.999)]) == [])
        #expect(h.feed([(m(10), 10)]) == [.firing("hi", m(10), 10)])
        #expect(h.firing == ["hi"])
    }

    @Test(
        "above: whether the first reading fires",
        arguments: [
            (9.0, false), (9.999_999, false), (10.0, true), (10.000_001, true), (1e9, true), (-3.0, false),
        ])
    func aboveActivation(value: Double, fires: Bool) throws {
        var h = try Harness([thresholdRule(10)])
        let got = h.feed([(m(0), value)])
        #expect(got == (fires ? [.firing("hi", m(0), value)] : []))
        #expect(h.state("hi")?.isFiring == fires)
    }

    @Test(
        "below: whether the first reading fires",
        arguments: [(2.0, true), (1.999, true), (-40.0, true), (2.000_001, false), (50.0, false)])
    func belowActivation(value: Double, fires: Bool) throws {
        var h = try Harness([thresholdRule("lo", .below, 2)])
        let got = h.feed([(m(0), value)])
        #expect(got == (fires ? [.firing("lo", m(0), value)] : []))
    }

    @Test("above with default clear: a value equal to the threshold does not resolve; just below does")
    func aboveDefaultClearBoundary() throws {
        var h = try Harness([thresholdRule(10)])
        #expect(h.feed([(m(0), 12)]) == [.firing("hi", m(0), 12)])
        #expect(h.feed([(m(5), 10)]) == [])
        #expect(h.firing == ["hi"])
        #expect(h.feed([(m(10), 9.999)]) == [.resolved("hi", m(10), 9.999)])
        #expect(h.firing == [])
        #expect(h.state("hi")?.status == .inactive)
    }

    @Test(
        "above 10, clear 8: a firing alert resolves only when value < 8",
        arguments: [
            (8.0, false), (8.000_1, false), (9.5, false), (10.0, false), (30.0, false), (7.999_9, true), (0.0, true),
            (-8.0, true),
        ])
    func aboveHysteresis(value: Double, resolves: Bool) throws {
        var h = try Harness([thresholdRule(10, clear: 8)])
        #expect(h.feed([(m(0), 11)]) == [.firing("hi", m(0), 11)])
        #expect(h.feed([(m(5), value)]) == (resolves ? [.resolved("hi", m(5), value)] : []))
        #expect(h.state("hi")?.isFiring == !resolves)
    }

    @Test(
        "below 2, clear 3: a firing alert resolves only when value > 3",
        arguments: [
            (3.0, false), (2.999, false), (2.5, false), (2.0, false), (-5.0, false), (3.001, true), (100.0, true),
        ])
    func belowHysteresis(value: Double, resolves: Bool) throws {
        var h = try Harness([thresholdRule("lo", .below, 2, clear: 3)])
        #expect(h.feed([(m(0), 1)]) == [.firing("lo", m(0), 1)])
        #expect(h.feed([(m(5), value)]) == (resolves ? [.resolved("lo", m(5), value)] : []))
        #expect(h.state("lo")?.isFiring == !resolves)
    }

    @Test("below with default clear: equal to the threshold stays firing, just above resolves")
    func belowDefaultClearBoundary() throws {
        var h = try Harness([thresholdRule("lo", .below, 2)])
        #expect(h.feed([(m(0), 3), (m(5), 2)]) == [.firing("lo", m(5), 2)])
        #expect(h.feed([(m(10), 2)]) == [])
        #expect(h.feed([(m(15), 2.001)]) == [.resolved("lo", m(15), 2.001)])
    }

    // MARK: Hysteresis band

    @Test("above: a value inside the band between clear and threshold keeps firing and never re-fires")
    func aboveBand() throws {
        var h = try Harness([thresholdRule(10, clear: 8)])
        let got = h.feed([
            (m(0), 7), (m(5), 9),  // in the band but never reached 10: nothing
            (m(10), 10),  // fires
            (m(15), 9.5), (m(20), 8), (m(25), 11), (m(30), 8.5),  // band and above: still firing, no repeat
            (m(35), 7.9),  // below clear: resolves
            (m(40), 9.9),  // band again, from inactive: nothing
            (m(45), 10.5),  // fires again
        ])
        #expect(
            got == [
                .firing("hi", m(10), 10), .resolved("hi", m(35), 7.9), .firing("hi", m(45), 10.5),
            ])
    }

    @Test("below: the full lifecycle with hysteresis")
    func belowLifecycle() throws {
        var h = try Harness([thresholdRule("lo", .below, 2, clear: 3)])
        let got = h.feed([
            (m(0), 5), (m(5), 2.5), (m(10), 2), (m(15), 2.5), (m(20), 3), (m(25), 1), (m(30), 3.5), (m(35), 2.9),
            (m(40), 0),
        ])
        #expect(got == [.firing("lo", m(10), 2), .resolved("lo", m(30), 3.5), .firing("lo", m(40), 0)])
    }

    // MARK: for

    @Test("for: fires at the reading where exactly `for` has elapsed since the condition began")
    func forReachedExactly() throws {
        var h = try Harness([thresholdRule(10, for: 15 * 60)])
        #expect(h.feed([(m(0), 9), (m(5), 11), (m(10), 12), (m(15), 10)]) == [])
        #expect(h.state("hi")?.status == .pending)
        #expect(h.state("hi")?.since == m(5))
        #expect(h.firing == [])
        #expect(h.feed([(m(20), 10)]) == [.firing("hi", m(20), 10)])
        #expect(h.firing == ["hi"])
    }

    @Test("for: the condition broken one sample early never fires; the hold restarts from scratch")
    func forBrokenOneSampleEarly() throws {
        var h = try Harness([thresholdRule(10, for: 15 * 60)])
        // Pending from 0; 15 would reach `for`, but the condition breaks there.
        #expect(h.feed([(m(0), 11), (m(5), 11), (m(10), 11), (m(15), 9.99)]) == [])
        #expect(h.state("hi")?.status == .inactive)
        // A new pending period starts at 20: 30 is not enough, 35 is.
        #expect(h.feed([(m(20), 11), (m(25), 11), (m(30), 11)]) == [])
        #expect(h.feed([(m(35), 11)]) == [.firing("hi", m(35), 11)])
    }

    @Test("for: a single reading that breaks the condition between two true ones cancels the pending alert")
    func forBrokenInTheMiddle() throws {
        var h = try Harness([thresholdRule(10, for: 10 * 60)])
        #expect(h.feed([(m(0), 11), (m(5), 8), (m(10), 11), (m(15), 11)]) == [])
        #expect(h.feed([(m(20), 11)]) == [.firing("hi", m(20), 11)])
    }

    @Test("for: pending continues across a gap in readings and fires at the first reading past `for`")
    func forAcrossGap() throws {
        var h = try Harness([thresholdRule(10, for: 30 * 60)])
        #expect(h.feed([(m(0), 12), (m(10), 12)]) == [])
        // No readings for two hours; the next one still satisfies the condition.
        #expect(h.feed([(m(130), 12)]) == [.firing("hi", m(130), 12)])
    }

    @Test("for: a gap does not rescue a pending alert whose next reading breaks the condition")
    func forGapThenBreak() throws {
        var h = try Harness([thresholdRule(10, for: 30 * 60)])
        #expect(h.feed([(m(0), 12), (m(120), 9), (m(125), 12), (m(150), 12)]) == [])
        #expect(h.feed([(m(155), 12)]) == [.firing("hi", m(155), 12)])
    }

    @Test("for: a one-second hold needs a second reading")
    func forOneSecond() throws {
        var h = try Harness([thresholdRule(10, for: 1)])
        #expect(h.feed([(t0, 10)]) == [])
        #expect(h.feed([(t0 + 1, 10)]) == [.firing("hi", t0 + 1, 10)])
    }

    @Test("for: below direction waits the same way")
    func forBelow() throws {
        var h = try Harness([thresholdRule("lo", .below, 0, clear: 1, for: 600)])
        #expect(h.feed([(m(0), -1), (m(5), 0)]) == [])
        #expect(h.feed([(m(10), 0.5)]) == [])  // above threshold: pending cancelled
        #expect(h.feed([(m(15), -2), (m(20), -2)]) == [])
        #expect(h.feed([(m(25), -2)]) == [.firing("lo", m(25), -2)])
        #expect(h.feed([(m(30), 1)]) == [])
        #expect(h.feed([(m(35), 1.5)]) == [.resolved("lo", m(35), 1.5)])
    }

    @Test("for does not delay resolving")
    func forDoesNotDelayResolve() throws {
        var h = try Harness([thresholdRule(10, for: 600)])
        #expect(h.feed([(m(0), 11), (m(10), 11)]) == [.firing("hi", m(10), 11)])
        #expect(h.feed([(m(11), 5)]) == [.resolved("hi", m(11), 5)])
    }

    @Test("without `for` the alert fires at the first reading meeting the condition")
    func noForFiresAtOnce() throws {
        var h = try Harness([thresholdRule(10)])
        #expect(h.feed([(m(0), 50)]) == [.firing("hi", m(0), 50)])
        #expect(h.state("hi")?.since == m(0))
    }

    @Test("a firing alert reports no further transitions while the condition keeps holding")
    func noRepeats() throws {
        var h = try Harness([thresholdRule(10)])
        let readings = (0..<50).map { (m(Int64($0)), 10.0 + Double($0)) }
        #expect(h.feed(readings) == [.firing("hi", m(0), 10)])
    }

    // MARK: What a transition carries

    @Test("a transition names the rule, kind, series, severity, unit and the reading's value")
    func transitionFields() throws {
        var h = try Harness(
            [thresholdRule("flood", 12, metric: "gage_height", severity: .critical)], station: "01646500",
            metric: "gage_height", unit: "ft")
        h.feed([(m(0), 12.4)])
        let t = try #require(h.transitions.first)
        #expect(h.transitions.count == 1)
        #expect(t.rule == "flood")
        #expect(t.kind == "threshold")
        #expect(t.station == "01646500")
        #expect(t.metric == "gage_height")
        #expect(t.state == .firing)
        #expect(t.at == m(0))
        #expect(t.value == 12.4)
        #expect(t.unit == "ft")
        #expect(t.severity == .critical)
        #expect(t.level == nil && t.fromLevel == nil)
        #expect(t.alertKey == AlertKey(rule: "flood", station: "01646500", metric: "gage_height"))
    }

    @Test("a transition's words: summary, explanation, details and headline, with a unit and a hold")
    func transitionWords() throws {
        var h = try Harness(
            [thresholdRule("flood", 12, clear: 11.5, for: 1800, metric: "gage_height")], station: "01646500",
            metric: "gage_height", unit: "ft")
        h.feed([(m(0), 12.25), (m(30), 12.4), (m(45), 11.4)])
        #expect(h.transitions.count == 2)
        let fired = try #require(h.transitions.first)
        #expect(fired.summary == "gage_height at 01646500 is 12.4 ft, at or above 12")
        #expect(fired.explanation == "12.4 ft is at or above 12 ft for 30m")
        #expect(
            fired.details == "gage_height 12.4 ft ≥ 12 (above); pending since 2026-01-01T00:00:00Z, held 30m (for 30m)")
        #expect(fired.headline == "gage height 12.4 ft, at or above 12 ft")
        let resolved = try #require(h.transitions.last)
        #expect(resolved.summary == "gage_height at 01646500 is back to 11.4 ft, below 11.5")
        #expect(resolved.explanation == "11.4 ft is below 11.5 ft again")
        #expect(resolved.details == "gage_height 11.4 ft < 11.5 (clear); firing since 2026-01-01T00:30:00Z")
        #expect(resolved.headline == "gage height back to 11.4 ft")
    }

    @Test("a transition's words without a unit or a hold, below a threshold, for a metric with a suffix")
    func transitionWordsBelow() throws {
        var h = try Harness([thresholdRule("low", .below, 2.125, metric: "discharge.mean")], metric: "discharge.mean")
        h.feed([(m(0), 2), (m(15), 2.5)])
        #expect(h.transitions.count == 2)
        let fired = try #require(h.transitions.first)
        #expect(fired.summary == "discharge.mean at s1 is 2, at or below 2.125")
        #expect(fired.explanation == "2 is at or below 2.125")
        #expect(fired.details == "discharge.mean 2 ≤ 2.125 (below)")
        #expect(fired.headline == "flow (mean) 2, at or below 2.125")
        let resolved = try #require(h.transitions.last)
        #expect(resolved.summary == "discharge.mean at s1 is back to 2.5, above 2.125")
        #expect(resolved.explanation == "2.5 is above 2.125 again")
        #expect(resolved.details == "discharge.mean 2.5 > 2.125 (clear); firing since 2026-01-01T00:00:00Z")
        #expect(resolved.headline == "flow (mean) back to 2.5")
    }

    // MARK: Late readings

    @Test("late readings, and the newest again unchanged, are refused, counted, and change nothing")
    func lateReadings() throws {
        var h = try Harness([thresholdRule(10, for: 600)])
        #expect(h.step(m(0), 5).accepted)
        #expect(h.step(m(10), 12).accepted)  // pending since 10
        let before = h.state("hi")

        let late = h.step(m(5), 50)
        #expect(late.accepted == false)
        #expect(late.briefs == [])
        // The newest reading again with its value unchanged (a revision, with a new value, is news).
        let duplicate = h.step(m(10), 12)
        #expect(duplicate.accepted == false)
        #expect(duplicate.briefs == [])
        #expect(h.session.lateReadings == 2)
        #expect(h.session.lastTime == m(10))
        #expect(h.state("hi") == before)

        // The pending alert is untouched: it fires at 20 as if the late readings never came.
        #expect(h.feed([(m(20), 12)]) == [.firing("hi", m(20), 12)])
        // A late reading below clear does not resolve a firing alert.
        #expect(h.step(m(15), 0) == (false, []))
        #expect(h.firing == ["hi"])
        #expect(h.session.lateReadings == 3)
        #expect(h.feed([(m(25), 0)]) == [.resolved("hi", m(25), 0)])
    }

    // MARK: Series selection

    @Test("a rule only watches its metric and, when given, its stations")
    func seriesSelection() throws {
        let engine = RuleEngine(rules: [
            thresholdRule("any", 10, metric: "m"),
            thresholdRule("only-a", 10, metric: "m", stations: ["a"]),
            thresholdRule("other", 10, metric: "n"),
        ])
        let a = try #require(engine.session(for: SeriesKey(station: "a", metric: "m")))
        let b = try #require(engine.session(for: SeriesKey(station: "b", metric: "m")))
        #expect(a.ruleIndexes == [0, 1])
        #expect(b.ruleIndexes == [0])
        #expect(engine.session(for: SeriesKey(station: "a", metric: "zzz")) == nil)

        var h = Harness(engine: engine, session: a)
        #expect(h.feed([(m(0), 11)]) == [.firing("any", m(0), 11), .firing("only-a", m(0), 11)])
    }

    // MARK: Restart

    static let restartReadings: [(Int64, Double)] = [
        (m(0), 5), (m(5), 11), (m(10), 11), (m(15), 9),  // pending, broken one sample early
        (m(20), 11), (m(25), 12), (m(30), 12), (m(35), 13),  // fires at 35
        (m(40), 9), (m(45), 8), (m(50), 7.5),  // band, then resolves at 50
        (m(55), 10), (m(240), 10), (m(245), 6),  // fires after a gap, resolves
    ]

    @Test("the uninterrupted run the restart tests compare against")
    func restartBaseline() throws {
        var h = try Harness([thresholdRule(10, clear: 8, for: 15 * 60)])
        #expect(
            h.feed(Self.restartReadings) == [
                .firing("hi", m(35), 13), .resolved("hi", m(50), 7.5), .firing("hi", m(240), 10),
                .resolved("hi", m(245), 6),
            ])
    }

    @Test("restarting from saved states at any point gives the same transitions", arguments: 0...14)
    func restart(at cut: Int) throws {
        let rules = [thresholdRule(10, clear: 8, for: 15 * 60), thresholdRule("lo", .below, 8, for: 0)]
        var whole = try Harness(rules)
        let expected = whole.feed(Self.restartReadings)

        var first = try Harness(rules)
        var got = first.feed(Array(Self.restartReadings[..<cut]))
        var second = try first.restarted()
        #expect(second.session.lastTime == first.session.lastTime)
        got += second.feed(Array(Self.restartReadings[cut...]))
        #expect(got == expected)
        #expect(
            second.engine.states(of: second.session).map(\.state) == whole.engine.states(of: whole.session).map(\.state)
        )
    }

    @Test("after a restart, a reading not newer than the saved last reading is still late")
    func restartKeepsLateness() throws {
        var first = try Harness([thresholdRule(10, for: 600)])
        first.feed([(m(0), 12), (m(5), 12)])
        var second = try first.restarted()
        #expect(second.session.lastTime == m(5))
        #expect(second.step(m(5), 12) == (false, []))
        #expect(second.step(m(1), 0) == (false, []))
        #expect(second.session.lateReadings == 2)
        #expect(second.feed([(m(10), 12)]) == [.firing("hi", m(10), 12)])
    }
}
