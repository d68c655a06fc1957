import Foundation
import GRDB
import GRDBSQLite
import KlaxonCore

/// Counts of what an ingest did.
public struct IngestStats: Sendable, Equatable {
    /// New readings.
    public var inserted = 0
    /// Readings whose value or quality changed for a key already stored (marked revised).
    public var revised = 0
    /// Readings identical to what was stored: nothing written.
    public var unchanged = 0

    public init() {}

    public static func += (a: inout IngestStats, b: IngestStats) {
        a.inserted += b.inserted
        a.revised += b.revised
        a.unchanged += b.unchanged
    }
}

/// Writes readings in batches, one transaction per batch. Idempotent: the same reading twice is one
/// row; a changed value for the same (station, metric, time) updates the row and marks it revised.
/// The hot loop binds a prepared statement through the raw SQLite API (about twice GRDB's row speed).
public final class ReadingIngester {
    private let writer: any DatabaseWriter
    private var seriesIDs: [SeriesKey: Int64] = [:]

    public init(store: Store) throws {
        writer = try store.requireWriter()
    }

    /// Stores one batch in one transaction.
    public func write(_ batch: [Reading]) throws -> IngestStats {
        guard !batch.isEmpty else { return IngestStats() }
        var cacheAdditions: [SeriesKey: Int64] = [:]
        let known = seriesIDs
        let stats = try writer.write { db -> IngestStats in
            try Self.insert(batch, db, known: known, additions: &cacheAdditions)
        }
        // Series ids are cached only once their transaction committed.
        seriesIDs.merge(cacheAdditions) { a, _ in a }
        return stats
    }

    /// Inserts readings inside the caller's transaction (and logs them for evaluation).
    /// - Parameters:
    ///   - known: series ids already known to exist.
    ///   - additions: series ids this call found or created.
    static func insert(
        _ batch: [Reading], _ db: Database, known seriesIDs: [SeriesKey: Int64],
        additions cacheAdditions: inout [SeriesKey: Int64]
    ) throws -> IngestStats {
        do {
            var stats = IngestStats()
            // Per series: the earliest time and the number of readings this batch inserted or revised.
            var changed: [Int64: (minTime: Int64, count: Int)] = [:]
            // Insert, and only on a conflict try the update: cheaper than an upsert with RETURNING
            // (which costs several microseconds a row) while still telling new from revised from unchanged.
            let insert = try db.makeStatement(
                sql: """
                    INSERT INTO readings (series_id, time, value, quality, revised) VALUES (?1, ?2, ?3, ?4, 0)
                    ON CONFLICT (series_id, time) DO NOTHING
                    """)
            let update = try db.makeStatement(
                sql: """
                    UPDATE readings SET value = ?3, quality = ?4, revised = 1
                    WHERE series_id = ?1 AND time = ?2 AND (value IS NOT ?3 OR quality IS NOT ?4)
                    """)
            let connection = db.sqliteConnection
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            var lastKey: SeriesKey? = nil
            var lastID: Int64 = 0
            func run(_ handle: OpaquePointer?, _ id: Int64, _ r: Reading) throws -> Int32 {
                sqlite3_reset(handle)
                sqlite3_bind_int64(handle, 1, id)
                sqlite3_bind_int64(handle, 2, r.time)
                sqlite3_bind_double(handle, 3, r.value)
                if let q = r.quality {
                    sqlite3_bind_text(handle, 4, q, -1, transient)
                } else {
                    sqlite3_bind_null(handle, 4)
                }
                let rc = sqlite3_step(handle)
                guard rc == SQLITE_DONE else {
                    throw DatabaseError(
                        resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(connection)))
                }
                return sqlite3_changes(connection)
            }
            for r in batch {
                let id: Int64
                if let lastKey, lastKey.station == r.station, lastKey.metric == r.metric {
                    id = lastID
                } else {
                    let key = r.series
                    if let known = seriesIDs[key] ?? cacheAdditions[key] {
                        id = known
                    } else {
                        id = try Self.seriesID(db, for: r)
                        cacheAdditions[key] = id
                    }
                    lastKey = key
                    lastID = id
                }
                if try run(insert.sqliteStatement, id, r) == 1 {
                    stats.inserted += 1
                } else if try run(update.sqliteStatement, id, r) == 1 {
                    stats.revised += 1
                } else {
                    stats.unchanged += 1
                    continue
                }
                if let c = changed[id] {
                    changed[id] = (min(c.minTime, r.time), c.count + 1)
                } else {
                    changed[id] = (r.time, 1)
                }
            }
            sqlite3_reset(insert.sqliteStatement)
            sqlite3_reset(update.sqliteStatement)
            for (id, c) in changed.sorted(by: { $0.key < $1.key }) {
                try db.execute(
                    sql: "INSERT INTO ingest_log (series_id, min_time, count) VALUES (?, ?, ?)",
                    arguments: [id, c.minTime, c.count])
            }
            return stats
        }
    }

    /// Finds or creates the series (and its station) for a reading.
    static func seriesID(_ db: Database, for r: Reading) throws -> Int64 {
        if let row = try Row.fetchOne(
            db, sql: "SELECT id, unit FROM series WHERE station = ? AND metric = ?", arguments: [r.station, r.metric])
        {
            let id: Int64 = row["id"]
            if let unit = r.unit, (row["unit"] as String?) == nil {
                try db.execute(sql: "UPDATE series SET unit = ? WHERE id = ?", arguments: [unit, id])
            }
            return id
        }
        try db.execute(
            sql: "INSERT INTO stations (id, source) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
            arguments: [r.station, r.source])
        try db.execute(
            sql: "INSERT INTO series (station, metric, unit) VALUES (?, ?, ?)",
            arguments: [r.station, r.metric, r.unit])
        return db.lastInsertedRowID
    }
}
