/// A metric's name as people say it, for titles: `gage_height` → `gage height` (USGS's own words),
/// `discharge` → `flow`, `aqi` → `AQI`, `pm25` → `PM2.5`; anything else with `_` as spaces. Pure.
public enum MetricWords {
    public static func name(_ metric: String) -> String {
        let base: String
        let suffix: String
        if !metric.utf8.contains(0x2E) {
            // No `.`: the name is the whole metric (the usual case, and cheap: replays name one per transition).
            base = metric
            suffix = ""
        } else {
            base = metric.split(separator: ".", maxSplits: 1).first.map(String.init) ?? metric
            suffix = metric.count > base.count ? " (" + metric.dropFirst(base.count + 1) + ")" : ""
        }
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
}
