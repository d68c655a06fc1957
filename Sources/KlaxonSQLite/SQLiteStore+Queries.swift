import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Creates or updates a station's metadata.
    public func upsert(station: StationRecord) async throws {
        try await requireWriter().write { db in try station.upsert(db) }
    }

    public func station(id: String) async throws -> StationRecord? {
        try await reader.read { db in try StationRecord.fetchOne(db, key: id) }
    }

    /// All readings of a series, oldest first (for inspection and tests).
    public func readings(station: String, metric: String) async throws -> [StoredReading] {
        try await reader.read { db in
            try StoredReading.fetchAll(
                db,
                sql: """
                    SELECT s.station, s.metric, s.unit, r.time, r.value, r.quality, r.revised, r.suspect
                    FROM readings r JOIN series s ON s.id = r.series_id
                    WHERE s.station = ? AND s.metric = ? ORDER BY r.time
                    """, arguments: [station, metric])
        }
    }

    public func readingCount() async throws -> Int {
        try await reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM readings") ?? 0 }
    }

    public func ingestMark() async throws -> Int64 {
        try await reader.read { db in try Int64.fetchOne(db, sql: "SELECT coalesce(max(seq), 0) FROM ingest_log") ?? 0 }
    }

    /// Hands readings to `body` series by series, each in time order, a page of at most `page` at a
    /// time, so memory holds one page and no read is held long. `from`/`to` bound the reading time
    /// (inclusive). Suspect readings are left out, as evaluation leaves them out.
    public func forEachReading(
        from: Int64?, to: Int64?, page: Int,
        _ body: (_ series: SeriesKey, _ unit: String?, _ readings: [(time: Int64, value: Double)]) throws -> Void
    ) async throws {
        let page = max(1, page)
        let series = try await reader.read { db in
            try Row.fetchAll(db, sql: "SELECT id, station, metric, unit FROM series ORDER BY id").map {
                row -> (id: Int64, key: SeriesKey, unit: String?) in
                (row["id"], SeriesKey(station: row["station"], metric: row["metric"]), row["unit"])
            }
        }
        for s in series {
            var lower = from ?? Int64.min
            var inclusive = true
            while true {
                let (low, incl) = (lower, inclusive)
                let rows = try await reader.read { db in
                    try Row.fetchAll(
                        db,
                        sql: """
                            SELECT time, value FROM readings
                            WHERE series_id = ? AND (time > ? OR (? AND time = ?)) AND time <= ? AND suspect = 0
                            ORDER BY time LIMIT ?
                            """, arguments: [s.id, low, incl, low, to ?? Int64.max, page]
                    ).map { row -> (time: Int64, value: Double) in (row[0], row[1]) }
                }
                if !rows.isEmpty { try body(s.key, s.unit, rows) }
                guard rows.count == page, let last = rows.last else { break }
                lower = last.time
                inclusive = false
            }
        }
    }

    /// The stored state of every alert (for `alerts` views and tests).
    public func alertStates() async throws -> [AlertKey: AlertState] {
        try await reader.read { db in
            var out: [AlertKey: AlertState] = [:]
            for r in try AlertStateRecord.fetchAll(db) {
                out[AlertKey(rule: r.rule, station: r.station, metric: r.metric)] = r.alertState
            }
            return out
        }
    }

    /// The transition log, oldest first.
    public func transitions() async throws -> [TransitionRecord] {
        try await reader.read { db in try TransitionRecord.order(Column("id")).fetchAll(db) }
    }
}
