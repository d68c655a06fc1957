import KlaxonCore
import Testing

/// Issue 29, item 5: a silence for a rule or station nothing knows is added with a warning that
/// lists the known names near the one typed.
@Suite struct NearNamesTests {
    static let rules = ["flood-stage", "flood-trend", "rain-total", "aqi-delhi", "quake-near-home", "high"]

    @Test("a mistyped rule: the nearest names first, unrelated ones left out")
    func mistypedRule() {
        #expect(NearNames.near("flod-stage", among: Self.rules) == ["flood-stage", "flood-trend"])
        #expect(NearNames.near("hihg", among: Self.rules) == ["high"])
        #expect(NearNames.near("rain-totals", among: Self.rules) == ["rain-total"])
        #expect(NearNames.near("snowfall", among: Self.rules) == [])
    }

    @Test("case is ignored; the name itself and repeated names are not listed")
    func caseAndRepeats() {
        #expect(NearNames.near("Flood-Stage", among: Self.rules + ["flood-stage"]).first == "flood-stage")
        #expect(NearNames.near("high", among: ["high", "High", "high"]) == ["High"])
    }

    @Test("a part of a name, or its start, is near: a station id typed short")
    func prefixAndSubstring() {
        let stations = ["14211720", "14211500", "01646500", "USGS-01646500"]
        #expect(NearNames.near("01646500", among: stations) == ["USGS-01646500"])
        #expect(NearNames.near("142", among: stations) == ["14211500", "14211720"])
        // A digit left out: one edit; the other station sharing the start comes after.
        #expect(NearNames.near("1421172", among: stations) == ["14211720", "14211500"])
        // Two digits swapped are one edit (issue 39): the swapped station first, then one two edits away.
        #expect(NearNames.near("14211702", among: stations) == ["14211720", "14211500"])
        #expect(NearNames.distance("14211702", "14211720") == 1)
        #expect(NearNames.distance("vaule", "value") == 1)
        #expect(NearNames.distance("vaule", "rule") == 2)
        // A swap is one edit only between neighbours: "abc" → "cba" is still two.
        #expect(NearNames.distance("abc", "cba") == 2)
        // Two characters are too few to make a name near by its start alone.
        #expect(NearNames.near("xy", among: ["xylophone-pressure"]) == [])
    }

    @Test("at most five, closest first, ties by name")
    func bounded() {
        let known = (0..<40).map { "river-\($0)" }
        let near = NearNames.near("river-", among: known)
        #expect(near == ["river-0", "river-1", "river-2", "river-3", "river-4"])
        #expect(NearNames.near("river-", among: known, limit: 2) == ["river-0", "river-1"])
        #expect(NearNames.near("river-", among: known, limit: 0) == [])
    }

    @Test("Levenshtein distance, with a bound")
    func distance() {
        #expect(NearNames.distance("kitten", "sitting") == 3)
        #expect(NearNames.distance("kitten", "sitting", bound: 2) == nil)
        #expect(NearNames.distance("", "abc") == 3)
        #expect(NearNames.distance("abc", "abc") == 0)
        #expect(NearNames.distance("ÉTÉ", "été") == 0)
        #expect(NearNames.distance("🌊a", "🌊b") == 1)
    }

    @Test("hostile sizes: names are cut to 64 characters, so a huge one costs no more than a long one")
    func hostileSizes() {
        let huge = String(repeating: "a", count: 1_000_000)
        let long = String(repeating: "a", count: NearNames.maxLength)
        #expect(NearNames.distance(huge, long) == 0)
        #expect(NearNames.near(huge, among: [long, "b"]) == [long])
        let many = (0..<20_000).map { "S\($0)" }
        #expect(NearNames.near(String(repeating: "x", count: 10_000), among: many).isEmpty)
    }

    @Test("a silence names what it matches: unknown rules and stations, with the names near them")
    func unknownNames() throws {
        let silence = Silence(
            id: "s",
            matchers: try ["rule=flod-stage", "station=1421172", "alertname=flod-stage", "metric=stage"].map(
                Matcher.parse), starts: 0, ends: 10, comment: "", createdBy: "t")
        let unknown = silence.unknownNames(rules: Set(Self.rules), stations: ["14211720", "01646500"])
        #expect(
            unknown.map(\.description) == [
                #"no rule named "flod-stage"; near: flood-stage, flood-trend"#,
                #"no station named "1421172"; near: 14211720"#,
            ])
        // Known names, regex and negative matchers, and a set not given (not known): no warning.
        let fine = Silence(
            id: "f", matchers: try ["rule=high", "station=~14.*", "rule!=nope", "alertname=~x"].map(Matcher.parse),
            starts: 0, ends: 10, comment: "", createdBy: "t")
        #expect(fine.unknownNames(rules: Set(Self.rules), stations: []).isEmpty)
        #expect(silence.unknownNames(rules: nil, stations: nil).isEmpty)
        #expect(silence.namesRule && silence.namesStation)
        #expect(!fine.namesStation)
        // A hostile name is shown escaped and cut.
        let hostile = Silence(
            id: "h",
            matchers: [try Matcher(name: "rule", op: .equal, value: "x\u{1B}[2J" + String(repeating: "y", count: 500))],
            starts: 0, ends: 10, comment: "", createdBy: "t")
        let shown = try #require(hostile.unknownNames(rules: ["high"], stations: nil).first?.description)
        #expect(!shown.contains("\u{1B}") && shown.contains("\\u{1b}"))
        #expect(shown.count < 150)
    }

    @Test("how many firing alerts a silence mutes now, in words")
    func muteCount() throws {
        let silence = Silence(
            id: "s", matchers: [try Matcher.parse("rule=high")], starts: 100, ends: 200, comment: "", createdBy: "t")
        let alerts: [[String: String]] = [["rule": "high", "station": "a"], ["rule": "high"], ["rule": "low"]]
        #expect(silence.muteCount(alerts, at: 150) == 2)
        #expect(silence.muteCount(alerts, at: 250) == 0)
        #expect(Silence.mutesText(2) == "mutes 2 firing alerts now")
        #expect(Silence.mutesText(1) == "mutes 1 firing alert now")
        #expect(Silence.mutesText(0) == "mutes no firing alert now")
        #expect(Silence.mutesText(10_000, atLeast: true) == "mutes at least 10000 firing alerts now")
    }
}
