import Foundation

/// A person's watch (issue 43): who made it, what it watches and where its alerts go. A watch is
/// evaluated as a rule of the same engine (`rule(receiver:)`), named `watch-ID` and labelled
/// `watch=ID`, so silences, quiet hours, grouping, living messages and the resolve contract apply to
/// it as to any rule; `Routing` sends a watch's transitions only to the watch's own receiver.
public struct Watch: Sendable, Hashable, Codable {
    /// The store's id (unique across people); 0 before it is stored.
    public var id: Int64
    /// The person's own number for it (`unwatch 2`): 1, 2, … in the order they made them, never reused
    /// while the watch exists.
    public var number: Int
    public var owner: WatchOwner
    public var target: WatchTarget
    public var destination: WatchDestination
    /// Seconds since the epoch.
    public var createdAt: Int64

    public init(
        id: Int64 = 0, number: Int = 0, owner: WatchOwner, target: WatchTarget, destination: WatchDestination,
        createdAt: Int64
    ) {
        self.id = id
        self.number = number
        self.owner = owner
        self.target = target
        self.destination = destination
        self.createdAt = createdAt
    }

    /// The label every transition of a watch carries, with the watch's id as its value.
    public static let label = Routing.watchLabel

    /// `watch-12`: the name of the watch's rule (and of its alerts).
    public var ruleName: String { "watch-\(id)" }

    /// The rule the engine evaluates for this watch, its alerts going to `receiver` only; with the
    /// owner's `quiet` hours, labelled with them (`WatchQuietHours.label`) for the dispatcher.
    public func rule(receiver: String, quiet: WatchQuietHours? = nil) -> Rule {
        var labels = [Self.label: String(id), "watch_owner": owner.key]
        if let quiet { labels[WatchQuietHours.label] = quiet.labelValue }
        return Rule(
            name: ruleName, kind: target.kind, severity: .warning, labels: labels, notify: [receiver],
            origin: "watch \(id) of \(owner.key)")
    }
}

/// Who holds a watch: a chat user by the platform's stable id, a channel, or a verified email address.
public struct WatchOwner: Sendable, Hashable, Codable {
    /// `slack`, `mattermost`, `telegram`, `email`, `site`.
    public var platform: String
    /// The platform's stable id (`T1:U024BE7LH`, a channel id, an address).
    public var id: String
    /// How to show them (a display name: never used to look anyone up).
    public var name: String

    public init(platform: String, id: String, name: String) {
        self.platform = platform
        self.id = id
        self.name = name
    }

    /// `slack:T1:U024BE7LH`: what the store counts and lists a person's watches by.
    public var key: String { "\(platform):\(id)" }
}

/// Where a watch's alerts go.
public enum WatchDestination: Sendable, Hashable, Codable {
    /// A direct message to the user on their platform (Slack `chat.postMessage`, Mattermost, Telegram).
    case direct(platform: String, user: String)
    /// The channel the watch was made in.
    case channel(platform: String, channel: String)
    /// An email address.
    case email(String)

    /// Whether it is a direct message to the person.
    public var isDirect: Bool {
        if case .direct = self { return true }
        return false
    }

    /// `slack:C0123` for a channel; the key `watches.channels` maps to a receiver.
    public var key: String {
        switch self {
        case .direct(let platform, let user): "\(platform):@\(user)"
        case .channel(let platform, let channel): "\(platform):\(channel)"
        case .email(let address): "email:\(address)"
        }
    }

    /// `this channel`, `direct messages to you`, `email to a@example.org`.
    public var words: String {
        switch self {
        case .direct: "direct messages to you"
        case .channel: "this channel"
        case .email(let address): "email to \(address)"
        }
    }
}

/// What a watch watches.
public enum WatchTarget: Sendable, Hashable, Codable {
    /// A gauge reaching a level (its stage metric).
    case gauge(station: String, name: String?, level: GaugeLevel)
    /// A place's air reaching a level of a scale, on the observed AQI or the NowCast series.
    case air(place: String, stations: [String], scale: String, level: String, series: AirSeries)
    /// Quakes near a place at or above a magnitude, or felt there at or above an intensity.
    case quakes(place: WatchPlace, threshold: QuakeThreshold)

    /// The kind, as `watches.kinds` names it.
    public var kindName: WatchKind {
        switch self {
        case .gauge: .gauge
        case .air: .air
        case .quakes: .quakes
        }
    }

    /// The metric a gauge watch watches.
    public static let gaugeMetric = "gage_height"

    /// The rule kind the engine runs for it.
    public var kind: any RuleKind {
        switch self {
        case .gauge(let station, _, .category(let category)):
            return LevelsRule(
                metric: Self.gaugeMetric, stations: [station], levels: [], nws: true, nwsFrom: category,
                direction: .worse)
        case .gauge(let station, _, .value(let value)):
            return ThresholdRule(metric: Self.gaugeMetric, stations: [station], direction: .above, threshold: value)
        case .air(_, let stations, let scaleID, let level, let series):
            let scale = AQIScale.named(scaleID) ?? .usEPA
            var rule = LevelsRule(metric: series.metric, stations: Set(stations), levels: [], scale: scale)
            rule.levels = WatchTarget.ladder(scale, from: level)
            rule.direction = .worse
            return rule
        case .quakes(let place, .magnitude(let m)):
            return QuakeRule(
                minMagnitude: m,
                near: [
                    .init(
                        name: place.name, latitude: place.latitude, longitude: place.longitude,
                        radiusKm: place.radiusKm)
                ])
        case .quakes(let place, .felt(let mmi)):
            return QuakeRule(
                minMagnitude: QuakeThreshold.feltFloor,
                near: [
                    .init(
                        name: place.name, latitude: place.latitude, longitude: place.longitude,
                        radiusKm: max(place.radiusKm, QuakeThreshold.feltRadiusKm), minIntensity: mmi)
                ])
        }
    }

    /// The alert ladder of `scale` from the level named `from` up.
    static func ladder(_ scale: AQIScale, from: String) -> [LevelsRule.Level] {
        let ladder = scale.alertLadder
        guard let i = ladder.firstIndex(where: { $0.name.lowercased() == from.lowercased() }) else { return ladder }
        return Array(ladder[i...])
    }

    /// `gauge 01646500 (Potomac River at Little Falls) reaching minor flood stage`.
    public var words: String {
        switch self {
        case .gauge(let station, let name, let level):
            let what = name.map { "gauge \(station) (\($0))" } ?? "gauge \(station)"
            switch level {
            case .category(let c): return "\(what) reaching \(c) flood stage"
            case .value(let v): return "\(what) reaching \(formatValue(v)) ft"
            }
        case .air(let place, _, _, let level, let series):
            return "air at \(place) reaching \(level)\(series == .nowcast ? " (NowCast)" : "")"
        case .quakes(let place, .magnitude(let m)):
            return "quakes near \(place.name) of M\(formatValue(m)) or more"
        case .quakes(let place, .felt(let mmi)):
            return "quakes felt at \(place.name) at intensity \(FeltIntensity.roman(mmi)) or more"
        }
    }
}

/// The kinds of watch, as `watches.kinds` names them.
public enum WatchKind: String, Sendable, Hashable, Codable, CaseIterable {
    case gauge, air, quakes
}

/// A gauge watch's level: an NWS flood category, or a stage.
public enum GaugeLevel: Sendable, Hashable, Codable {
    /// `action`, `minor`, `moderate`, `major`.
    case category(String)
    /// A stage in the gauge's unit (feet).
    case value(Double)

    /// The NWS flood categories, lowest first.
    public static let categories = ["action", "minor", "moderate", "major"]
}

/// Which air series a watch follows.
public enum AirSeries: String, Sendable, Hashable, Codable {
    /// The reported AQI (`aqi`).
    case observed
    /// The PM2.5 NowCast AQI (`aqi.pm25.nowcast`).
    case nowcast

    public var metric: String {
        switch self {
        case .observed: "aqi"
        case .nowcast: "aqi.pm25.nowcast"
        }
    }
}

/// A named place with its radius (`Tokyo office`).
public struct WatchPlace: Sendable, Hashable, Codable {
    public var name: String
    public var latitude: Double
    public var longitude: Double
    public var radiusKm: Double

    public init(name: String, latitude: Double, longitude: Double, radiusKm: Double) {
        self.name = name
        self.latitude = latitude
        self.longitude = longitude
        self.radiusKm = radiusKm
    }
}

/// When a quake counts for a watch.
public enum QuakeThreshold: Sendable, Hashable, Codable {
    /// At or above this magnitude, within the place's radius.
    case magnitude(Double)
    /// Felt at the place at or above this MMI (estimated, `FeltIntensity`).
    case felt(Double)

    /// The least magnitude a felt watch considers (smaller quakes are not felt far).
    public static let feltFloor = 2.5
    /// The least radius a felt watch looks within (a large quake is felt hundreds of km away).
    public static let feltRadiusKm = 1000.0
}
