import Foundation
import KlaxonCore
import KlaxonServer
import KlaxonStore
import Yams

/// What the status site takes from the config (`site:`, the `api:` tokens) and from the rules (the
/// places quake rules watch, the AQI scales `levels` rules use, and the rule names and stations a
/// silence is checked against).
public enum SiteSettings {
    /// The site's settings for a daemon with this config and these rules.
    public static func make(config: Config, rules: [Rule]) -> StatusSite.Settings {
        var settings = make(
            apiToken: config.apiToken?.value, ownerTokens: config.ownerTokens.mapValues(\.value), rules: rules)
        settings.enabled = config.site.enabled
        settings.timeZone = config.site.timeZone
        settings.refreshSeconds = config.site.refresh
        settings.hosts = SiteHosts.forListener(host: config.listen.host, configured: config.site.hosts)
        if let secret = config.site.secret { settings.secret = Array(secret.value.utf8) }
        return settings
    }

    /// The site's settings for a daemon with these tokens and rules.
    public static func make(apiToken: String?, ownerTokens: [String: String], rules: [Rule]) -> StatusSite.Settings {
        var places: [StatusSite.Place] = []
        var scale: AQIScale? = nil
        var scales: [String: AQIScale] = [:]
        for rule in rules {
            if let q = rule.kind.quake {
                for p in q.near where !places.contains(where: { $0.name == p.name }) {
                    places.append(StatusSite.Place(name: p.name, latitude: p.latitude, longitude: p.longitude))
                }
            }
            if let l = rule.kind.series, let s = l.aqiScale {
                if let stations = l.stations {
                    for station in stations where scales[station] == nil { scales[station] = s }
                } else if scale == nil {
                    scale = s
                }
            }
        }
        var settings = StatusSite.Settings(
            teamToken: apiToken, ownerTokens: ownerTokens, places: places, aqiScale: scale ?? .usEPA, aqiScales: scales)
        settings.ruleNames = Set(rules.map(\.name))
        settings.ruleStations = SilenceReach.listedStations(rules)
        return settings
    }
}

extension ConfigReader {
    /// `site.refresh`: a duration like `60s`, or `0` (also `0s`, `off`, `false`, `no`) for no `Refresh`
    /// header at all, as the README documents. A bare `0` has no unit, so the duration reader alone
    /// refused it.
    func siteRefresh(_ node: Node) -> Int64? {
        if let text = node.scalar?.string.trimmingCharacters(in: .whitespaces).lowercased(),
            ["0", "off", "false", "no"].contains(text)
        {
            return 0
        }
        return file.duration(node, what: "site.refresh")
    }
}
