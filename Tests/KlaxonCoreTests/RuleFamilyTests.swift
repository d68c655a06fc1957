import KlaxonCore
import Testing

/// Every rule kind is of one family (`RuleFamily`), and what it needs besides its readings is declared
/// (`RuleNeeds`): the engine and the event runners switch over the family, the evaluation reads the
/// store's stations only for rules that need them.
@Suite("rule families")
struct RuleFamilyTests {
    func family(_ kind: any RuleKind) -> String {
        switch kind.family {
        case .series(let s): "series \(s.metric)"
        case .quake: "quake"
        case .trip: "trip"
        }
    }

    @Test("each built-in kind is of its family; series requirements exist on series kinds only")
    func families() {
        #expect(family(ThresholdRule(metric: "m", direction: .above, threshold: 1)) == "series m")
        #expect(family(LevelsRule(metric: "aqi", levels: [.init(name: "bad", at: 100)])) == "series aqi")
        #expect(family(RateRule(metric: "r", direction: .rising, threshold: 1)) == "series r")
        #expect(family(StaleRule(metric: "s", after: 60)) == "series s")
        #expect(family(QuakeRule(minMagnitude: 5)) == "quake")
        #expect(family(TripPackingRule()) == "trip")
        #expect(QuakeRule(minMagnitude: 5).series == nil && TripPackingRule().series == nil)
        #expect(StaleRule(metric: "s", after: 60).series?.reactsToTime == true)
    }

    @Test(
        "a kind declares what it needs from the store: stations for levels and rate, flood categories for levels: nws")
    func needs() {
        #expect(ThresholdRule(metric: "m", direction: .above, threshold: 1).needs.isEmpty)
        #expect(StaleRule(metric: "s", after: 60).needs.isEmpty)
        #expect(QuakeRule(minMagnitude: 5).needs.isEmpty)
        #expect(RateRule(metric: "r", direction: .rising, threshold: 1).needs == .stations)
        #expect(LevelsRule(metric: "stage", levels: []).needs == .stations)
        #expect(LevelsRule(metric: "stage", levels: [], nws: true).needs == [.stations, .floodCategories])
        #expect(LevelsRule(metric: "aqi", levels: [], scale: .usEPA).series?.aqiScale == .usEPA)
        #expect(ThresholdRule(metric: "m", direction: .above, threshold: 1).aqiScale == nil)
    }

    @Test("event rules beside series rules: readings step the series rules only, each runner takes its family")
    func mixed() {
        let rules = [
            Rule(name: "quakes", kind: QuakeRule(minMagnitude: 5)),
            Rule(name: "high", kind: ThresholdRule(metric: "quake", direction: .above, threshold: 1)),
            Rule(name: "packing", kind: TripPackingRule()),
            Rule(name: "quiet", kind: StaleRule(metric: "quake", after: 60)),
        ]
        let engine = RuleEngine(rules: rules)
        let key = SeriesKey(station: "s", metric: "quake")
        #expect(engine.ruleIndexes(watching: key) == [1, 3])
        #expect(engine.timeRules.map(\.rule.name) == ["quiet"])
        var session = engine.session(for: key)!
        var out: [Transition] = []
        engine.step(&session, time: 0, value: 2, into: &out)
        engine.advance(&session, to: 120, into: &out)
        #expect(out.map(\.rule) == ["high", "quiet"])
        #expect(QuakeRunner(rules: rules).ruleNames == ["quakes"])
        #expect(TripRunner(rules: rules).ruleNames == ["packing"])
    }
}
