import KlaxonCore
import Testing

@Suite("stale rule")
struct StaleRuleTests {
    @Test("advance by exactly `after` does not fire; one second more fires at last + after")
    func strictlyMoreThanAfter() throws {
        var h = try Harness([staleRule(after: 900)])
        #expect(h.feed([(m(0), 1)]) == [])
        #expect(h.advance(to: m(15)) == [])
        #expect(h.firing == [])
        #expect(h.advance(to: m(15) + 1) == [.firing("quiet", m(15), nil)])
        #expect(h.firing == ["quiet"])
        #expect(h.state("quiet")?.since == m(15))
    }

    @Test("the stale time is last reading + after, however late the check comes")
    func atIsLastPlusAfter() throws {
        var h = try Harness([staleRule(after: 3600)])
        h.feed([(m(0), 1), (m(7), 2)])
        #expect(h.advance(to: m(600)) == [.firing("quiet", m(67), nil)])
        let t = try #require(h.transitions.last)
        #expect(t.value == nil)
        #expect(t.kind == "stale")
    }

    @Test("a stale alert fires once and resolves at the next reading, with its value")
    func resolvesOnReading() throws {
        var h = try Harness([staleRule(after: 900)])
        h.feed([(m(0), 1)])
        #expect(h.advance(to: m(20)) == [.firing("quiet", m(15), nil)])
        #expect(h.advance(to: m(30)) == [])
        #expect(h.advance(to: m(300)) == [])
        #expect(h.feed([(m(301), 4.5)]) == [.resolved("quiet", m(301), 4.5)])
        #expect(h.firing == [])
        // The next silence fires again, measured from the new reading.
        #expect(h.advance(to: m(316)) == [])
        #expect(h.advance(to: m(316) + 1) == [.firing("quiet", m(316), nil)])
    }

    @Test("a reading arriving after a long gap reports the stale period and its end in one step")
    func staleDetectedByReading() throws {
        var h = try Harness([staleRule(after: 900)])
        h.feed([(m(0), 1)])
        #expect(h.feed([(m(40), 2)]) == [.firing("quiet", m(15), nil), .resolved("quiet", m(40), 2)])
        #expect(h.firing == [])
    }

    @Test(
        "readings spaced exactly `after` apart never go stale; one second more does",
        arguments: [(Int64(900), false), (Int64(901), true), (Int64(60), false)])
    func spacing(gap: Int64, stale: Bool) throws {
        var h = try Harness([staleRule(after: 900)])
        let got = h.feed([(t0, 1), (t0 + gap, 2)])
        #expect(got == (stale ? [.firing("quiet", t0 + 900, nil), .resolved("quiet", t0 + gap, 2)] : []))
    }

    @Test("a series with no reading yet is never stale")
    func neverSeen() throws {
        var h = try Harness([staleRule(after: 60)])
        #expect(h.advance(to: m(10_000)) == [])
        #expect(h.firing == [])
    }

    @Test("advancing to a time before the last reading does nothing")
    func advanceBackwards() throws {
        var h = try Harness([staleRule(after: 60)])
        h.feed([(m(100), 1)])
        #expect(h.advance(to: m(0)) == [])
        #expect(h.advance(to: m(101)) == [])
    }

    @Test("a firing threshold alert stays firing through a long gap; stale fires and resolves beside it")
    func staleDoesNotResolveThreshold() throws {
        var h = try Harness([thresholdRule(10), staleRule(after: 900)])
        #expect(h.feed([(m(0), 12)]) == [.firing("hi", m(0), 12)])
        #expect(h.advance(to: m(600)) == [.firing("quiet", m(15), nil)])
        #expect(Set(h.firing) == ["hi", "quiet"])
        #expect(h.state("hi")?.isFiring == true)
        // Data returns, still above the threshold: only the stale alert resolves.
        #expect(h.feed([(m(601), 12)]) == [.resolved("quiet", m(601), 12)])
        #expect(h.firing == ["hi"])
        // The threshold alert resolves only through its own clear condition.
        #expect(h.feed([(m(602), 3)]) == [.resolved("hi", m(602), 3)])
    }

    @Test("a gap never resolves a threshold alert even when detected by the next reading")
    func gapInsideStep() throws {
        var h = try Harness([thresholdRule(10, clear: 5), staleRule(after: 900)])
        #expect(
            h.feed([(m(0), 12), (m(100), 7)]) == [
                .firing("hi", m(0), 12), .firing("quiet", m(15), nil), .resolved("quiet", m(100), 7),
            ])
        #expect(h.firing == ["hi"])
    }

    @Test("a pending threshold alert keeps pending through a stale period")
    func staleDoesNotCancelPending() throws {
        var h = try Harness([thresholdRule(10, for: 3600), staleRule(after: 900)])
        h.feed([(m(0), 12)])
        #expect(h.advance(to: m(50)) == [.firing("quiet", m(15), nil)])
        #expect(h.state("hi")?.status == .pending)
        #expect(h.feed([(m(60), 12)]) == [.firing("hi", m(60), 12), .resolved("quiet", m(60), 12)])
    }
}

@Suite("engine restart with every kind")
struct RestartTests {
    enum Event: Sendable, CustomStringConvertible {
        case reading(Int64, Double)
        case advance(Int64)

        var description: String {
            switch self {
            case .reading(let t, let v): "reading(\(t - t0), \(v))"
            case .advance(let t): "advance(\(t - t0))"
            }
        }
    }

    static let rules = [
        thresholdRule(10, clear: 8, for: 600),
        levelsRule(deadband: 0.5, minDwell: 300),
        staleRule(after: 1800),
    ]

    static let events: [Event] = [
        .reading(m(0), 5), .reading(m(5), 11), .reading(m(10), 11), .advance(m(12)),
        .reading(m(15), 12.5), .reading(m(20), 13), .advance(m(55)), .advance(m(60)),
        .reading(m(70), 16), .reading(m(75), 16), .reading(m(80), 14.7), .reading(m(85), 9),
        .reading(m(80), 100),  // late
        .reading(m(90), 9), .reading(m(95), 7), .advance(m(200)), .reading(m(300), 7), .reading(m(305), 21),
        .reading(m(310), 21), .reading(m(315), 21),
    ]

    static func run(_ h: inout Harness, _ events: ArraySlice<Event>) -> [Brief] {
        var out: [Brief] = []
        for e in events {
            switch e {
            case .reading(let t, let v): out += h.step(t, v).briefs
            case .advance(let t): out += h.advance(to: t)
            }
        }
        return out
    }

    @Test("the uninterrupted run")
    func baseline() throws {
        var h = try Harness(Self.rules)
        let got = Self.run(&h, Self.events[...])
        #expect(
            got == [
                .firing("flood", m(10), 11, level: "action"),  // min_dwell 5m from 5
                .firing("hi", m(15), 12.5),  // for 10m from 5
                .changed("flood", m(20), 13, to: "minor", from: "action"),
                .firing("quiet", m(50), nil),  // 30m after 20
                .resolved("quiet", m(70), 16),
                .changed("flood", m(75), 16, to: "moderate", from: "minor"),
                // 14.7 at 80 is inside the deadband; 9 at 85 starts the fall, held at 90.
                .resolved("flood", m(90), 9, from: "moderate"),
                .resolved("hi", m(95), 7),  // 9 is inside the hysteresis band, 7 is below clear
                .firing("quiet", m(125), nil),
                .resolved("quiet", m(300), 7),
                .firing("flood", m(310), 21, level: "major"),
                .firing("hi", m(315), 21),
            ])
        #expect(h.session.lateReadings == 1)
    }

    @Test("saving and restoring states at every point gives the same transitions", arguments: 0...20)
    func restart(at cut: Int) throws {
        var whole = try Harness(Self.rules)
        let expected = Self.run(&whole, Self.events[...])

        var first = try Harness(Self.rules)
        var got = Self.run(&first, Self.events[..<cut])
        var second = try first.restarted()
        got += Self.run(&second, Self.events[cut...])
        #expect(got == expected)
        #expect(
            second.engine.states(of: second.session).map(\.state)
                == whole.engine.states(of: whole.session).map(\.state))
    }
}

@Suite("stale rule: late readings")
struct StaleLateTests {
    @Test("a late reading does not end a stale period")
    func lateDoesNotResolve() throws {
        var h = try Harness([staleRule(after: 900)])
        h.feed([(m(0), 1), (m(5), 1)])
        #expect(h.advance(to: m(30)) == [.firing("quiet", m(20), nil)])
        #expect(h.step(m(4), 1) == (false, []))
        #expect(h.firing == ["quiet"])
        #expect(h.feed([(m(31), 1)]) == [.resolved("quiet", m(31), 1)])
    }
}
