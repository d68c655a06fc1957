/// What a silence names and what it mutes: `klaxon silence add` and the status site warn about a
/// rule or station that nothing knows, and say how many firing alerts a silence mutes now.
extension Silence {
    /// A name an equality matcher gives that nothing known has, with the known names near it.
    public struct UnknownName: Sendable, Hashable, CustomStringConvertible {
        /// `rule` or `station`.
        public var what: String
        public var name: String
        /// Known names near `name`, closest first (`NearNames`).
        public var near: [String]

        public init(what: String, name: String, near: [String]) {
            self.what = what
            self.name = name
            self.near = near
        }

        /// `no rule named "flod-stage"; near: flood-stage, flood-trend`. Names are shown with control
        /// characters escaped and cut to 80 characters: they may come from a request.
        public var description: String {
            var s = "no \(what) named \"\(Matcher.shown(name))\""
            if !near.isEmpty { s += "; near: " + near.map { Matcher.shown($0) }.joined(separator: ", ") }
            return s
        }
    }

    /// The names this silence's equality matchers give (`alertname=` and `rule=` a rule, `station=`
    /// a station) that are not in `rules` or `stations`, each with the known names near it. A nil set
    /// is not checked (nothing is known to compare with). Regex and negative matchers name nothing.
    public func unknownNames(rules: Set<String>?, stations: Set<String>?) -> [UnknownName] {
        var out: [UnknownName] = []
        for m in matchers where m.op == .equal && m.problem == nil {
            let (what, known): (String, Set<String>?) =
                switch m.name {
                case "alertname", "rule": ("rule", rules)
                case "station": ("station", stations)
                default: ("", nil)
                }
            guard let known, !known.contains(m.value) else { continue }
            guard !out.contains(where: { $0.what == what && $0.name == m.value }) else { continue }
            out.append(UnknownName(what: what, name: m.value, near: NearNames.near(m.value, among: known)))
        }
        return out
    }

    /// Whether an equality matcher names a rule (`alertname=`, `rule=`) or a station (`station=`):
    /// only then are the known names worth reading.
    public var namesRule: Bool { matchers.contains { $0.op == .equal && ["alertname", "rule"].contains($0.name) } }
    public var namesStation: Bool { matchers.contains { $0.op == .equal && $0.name == "station" } }

    /// How many of these alerts (their `Transition.matchLabels`) the silence mutes at `t`.
    public func muteCount(_ alerts: some Sequence<[String: String]>, at t: Int64) -> Int {
        guard isActive(at: t) else { return 0 }
        return alerts.reduce(0) { $0 + (mutes($1, at: t) ? 1 : 0) }
    }

    /// `mutes 2 firing alerts now`, `mutes 1 firing alert now`, `mutes no firing alert now`; with
    /// `atLeast` (not every firing alert was counted), `mutes at least 10000 firing alerts now`.
    public static func mutesText(_ count: Int, atLeast: Bool = false) -> String {
        let least = atLeast ? "at least " : ""
        switch count {
        case 0 where !atLeast: return "mutes no firing alert now"
        case 1: return "mutes \(least)1 firing alert now"
        default: return "mutes \(least)\(count) firing alerts now"
        }
    }
}
