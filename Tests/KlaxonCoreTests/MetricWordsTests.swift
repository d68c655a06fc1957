import KlaxonCore
import Testing

/// `MetricWords.name` skips splitting a metric without a `.` (issue 44); every name must read as
/// the split form gave it.
@Suite struct MetricWordsTests {
    /// The split form, as it was.
    static func reference(_ metric: String) -> String {
        let base = metric.split(separator: ".", maxSplits: 1).first.map(String.init) ?? metric
        let suffix = metric.count > base.count ? " (" + metric.dropFirst(base.count + 1) + ")" : ""
        let word: String
        switch base {
        case "gage_height", "stage": word = "gage height"
        case "discharge", "flow": word = "flow"
        case "aqi": word = "AQI"
        case "pm25": word = "PM2.5"
        case "pm10": word = "PM10"
        case "o3": word = "ozone"
        case "no2": word = "NO₂"
        default: word = base.replacingOccurrences(of: "_", with: " ")
        }
        return word + suffix
    }

    @Test(
        arguments: [
            "gage_height", "stage", "discharge", "flow", "aqi", "pm25", "pm10", "o3", "no2", "water_temperature",
            "wind_speed", "", "_", ".", "..", ".x", "x.", "a..b", "pm25.nowcast", "gage_height.max", "o3.8h",
            "caf\u{E9}_au_lait", "e\u{301}_x", ".\u{301}x", "a.\u{301}b", "__double__under",
        ])
    func matchesTheSplitForm(metric: String) {
        #expect(MetricWords.name(metric) == Self.reference(metric))
    }

    @Test func everyKnownNameWithoutADot() {
        #expect(MetricWords.name("gage_height") == "gage height")
        #expect(MetricWords.name("no2") == "NO₂")
        #expect(MetricWords.name("water_temperature") == "water temperature")
        #expect(MetricWords.name("pm25.nowcast") == "PM2.5 (nowcast)")
    }
}
