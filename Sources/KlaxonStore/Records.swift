import Foundation
import KlaxonCore

/// A row of `stations`.
public struct StationRecord: Codable, Sendable, Equatable {
    public var id: String
    public var source: String?
    public var name: String?
    public var latitude: Double?
    public var longitude: Double?
    public var timeZone: String?
    /// Free attributes as a JSON object.
    public var attributes: String

    enum CodingKeys: String, CodingKey {
        case id, source, name, latitude, longitude
        case timeZone = "time_zone"
        case attributes
    }

    public init(
        id: String, source: String? = nil, name: String? = nil, latitude: Double? = nil, longitude: Double? = nil,
        timeZone: String? = nil, attributes: [String: String] = [:]
    ) {
        self.id = id
        self.source = source
        self.name = name
        self.latitude = latitude
        self.longitude = longitude
        self.timeZone = timeZone
        let data = (try? JSONSerialization.data(withJSONObject: attributes, options: [.sortedKeys])) ?? Data("{}".utf8)
        self.attributes = String(decoding: data, as: UTF8.self)
    }
}

/// A row of `series`: one metric at one station.
public struct SeriesRecord: Codable, Sendable, Equatable {
    public var id: Int64
    public var station: String
    public var metric: String
    public var unit: String?
}

/// A row of `readings`, with its series spelled out.
public struct StoredReading: Sendable, Equatable {
    public var station: String
    public var metric: String
    public var time: Int64
    public var value: Double
    public var unit: String?
    public var quality: String?
    public var revised: Bool
    /// Out of its metric's physical range or flagged bad by its source (`Plausibility`).
    public var suspect: Bool

    /// A reading read by another backend (`KlaxonPostgres`).
    public init(
        station: String, metric: String, time: Int64, value: Double, unit: String?, quality: String?, revised: Bool,
        suspect: Bool
    ) {
        self.station = station
        self.metric = metric
        self.time = time
        self.value = value
        self.unit = unit
        self.quality = quality
        self.revised = revised
        self.suspect = suspect
    }
}

/// A row of `alert_states`: the state of one alert.
public struct AlertStateRecord: Codable, Sendable, Equatable {
    public var rule: String
    public var station: String
    public var metric: String
    public var status: String
    public var level: String?
    public var since: Int64?
    /// The whole `AlertState` as JSON.
    public var state: String
    public var updatedAt: Int64

    enum CodingKeys: String, CodingKey {
        case rule, station, metric, status, level, since, state
        case updatedAt = "updated_at"
    }

    public init(key: AlertKey, state: AlertState, updatedAt: Int64) {
        rule = key.rule
        station = key.station
        metric = key.metric
        status = state.status.rawValue
        level = state.level
        since = state.since
        self.state = Self.encode(state: state)
        self.updatedAt = updatedAt
    }

    public var alertState: AlertState { Self.decode(state: state) }

    /// An `AlertState` from its stored JSON (a fresh state if it does not decode).
    package static func decode(state: String) -> AlertState {
        (try? decoder.decode(AlertState.self, from: Data(state.utf8))) ?? AlertState()
    }

    /// The state as JSON, written directly (every evaluated series saves its states: `JSONEncoder`
    /// cost more than the row's insert). Decodes with `JSONDecoder` like the encoder's output; a
    /// value that is not finite is left out (nil), which `JSONEncoder` would have refused.
    package static func encode(state: AlertState) -> String {
        var out = "{\"status\":\""
        out += state.status.rawValue
        out += "\""
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            out += ",\""
            out += key
            out += "\":"
            out += value
        }
        add("since", state.since.map { String($0) })
        add("level", state.level.map(JSONText.string))
        add("announced", state.announced.map(JSONText.string))
        add("candidate", state.candidate.map(JSONText.string))
        add("candidateSince", state.candidateSince.map { String($0) })
        add("lastTime", state.lastTime.map { String($0) })
        if let v = state.lastValue, v.isFinite { add("lastValue", JSONText.number(v)) }
        add("interval", state.interval.map { String($0) })
        out += "}"
        return out
    }

    // One decoder for every row (it is thread-safe); making one per row cost more than the decoding.
    private static let decoder = JSONDecoder()
}

/// A row of `transitions`: the log of every alert state change with its explanation.
public struct TransitionRecord: Codable, Sendable, Equatable {
    public var id: Int64?
    public var rule: String
    public var kind: String
    public var station: String
    public var metric: String
    public var state: String
    public var level: String?
    public var fromLevel: String?
    public var at: Int64
    public var value: Double?
    public var unit: String?
    public var severity: String
    public var labels: String
    public var summary: String
    public var explanation: String
    public var message: String
    public var recordedAt: Int64
    /// The alert's episode (first firing to resolve) this transition belongs to: the id of the firing
    /// transition that opened it. The id people see and `ack` takes, for the episode's whole life.
    public var episode: Int64?
    /// When the episode began (the opening firing's data time): `startsAt`, "firing since".
    public var startedAt: Int64?
    /// What a transition carries beyond its columns, as one JSON object (`TransitionExtra`): the
    /// place's name, the engine's details, the rule's rendered annotations, the plain-words headline
    /// and the episode's opening one. Nil or `{}` for rows logged before it existed. One column, so
    /// that what messages say next needs no migration.
    public var extra: String?

    enum CodingKeys: String, CodingKey {
        case id, rule, kind, station, metric, state, level
        case fromLevel = "from_level"
        case at, value, unit, severity, labels, summary, explanation, message
        case recordedAt = "recorded_at"
        case episode
        case startedAt = "started_at"
        case extra
    }

    public init(_ t: Transition, message: String, recordedAt: Int64) {
        rule = t.rule
        kind = t.kind
        station = t.station
        metric = t.metric
        state = t.state.rawValue
        level = t.level
        fromLevel = t.fromLevel
        at = t.at
        value = t.value
        unit = t.unit
        severity = t.severity.rawValue
        labels = t.labels.isEmpty ? "{}" : JSONText.encode(t.labels)
        summary = t.summary
        explanation = t.explanation
        self.message = message
        self.recordedAt = recordedAt
        extra = TransitionExtra(t).json
    }

    public init(
        id: Int64?, rule: String, kind: String, station: String, metric: String, state: String, level: String?,
        fromLevel: String?, at: Int64, value: Double?, unit: String?, severity: String, labels: String, summary: String,
        explanation: String, message: String, recordedAt: Int64, episode: Int64? = nil, startedAt: Int64? = nil,
        extra: String? = nil
    ) {
        self.id = id
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
        self.message = message
        self.recordedAt = recordedAt
        self.episode = episode
        self.startedAt = startedAt
        self.extra = extra
    }

    /// The episode's id (this transition's own for a row logged before episodes were kept).
    public var episodeID: Int64 { episode ?? id ?? 0 }
}

extension TransitionRecord {
    /// The transition this row logged.
    public var transition: Transition {
        let decoded =
            labels == "{}"
            ? [:] : (try? JSONSerialization.jsonObject(with: Data(labels.utf8))) as? [String: String] ?? [:]
        return Transition(
            rule: rule, kind: kind, station: station, metric: metric,
            state: TransitionState(rawValue: state) ?? .firing,
            level: level, fromLevel: fromLevel, at: at, value: value, unit: unit,
            severity: Severity(rawValue: severity) ?? .warning,
            labels: decoded, summary: summary, explanation: explanation
        ).with(TransitionExtra(json: extra))
    }
}

/// `TransitionRecord.extra`: what a transition carries beyond its columns. Every field optional, so a
/// row written by another version reads back as far as it can.
public struct TransitionExtra: Codable, Sendable, Equatable {
    public var place: String?
    public var details: String?
    public var annotations: [String: String]?
    public var headline: String?
    public var opening: String?

    public init(_ t: Transition) {
        place = t.place
        details = t.details.isEmpty ? nil : t.details
        annotations = t.annotations.isEmpty ? nil : t.annotations
        headline = t.headline
        opening = t.opening
    }

    /// Decodes `extra`; anything unreadable is no extra at all.
    public init(json: String?) {
        guard let json, json.utf8.count > 2,
            let e = try? JSONDecoder().decode(TransitionExtra.self, from: Data(json.utf8))
        else { return }
        self = e
    }

    init() {}

    /// The JSON object, or nil when there is nothing to say.
    public var json: String? {
        guard place != nil || details != nil || annotations != nil || headline != nil || opening != nil else {
            return nil
        }
        var o: [String: JSONValue] = [:]
        if let place { o["place"] = .string(place) }
        if let details { o["details"] = .string(details) }
        if let annotations { o["annotations"] = .object(annotations.mapValues { .string($0) }) }
        if let headline { o["headline"] = .string(headline) }
        if let opening { o["opening"] = .string(opening) }
        return JSONText.encode(.object(o))
    }
}

extension Transition {
    /// This transition with what `extra` says.
    func with(_ e: TransitionExtra) -> Transition {
        var t = self
        t.place = e.place
        t.details = e.details ?? ""
        t.annotations = e.annotations ?? [:]
        t.headline = e.headline
        t.opening = e.opening
        return t
    }
}
