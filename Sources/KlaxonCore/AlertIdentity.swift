/// An alert's identity as every consumer outside Klaxon sees it: its labels, its fingerprint, its
/// annotations and the labels of the group it falls in. One definition for the webhook's payload
/// (Alertmanager's webhook v4), the Alertmanager API (`/api/v2/alerts`) and `klaxon test`. Pure.
public enum AlertIdentity {
    /// An alert's identifying labels as pairs sorted by key: its rule's labels, `alertname`,
    /// `station`, `metric` and `severity`. The same for the alert's whole episode: the current
    /// level is an annotation, and a watch owner's quiet hours (`watch_quiet`) are left out (a
    /// label that changed would make it another alert to a consumer that keys on labels, and its
    /// resolve would never match).
    public static func labels(_ t: Transition) -> [(key: String, value: String)] {
        var pairs: [(key: String, value: String)] = []
        pairs.reserveCapacity(t.labels.count + 4)
        for (k, v) in t.labels {
            switch k {
            case "alertname", "rule", "station", "metric", "severity", "level", WatchQuietHours.label: continue
            default: pairs.append((k, v))
            }
        }
        pairs.append(("alertname", t.rule))
        pairs.append(("station", t.station))
        pairs.append(("metric", t.metric))
        pairs.append(("severity", t.severity.rawValue))
        pairs.sort { $0.key < $1.key }
        return pairs
    }

    /// Alertmanager-style fingerprint: stable per alert (rule, station, metric): the first 8 bytes
    /// of the SHA-256 of the three joined by U+001F, in hex.
    public static func fingerprint(_ t: Transition) -> String {
        SHA256Digest.hex(SHA256Digest.hash(Array("\(t.rule)\u{1F}\(t.station)\u{1F}\(t.metric)".utf8)).prefix(8))
    }

    /// An alert's annotations as pairs sorted by key (the keys Klaxon sets are fixed, so is their
    /// order): its id (`id` > 0), when its data is from, the current level (the last one, on a
    /// resolve), the previous one, the path it took since the receiver last heard of it (`route`,
    /// when it has more than one step), whether the data is late, the message (`summary`) and the
    /// value; then the rule's own annotations (`runbook_url`, …), where Klaxon's names win.
    public static func annotations(
        _ t: Transition, id: Int64, summary: String, dataTime: String, late: Bool = false, route: [String] = []
    ) -> [(key: String, value: String)] {
        var pairs: [(key: String, value: String)] = []
        pairs.reserveCapacity(9)
        if id > 0 { pairs.append(("alert_id", String(id))) }
        pairs.append(("data_time", dataTime))
        pairs.append(("description", t.explanation))
        if late { pairs.append(("late", "true")) }
        if let level = t.level ?? t.fromLevel { pairs.append(("level", level)) }
        if route.count > 1 { pairs.append(("path", route.joined(separator: " → "))) }
        if let f = t.fromLevel { pairs.append(("previous_level", f)) }
        pairs.append(("summary", summary))
        if let v = t.value { pairs.append(("value", formatValue(v))) }
        if !t.annotations.isEmpty {
            let taken = Set(pairs.map(\.key))
            for (k, v) in t.annotations where !taken.contains(k) { pairs.append((k, v)) }
            pairs.sort { $0.key < $1.key }
        }
        return pairs
    }

    /// The labels of the group a transition falls in under `groupBy` (sorted by name), as
    /// Alertmanager builds them: the alert's values for the route's `group_by` names (`rule` is the
    /// alert's name, `alertname`). What a notification's `groupLabels` and the Alertmanager API's
    /// `/api/v2/alerts/groups` show.
    public static func groupLabels(of t: Transition, by groupBy: [String]) -> [(key: String, value: String)] {
        var out: [(key: String, value: String)] = []
        for given in groupBy {
            let name = given == "rule" ? "alertname" : given
            if !out.contains(where: { $0.key == name }), let v = t.matchLabel(name) { out.append((name, v)) }
        }
        return out.sorted { $0.key < $1.key }
    }
}
