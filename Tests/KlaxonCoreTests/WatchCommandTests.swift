import Foundation
import KlaxonCore
import Testing

/// Issue 43: the chat verbs of watches, parsed against what the operator allows, with "did you
/// mean" answers, and hostile text bounded and defused.
@Suite struct WatchCommandTests {
    static let tokyo = WatchPlace(name: "Tokyo office", latitude: 35.68, longitude: 139.76, radiusKm: 300)
    static let catalog = WatchCatalog(
        gauges: ["01646500": "Potomac River at Little Falls", "14211720": "Willamette River at Portland", "X1": nil],
        airPlaces: [
            .init(name: "Delhi", stations: ["IN-DL-1", "IN-DL-2"]),
            .init(name: "New Delhi", stations: ["IN-ND-1"], scale: "india-naqi"),
            .init(name: "Washington", stations: ["DC-1"], scale: "us-epa"),
        ],
        quakePlaces: [tokyo, WatchPlace(name: "Home", latitude: 45.5, longitude: -122.7, radiusKm: 200)])

    func parse(_ text: String, _ catalog: WatchCatalog = Self.catalog) -> Result<WatchCommand, WatchProblem>? {
        WatchCommand.parse(text, catalog: catalog)
    }

    func command(_ text: String) -> WatchCommand? {
        if case .success(let c)? = parse(text) { return c }
        return nil
    }

    func problem(_ text: String, _ catalog: WatchCatalog = Self.catalog) -> String? {
        if case .failure(let p)? = parse(text, catalog) { return p.message }
        return nil
    }

    // MARK: gauges

    @Test("watch gauge ID CATEGORY: any of the NWS categories, any case")
    func gaugeCategory() {
        #expect(
            command("watch gauge 01646500 minor")
                == .watch(.gauge(station: "01646500", name: "Potomac River at Little Falls", level: .category("minor")))
        )
        for c in GaugeLevel.categories {
            #expect(
                command("Watch Gauge 14211720 \(c.uppercased())")
                    == .watch(.gauge(station: "14211720", name: "Willamette River at Portland", level: .category(c))))
        }
        #expect(command("watch gauge X1 major") == .watch(.gauge(station: "X1", name: nil, level: .category("major"))))
    }

    @Test("watch gauge ID VALUE: a stage, with or without ft")
    func gaugeValue() {
        for text in ["12.5", "12.5ft", "12.5FT", "12.5feet"] {
            #expect(
                command("watch gauge 01646500 \(text)")
                    == .watch(.gauge(station: "01646500", name: "Potomac River at Little Falls", level: .value(12.5))))
        }
        #expect(problem("watch gauge 01646500 1e3")?.hasPrefix("no flood category 1e3") == true)
        #expect(problem("watch gauge 01646500 nan")?.hasPrefix("no flood category nan") == true)
        #expect(problem("watch gauge 01646500 99999999")?.hasPrefix("no flood category") == true)
    }

    @Test("a mistyped gauge: did you mean, with the gauge's name (the issue's own example)")
    func gaugeDidYouMean() {
        #expect(
            problem("watch gauge 0164650 minor")
                == "no gauge 0164650; did you mean 01646500 Potomac River at Little Falls?")
        #expect(problem("watch gauge 99999999999 minor") == "no gauge 99999999999")
        #expect(
            problem("watch gauge 01646500 minr") == "no flood category minr; did you mean minor?")
        #expect(problem("watch gauge 01646500")?.hasPrefix("usage: `watch gauge ID minor`") == true)
        #expect(problem("watch gauge 0164650 minor", WatchCatalog())?.contains("no gauge may be watched here") == true)
    }

    // MARK: air

    @Test("watch air PLACE LEVEL: the level of the place's scale, or the first scale that has it")
    func air() {
        #expect(
            command("watch air Delhi poor")
                == .watch(
                    .air(
                        place: "Delhi", stations: ["IN-DL-1", "IN-DL-2"], scale: "india-naqi", level: "Poor",
                        series: .observed)))
        #expect(
            command("watch air \"New Delhi\" very poor nowcast")
                == .watch(
                    .air(
                        place: "New Delhi", stations: ["IN-ND-1"], scale: "india-naqi", level: "Very Poor",
                        series: .nowcast)))
        // Unquoted, the place is what precedes the level.
        #expect(
            command("watch air new delhi VERY POOR")
                == .watch(
                    .air(
                        place: "New Delhi", stations: ["IN-ND-1"], scale: "india-naqi", level: "Very Poor",
                        series: .observed)))
        #expect(
            command("watch air Washington unhealthy for sensitive groups")
                == .watch(
                    .air(
                        place: "Washington", stations: ["DC-1"], scale: "us-epa",
                        level: "Unhealthy for Sensitive Groups",
                        series: .observed)))
        // A place's station id names it too.
        #expect(
            command("watch air DC-1 moderate")
                == .watch(
                    .air(place: "Washington", stations: ["DC-1"], scale: "us-epa", level: "Moderate", series: .observed)
                ))
    }

    @Test("air mistakes: the clean level, a level of another scale, a mistyped place or level")
    func airMistakes() {
        #expect(problem("watch air Delhi good") == "Good is the clean level: watch a worse one, like Moderate.")
        #expect(problem("watch air Washington poor")?.hasPrefix("no air level poor") == true)
        #expect(problem("watch air Dehli poor") == "no air place Dehli; did you mean Delhi?")
        #expect(problem("watch air Delhi pore")?.contains("did you mean Poor") == true)
        #expect(problem("watch air Delhi")?.hasPrefix("usage: `watch air PLACE LEVEL`") == true)
    }

    // MARK: quakes

    @Test("watch quakes near PLACE M5 / felt IV: quoted, curly-quoted or bare place names")
    func quakes() {
        let m5 = WatchCommand.watch(.quakes(place: Self.tokyo, threshold: .magnitude(5)))
        #expect(command("watch quakes near \"Tokyo office\" M5") == m5)
        #expect(command("watch quakes near “Tokyo office” m5") == m5)
        #expect(command("watch quakes near tokyo office M5.0") == m5)
        #expect(
            command("watch quakes near \"Tokyo office\" felt IV")
                == .watch(.quakes(place: Self.tokyo, threshold: .felt(4))))
        #expect(
            command("watch quakes near \"Tokyo office\" felt 5.5")
                == .watch(.quakes(place: Self.tokyo, threshold: .felt(5.5))))
    }

    @Test("quake mistakes: an unknown place (did you mean), a magnitude or intensity out of range")
    func quakeMistakes() {
        #expect(problem("watch quakes near \"Tokio office\" M5") == "no place Tokio office; did you mean Tokyo office?")
        #expect(
            problem("watch quakes near Narnia M5")?.hasPrefix("no place Narnia; the places are Tokyo office, Home")
                == true)
        #expect(problem("watch quakes near Home M11")?.contains("magnitude like `M5`") == true)
        #expect(problem("watch quakes near Home 5")?.contains("magnitude like `M5`") == true)
        #expect(problem("watch quakes near Home felt I")?.contains("from II to XII") == true)
        #expect(problem("watch quakes near Home felt XIII")?.contains("from II to XII") == true)
        #expect(problem("watch quakes Home M5")?.hasPrefix("usage: `watch quakes near") == true)
    }

    // MARK: the other verbs

    @Test("watching, unwatch N, quiet FROM-TO and quiet off")
    func otherVerbs() {
        #expect(command("watching") == .watching)
        #expect(command("WATCHING") == .watching)
        #expect(problem("watching all")?.hasPrefix("usage: `watching`") == true)
        #expect(command("unwatch 2") == .unwatch(2))
        #expect(command("unwatch #12") == .unwatch(12))
        for bad in ["unwatch", "unwatch 0", "unwatch -1", "unwatch x", "unwatch 99999999", "unwatch 1 2"] {
            #expect(problem(bad)?.hasPrefix("usage: `unwatch N`") == true, "\(bad)")
        }
        #expect(command("quiet 22:00-07:00") == .quiet(WatchQuietHours(from: 22 * 60, to: 7 * 60)!))
        #expect(command("quiet off") == .quietOff)
        for bad in ["quiet", "quiet 25:00-07:00", "quiet 22-07", "quiet 22:00"] {
            #expect(problem(bad)?.hasPrefix("usage: `quiet") == true, "\(bad)")
        }
        #expect(problem("quiet 07:00-07:00") == "Quiet hours need a start and an end that differ.")
    }

    @Test("other commands are not watch commands; a mistyped kind gets a did you mean")
    func notWatchVerbs() {
        #expect(parse("gauge 01646500") == nil)
        #expect(parse("watchers 1") == nil)
        #expect(parse("") == nil)
        #expect(
            problem("watch gaueg 01646500 minor")?.hasPrefix("I can't watch \"gaueg\"; did you mean `gauge`?") == true)
        #expect(problem("watch")?.hasPrefix("Watch commands:") == true)
    }

    @Test("kinds the operator does not allow are refused, naming those allowed")
    func kindsAllowed() {
        var catalog = Self.catalog
        catalog.kinds = [.gauge]
        #expect(
            problem("watch air Delhi poor", catalog)
                == "Watches of air are not allowed here (`watches.kinds`); you may watch gauge.")
        catalog.kinds = []
        #expect(
            problem("watch quakes near Home M5", catalog) == "Watches of quakes are not allowed here (`watches.kinds`)."
        )
    }

    // MARK: hostile text

    @Test("long text is refused before it is parsed, whatever its size")
    func longText() {
        let long = "watch gauge 01646500 minor " + String(repeating: "a", count: 600)
        #expect(problem(long) == "That command is too long (at most 500 characters).")
        let huge = "watch " + String(repeating: "é", count: 1 << 20)
        #expect(problem(huge) == "That command is too long (at most 500 characters).")
        #expect(parse("gauge " + String(repeating: "x", count: 1 << 20)) == nil)
        #expect(
            problem("watch " + Array(repeating: "a", count: 40).joined(separator: " "))?.hasPrefix(
                "That command has too many words") == true)
    }

    @Test("mentions in the person's words are defused, and repeated text is cut")
    func mentions() throws {
        let answer = try #require(problem("watch gauge @everyone minor"))
        #expect(!answer.contains("@everyone"))
        #expect(answer.contains("@\u{2060}everyone"))
        let here = try #require(problem("watch air @here poor"))
        #expect(!here.contains("@here"))
        // A long unknown name is repeated cut short.
        let long = String(repeating: "Q", count: 300)
        let cut = try #require(problem("watch air \(long) poor"))
        #expect(cut.count < 120)
        #expect(cut.contains("…"))
    }

    @Test(
        "Unicode tricks: bidi overrides and zero-width characters are removed; NFKC digits are digits; look-alikes are not"
    )
    func unicode() throws {
        let potomac = WatchCommand.watch(
            .gauge(station: "01646500", name: "Potomac River at Little Falls", level: .category("minor")))
        #expect(command("watch gauge 0164\u{202E}6500 minor") == potomac)
        #expect(command("watch gauge 0164\u{200B}6500 mi\u{2060}nor") == potomac)
        #expect(command("watch gauge ０１６４６５００ minor") == potomac)  // fullwidth digits
        #expect(command("watch\u{00A0}gauge 01646500 minor") == potomac)  // no-break space
        // A Cyrillic о is not a Latin o: no gauge, and the answer shows no control character.
        let cyrillic = try #require(problem("watch air Dеlhi poor"))  // е is U+0435
        #expect(cyrillic.hasPrefix("no air place"))
        let bell = try #require(problem("watch gauge 0164\u{07}6500 minor"))
        #expect(!bell.unicodeScalars.contains { $0.properties.generalCategory == .control })
        #expect(!WatchText.shown("a\u{202E}b\u{0}c").unicodeScalars.contains { $0.value == 0x202E || $0.value == 0 })
    }

    @Test("words: quotes group a name, an unclosed quote runs to the end")
    func words() {
        #expect(WatchText.words("near \"Tokyo office\" M5") == ["near", "Tokyo office", "M5"])
        #expect(WatchText.words("near „Tokyo office“ M5") == ["near", "Tokyo office", "M5"])
        #expect(WatchText.words("near \"Tokyo office M5") == ["near", "Tokyo office M5"])
        #expect(WatchText.words("  a   b  ") == ["a", "b"])
        #expect(WatchText.words("\"\"") == [])
    }
}

/// Issue 43: a watch is a rule of the same engine, labelled so the routing sends it only to its own receiver.
@Suite struct WatchRuleTests {
    static let owner = WatchOwner(platform: "slack", id: "T1:U1", name: "ana")

    @Test("a gauge watch is a levels rule on the station's NWS ladder from the category up")
    func gaugeRule() throws {
        let w = Watch(
            id: 7, number: 1, owner: Self.owner, target: .gauge(station: "S1", name: nil, level: .category("minor")),
            destination: .channel(platform: "slack", channel: "C1"), createdAt: 0)
        let rule = w.rule(receiver: "team-river")
        #expect(rule.name == "watch-7")
        #expect(rule.notify == ["team-river"])
        #expect(rule.labels["watch"] == "7")
        let levels = try #require(rule.kind as? LevelsRule)
        #expect(levels.stations == ["S1"])
        #expect(levels.nws && levels.nwsFrom == "minor")
        let context = SeriesContext(
            station: "S1", metric: "gage_height",
            flood: FloodCategories(stage: ["action": 8, "minor": 10, "moderate": 12, "major": 15]))
        #expect(levels.ladder(context).map(\.name) == ["minor", "moderate", "major"])
        // Action stage is no alert; minor fires.
        var state = AlertState()
        #expect(levels.step(&state, time: 100, value: 9, context: context) == nil)
        #expect(levels.step(&state, time: 200, value: 10.5, context: context)?.state == .firing)
        // Without NWS categories, nothing fires (and a full ladder is untouched without `nwsFrom`).
        #expect(levels.ladder(SeriesContext(station: "S1", metric: "gage_height")).isEmpty)
        var all = levels
        all.nwsFrom = nil
        #expect(all.ladder(context).count == 4)
    }

    @Test(
        "a stage watch is a threshold; an air watch a ladder from its level; a quake watch a quake rule near its place")
    func otherRules() throws {
        let stage = WatchTarget.gauge(station: "S1", name: nil, level: .value(12.5)).kind
        let t = try #require(stage as? ThresholdRule)
        #expect(t.threshold == 12.5 && t.stations == ["S1"] && t.direction == .above)
        let air = WatchTarget.air(
            place: "Delhi", stations: ["A", "B"], scale: "india-naqi", level: "Poor", series: .nowcast)
        let l = try #require(air.kind as? LevelsRule)
        #expect(l.metric == "aqi.pm25.nowcast")
        #expect(l.stations == ["A", "B"])
        #expect(l.levels.map(\.name) == ["Poor", "Very Poor", "Severe"])
        let place = WatchPlace(name: "Tokyo office", latitude: 35.68, longitude: 139.76, radiusKm: 300)
        let q = try #require(WatchTarget.quakes(place: place, threshold: .magnitude(5)).kind as? QuakeRule)
        #expect(q.minMagnitude == 5 && q.near.first?.radiusKm == 300 && q.near.first?.minIntensity == nil)
        let felt = try #require(WatchTarget.quakes(place: place, threshold: .felt(4)).kind as? QuakeRule)
        #expect(felt.near.first?.minIntensity == 4 && felt.near.first?.radiusKm == 1000)
    }

    @Test("a watch's transitions go to its receiver only: no route, no default receiver")
    func routing() {
        let routing = Routing(
            routes: [Route(matchers: [], receivers: ["team-all"], continue: true)], defaultReceiver: "ops")
        var t = Transition(
            rule: "watch-7", kind: "levels", station: "S1", metric: "gage_height", state: .firing, at: 0, value: 11,
            severity: .warning, labels: ["watch": "7"], summary: "s", explanation: "e")
        #expect(routing.deliveries(for: t, notify: ["team-river"]).map(\.receiver) == ["team-river"])
        #expect(routing.deliveries(for: t, notify: []).isEmpty)
        t.state = .resolved
        #expect(routing.deliveries(for: t, notify: ["team-river"]).map(\.receiver) == ["team-river"])
        // Any other rule's transition: as before.
        t.labels = [:]
        t.state = .firing
        #expect(routing.deliveries(for: t, notify: ["team-river"]).map(\.receiver) == ["team-river", "team-all"])
    }

    @Test("the words of a watch name what it watches, with the gauge id")
    func words() {
        #expect(
            WatchTarget.gauge(station: "01646500", name: "Potomac River at Little Falls", level: .category("minor"))
                .words
                == "gauge 01646500 (Potomac River at Little Falls) reaching minor flood stage")
        let place = WatchPlace(name: "Tokyo office", latitude: 35.68, longitude: 139.76, radiusKm: 300)
        #expect(
            WatchTarget.quakes(place: place, threshold: .felt(4)).words
                == "quakes felt at Tokyo office at intensity IV or more")
        #expect(
            WatchTarget.quakes(place: place, threshold: .magnitude(5)).words == "quakes near Tokyo office of M5 or more"
        )
    }
}
