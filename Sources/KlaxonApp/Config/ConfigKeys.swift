/// The keys each part of `klaxon.yaml` and of a rule file allows, by section. The readers check
/// unknown keys against these very lists (`rejectUnknown`), so they are the truth; the
/// configuration reference (`docs/configuration.md`) is checked against `sections` by a test
/// (`ConfigReferenceTests`), so neither can drift from the other.
public enum ConfigKeys {
    // klaxon.yaml sections whose keys are read inline in `Config.load` and `ConfigReader`.
    public static let database = ["url", "password", "password_file"]
    public static let api = ["token", "token_file", "owners", "max_push_bytes"]
    public static let apiOwner = ["owner", "token", "token_file"]
    public static let chat = ["slack", "mattermost", "telegram", "users", "may_act"]
    public static let chatSlack = ["signing_secret", "signing_secret_file", "response_url_prefix"]
    public static let chatMattermost = ["token", "token_file"]
    public static let chatTelegram = ["secret_token", "secret_token_file"]
    public static let site = ["enabled", "refresh", "time_zone", "secret", "secret_file", "hosts"]
    public static let readings = ["max_future"]
    public static let receiver = ["name", "type", "edit", "budget"]
    public static let receiverBudget = ["messages", "per"]
    public static let route = [
        "match", "receivers", "group_by", "group_wait", "group_interval", "repeat_interval", "send_resolved",
        "continue", "quiet_hours", "escalate_after", "escalate_to", "notify_max_age",
    ]
    public static let routeMatch = ["rule", "severity", "station", "metric", "level", "labels"]
    public static let quietHours = ["timezone", "from", "to", "days", "policy", "bypass_severity"]
    public static let airNowLocation = ["latitude", "longitude", "distance", "zip_code"]
    public static let cwmsTimeSeries = ["name", "metric"]
    public static let httpJSONHeader = ["value", "value_file"]
    // Rule files.
    public static let ruleFile = ["rules"]
    public static let ruleLevel = ["name", "at"]
    public static let ruleForecast = ["horizon", "stale_after"]
    public static let quakePlace = ["name", "latitude", "longitude", "radius_km", "min_intensity"]
    public static let watches = [
        "kinds", "max_per_person", "stations", "air_places", "places", "channels", "direct",
    ]
    public static let watchPlace = ["name", "latitude", "longitude", "radius_km"]

    /// Every section's allowed keys, by the name the reference uses for it: `klaxon.yaml` (the top
    /// level), `api`, `routes[]`, `receivers[] webhook`, `sources[] usgs-iv`, `rule threshold`, ….
    /// A `sources[] KIND` section lists the kind's own keys (besides `sources[]`, the keys every
    /// source takes); `receivers[] TYPE` and `rule KIND` likewise.
    public static var sections: [String: [String]] {
        var s: [String: [String]] = [
            "klaxon.yaml": Config.keys,
            "database": database,
            "api": api,
            "api.owners[]": apiOwner,
            "chat": chat,
            "chat.slack": chatSlack,
            "chat.mattermost": chatMattermost,
            "chat.telegram": chatTelegram,
            "site": site,
            "readings": readings,
            "retention": Retention.kinds.map(\.key),
            "receivers[]": receiver,
            "receivers[].budget": receiverBudget,
            "routes[]": route,
            "routes[].match": routeMatch,
            "routes[].quiet_hours": quietHours,
            "sources[]": ConfigReader.commonSourceKeys,
            "sources[] airnow locations[]": airNowLocation,
            "sources[] cwms timeseries[]": cwmsTimeSeries,
            "sources[] http-json station": ConfigReader.stationKeys,
            "sources[] http-json time": ConfigReader.timeKeys,
            "sources[] http-json metrics.NAME": ConfigReader.metricKeys,
            "sources[] http-json headers.NAME": httpJSONHeader,
            "rule file": ruleFile,
            "rule": RuleLoader.commonKeys,
            "rule levels[]": ruleLevel,
            "rule levels forecast": ruleForecast,
            "rule quake near[]": quakePlace,
            "watches": watches,
            "watches.places[]": watchPlace,
        ]
        for (type, keys) in ConfigReader.receiverKeys { s["receivers[] \(type)"] = keys }
        for kind in ConfigReader.sourceKinds { s["sources[] \(kind.name)"] = kind.keys }
        for kind in RuleLoader.ruleKinds { s["rule \(kind.name)"] = kind.keys }
        return s
    }
}
