/// What a rule kind reports for one step of one series.
public struct Change: Sendable, Hashable {
    public var state: TransitionState
    public var at: Int64
    public var value: Double?
    public var level: String?
    public var fromLevel: String?
    /// The default one-line message.
    public var summary: String
    /// Why, in words for people: the value, the level or threshold, the next one, the trend.
    public var explanation: String
    /// The engine's own account (dwell, deadband, exact boundaries): `--explain` shows it.
    public var details: String
    /// What the place is called, when the kind knows better than the station (a quake's region).
    public var place: String?
    /// The state in plain words, after the place: `minor flood stage` (see `Transition.headline`).
    public var headline: String?

    public init(
        state: TransitionState, at: Int64, value: Double?, level: String? = nil, fromLevel: String? = nil,
        summary: String, explanation: String, details: String = "", place: String? = nil, headline: String? = nil
    ) {
        self.state = state
        self.at = at
        self.value = value
        self.level = level
        self.fromLevel = fromLevel
        self.summary = summary
        self.explanation = explanation
        self.details = details
        self.place = place
        self.headline = headline
    }
}

/// What a step needs to word its messages.
public struct SeriesContext: Sendable {
    public var station: String
    public var metric: String
    public var unit: String?
    /// What is known of the station (name, other agencies' ids), when anything is.
    public var info: StationInfo?
    /// The station's NWS flood categories, when it has any.
    public var flood: FloodCategories? {
        didSet { floodLadder = flood?.ladder(forMetric: metric) }
    }
    /// `flood` as a ladder for this metric (worked out once per series, not per reading).
    public private(set) var floodLadder: [LevelsRule.Level]?
    /// The series' recent readings, including the one being stepped (kept only when a rule watching
    /// the series asks for history).
    public var history: RecentReadings?

    public init(
        station: String, metric: String, unit: String? = nil, info: StationInfo? = nil, flood: FloodCategories? = nil,
        floodLadder: [LevelsRule.Level]? = nil, history: RecentReadings? = nil
    ) {
        self.station = station
        self.metric = metric
        self.unit = unit
        self.info = info
        self.flood = flood
        self.floodLadder = floodLadder ?? flood?.ladder(forMetric: metric)
        self.history = history
    }

    /// What people call the station (`Willamette R at Portland, OR`), when its source said.
    public var placeName: String? {
        guard let name = info?.name?.trimmingCharacters(in: .whitespaces), !name.isEmpty else { return nil }
        return name
    }

    /// `Willamette River at Portland (USGS 14211720, NWS PRTO3)`; the bare station id when nothing
    /// more is known.
    public var place: String {
        var ids: [String] = []
        if let u = info?.usgsID { ids.append("USGS \(u)") }
        if let l = info?.nwsLID { ids.append("NWS \(l)") }
        if ids.isEmpty { ids.append(station) }
        guard let name = info?.name, !name.isEmpty else { return ids.joined(separator: ", ") }
        return "\(name) (\(ids.joined(separator: ", ")))"
    }

    /// `12.4 ft` or `12.4`.
    public func show(_ v: Double) -> String { withUnit(formatValue(v)) }

    /// A value already formatted (`formatValue`), with the unit as `show` adds it.
    public func withUnit(_ formatted: String) -> String {
        if let unit, !unit.isEmpty { return "\(formatted) \(unit)" }
        return formatted
    }
}

/// One kind of rule (`threshold`, `levels`, `stale`, `quake`, …). Every kind is of one family
/// (`family`): a series rule steps through readings (`SeriesRuleKind`); a quake or trip rule assesses
/// events (`QuakeFamilyRule`, `TripFamilyRule`). The engine and the event runners switch over the
/// family, a closed set, rather than asking a kind what type it is. One file per kind.
public protocol RuleKind: Sendable {
    /// The name used in rule files (`kind: threshold`).
    static var kindName: String { get }
    /// The kind as the protocol of its family. Conforming to a family's protocol provides it.
    var family: RuleFamily { get }
    /// What the kind needs to know besides its readings or events (the stations' metadata, their NWS
    /// flood categories); the evaluation reads it from the store only when some rule needs it.
    var needs: RuleNeeds { get }
    /// Seconds of recent readings the kind needs in `SeriesContext.history` (0 = none).
    var historySpan: Int64 { get }
}

/// The families of rule kinds: a closed set, switched over exhaustively.
public enum RuleFamily: Sendable {
    /// Steps through a series' readings (`threshold`, `levels`, `rate`, `stale`).
    case series(any SeriesRuleKind)
    /// Assesses each version of a quake event (`quake`).
    case quake(any QuakeFamilyRule)
    /// Assesses each trip with its weather (`trip-packing`).
    case trip(any TripFamilyRule)
}

/// What a rule kind needs from the store besides its readings or events.
public struct RuleNeeds: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The stations' metadata and NWS flood categories, for messages (`SeriesContext.info`, `flood`).
    public static let stations = RuleNeeds(rawValue: 1 << 0)
    /// The NWS flood categories of every station it watches (`levels: nws`): a station without them
    /// gets no alert, and `check`, `evaluate` and `dry-run` say so.
    public static let floodCategories = RuleNeeds(rawValue: 1 << 1)
}

/// A kind that steps through the readings of the series it watches. A kind is pure: given an
/// alert's state and a reading (or the passing of time) it updates the state and may report a change.
public protocol SeriesRuleKind: RuleKind {
    /// The metric the rule watches.
    var metric: String { get }
    /// The stations it watches; nil means every station with the metric.
    var stations: Set<String>? { get }
    /// A reading arrived (readings come in time order; the engine drops late ones).
    func step(_ state: inout AlertState, time: Int64, value: Double, context: SeriesContext) -> Change?
    /// Time passed with no reading up to `now` (used by kinds that react to missing data).
    func advance(_ state: inout AlertState, to now: Int64, context: SeriesContext) -> Change?
    /// True for kinds whose `advance` can report a change: they are checked even when no reading arrives.
    var reactsToTime: Bool { get }
    /// The AQI scale its levels follow, when it has one (the status site colours AQI by it).
    var aqiScale: AQIScale? { get }
    /// The gauge forecast it watches besides its readings (`levels: nws` with `forecast:`), when it does.
    var forecastOption: ForecastOption? { get }
}

extension RuleKind {
    public var kindName: String { Self.kindName }
    public var needs: RuleNeeds { [] }
    public var historySpan: Int64 { 0 }

    /// The kind as a series rule; nil for an event family's.
    public var series: (any SeriesRuleKind)? {
        if case .series(let kind) = family { return kind }
        return nil
    }

    /// The kind as a quake rule; nil for any other family's.
    public var quake: (any QuakeFamilyRule)? {
        if case .quake(let kind) = family { return kind }
        return nil
    }
}

extension SeriesRuleKind {
    public var family: RuleFamily { .series(self) }

    public func advance(_ state: inout AlertState, to now: Int64, context: SeriesContext) -> Change? { nil }

    public func watches(_ series: SeriesKey) -> Bool {
        series.metric == metric && (stations?.contains(series.station) ?? true)
    }

    public var reactsToTime: Bool { false }
    public var aqiScale: AQIScale? { nil }
    public var forecastOption: ForecastOption? { nil }
}
