import Foundation
import GRDB
import KlaxonCore

/// A row of `stations`.
public struct StationRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "stations"
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
public struct SeriesRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "series"
    public var id: Int64
    public var station: String
    public var metric: String
    public var unit: String?
}

/// A row of `readings`, with its series spelled out.
public struct StoredReading: Sendable, Equatable, FetchableRecord {
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

    public init(row: Row) throws {
        station = row["station"]
        metric = row["metric"]
        time = row["time"]
        value = row["value"]
        unit = row["unit"]
        quality = row["quality"]
        revised = row["revised"]
        suspect = (row["suspect"] as Bool?) ?? false
    }
}

/// A row of `alert_states`: the state of one alert.
public struct AlertStateRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "alert_states"
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
    static func decode(state: String) -> AlertState {
        (try? decoder.decode(AlertState.self, from: Data(state.utf8))) ?? AlertState()
    }

    /// The state as JSON, written directly (every evaluated series saves its states: `JSONEncoder`
    /// cost more than the row's insert). Decodes with `JSONDecoder` like the encoder's output; a
    /// value that is not finite is left out (nil), which `JSONEncoder` would have refused.
    static func encode(state: AlertState) -> String {
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
        add("candidate", state.candidate.map(JSONText.string))
        add("candidateSince", state.candidateSince.map { String($0) })
        add("lastTime", state.lastTime.map { String($0) })
        if let v = state.lastValue, v.isFinite { add("lastValue", JSONText.number(v)) }
        out += "}"
        return out
    }

    // One decoder for every row (it is thread-safe); making one per row cost more than the decoding.
    private static let decoder = JSONDecoder()
}

/// A row of `transitions`: the log of every alert state change with its explanation.
public struct TransitionRecord: Codable, Sendable, Equatable, FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "transitions"
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

    enum CodingKeys: String, CodingKey {
        case id, rule, kind, station, metric, state, level
        case fromLevel = "from_level"
        case at, value, unit, severity, labels, summary, explanation, message
        case recordedAt = "recorded_at"
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
    }

    public mutating func didInsert(_ inserted: InsertionSuccess) {
        id = inserted.rowID
    }
}

extension TransitionRecord {
    /// Decoded by column, not through `Codable`: the dispatcher reads one per notification, and the
    /// generic decoder cost more than the query.
    public init(row: Row) { self.init(row: row, prefix: "") }

    /// From columns named with `prefix` (a join's aliased columns).
    init(row: Row, prefix: String) {
        id = row[prefix + "id"]
        rule = row[prefix + "rule"]
        kind = row[prefix + "kind"]
        station = row[prefix + "station"]
        metric = row[prefix + "metric"]
        state = row[prefix + "state"]
        level = row[prefix + "level"]
        fromLevel = row[prefix + "from_level"]
        at = row[prefix + "at"]
        value = row[prefix + "value"]
        unit = row[prefix + "unit"]
        severity = row[prefix + "severity"]
        labels = row[prefix + "labels"]
        summary = row[prefix + "summary"]
        explanation = row[prefix + "explanation"]
        message = row[prefix + "message"]
        recordedAt = row[prefix + "recorded_at"]
    }

    /// The columns `init(row:at:)` reads, in its order.
    static let columns = [
        "id", "rule", "kind", "station", "metric", "state", "level", "from_level", "at", "value", "unit", "severity",
        "labels", "summary", "explanation", "message", "recorded_at",
    ]

    /// From `columns`, selected in that order from column `i` on: by index, for the dispatcher's
    /// claim (a lookup by name lower-cases the name, and that was 8 % of dispatch).
    init(row: Row, at i: Int) {
        id = row[i]
        rule = row[i + 1]
        kind = row[i + 2]
        station = row[i + 3]
        metric = row[i + 4]
        state = row[i + 5]
        level = row[i + 6]
        fromLevel = row[i + 7]
        at = row[i + 8]
        value = row[i + 9]
        unit = row[i + 10]
        severity = row[i + 11]
        labels = row[i + 12]
        summary = row[i + 13]
        explanation = row[i + 14]
        message = row[i + 15]
        recordedAt = row[i + 16]
    }
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
            labels: decoded, summary: summary, explanation: explanation)
    }
}
