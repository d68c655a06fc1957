import Foundation

/// The `forecast:` option of a `levels: nws` rule (issue 42, item 1): besides the observed river,
/// the rule watches the gauge's latest official forecast issuance (`FloodForecast`) and warns before
/// it happens.
///
/// - It fires when the latest issuance first reaches a flood category within `horizon` of now:
///   "forecast: minor flood stage Tue 14:00 (in 26 h), crest 16.5 ft Wed 06:00, issued Mon 09:12".
///   The alert's level is the highest category reached within the horizon.
/// - Each new issuance changes the same alert (earlier, later, higher, lower, crest moved): one
///   `changed` transition per issuance that says something new, through the normal path (living
///   messages edit in place).
/// - It resolves when an issuance no longer reaches a category within the horizon.
/// - A missing or stale forecast (the newest issuance older than `staleAfter`) is stale data, never a
///   resolve: the alert stays as last issued, and says once that the forecast is stale.
/// - When the observed river reaches the forecast category, the observed alert (the same rule on
///   the observed series) takes over: the forecast alert resolves saying so, and stays quiet while
///   the observed river is at or above what the forecast reaches.
///
/// The forecast alert is its own alert beside the observed one: the same rule and station, metric
/// `<metric>.forecast` (`gage_height.forecast`).
public struct ForecastOption: Sendable, Hashable {
    /// How far ahead a crossing counts (default 48 h).
    public var horizon: Int64
    /// How old the newest issuance may be before the forecast is stale (default 24 h).
    public var staleAfter: Int64

    public static let defaultHorizon: Int64 = 48 * 3_600
    public static let defaultStaleAfter: Int64 = 24 * 3_600
    /// The suffix of a forecast alert's metric.
    public static let metricSuffix = ".forecast"

    public init(horizon: Int64 = ForecastOption.defaultHorizon, staleAfter: Int64 = ForecastOption.defaultStaleAfter) {
        self.horizon = horizon
        self.staleAfter = staleAfter
    }
}

/// The forecast alert's value-type state machine: what it last announced, and the transition (if
/// any) a new look at the forecast and the observed river makes.
public struct FloodForecastAlert: Sendable, Hashable, Codable {
    /// What a firing forecast alert last announced.
    public struct Announced: Sendable, Hashable, Codable {
        public var category: String
        public var crossing: Int64
        public var crest: Double
        public var crestTime: Int64
        public var issued: Int64
        /// The stale notice was given for this issuance.
        public var stale = false

        public init(
            category: String, crossing: Int64, crest: Double, crestTime: Int64, issued: Int64, stale: Bool = false
        ) {
            self.category = category
            self.crossing = crossing
            self.crest = crest
            self.crestTime = crestTime
            self.issued = issued
            self.stale = stale
        }
    }

    /// Nil while the alert is not firing.
    public var announced: Announced?

    public init(announced: Announced? = nil) { self.announced = announced }

    public var isFiring: Bool { announced != nil }

    /// What the rule sees at `now`: the latest issuance (nil: none stored), the gauge's ladder, and
    /// the newest observed value (nil: none).
    public struct Look: Sendable {
        public var forecast: FloodForecast?
        public var ladder: [LevelsRule.Level]
        public var observed: Double?
        public var now: Int64
        /// The station's IANA zone, for the times in messages (UTC when nil or unknown).
        public var timeZone: String?

        public init(
            forecast: FloodForecast?, ladder: [LevelsRule.Level], observed: Double?, now: Int64, timeZone: String? = nil
        ) {
            self.forecast = forecast
            self.ladder = ladder
            self.observed = observed
            self.now = now
            self.timeZone = timeZone
        }
    }

    /// What the latest issuance says within the horizon: the highest category it reaches, when it
    /// first reaches it, and the issuance's crest; nil when it reaches none.
    public static func outlook(_ f: FloodForecast, ladder: [LevelsRule.Level], now: Int64, horizon: Int64)
        -> (category: Int, crossing: Int64, crest: FloodForecast.Point)?
    {
        let ahead = f.points.filter { $0.time >= now && $0.time <= now.addingClamped(horizon) }
        guard let top = ahead.map(\.value).max(), let i = ladder.lastIndex(where: { top >= $0.at }),
            let first = ahead.first(where: { $0.value >= ladder[i].at }), let crest = f.crest
        else { return nil }
        return (i, first.time, crest)
    }

    /// One look. Returns the change to announce, if any; the state moves on.
    public mutating func step(_ look: Look, option: ForecastOption, context c: SeriesContext) -> Change? {
        let now = look.now
        let clock = ForecastClock(zone: look.timeZone)
        let fresh = look.forecast.flatMap { now - $0.issued <= option.staleAfter ? $0 : nil }
        let outlook = fresh.flatMap { Self.outlook($0, ladder: look.ladder, now: now, horizon: option.horizon) }
        // The observed river at or above what the forecast reaches (or, when it reaches nothing now
        // or is stale, what was announced): the observed alert takes over.
        if let o = look.observed, let a = announced,
            let i = outlook?.category ?? look.ladder.firstIndex(where: { $0.name == a.category }),
            o >= look.ladder[i].at
        {
            announced = nil
            return Change(
                state: .resolved, at: now, value: o, level: nil, fromLevel: a.category,
                summary:
                    "\(c.metric) at \(c.station) reached \(look.ladder[i].name) flood stage as forecast (\(c.show(o))): the observed alert takes over",
                explanation:
                    "The observed river is at \(c.show(o)), at or above \(look.ladder[i].name) flood stage (\(c.show(look.ladder[i].at))), as forecast; the observed alert takes over from the forecast alert.",
                details: "issued \(clock.day(fresh?.issued ?? a.issued))",
                headline: "observed \(look.ladder[i].name) flood stage: the observed alert takes over")
        }
        // Missing or stale: stale data, never a resolve.
        guard let f = fresh else {
            guard var a = announced, !a.stale else { return nil }
            a.stale = true
            announced = a
            let age =
                look.forecast.map {
                    "the newest, issued \(clock.day($0.issued)), is \(Self.hours(now - $0.issued)) old"
                }
                ?? "none is stored"
            return Change(
                state: .changed, at: now, value: a.crest, level: a.category, fromLevel: a.category,
                summary: "\(c.metric) forecast at \(c.station) is stale: no new issuance (\(age))",
                explanation:
                    "The forecast is stale (\(age)); the alert stands as last issued: \(a.category) flood stage \(clock.day(a.crossing)), crest \(c.show(a.crest)) \(clock.day(a.crestTime)).",
                details: "stale_after \(DurationText.format(option.staleAfter))",
                headline: "forecast stale")
        }
        guard let outlook else {
            guard let a = announced else { return nil }
            announced = nil
            return Change(
                state: .resolved, at: f.issued, value: f.crest?.value, level: nil, fromLevel: a.category,
                summary:
                    "\(c.metric) forecast at \(c.station) no longer reaches \(look.ladder.first?.name ?? "a flood category") within \(Self.hours(option.horizon)) (issued \(clock.day(f.issued)))",
                explanation:
                    "The forecast issued \(clock.day(f.issued)) no longer reaches a flood category within \(Self.hours(option.horizon))"
                    + (f.crest.map { "; its crest is \(c.show($0.value)) \(clock.day($0.time))" } ?? "") + ".",
                details: "horizon \(DurationText.format(option.horizon))", headline: "forecast: no flooding")
        }
        let level = look.ladder[outlook.category]
        // Quiet while the observed river is already at or above what the forecast reaches.
        if let o = look.observed, o >= level.at, announced == nil { return nil }
        let next = Announced(
            category: level.name, crossing: outlook.crossing, crest: outlook.crest.value,
            crestTime: outlook.crest.time, issued: f.issued)
        let previous = announced
        guard previous != next else { return nil }
        announced = next
        let summary =
            "forecast: \(level.name) flood stage \(clock.day(next.crossing)) (in \(Self.hours(next.crossing - now))), crest \(c.show(next.crest)) \(clock.day(next.crestTime)), issued \(clock.day(next.issued))"
        var explanation =
            "The forecast issued \(clock.day(next.issued)) reaches \(level.name) flood stage (\(c.show(level.at))) \(clock.day(next.crossing)), in \(Self.hours(next.crossing - now)), and crests at \(c.show(next.crest)) \(clock.day(next.crestTime))."
        if let p = previous {
            explanation += " " + Self.difference(from: p, to: next, clock: clock, c)
        }
        return Change(
            state: previous == nil ? .firing : .changed, at: f.issued, value: next.crest, level: level.name,
            fromLevel: previous?.category, summary: summary, explanation: explanation,
            details: "horizon \(DurationText.format(option.horizon)); crossing \(Timestamp.format(next.crossing))",
            headline: "forecast \(level.name) flood stage")
    }

    /// How a new issuance differs from what was announced: "Earlier by 6 h; crest higher by 1.2 ft."
    static func difference(from p: Announced, to n: Announced, clock: ForecastClock, _ c: SeriesContext) -> String {
        var parts: [String] = []
        if p.category != n.category { parts.append("Now \(n.category), was \(p.category)") }
        if n.crossing < p.crossing { parts.append("earlier by \(hours(p.crossing - n.crossing))") }
        if n.crossing > p.crossing { parts.append("later by \(hours(n.crossing - p.crossing))") }
        if n.crest > p.crest { parts.append("crest higher by \(c.show(n.crest - p.crest))") }
        if n.crest < p.crest { parts.append("crest lower by \(c.show(p.crest - n.crest))") }
        if n.crestTime != p.crestTime, n.crest == p.crest { parts.append("crest moved to \(clock.day(n.crestTime))") }
        if parts.isEmpty { parts.append("Reissued unchanged") }
        var s = parts.joined(separator: "; ")
        s = s.prefix(1).uppercased() + s.dropFirst()
        return s
            + " (was \(p.category) \(clock.day(p.crossing)), crest \(c.show(p.crest)), issued \(clock.day(p.issued)))."
    }

    /// `26 h`, `45 min`, `3 d 4 h`: whole hours from 1 h to 2 days.
    static func hours(_ seconds: Int64) -> String {
        let s = max(0, seconds)
        if s < 3_600 { return "\(s / 60) min" }
        if s <= 48 * 3_600 { return "\((s + 1_800) / 3_600) h" }
        let h = (s + 1_800) / 3_600
        return h % 24 == 0 ? "\(h / 24) d" : "\(h / 24) d \(h % 24) h"
    }
}

/// Times in forecast messages: `Tue 14:00` in the station's zone (its abbreviation added when the
/// zone is UTC or unknown, so a reader never takes UTC for local time).
struct ForecastClock {
    let zone: TimeZone?

    init(zone: String?) { self.zone = zone.flatMap { TimeZone(identifier: $0) } }

    func day(_ t: Int64) -> String {
        let offset = Int64(zone?.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(t))) ?? 0)
        let local = t + offset
        let days = Int((local - ((local % 86_400) + 86_400) % 86_400) / 86_400)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        let sod = ((local % 86_400) + 86_400) % 86_400
        let text = weekday + " " + String(format: "%02d:%02d", Int(sod / 3_600), Int(sod % 3_600 / 60))
        return zone == nil ? text + " UTC" : text
    }
}
