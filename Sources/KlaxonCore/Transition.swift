/// What happened to an alert.
public enum TransitionState: String, Sendable, Codable, Hashable {
    /// The alert started (for `levels`: entered its first level).
    case firing
    /// The alert ended.
    case resolved
    /// A firing alert moved to another level.
    case changed
}

/// A state change of one alert, as evaluation produces it. A value: the engine hands it to a sink
/// (stdout, the store, the delivery outbox) and never performs I/O itself.
public struct Transition: Sendable, Hashable, Codable {
    public var rule: String
    public var kind: String
    public var station: String
    public var metric: String
    public var state: TransitionState
    /// The level entered (`levels` rules only).
    public var level: String?
    /// The level left (`levels` rules only; nil when entering the first level).
    public var fromLevel: String?
    /// The data time of the transition: the reading that caused it, or the moment a series went stale.
    public var at: Int64
    /// The value behind the transition; nil for a series gone stale.
    public var value: Double?
    public var unit: String?
    public var severity: Severity
    public var labels: [String: String]
    /// A one-line default message ("gage_height at 01646500 is 12.4 ft, at or above 12").
    public var summary: String
    /// Why it happened, in words for people: the value, the level or threshold it crossed, the next
    /// one, the trend.
    public var explanation: String
    /// What the place is called, for people (`Potomac River at Little Falls`, `Delhi`,
    /// `130 km E of Tokyo`); nil when nothing more than the station id is known.
    public var place: String?
    /// The engine's own account (dwell times, deadbands, exact boundaries): `dry-run --explain` and
    /// the alert's page show it; messages do not.
    public var details: String
    /// The rule's `annotations` (and `runbook_url`), rendered for this transition.
    public var annotations: [String: String]
    /// The state in plain words, after the place (`minor flood stage`, `air quality Very Poor`,
    /// `no readings for 2h`): titles read `PLACE: HEADLINE`. Nil for transitions logged before.
    public var headline: String?
    /// The headline of the firing that opened this transition's episode: an email thread's subject
    /// stays the same for the episode's whole life. Set when the transition is logged.
    public var opening: String?

    public init(
        rule: String, kind: String, station: String, metric: String, state: TransitionState, level: String? = nil,
        fromLevel: String? = nil, at: Int64, value: Double?, unit: String? = nil, severity: Severity,
        labels: [String: String] = [:], summary: String, explanation: String, place: String? = nil,
        details: String = "", annotations: [String: String] = [:], headline: String? = nil, opening: String? = nil
    ) {
        self.rule = rule
        self.kind = kind
        self.station = station
        self.metric = metric
        self.state = state
        self.level = level
        self.fromLevel = fromLevel
        self.at = at
        self.value = value
        self.unit = unit
        self.severity = severity
        self.labels = labels
        self.summary = summary
        self.explanation = explanation
        self.place = place
        self.details = details
        self.annotations = annotations
        self.headline = headline
        self.opening = opening
    }

    /// The alert this transition belongs to.
    public var alertKey: AlertKey { AlertKey(rule: rule, station: station, metric: metric) }

    /// An event's news (a quake and its revisions, a trip's packing list and weather alerts), not a
    /// series' alert: no firing alert stays behind it for `ack` to take, and a silence of its rule
    /// at its "station" (the event or the trip) would outlive nothing it could mute. Messages offer
    /// neither.
    public var isEvent: Bool {
        switch SubjectPage.of(metric: metric) {
        case .quakes, .trip: return true
        case .gauge, .air, .station: return kind == QuakeRule.kindName || kind == TripPackingRule.kindName
        }
    }

    /// Orders transitions for output: by time, then rule, station, metric.
    public static func outputOrder(_ a: Transition, _ b: Transition) -> Bool {
        (a.at, a.rule, a.station, a.metric) < (b.at, b.rule, b.station, b.metric)
    }
}

/// Identifies one alert: a rule applied to one series.
public struct AlertKey: Sendable, Hashable, Codable, Comparable {
    public var rule: String
    public var station: String
    public var metric: String

    public init(rule: String, station: String, metric: String) {
        self.rule = rule
        self.station = station
        self.metric = metric
    }

    public static func < (a: AlertKey, b: AlertKey) -> Bool {
        (a.rule, a.station, a.metric) < (b.rule, b.station, b.metric)
    }
}

/// Formats a value for people: at most 3 decimals, no trailing zeros.
public func formatValue(_ v: Double) -> String {
    if v.isNaN || v.isInfinite { return "\(v)" }
    let scaled = (v * 1000).rounded()
    let rounded = scaled / 1000
    if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
    // Thousandths under 1e14 (at most 14 digits): the shortest form that reads back as `rounded` is
    // exactly those digits, so they are written directly instead of through `String(Double)` and
    // trimming (replays format a value for every transition).
    if abs(scaled) < 1e14 {
        let k = Int64(scaled)
        var fraction = k.magnitude % 1000
        var places = 3
        while fraction != 0 && fraction % 10 == 0 {
            fraction /= 10
            places -= 1
        }
        // Sign, at most 11 whole digits, the point and `places` digits of `fraction`, zero-padded.
        return String(unsafeUninitializedCapacity: 16) { b in
            var n = 0
            if k < 0 {
                b[0] = 0x2D  // -
                n = 1
            }
            var whole = k.magnitude / 1000
            var divisor: UInt64 = 1
            while divisor <= whole / 10 { divisor *= 10 }
            while divisor > 0 {
                b[n] = UInt8(truncatingIfNeeded: 48 + whole / divisor)
                whole %= divisor
                divisor /= 10
                n += 1
            }
            b[n] = 0x2E  // .
            n += places + 1
            for i in 0..<places {
                b[n - 1 - i] = UInt8(truncatingIfNeeded: 48 + fraction % 10)
                fraction /= 10
            }
            return n
        }
    }
    var s = String(rounded)
    if s.contains("e") { return s }
    while s.hasSuffix("0") { s.removeLast() }
    return s
}
