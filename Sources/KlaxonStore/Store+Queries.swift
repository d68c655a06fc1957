import Foundation
import GRDB
import KlaxonCore

extension Store {
    /// Creates or updates a station's metadata.
    public func upsert(station: StationRecord) throws {
        try requireWriter().write { db in try station.upsert(db) }
    }

    public func station(id: String) throws -> StationRecord? {
        try reader.read { db in try StationRecord.fetchOne(db, key: id) }
    }

    /// All readings of a series, oldest first (for inspection and tests).
    public func readings(station: String, metric: String) throws -> [StoredReading] {
        try reader.read { db in
            try StoredReading.fetchAll(
                db,
                sql: """
                    SELECT s.station, s.metric, s.unit, r.time, r.value, r.quality, r.revised
                    FROM readings r JOIN series s ON s.id = r.series_id
                    WHERE s.station = ? AND s.metric = ? ORDER BY r.time
                    """, arguments: [station, metric])
        }
    }

    public func readingCount() throws -> Int {
        try reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM readings") ?? 0 }
    }

    /// Streams readings series by series, each in time order, without loading them all.
    /// `from`/`to` bound the reading time (inclusive).
    public func forEachReading(
        from: Int64? = nil, to: Int64? = nil,
        _ body: (_ series: SeriesKey, _ unit: String?, _ time: Int64, _ value: Double) throws -> Void
    ) throws {
        try reader.read { db in
            let units = try Dictionary(
                uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT id, station, metric, unit FROM series").map {
                    row -> (Int64, (SeriesKey, String?)) in
                    (row["id"], (SeriesKey(station: row["station"], metric: row["metric"]), row["unit"]))
                })
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT series_id, time, value FROM readings
                    WHERE time >= ? AND time <= ? ORDER BY series_id, time
                    """, arguments: [from ?? Int64.min, to ?? Int64.max])
            while let row = try rows.next() {
                let id: Int64 = row[0]
                guard let (key, unit) = units[id] else { continue }
                try body(key, unit, row[1], row[2])
            }
        }
    }

    /// The stored state of every alert (for `alerts` views and tests).
    public func alertStates() throws -> [AlertKey: AlertState] {
        try reader.read { db in
            var out: [AlertKey: AlertState] = [:]
            for r in try AlertStateRecord.fetchAll(db) {
                out[AlertKey(rule: r.rule, station: r.station, metric: r.metric)] = r.alertState
            }
            return out
        }
    }

    /// The transition log, oldest first.
    public func transitions() throws -> [TransitionRecord] {
        try reader.read { db in try TransitionRecord.order(Column("id")).fetchAll(db) }
    }
}
