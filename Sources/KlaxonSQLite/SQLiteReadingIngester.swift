import Foundation
import GRDB
import GRDBSQLite
import KlaxonCore
import KlaxonStore
import Synchronization

/// Writes readings in batches, one transaction per batch. Idempotent: the same reading twice is one
/// row; a changed value for the same (station, metric, time) updates the row and marks it revised.
/// Each row is marked suspect or not as it is written (`Plausibility`).
/// The hot loop binds a prepared statement through the raw SQLite API (about twice GRDB's row speed).
public final class ReadingIngester: ReadingWriter {
    private let writer: any DatabaseWriter
    private let seriesIDs = Mutex<[SeriesKey: Int64]>([:])
    /// Where the readings came from (`ingest_log.source`): `api`, `file`, nil for unknown.
    private let source: String?

    init(writer: any DatabaseWriter, source: String? = nil) {
        self.writer = writer
        self.source = source
    }

    /// Stores one batch in one transaction.
    public func write(_ batch: [Reading]) async throws -> IngestStats {
        guard !batch.isEmpty else { return IngestStats() }
        let known = seriesIDs.withLock { $0 }
        let source = self.source
        let (stats, additions) = try await writer.write { db -> (IngestStats, [SeriesKey: Int64]) in
            var additions: [SeriesKey: Int64] = [:]
            let stats = try Self.insert(batch, db, known: known, additions: &additions, source: source)
            // PM concentrations: their NowCast series, in the same transaction (not counted: not the batch's).
            if NowCastSeries.applies(to: batch) {
                let derived = try SQLiteStore.deriveNowCast(batch, db)
                _ = try Self.insert(derived, db, known: known, additions: &additions, source: source)
            }
            return (stats, additions)
        }
        // Series ids are cached only once their transaction committed.
        seriesIDs.withLock { $0.merge(additions) { a, _ in a } }
        return stats
    }

    /// Inserts readings inside the caller's transaction (and logs them for evaluation).
    /// - Parameters:
    ///   - known: series ids already known to exist.
    ///   - additions: series ids this call found or created.
    ///   - source: the configured source that fetched the batch (nil for files), kept in `ingest_log`.
    static func insert(
        _ batch: [Reading], _ db: Database, known seriesIDs: [SeriesKey: Int64],
        additions cacheAdditions: inout [SeriesKey: Int64], source: String? = nil
    ) throws -> IngestStats {
        do {
            var stats = IngestStats()
            // Per series: the earliest time and the number of readings this batch inserted or revised,
            // and how many of those are suspect.
            var changed: [Int64: (minTime: Int64, count: Int, suspect: Int)] = [:]
            // Insert, and only on a conflict try the update: cheaper than an upsert with RETURNING
            // (which costs several microseconds a row) while still telling new from revised from unchanged.
            let insert = try db.makeStatement(
                sql: """
                    INSERT INTO readings (series_id, time, value, quality, suspect, revised)
                    VALUES (?1, ?2, ?3, ?4, ?5, 0)
                    ON CONFLICT (series_id, time) DO NOTHING
                    """)
            let update = try db.makeStatement(
                sql: """
                    UPDATE readings SET value = ?3, quality = ?4, suspect = ?5, revised = 1
                    WHERE series_id = ?1 AND time = ?2 AND (value IS NOT ?3 OR quality IS NOT ?4 OR suspect IS NOT ?5)
                    """)
            let connection = db.sqliteConnection
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            var lastKey: SeriesKey? = nil
            var lastID: Int64 = 0
            func run(_ handle: OpaquePointer?, _ id: Int64, _ r: Reading, suspect: Bool) throws -> Int32 {
                sqlite3_reset(handle)
                sqlite3_bind_int64(handle, 1, id)
                sqlite3_bind_int64(handle, 2, r.time)
                sqlite3_bind_double(handle, 3, r.value)
                if let q = r.quality {
                    sqlite3_bind_text(handle, 4, q, -1, transient)
                } else {
                    sqlite3_bind_null(handle, 4)
                }
                sqlite3_bind_int(handle, 5, suspect ? 1 : 0)
                let rc = sqlite3_step(handle)
                guard rc == SQLITE_DONE else {
                    throw DatabaseError(
                        resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(connection)))
                }
                return sqlite3_changes(connection)
            }
            // Series ids in file order (series are found or created in the order they first appear).
            var ids = [Int64](repeating: 0, count: batch.count)
            for (i, r) in batch.enumerated() {
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
                ids[i] = id
            }
            // One unit per series: readings in another unit are converted to it or left out.
            var converted = batch
            let units = try Self.applyUnitRule(&converted, db) { seriesIDs[$0] ?? cacheAdditions[$0] }
            // A constant from here on: the nested writers below capture it, and a captured variable
            // would be boxed, every reading copied out of the box (a fifth more CPU for 1 M readings).
            let batch = converted
            stats.note(units)
            // Which readings are suspect (in the unit they are stored in).
            var suspect = [Bool](repeating: false, count: batch.count)
            var check = Plausibility.SuspectCheck()
            for i in batch.indices { suspect[i] = check.isSuspect(batch[i]) }
            // Write series by series (a stable counting sort, so readings of one key keep their file
            // order): consecutive inserts land on the same B-tree pages instead of hopping across
            // every series of an interleaved file.
            var order = Self.groupedBySeries(ids)
            if let refused = units.refusedIndices { order.removeAll { refused[Int($0)] } }
            var runID: Int64 = 0
            var runMin: Int64 = 0
            var runCount = 0
            var runSuspect = 0
            func flush() {
                guard runCount > 0 else { return }
                if let c = changed[runID] {
                    changed[runID] = (min(c.minTime, runMin), c.count + runCount, c.suspect + runSuspect)
                } else {
                    changed[runID] = (runMin, runCount, runSuspect)
                }
                runCount = 0
                runSuspect = 0
            }
            // A reading later than every stored time of its series (and than the batch's earlier
            // readings of it) is surely new: such readings go in by multi-row INSERTs, `chunk` at a
            // time, which spares a statement execution per row. Everything else takes the
            // insert-then-update path above, in the same order.
            let latest = try db.makeStatement(sql: "SELECT max(time) FROM readings WHERE series_id = ?1")
            var multiRow: [Int: Statement] = [:]
            var pending: [Int32] = []
            pending.reserveCapacity(Self.chunk)
            var latestID: Int64? = nil
            var latestTime: Int64? = nil
            func note(_ id: Int64, _ time: Int64, suspect: Bool) {
                if runCount > 0 && runID == id {
                    runMin = min(runMin, time)
                    runCount += 1
                } else {
                    flush()
                    runID = id
                    runMin = time
                    runCount = 1
                }
                if suspect {
                    runSuspect += 1
                    stats.suspect += 1
                }
            }
            func insertPending() throws {
                var k = 0
                while k < pending.count {
                    let n = min(Self.chunk, pending.count - k)
                    let statement: Statement
                    if let s = multiRow[n] {
                        statement = s
                    } else {
                        statement = try db.makeStatement(
                            sql: "INSERT INTO readings (series_id, time, value, quality, suspect, revised) VALUES "
                                + Array(repeating: "(?, ?, ?, ?, ?, 0)", count: n).joined(separator: ", "))
                        multiRow[n] = statement
                    }
                    let handle = statement.sqliteStatement
                    sqlite3_reset(handle)
                    for j in 0..<n {
                        let i = Int(pending[k + j])
                        let r = batch[i]
                        let p = Int32(5 * j)
                        sqlite3_bind_int64(handle, p + 1, ids[i])
                        sqlite3_bind_int64(handle, p + 2, r.time)
                        sqlite3_bind_double(handle, p + 3, r.value)
                        if let q = r.quality {
                            sqlite3_bind_text(handle, p + 4, q, -1, transient)
                        } else {
                            sqlite3_bind_null(handle, p + 4)
                        }
                        sqlite3_bind_int(handle, p + 5, suspect[i] ? 1 : 0)
                    }
                    let rc = sqlite3_step(handle)
                    guard rc == SQLITE_DONE else {
                        throw DatabaseError(
                            resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(connection)))
                    }
                    sqlite3_reset(handle)
                    guard sqlite3_changes(connection) == Int32(n) else {
                        throw DatabaseError(resultCode: .SQLITE_INTERNAL, message: "multi-row insert count mismatch")
                    }
                    for j in 0..<n {
                        let i = Int(pending[k + j])
                        note(ids[i], batch[i].time, suspect: suspect[i])
                    }
                    k += n
                }
                stats.inserted += pending.count
                pending.removeAll(keepingCapacity: true)
            }
            for i in order {
                let r = batch[Int(i)]
                let id = ids[Int(i)]
                if id != latestID {
                    try insertPending()
                    let handle = latest.sqliteStatement
                    sqlite3_reset(handle)
                    sqlite3_bind_int64(handle, 1, id)
                    let rc = sqlite3_step(handle)
                    guard rc == SQLITE_ROW else {
                        throw DatabaseError(
                            resultCode: ResultCode(rawValue: rc), message: String(cString: sqlite3_errmsg(connection)))
                    }
                    latestTime =
                        sqlite3_column_type(handle, 0) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, 0)
                    sqlite3_reset(handle)
                    latestID = id
                }
                if latestTime.map({ r.time > $0 }) ?? true {
                    latestTime = r.time
                    pending.append(i)
                    if pending.count == Self.chunk { try insertPending() }
                    continue
                }
                try insertPending()
                let marked = suspect[Int(i)]
                if try run(insert.sqliteStatement, id, r, suspect: marked) == 1 {
                    stats.inserted += 1
                } else if try run(update.sqliteStatement, id, r, suspect: marked) == 1 {
                    stats.revised += 1
                } else {
                    stats.unchanged += 1
                    continue
                }
                note(id, r.time, suspect: marked)
            }
            try insertPending()
            flush()
            sqlite3_reset(insert.sqliteStatement)
            sqlite3_reset(update.sqliteStatement)
            let log = try db.cachedStatement(
                sql: "INSERT INTO ingest_log (series_id, min_time, count, suspect, source) VALUES (?, ?, ?, ?, ?)")
            for (id, c) in changed.sorted(by: { $0.key < $1.key }) {
                log.setUncheckedArguments([id, c.minTime, c.count, c.suspect, source])
                try log.execute()
            }
            return stats
        }
    }

    /// Rows per multi-row INSERT.
    static let chunk = 64

    /// `SeriesUnitRule` with the units the series table holds; records the unit a series without
    /// one takes from this batch.
    static func applyUnitRule(_ batch: inout [Reading], _ db: Database, id: (SeriesKey) -> Int64?) throws
        -> SeriesUnitRule.Outcome
    {
        let needed = SeriesUnitRule.seriesWithUnits(batch)
        guard !needed.isEmpty else { return SeriesUnitRule.Outcome() }
        var stored: [SeriesKey: String] = [:]
        let select = try db.cachedStatement(sql: "SELECT unit FROM series WHERE id = ?")
        for key in needed {
            guard let id = id(key) else { continue }
            if let unit = try String?.fetchOne(select, arguments: [id]) { stored[key] = unit }
        }
        let outcome = SeriesUnitRule.apply(&batch, stored: stored)
        let adopt = try db.cachedStatement(sql: "UPDATE series SET unit = ? WHERE id = ? AND unit IS NULL")
        for (key, unit) in outcome.adopted {
            guard let id = id(key) else { continue }
            adopt.setUncheckedArguments([unit, id])
            try adopt.execute()
        }
        return outcome
    }

    /// Indices of `ids` grouped by id (ids in ascending order), keeping file order within an id.
    static func groupedBySeries(_ ids: [Int64]) -> [Int32] {
        var slotOfID: [Int64: Int] = [:]
        var slots = [Int](repeating: 0, count: ids.count)
        var distinct: [Int64] = []
        var lastID: Int64 = 0
        var lastSlot = -1
        for (i, id) in ids.enumerated() {
            if lastSlot < 0 || id != lastID {
                if let s = slotOfID[id] {
                    lastSlot = s
                } else {
                    lastSlot = distinct.count
                    slotOfID[id] = lastSlot
                    distinct.append(id)
                }
                lastID = id
            }
            slots[i] = lastSlot
        }
        // Slots in ascending id order, then each slot's first position in the output.
        var counts = [Int](repeating: 0, count: distinct.count)
        for s in slots { counts[s] += 1 }
        var next = [Int](repeating: 0, count: distinct.count)
        var position = 0
        for s in distinct.indices.sorted(by: { distinct[$0] < distinct[$1] }) {
            next[s] = position
            position += counts[s]
        }
        var order = [Int32](repeating: 0, count: ids.count)
        for (i, s) in slots.enumerated() {
            order[next[s]] = Int32(i)
            next[s] += 1
        }
        return order
    }

    /// Finds or creates the series (and its station) for a reading. Its statements are prepared once
    /// per connection: a first ingest meets every station new.
    static func seriesID(_ db: Database, for r: Reading) throws -> Int64 {
        if let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT id, unit FROM series WHERE station = ? AND metric = ?"),
            arguments: [r.station, r.metric])
        {
            let id: Int64 = row["id"]
            if let unit = r.unit, (row["unit"] as String?) == nil {
                try db.execute(sql: "UPDATE series SET unit = ? WHERE id = ?", arguments: [unit, id])
            }
            return id
        }
        let station = try db.cachedStatement(
            sql: "INSERT INTO stations (id, source) VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
        station.setUncheckedArguments([r.station, r.source])
        try station.execute()
        let series = try db.cachedStatement(sql: "INSERT INTO series (station, metric, unit) VALUES (?, ?, ?)")
        series.setUncheckedArguments([r.station, r.metric, r.unit])
        try series.execute()
        return db.lastInsertedRowID
    }
}
