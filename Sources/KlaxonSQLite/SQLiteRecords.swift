import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

// The store's value types as GRDB records: their tables, and decoders by column where the generic
// `Codable` one cost more than the query.

extension StationRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "stations"
}

extension SeriesRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "series"
}

extension AlertStateRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "alert_states"
}

extension InstanceRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "instances"
}

extension SilenceRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "silences"
}

extension SourceStateRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "source_state"
}

extension StoredReading: FetchableRecord {
    public init(row: Row) throws {
        self.init(
            station: row["station"],
            metric: row["metric"],
            time: row["time"],
            value: row["value"],
            unit: row["unit"],
            quality: row["quality"],
            revised: row["revised"],
            suspect: (row["suspect"] as Bool?) ?? false)
    }
}

extension TransitionRecord: FetchableRecord, MutablePersistableRecord {
    public static let databaseTableName = "transitions"

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
        self.init(
            id: row[prefix + "id"],
            rule: row[prefix + "rule"],
            kind: row[prefix + "kind"],
            station: row[prefix + "station"],
            metric: row[prefix + "metric"],
            state: row[prefix + "state"],
            level: row[prefix + "level"],
            fromLevel: row[prefix + "from_level"],
            at: row[prefix + "at"],
            value: row[prefix + "value"],
            unit: row[prefix + "unit"],
            severity: row[prefix + "severity"],
            labels: row[prefix + "labels"],
            summary: row[prefix + "summary"],
            explanation: row[prefix + "explanation"],
            message: row[prefix + "message"],
            recordedAt: row[prefix + "recorded_at"],
            episode: row[prefix + "episode"],
            startedAt: row[prefix + "started_at"],
            extra: row.hasColumn(prefix + "extra") ? row[prefix + "extra"] : nil)
    }

    /// The columns `init(row:at:)` reads, in its order.
    static let columns = [
        "id", "rule", "kind", "station", "metric", "state", "level", "from_level", "at", "value", "unit", "severity",
        "labels", "summary", "explanation", "message", "recorded_at", "episode", "started_at", "extra",
    ]

    /// From `columns`, selected in that order from column `i` on: by index, for the dispatcher's
    /// claim (a lookup by name lower-cases the name, and that was 8 % of dispatch).
    init(row: Row, at i: Int) {
        self.init(
            id: row[i],
            rule: row[i + 1],
            kind: row[i + 2],
            station: row[i + 3],
            metric: row[i + 4],
            state: row[i + 5],
            level: row[i + 6],
            fromLevel: row[i + 7],
            at: row[i + 8],
            value: row[i + 9],
            unit: row[i + 10],
            severity: row[i + 11],
            labels: row[i + 12],
            summary: row[i + 13],
            explanation: row[i + 14],
            message: row[i + 15],
            recordedAt: row[i + 16],
            episode: row[i + 17],
            startedAt: row[i + 18],
            extra: row[i + 19])
    }
}

extension OutboxRecord: FetchableRecord, PersistableRecord {
    public static let databaseTableName = "outbox"
}

extension OutboxRecord {
    /// Decoded by column, not through `Codable` (see `TransitionRecord.init(row:)`).
    public init(row: Row) {
        self.init(
            id: row["id"],
            seq: row["seq"],
            transitionID: row["transition_id"],
            receiver: row["receiver"],
            route: row["route"],
            alert: row["alert"],
            groupKey: row["group_key"],
            purpose: row["purpose"],
            state: State(rawValue: row["state"]) ?? .pending,
            batch: row["batch"],
            attempts: row["attempts"],
            dueAt: row["due_at"],
            leaseUntil: row["lease_until"],
            createdAt: row["created_at"],
            sentAt: row["sent_at"],
            lastError: row["last_error"],
            path: row["path"])
    }

    /// The columns `init(row:at:)` reads, in its order.
    static let columns = [
        "id", "seq", "transition_id", "receiver", "route", "alert", "group_key", "purpose", "state", "batch",
        "attempts", "due_at", "lease_until", "created_at", "sent_at", "last_error", "path",
    ]

    /// From `columns`, selected in that order from column `i` on (by index: see
    /// `TransitionRecord.init(row:at:)`).
    init(row: Row, at i: Int) {
        self.init(
            id: row[i],
            seq: row[i + 1],
            transitionID: row[i + 2],
            receiver: row[i + 3],
            route: row[i + 4],
            alert: row[i + 5],
            groupKey: row[i + 6],
            purpose: row[i + 7],
            state: State(rawValue: row[i + 8]) ?? .pending,
            batch: row[i + 9],
            attempts: row[i + 10],
            dueAt: row[i + 11],
            leaseUntil: row[i + 12],
            createdAt: row[i + 13],
            sentAt: row[i + 14],
            lastError: row[i + 15],
            path: row[i + 16])
    }
}
