import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Writes what a fetch or an imported file produced, in one transaction: station metadata
    /// (merged: a field a source leaves out keeps its stored value), NWS gauges, readings, quake
    /// events (counted in the stats like readings), and — for a configured source — its new cursor.
    /// All of it or none of it.
    @discardableResult
    public func write(_ batch: SourceBatch, source: String?, cursor: String?, at now: Int64) async throws
        -> IngestStats
    {
        try await requireWriter().write { db in
            for station in batch.stations { try Self.upsert(station, db) }
            for gauge in batch.gauges { try Self.upsert(gauge, at: now, db) }
            var additions: [SeriesKey: Int64] = [:]
            var readings = batch.readings
            if batch.overallAQI { try Self.deriveOverallAQI(&readings, db) }
            var stats = try ReadingIngester.insert(readings, db, known: [:], additions: &additions, source: source)
            // PM concentrations: their NowCast series (`NowCastSeries`), not counted: not the batch's.
            if NowCastSeries.applies(to: readings) {
                let derived = try Self.deriveNowCast(readings, db)
                _ = try ReadingIngester.insert(derived, db, known: [:], additions: &additions, source: source)
            }
            if !batch.weather.isEmpty || !batch.weatherAlerts.isEmpty {
                stats.forecasts += try Self.write(weather: batch.weather, alerts: batch.weatherAlerts, db)
            }
            if !batch.forecasts.isEmpty {
                stats.issuances = try Self.write(forecasts: batch.forecasts, at: now, db)
            }
            if !batch.airForecasts.isEmpty { stats.forecasts += try Self.write(airForecasts: batch.airForecasts, db) }
            if !batch.quakes.isEmpty {
                let q = try Self.write(quakes: batch.quakes, at: now, db)
                stats.events = IngestStats.EventCounts(new: q.new, revised: q.revised, unchanged: q.unchanged)
                stats.quakeConflicts += q.conflicts
            }
            if let source {
                try db.execute(
                    sql: """
                        INSERT INTO source_state (source, cursor, last_attempt, last_success, last_error, failures)
                        VALUES (?1, ?2, ?3, ?3, NULL, 0)
                        ON CONFLICT (source) DO UPDATE SET cursor = coalesce(?2, cursor), last_attempt = ?3,
                            last_success = ?3, last_error = NULL, failures = 0, not_before = NULL
                        """, arguments: [source, cursor, now])
            }
            return stats
        }
    }

    /// Sets each hour's overall AQI from its pollutants, those stored among them (`OverallAQI`).
    static func deriveOverallAQI(_ readings: inout [Reading], _ db: Database) throws {
        let select = try db.cachedStatement(
            sql: """
                SELECT s.metric, r.value FROM series s JOIN readings r ON r.series_id = s.id
                WHERE s.station = ? AND substr(s.metric, 1, 4) = 'aqi.' AND r.time = ? AND r.suspect = 0
                """)
        var stored: [OverallAQI.Hour: [String: Double]] = [:]
        for hour in OverallAQI.hours(readings) {
            for row in try Row.fetchAll(select, arguments: [hour.station, hour.time]) {
                stored[hour, default: [:]][row[0]] = row[1]
            }
        }
        OverallAQI.apply(&readings, stored: stored)
    }

    /// The NowCast series of the batch's PM concentrations, from them and the stored ones around
    /// them (`NowCastSeries`).
    static func deriveNowCast(_ readings: [Reading], _ db: Database) throws -> [Reading] {
        let select = try db.cachedStatement(
            sql: """
                SELECT r.time, r.value FROM series s JOIN readings r ON r.series_id = s.id
                WHERE s.station = ? AND s.metric = ? AND r.time BETWEEN ? AND ? AND r.suspect = 0
                """)
        var stored: [SeriesKey: [(time: Int64, value: Double)]] = [:]
        for w in NowCastSeries.windows(readings) {
            let rows = try Row.fetchAll(select, arguments: [w.station, w.metric, w.from, w.through])
            stored[SeriesKey(station: w.station, metric: w.metric)] = rows.map { (time: $0[0], value: $0[1]) }
        }
        return NowCastSeries.derive(readings, stored: stored)
    }

    /// Records a failed fetch: the cursor stays, so the next cycle asks again for the same data.
    /// `notBefore`: the server asked us to wait until then (HTTP 429 `Retry-After`).
    public func recordFailure(source: String, error: String, at now: Int64, notBefore: Int64?) async throws {
        try await requireWriter().write { db in
            try db.execute(
                sql: """
                    INSERT INTO source_state (source, last_attempt, last_error, failures, not_before)
                    VALUES (?1, ?2, ?3, 1, ?4)
                    ON CONFLICT (source) DO UPDATE SET last_attempt = ?2, last_error = ?3, failures = failures + 1,
                        not_before = ?4
                    """, arguments: [source, now, error, notBefore])
        }
    }

    public func sourceState(_ source: String) async throws -> SourceStateRecord? {
        try await reader.read { db in try SourceStateRecord.fetchOne(db, key: source) }
    }

    static func upsert(_ s: StationInfo, _ db: Database) throws {
        var attributes = s.attributes
        if let u = s.usgsID { attributes["usgs_id"] = u }
        if let l = s.nwsLID { attributes["nws_lid"] = l }
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: attributes, options: [.sortedKeys]), as: UTF8.self)
        try db.execute(
            sql: """
                INSERT INTO stations (id, source, name, latitude, longitude, time_zone, attributes)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET
                    source = coalesce(excluded.source, source), name = coalesce(excluded.name, name),
                    latitude = coalesce(excluded.latitude, latitude), longitude = coalesce(excluded.longitude, longitude),
                    time_zone = coalesce(excluded.time_zone, time_zone),
                    attributes = json_patch(attributes, excluded.attributes)
                """,
            arguments: [s.id, s.source, s.name, s.latitude, s.longitude, s.timeZone, json])
    }

    static func upsert(_ g: GaugeInfo, at now: Int64, _ db: Database) throws {
        let info = String(decoding: try JSONEncoder().encode(g), as: UTF8.self)
        try db.execute(
            sql: """
                INSERT INTO gauges (lid, usgs_id, info, fetched_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (lid) DO UPDATE SET usgs_id = excluded.usgs_id, info = excluded.info,
                    fetched_at = excluded.fetched_at
                """, arguments: [g.lid, g.usgsID, info, now])
    }

    /// Every NWS gauge stored, by LID.
    public func gauges() async throws -> [GaugeInfo] {
        try await reader.read { db in
            try String.fetchAll(db, sql: "SELECT info FROM gauges ORDER BY lid").compactMap {
                try? JSONDecoder().decode(GaugeInfo.self, from: Data($0.utf8))
            }
        }
    }

    /// When the gauge metadata was last fetched (nil: never).
    public func gaugeFetchedAt(lid: String) async throws -> Int64? {
        try await reader.read { db in
            try Int64.fetchOne(db, sql: "SELECT fetched_at FROM gauges WHERE lid = ?", arguments: [lid])
        }
    }

    public func stationRecords() async throws -> [StationRecord] {
        try await reader.read { db in try StationRecord.fetchAll(db) }
    }

    /// The station id readings are stored under for an id a person typed: a station id, a USGS site
    /// (with or without `USGS-`), or an NWS LID (any case). Nil when nothing matches.
    public func resolveStation(_ typed: String) async throws -> String? {
        let id = StationMetadata.typedID(typed)
        return try await reader.read { db in
            if try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM stations WHERE id = ?)", arguments: [id])
                == true
            {
                return id
            }
            if let row = try Row.fetchOne(
                db, sql: "SELECT lid, usgs_id FROM gauges WHERE upper(lid) = upper(?) OR usgs_id = ?",
                arguments: [id, id])
            {
                let usgs: String? = row["usgs_id"]
                return usgs ?? row["lid"]
            }
            return try String.fetchOne(
                db, sql: "SELECT id FROM stations WHERE upper(id) = upper(?) LIMIT 1", arguments: [id])
        }
    }

    /// The series of a station: metric and unit.
    public func series(station: String) async throws -> [(metric: String, unit: String?)] {
        try await reader.read { db in
            try Row.fetchAll(
                db, sql: "SELECT metric, unit FROM series WHERE station = ? ORDER BY metric", arguments: [station]
            ).map { ($0["metric"], $0["unit"]) }
        }
    }

    /// The newest reading of a series at or before `at`: of those not suspect, unless `includingSuspect`.
    public func latest(station: String, metric: String, at: Int64, includingSuspect: Bool) async throws
        -> StoredReading?
    {
        try await reader.read { db in
            try StoredReading.fetchOne(
                db,
                sql: """
                    SELECT s.station, s.metric, s.unit, r.time, r.value, r.quality, r.revised, r.suspect
                    FROM readings r JOIN series s ON s.id = r.series_id
                    WHERE s.station = ? AND s.metric = ? AND r.time <= ? AND (? OR r.suspect = 0)
                    ORDER BY r.time DESC LIMIT 1
                    """, arguments: [station, metric, at, includingSuspect])
        }
    }

    /// Count, min, mean, max and sum of a series for `from < time <= to`, and how many suspect readings
    /// were left out; nil with no reading there that is not suspect.
    public func summary(station: String, metric: String, from: Int64, to: Int64) async throws -> SeriesSummary? {
        try await reader.read { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) AS n, min(r.value) AS lo, avg(r.value) AS mean, max(r.value) AS hi,
                            sum(r.value) AS total, min(r.time) AS first, max(r.time) AS last,
                            (SELECT count(*) FROM readings x JOIN series y ON y.id = x.series_id
                             WHERE y.station = ?1 AND y.metric = ?2 AND x.time > ?3 AND x.time <= ?4 AND x.suspect = 1)
                            AS suspect
                        FROM readings r JOIN series s ON s.id = r.series_id
                        WHERE s.station = ?1 AND s.metric = ?2 AND r.time > ?3 AND r.time <= ?4 AND r.suspect = 0
                        """, arguments: [station, metric, from, to]),
                let n: Int = row["n"], n > 0
            else { return nil }
            return SeriesSummary(
                count: n, min: row["lo"], mean: row["mean"], max: row["hi"], sum: row["total"], first: row["first"],
                last: row["last"], suspect: row["suspect"])
        }
    }

    /// A series' readings for `from < time <= to` that are not suspect, oldest first.
    public func values(station: String, metric: String, from: Int64, to: Int64) async throws -> [(
        time: Int64, value: Double
    )] {
        try await reader.read { db in
            // A cursor, not `fetchAll`: copying each row cost more than the query (the status site
            // reads a year of 15-minute readings, 35,040, per chart).
            let rows = try Row.fetchCursor(
                db.cachedStatement(
                    sql: """
                        SELECT r.time, r.value FROM readings r JOIN series s ON s.id = r.series_id
                        WHERE s.station = ? AND s.metric = ? AND r.time > ? AND r.time <= ? AND r.suspect = 0
                        ORDER BY r.time
                        """), arguments: [station, metric, from, to])
            var out: [(time: Int64, value: Double)] = []
            while let r = try rows.next() { out.append((r[0], r[1])) }
            return out
        }
    }

    /// The newest reading time of each series of the given stations and metric (for incremental fetches).
    public func latestTimes(metric: String?) async throws -> [SeriesKey: Int64] {
        try await reader.read { db in
            var out: [SeriesKey: Int64] = [:]
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT s.station, s.metric, (SELECT max(time) FROM readings WHERE series_id = s.id) AS t
                    FROM series s WHERE ?1 IS NULL OR s.metric = ?1
                    """, arguments: [metric])
            for row in rows {
                if let t: Int64 = row["t"] { out[SeriesKey(station: row["station"], metric: row["metric"])] = t }
            }
            return out
        }
    }
}
