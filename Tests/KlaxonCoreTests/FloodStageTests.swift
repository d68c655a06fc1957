import KlaxonCore
import Testing

/// PRTO3-like categories (ft), and one gauge with moderate undefined.
let portland = FloodCategories(stage: ["action": 17, "minor": 18, "moderate": 24, "major": 28])
let noModerate = FloodCategories(stage: ["action": 17, "minor": 18, "major": 28])
let portlandInfo = StationInfo(
    id: "14211720", name: "Willamette R at Portland, OR", usgsID: "14211720", nwsLID: "PRTO3")

func floodRule(
    deadband: Double = 0, minDwell: Int64 = 0, metric: String = "gage_height", direction: LevelsRule.Direction = .both
) -> Rule {
    Rule(
        name: "flood",
        kind: LevelsRule(
            metric: metric, levels: [], deadband: deadband, minDwell: minDwell, nws: true, direction: direction))
}

@Suite("flood stage (levels: nws)")
struct FloodStageTests {
    func harness(_ floods: FloodCategories?, deadband: Double = 0) throws -> Harness {
        try Harness(
            [floodRule(deadband: deadband)], station: "14211720", metric: "gage_height", unit: "ft",
            stations: ["14211720": portlandInfo], floods: floods.map { ["14211720": $0] } ?? [:])
    }

    @Test("rising through every category: one message each, then back down to resolved")
    func risesThroughEveryCategory() throws {
        var h = try harness(portland)
        let up: [(Int64, Double)] = [(m(0), 16), (m(15), 17), (m(30), 18.5), (m(45), 24), (m(60), 28.2)]
        #expect(
            h.feed(up) == [
                .firing("flood", m(15), 17, level: "action"),
                .changed("flood", m(30), 18.5, to: "minor", from: "action"),
                .changed("flood", m(45), 24, to: "moderate", from: "minor"),
                .changed("flood", m(60), 28.2, to: "major", from: "moderate"),
            ])
        #expect(
            h.feed([(m(75), 20), (m(90), 16.9)]) == [
                .changed("flood", m(75), 20, to: "minor", from: "major"),
                .resolved("flood", m(90), 16.9, from: "minor"),
            ])
    }

    @Test("the message names river, place, both ids, value, category, threshold, next category, trend, sparkline")
    func messageContents() throws {
        var h = try harness(portland)
        // Hourly readings: 16, 16.4, 16.8, 17.2 (action), 17.6, then 18.2 (minor).
        let values = [16, 16.4, 16.8, 17.2, 17.6]
        h.feed(values.enumerated().map { (m(Int64($0.offset) * 60), $0.element) })
        let out = h.feed([(m(300), 18.2)])
        #expect(out == [.changed("flood", m(300), 18.2, to: "minor", from: "action")])
        let s = try #require(h.transitions.last?.summary)
        #expect(
            s.hasPrefix(
                "Willamette R at Portland, OR (USGS 14211720, NWS PRTO3): gage_height 18.2 ft rose from action stage to minor flood stage (18 ft)"
            ))
        #expect(s.contains("; next: moderate flood stage at 24 ft;"))
        // The trend in words over three hours (no Unicode sparkline: it renders as black blocks in
        // mail and proportional fonts); under six hours of data, no day's change.
        #expect(s.hasSuffix("; rising 0.47 ft/h over 3 h"))
        #expect(!s.contains("▁") && !s.contains("█"))
        let t = try #require(h.transitions.last)
        #expect(t.headline == "minor flood stage, up from action")
        #expect(t.place == "Willamette R at Portland, OR")
        #expect(
            t.explanation
                == "18.2 ft is at or above minor flood stage (18 ft); next: moderate flood stage at 24 ft; rising 0.47 ft/h over 3 h"
        )
        #expect(t.details.contains("gage_height 18.2 ft ≥ minor (18)"))
    }

    @Test("the trend agrees with the move: a fall after a peak inside three hours reads falling, not rising")
    func trendAgreesWithTheMove() throws {
        var h = try harness(portland)
        // 20 ft (minor), a peak of 25 (moderate) an hour later, then 23.9 (minor): over the three
        // hours the river is higher than it was (+1.95 ft/h), over the last hour it fell.
        h.feed([(m(0), 20), (m(60), 25)])
        #expect(h.feed([(m(120), 23.9)]) == [.changed("flood", m(120), 23.9, to: "minor", from: "moderate")])
        let t = try #require(h.transitions.last)
        #expect(t.summary.contains("fell from moderate flood stage to minor flood stage"))
        #expect(t.summary.hasSuffix("; falling 1.1 ft/h over 1 h"), "\(t.summary)")
        #expect(!t.summary.contains("rising") && !t.explanation.contains("rising"), "\(t.explanation)")
        // The firing of a rise still says rising.
        var up = try harness(portland)
        up.feed([(m(0), 16), (m(60), 16.5)])
        up.feed([(m(120), 17.5)])
        #expect(up.transitions.last?.summary.hasSuffix("; rising 0.75 ft/h over 3 h") == true)
        // Resolved while the last three hours rose overall (a flash peak): no "rising" beside "back below".
        var flash = try harness(portland)
        flash.feed([(m(0), 16), (m(60), 17.5), (m(90), 16.8)])
        let resolved = try #require(flash.transitions.last)
        #expect(resolved.state == .resolved)
        #expect(!resolved.summary.contains("rising"), "\(resolved.summary)")
    }

    @Test("falling back with a deadband: a dip just under a threshold keeps the category")
    func deadband() throws {
        var h = try harness(portland, deadband: 0.5)
        h.feed([(m(0), 18.4)])
        #expect(h.state("flood")?.level == "minor")
        #expect(h.feed([(m(15), 17.6), (m(30), 17.9)]) == [])  // > 18 − 0.5
        #expect(h.feed([(m(45), 17.4)]) == [.changed("flood", m(45), 17.4, to: "action", from: "minor")])
    }

    @Test("an undefined category is skipped: minor goes straight to major")
    func missingCategory() throws {
        var h = try harness(noModerate)
        h.feed([(m(0), 18.5)])
        #expect(h.feed([(m(15), 25)]) == [])  // 25 ft would be moderate, which is undefined: still minor
        #expect(h.feed([(m(30), 28)]) == [.changed("flood", m(30), 28, to: "major", from: "minor")])
        #expect(h.transitions.first?.summary.contains("next: major flood stage at 28 ft") == true)
    }

    @Test("a station without categories gets no alert, whatever the height")
    func noCategories() throws {
        var h = try harness(nil)
        #expect(h.feed([(m(0), 50), (m(15), 60)]) == [])
        var empty = try harness(FloodCategories())
        #expect(empty.feed([(m(0), 50)]) == [])
    }

    @Test("a gauge going quiet (stale) does not resolve its flood alert")
    func staleDoesNotResolve() throws {
        let stale = Rule(name: "quiet", kind: StaleRule(metric: "gage_height", after: 3_600))
        var h = try Harness(
            [floodRule(), stale], station: "14211720", metric: "gage_height", unit: "ft",
            stations: ["14211720": portlandInfo], floods: ["14211720": portland])
        h.feed([(m(0), 19)])
        #expect(h.firing == ["flood"])
        let quiet = h.advance(to: m(300))
        #expect(quiet == [.firing("quiet", m(60), nil)])
        #expect(Set(h.firing) == ["flood", "quiet"])
        #expect(h.state("flood")?.level == "minor")
        // Readings return still in flood: the stale alert resolves, the flood alert stays.
        #expect(h.feed([(m(310), 19.5)]) == [.resolved("quiet", m(310), 19.5)])
        #expect(h.firing == ["flood"])
    }

    @Test("flow categories apply to discharge; a metric with no categories is not a flood ladder")
    func flowLadder() {
        let f = FloodCategories(stage: ["action": 7.4, "minor": 9.1], flow: ["action": 700, "minor": 1050])
        #expect(f.ladder(forMetric: "discharge")?.map(\.at) == [700, 1050])
        #expect(f.ladder(forMetric: "gage_height")?.map(\.name) == ["action", "minor"])
        #expect(f.ladder(forMetric: "precipitation") == nil)
        // Bad metadata (minor not above action) drops the out-of-order category.
        let bad = FloodCategories(stage: ["action": 10, "minor": 9, "moderate": 12])
        #expect(bad.ladder(forMetric: "stage")?.map(\.name) == ["action", "moderate"])
    }

    @Test("direction worse: the resolve after a silent fall says \"was\" the category announced")
    func worseResolveSaysAnnounced() throws {
        var h = try Harness(
            [floodRule(direction: .worse)], station: "14211720", metric: "gage_height", unit: "ft",
            stations: ["14211720": portlandInfo], floods: ["14211720": portland])
        let got = h.feed([(m(0), 24.5), (m(15), 18.5), (m(30), 16)])
        #expect(
            got == [
                .firing("flood", m(0), 24.5, level: "moderate"),
                .resolved("flood", m(30), 16, from: "moderate"),
            ])
        #expect(h.transitions.last?.summary.contains("(17 ft); was moderate flood stage") == true)
    }
}
