import KlaxonCore
import Testing

@Suite("levels rule")
struct LevelsRuleTests {
    @Test("rising through every level one by one: firing, then one change per level")
    func risingOneByOne() throws {
        var h = try Harness([levelsRule()])
        let got = h.feed([(m(0), 9), (m(5), 10), (m(10), 11), (m(15), 12), (m(20), 15), (m(25), 19.9), (m(30), 20)])
        #expect(
            got == [
                .firing("flood", m(5), 10, level: "action"),
                .changed("flood", m(15), 12, to: "minor", from: "action"),
                .changed("flood", m(20), 15, to: "moderate", from: "minor"),
                .changed("flood", m(30), 20, to: "major", from: "moderate"),
            ])
        #expect(h.state("flood")?.level == "major")
        #expect(h.engine.firing(in: h.session).map(\.level) == ["major"])
    }

    @Test(
        "the first level entered fires with that level and no previous level",
        arguments: [(10.0, "action"), (12.0, "minor"), (17.0, "moderate"), (20.0, "major"), (300.0, "major")])
    func entering(value: Double, level: String) throws {
        var h = try Harness([levelsRule()])
        #expect(h.feed([(m(0), 3), (m(5), value)]) == [.firing("flood", m(5), value, level: level)])
        #expect(h.firing == ["flood"])
    }

    @Test("a value below the lowest level is no alert", arguments: [9.999, 0, -20])
    func belowLadder(value: Double) throws {
        var h = try Harness([levelsRule()])
        #expect(h.feed([(m(0), value)]) == [])
        #expect(h.firing == [])
        #expect(h.state("flood")?.level == nil)
    }

    @Test("jumping two levels at once is one change from the previous level")
    func jumpTwoLevels() throws {
        var h = try Harness([levelsRule()])
        let got = h.feed([(m(0), 10.5), (m(5), 16), (m(10), 25)])
        #expect(
            got == [
                .firing("flood", m(0), 10.5, level: "action"),
                .changed("flood", m(5), 16, to: "moderate", from: "action"),
                .changed("flood", m(10), 25, to: "major", from: "moderate"),
            ])
    }

    @Test("falling without deadband: one change per level left, then resolved with the last level")
    func fallingNoDeadband() throws {
        var h = try Harness([levelsRule()])
        h.feed([(m(0), 21)])
        let got = h.feed([(m(5), 19.99), (m(10), 15), (m(15), 14.99), (m(20), 10), (m(25), 9.99)])
        #expect(
            got == [
                .changed("flood", m(5), 19.99, to: "moderate", from: "major"),
                .changed("flood", m(15), 14.99, to: "minor", from: "moderate"),
                .changed("flood", m(20), 10, to: "action", from: "minor"),
                .resolved("flood", m(25), 9.99, from: "action"),
            ])
        #expect(h.firing == [])
        #expect(h.state("flood")?.status == .inactive)
        #expect(h.state("flood")?.level == nil)
    }

    @Test("falling two levels at once is one change")
    func fallTwoLevels() throws {
        var h = try Harness([levelsRule()])
        h.feed([(m(0), 20)])
        #expect(h.feed([(m(5), 12.5)]) == [.changed("flood", m(5), 12.5, to: "minor", from: "major")])
    }

    @Test("the resolved transition has no level and names the last level as fromLevel")
    func resolvedFromLevel() throws {
        var h = try Harness([levelsRule()])
        h.feed([(m(0), 16)])
        h.feed([(m(5), 1)])
        let t = try #require(h.transitions.last)
        #expect(h.transitions.count == 2)
        #expect(t.state == .resolved)
        #expect(t.level == nil)
        #expect(t.fromLevel == "moderate")
        #expect(t.value == 1)
        #expect(t.kind == "levels")
    }

    @Test(
        "deadband 0.5: leaving moderate (15) needs a value below 14.5",
        arguments: [(14.9, false), (14.6, false), (14.5, false), (14.499, true), (13.0, true)])
    func deadbandFall(value: Double, moves: Bool) throws {
        var h = try Harness([levelsRule(deadband: 0.5)])
        h.feed([(m(0), 15.2)])
        let got = h.feed([(m(5), value)])
        #expect(got == (moves ? [.changed("flood", m(5), value, to: "minor", from: "moderate")] : []))
        #expect(h.state("flood")?.level == (moves ? "minor" : "moderate"))
    }

    @Test(
        "deadband 0.5: resolving from the lowest level (10) needs a value below 9.5",
        arguments: [(9.9, false), (9.5, false), (9.49, true), (0.0, true)])
    func deadbandResolve(value: Double, resolves: Bool) throws {
        var h = try Harness([levelsRule(deadband: 0.5)])
        h.feed([(m(0), 10)])
        let got = h.feed([(m(5), value)])
        #expect(got == (resolves ? [.resolved("flood", m(5), value, from: "action")] : []))
        #expect(h.firing == (resolves ? [] : ["flood"]))
    }

    @Test("deadband: a value hovering at a boundary does not flap; rising still enters at `at`")
    func deadbandHover() throws {
        var h = try Harness([levelsRule(deadband: 1)])
        let got = h.feed([
            (m(0), 12), (m(5), 11.5), (m(10), 12), (m(15), 11.2), (m(20), 12.1), (m(25), 11),  // stays minor
            (m(30), 10.99),  // below 12 − 1: falls to action
            (m(35), 11.99),  // back up but below minor's `at`: no change
            (m(40), 12),  // enters minor again
        ])
        #expect(
            got == [
                .firing("flood", m(0), 12, level: "minor"),
                .changed("flood", m(30), 10.99, to: "action", from: "minor"),
                .changed("flood", m(40), 12, to: "minor", from: "action"),
            ])
    }

    @Test("deadband: a big fall lands on the highest level whose deadband still holds the value")
    func deadbandBigFall() throws {
        // action 10, minor 12, moderate 15, major 20; deadband 1.
        var h = try Harness([levelsRule(deadband: 1)])
        h.feed([(m(0), 22)])
        // 9.2 is below action's `at` but within its deadband (≥ 9): lands on action, not resolved.
        #expect(h.feed([(m(5), 9.2)]) == [.changed("flood", m(5), 9.2, to: "action", from: "major")])
        #expect(h.feed([(m(10), 8.99)]) == [.resolved("flood", m(10), 8.99, from: "action")])
    }

    // MARK: min_dwell

    @Test("min_dwell: a spike shorter than the dwell is never announced")
    func minDwellSpike() throws {
        var h = try Harness([levelsRule(minDwell: 600)])
        let got = h.feed([(m(0), 5), (m(5), 16), (m(10), 5), (m(15), 5), (m(20), 5), (m(25), 5)])
        #expect(got == [])
        #expect(h.firing == [])
        #expect(h.state("flood")?.candidate == nil)
    }

    @Test("min_dwell: a spike to a higher level while firing is not announced")
    func minDwellSpikeWhileFiring() throws {
        var h = try Harness([levelsRule(minDwell: 600)])
        #expect(h.feed([(m(0), 11), (m(10), 11)]) == [.firing("flood", m(10), 11, level: "action")])
        #expect(h.feed([(m(15), 21), (m(20), 11), (m(25), 11), (m(30), 11), (m(35), 11)]) == [])
        #expect(h.state("flood")?.level == "action")
    }

    @Test("min_dwell: a level held for the dwell time is announced at the reading that completes it")
    func minDwellHold() throws {
        var h = try Harness([levelsRule(minDwell: 600)])
        #expect(h.feed([(m(0), 5), (m(5), 11), (m(10), 11.5)]) == [])
        #expect(h.firing == [])
        #expect(h.state("flood")?.candidate == "action")
        #expect(h.state("flood")?.candidateSince == m(5))
        #expect(h.feed([(m(15), 11)]) == [.firing("flood", m(15), 11, level: "action")])
        #expect(h.firing == ["flood"])
        // Moving up to moderate also waits.
        #expect(h.feed([(m(20), 15), (m(25), 15.5)]) == [])
        #expect(h.feed([(m(30), 16)]) == [.changed("flood", m(30), 16, to: "moderate", from: "action")])
        // And so does resolving.
        #expect(h.feed([(m(35), 1), (m(40), 1)]) == [])
        #expect(h.feed([(m(45), 1)]) == [.resolved("flood", m(45), 1, from: "moderate")])
    }

    @Test("min_dwell: an interruption restarts the dwell clock")
    func minDwellInterrupted() throws {
        var h = try Harness([levelsRule(minDwell: 600)])
        #expect(h.feed([(m(0), 11), (m(5), 11), (m(9), 9), (m(10), 11), (m(15), 11)]) == [])
        #expect(h.feed([(m(20), 11)]) == [.firing("flood", m(20), 11, level: "action")])
    }

    @Test("min_dwell across a gap: the next reading still on the new level completes the dwell")
    func minDwellGap() throws {
        var h = try Harness([levelsRule(minDwell: 600)])
        #expect(h.feed([(m(0), 13)]) == [])
        #expect(h.feed([(m(60), 13)]) == [.firing("flood", m(60), 13, level: "minor")])
    }

    @Test("min_dwell combined with deadband: hovering inside the deadband never starts the clock")
    func minDwellWithDeadband() throws {
        var h = try Harness([levelsRule(deadband: 0.5, minDwell: 300)])
        #expect(h.feed([(m(0), 12), (m(5), 12)]) == [.firing("flood", m(5), 12, level: "minor")])
        #expect(h.feed([(m(10), 11.6), (m(15), 11.5), (m(20), 11.8), (m(25), 11.5)]) == [])
        #expect(h.state("flood")?.candidate == nil)
        #expect(
            h.feed([(m(30), 11.4), (m(35), 11.4)]) == [.changed("flood", m(35), 11.4, to: "action", from: "minor")])
    }

    @Test("levels late readings are refused and do not move the level")
    func lateReading() throws {
        var h = try Harness([levelsRule()])
        h.feed([(m(0), 16)])
        #expect(h.step(m(0), 16).accepted == false, "the newest reading again, unchanged")
        #expect(h.step(m(-5), 1).accepted == false)
        #expect(h.state("flood")?.level == "moderate")
        #expect(h.transitions.count == 1)
    }

    @Test("a revision of the newest reading (same time, new value) is news: stepped again, not late (issue 39)")
    func revisionOfTheNewest() throws {
        var h = try Harness([levelsRule(scale: .usEPA)])
        #expect(h.feed([(m(0), 40), (m(60), 45)]) == [])
        let revised = h.step(m(60), 74)
        #expect(revised.accepted)
        #expect(revised.briefs == [.firing("flood", m(60), 74, level: "Moderate")])
        #expect(h.session.lateReadings == 0)
        // Revised again, back down: the alert resolves at the same hour.
        #expect(h.step(m(60), 30).briefs == [.resolved("flood", m(60), 30, from: "Moderate")])
        // An older hour stays late.
        #expect(h.step(m(0), 90).accepted == false)
    }

    @Test("min_dwell is met by one reading of a series sampled no more often than the dwell (hourly AQI, issue 39)")
    func minDwellHourly() throws {
        var h = try Harness([levelsRule(minDwell: 600, scale: .usEPA)])
        #expect(h.feed([(m(0), 40), (m(60), 42)]) == [])
        // The first hourly sample at Moderate is announced at once, not an hour later.
        #expect(h.feed([(m(120), 74)]) == [.firing("flood", m(120), 74, level: "Moderate")])
        // And a revision of the current hour is announced at its hour too.
        #expect(h.step(m(180), 60).briefs == [])
        #expect(
            h.step(m(180), 120).briefs == [
                .changed("flood", m(180), 120, to: "Unhealthy for Sensitive Groups", from: "Moderate")
            ])
        // A dwell longer than the sampling interval still waits for readings spanning it.
        var long = try Harness([levelsRule(minDwell: 7200, scale: .usEPA)])
        #expect(long.feed([(m(0), 40), (m(60), 74), (m(120), 74)]) == [])
        #expect(long.feed([(m(180), 74)]) == [.firing("flood", m(180), 74, level: "Moderate")])
        // Five-minute data keeps the ten-minute dwell: a one-sample spike is not announced.
        var fine = try Harness([levelsRule(minDwell: 600, scale: .usEPA)])
        #expect(fine.feed([(m(0), 40), (m(5), 74), (m(10), 40), (m(15), 40)]) == [])
    }

    @Test("a level name no longer on an edited ladder counts as no level")
    func editedLadder() throws {
        var first = try Harness([levelsRule(levels: [.init(name: "old", at: 10)])])
        first.feed([(m(0), 11)])
        var saved = try #require(first.state("flood"))
        #expect(saved.level == "old")
        saved.lastTime = m(0)
        let engine = RuleEngine(rules: [levelsRule()])
        var h = Harness(
            engine: engine,
            session: try #require(engine.session(for: SeriesKey(station: "s1", metric: "m"), states: ["flood": saved])))
        #expect(h.feed([(m(5), 13)]) == [.firing("flood", m(5), 13, level: "minor")])
    }

    // Issue 29, item 5: a `direction` rule's state follows the moves it does not announce; what it
    // says next is measured from the level it last announced.

    @Test("direction worse: after a silent fall, the resolve names the level last announced")
    func worseResolveNamesAnnounced() throws {
        var h = try Harness([levelsRule("aqi", scale: .usEPA, direction: .worse)])
        let got = h.feed([(m(0), 160), (m(5), 80), (m(10), 40)])
        #expect(
            got == [
                .firing("aqi", m(0), 160, level: "Unhealthy"),
                .resolved("aqi", m(10), 40, from: "Unhealthy"),
            ])
        #expect(h.transitions.last?.summary.hasSuffix("back to Good, from Unhealthy") == true)
        #expect(h.transitions.last?.details.contains("previous level Unhealthy") == true)
        #expect(h.transitions.last?.headline == "air quality back to Good")
        #expect(h.state("aqi")?.level == nil && h.state("aqi")?.announced == nil)
    }

    @Test("direction worse: a rise after a silent fall is announced only past the level announced, and from it")
    func worseChangeFromAnnounced() throws {
        var h = try Harness([levelsRule("aqi", scale: .usEPA, direction: .worse)])
        #expect(h.feed([(m(0), 160), (m(5), 80)]) == [.firing("aqi", m(0), 160, level: "Unhealthy")])
        #expect(h.state("aqi")?.level == "Moderate")
        #expect(h.state("aqi")?.announced == "Unhealthy")
        // Worse than Moderate, better than Unhealthy: not announced.
        #expect(h.feed([(m(10), 120)]) == [])
        #expect(h.state("aqi")?.announced == "Unhealthy")
        // Back at the level announced: nothing to say, and nothing left to remember.
        #expect(h.feed([(m(15), 160)]) == [])
        #expect(h.state("aqi")?.level == "Unhealthy" && h.state("aqi")?.announced == nil)
        // Down silently again; the level announced outlives a restart; past Unhealthy: one change, from it.
        #expect(h.feed([(m(20), 80)]) == [])
        var resumed = try h.restarted()
        #expect(resumed.state("aqi")?.announced == "Unhealthy")
        #expect(
            resumed.feed([(m(25), 250)]) == [.changed("aqi", m(25), 250, to: "Very Unhealthy", from: "Unhealthy")])
        #expect(resumed.transitions.last?.summary.contains("worse than Unhealthy") == true)
        #expect(resumed.state("aqi")?.announced == nil)
    }

    @Test("direction better: a fall after a silent rise is a change from the level announced")
    func betterChangeFromAnnounced() throws {
        var h = try Harness([levelsRule(direction: .better)])
        let got = h.feed([(m(0), 16), (m(5), 21), (m(10), 13), (m(15), 9)])
        #expect(
            got == [
                .firing("flood", m(0), 16, level: "moderate"),
                .changed("flood", m(10), 13, to: "minor", from: "moderate"),
                .resolved("flood", m(15), 9, from: "minor"),
            ])
        #expect(h.transitions[1].summary.contains("fell from moderate to minor"))
    }

    @Test("direction better: a fall that stays above the level announced is not announced")
    func betterSilentAboveAnnounced() throws {
        var h = try Harness([levelsRule(direction: .better)])
        let got = h.feed([(m(0), 13), (m(5), 21), (m(10), 16), (m(15), 12.5), (m(20), 10.5)])
        #expect(
            got == [
                .firing("flood", m(0), 13, level: "minor"),
                .changed("flood", m(20), 10.5, to: "action", from: "minor"),
            ])
    }

    @Test("direction both: every move is announced and nothing extra is remembered")
    func bothRemembersNothing() throws {
        var h = try Harness([levelsRule()])
        h.feed([(m(0), 21), (m(5), 13)])
        #expect(h.state("flood")?.level == "minor")
        #expect(h.state("flood")?.announced == nil)
    }
}
