import Foundation
import KlaxonCore
import KlaxonServer

/// What the status site takes from the config (`site:`, the `api:` tokens) and from the rules (the
/// places quake rules watch and the AQI scales `levels` rules use).
public enum SiteSettings {
    /// The site's settings for a daemon with this config and these rules.
    public static func make(config: Config, rules: [Rule]) -> StatusSite.Settings {
        var settings = make(
            apiToken: config.apiToken?.value, ownerTokens: config.ownerTokens.mapValues(\.value), rules: rules)
        settings.enabled = config.site.enabled
        settings.timeZone = config.site.timeZone
        settings.refreshSeconds = config.site.refresh
        if let secret = config.site.secret { settings.secret = Array(secret.value.utf8) }
        return settings
    }

    /// The site's settings for a daemon with these tokens and rules.
    public static func make(apiToken: String?, ownerTokens: [String: String], rules: [Rule]) -> StatusSite.Settings {
        var places: [StatusSite.Place] = []
        var scale: AQIScale? = nil
        var scales: [String: AQIScale] = [:]
        for rule in rules {
            if let q = rule.kind as? QuakeRule {
                for p in q.near where !places.contains(where: { $0.name == p.name }) {
                    places.append(StatusSite.Place(name: p.name, latitude: p.latitude, longitude: p.longitude))
                }
            }
            if let l = rule.kind as? LevelsRule, let s = l.scale {
                if let stations = l.stations {
                    for station in stations where scales[station] == nil { scales[station] = s }
                } else if scale == nil {
                    scale = s
                }
            }
        }
        return StatusSite.Settings(
            teamToken: apiToken, ownerTokens: ownerTokens, places: places, aqiScale: scale ?? .usEPA, aqiScales: scales)
    }
}
