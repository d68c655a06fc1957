import Foundation
import KlaxonCore
import KlaxonStore
import Logging
import PostgresNIO
import Synchronization

extension PostgresStore {
    /// The transaction-scoped advisory lock taken before appending to `ingest_log`: appends are then
    /// serialized until commit, so `seq` grows in commit order and an evaluation that read up to
    /// some `seq` never meets a smaller one committed later.
    static let logLock: Int64 = 0x6b6c_786e_6c6f_6701
    /// The advisory lock `migrate()` holds.
    static let migrationLock: Int64 = 0x6b6c_786e_6d69_6701
    /// Readings per INSERT statement.
    static let chunk = 10_000

    /// Inserts a chunk of readings given as arrays; per series, what it wrote: the earliest time,
    /// how many rows, how many of them suspect, how many new (the rest were revised).
    static let insertReadings = """
        WITH w AS (
          INSERT INTO readings AS r (series_id, time, value, quality, suspect)
          SELECT s, t, v, CASE WHEN h THEN q END, x
          FROM unnest($1::bigint[], $2::bigint[], $3::float8[], $4::text[], $5::bool[], $6::bool[]) AS u(s, t, v, q, h, x)
          ON CONFLICT (series_id, time) DO UPDATE SET value = excluded.value, quality = excluded.quality,
              suspect = excluded.suspect, revised = true
          WHERE (r.value, r.quality, r.suspect) IS DISTINCT FROM (excluded.value, excluded.quality, excluded.suspect)
          RETURNING r.series_id, r.time, r.suspect, (r.xmax = 0) AS inserted)
        SELECT series_id, min(time), count(*), count(*) FILTER (WHERE suspect), count(*) FILTER (WHERE inserted)
        FROM w GROUP BY series_id
        """

    public func readingWriter(source: String?) throws -> any ReadingWriter {
        PostgresReadingWriter(store: self, source: source)
    }

    /// Writes what a fetch or an imported file produced, in one transaction: station metadata
    /// (merged), NWS gauges, readings, weather, quake events and — for a configured source — its new
    /// cursor. All of it or none of it.
    @discardableResult
    public func write(_ batch: SourceBatch, source: String?, cursor: String?, at now: Int64) async throws
        -> IngestStats
    {
        return try await transaction { c in
            for station in batch.stations { try await self.upsert(station, on: c) }
            for gauge in batch.gauges { try await self.upsert(gauge, at: now, on: c) }
            var additions: [SeriesKey: Int64] = [:]
            var readings = batch.readings
            if batch.overallAQI { try await self.deriveOverallAQI(&readings, on: c) }
            var stats = try await self.insert(readings, on: c, known: [:], additions: &additions, source: source)
            // PM concentrations: their NowCast series (`NowCastSeries`), not counted: not the batch's.
            if NowCastSeries.applies(to: readings) {
                let derived = try await self.deriveNowCast(readings, on: c)
                _ = try await self.insert(derived, on: c, known: [:], additions: &additions, source: source)
            }
            if !batch.weather.isEmpty || !batch.weatherAlerts.isEmpty {
                stats.forecasts += try await self.write(weather: batch.weather, alerts: batch.weatherAlerts, on: c)
            }
            if !batch.forecasts.isEmpty {
                stats.issuances = try await self.write(forecasts: batch.forecasts, at: now, on: c)
            }
            if !batch.airForecasts.isEmpty {
                stats.forecasts += try await self.write(airForecasts: batch.airForecasts, on: c)
            }
            if !batch.quakes.isEmpty {
                let q = try await self.write(quakes: batch.quakes, at: now, on: c)
                stats.events = IngestStats.EventCounts(new: q.new, revised: q.revised, unchanged: q.unchanged)
                stats.quakeConflicts += q.conflicts
            }
            if let source {
                try await self.execute(
                    """
                    INSERT INTO source_state (source, cursor, last_attempt, last_success, last_error, failures)
                    VALUES (\(source), \(cursor), \(now), \(now), NULL, 0)
                    ON CONFLICT (source) DO UPDATE SET cursor = coalesce(excluded.cursor, source_state.cursor),
                        last_attempt = excluded.last_attempt, last_success = excluded.last_success, last_error = NULL,
                        failures = 0, not_before = NULL
                    """, on: c)
            }
            return stats
        }
    }

    /// Sets each hour's overall AQI from its pollutants, those stored among them (`OverallAQI`).
    func deriveOverallAQI(_ readings: inout [Reading], on c: PostgresConnection) async throws {
        let hours = Array(OverallAQI.hours(readings))
        guard !hours.isEmpty else { return }
        var stored: [OverallAQI.Hour: [String: Double]] = [:]
        for row in try await rows(
            """
            SELECT u.station, u.time, s.metric, r.value
            FROM unnest(\(hours.map(\.station))::text[], \(hours.map(\.time))::bigint[]) AS u(station, time)
            JOIN series s ON s.station = u.station AND left(s.metric, 4) = 'aqi.'
            JOIN readings r ON r.series_id = s.id AND r.time = u.time AND NOT r.suspect
            """, on: c)
        {
            let hour = OverallAQI.Hour(station: try row[0].decode(String.self), time: try row[1].decode(Int64.self))
            stored[hour, default: [:]][try row[2].decode(String.self)] = try row[3].decode(Double.self)
        }
        OverallAQI.apply(&readings, stored: stored)
    }

    /// The NowCast series of the batch's PM concentrations, from them and the stored ones around
    /// them (`NowCastSeries`).
    func deriveNowCast(_ readings: [Reading], on c: PostgresConnection) async throws -> [Reading] {
        var stored: [SeriesKey: [(time: Int64, value: Double)]] = [:]
        for w in NowCastSeries.windows(readings) {
            var values: [(time: Int64, value: Double)] = []
            for row in try await rows(
                """
                SELECT r.time, r.value FROM series s JOIN readings r ON r.series_id = s.id
                WHERE s.station = \(w.station) AND s.metric = \(w.metric) AND r.time BETWEEN \(w.from) AND \(w.through)
                    AND NOT r.suspect
                """, on: c)
            {
                values.append((try row[0].decode(Int64.self), try row[1].decode(Double.self)))
            }
            stored[SeriesKey(station: w.station, metric: w.metric)] = values
        }
        return NowCastSeries.derive(readings, stored: stored)
    }

    func upsert(_ s: StationInfo, on c: PostgresConnection) async throws {
        var attributes = s.attributes
        if let u = s.usgsID { attributes["usgs_id"] = u }
        if let l = s.nwsLID { attributes["nws_lid"] = l }
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: attributes, options: [.sortedKeys]), as: UTF8.self)
        try await execute(
            """
            INSERT INTO stations (id, source, name, latitude, longitude, time_zone, attributes)
            VALUES (\(s.id), \(s.source), \(s.name), \(s.latitude), \(s.longitude), \(s.timeZone), \(json))
            ON CONFLICT (id) DO UPDATE SET
                source = coalesce(excluded.source, stations.source), name = coalesce(excluded.name, stations.name),
                latitude = coalesce(excluded.latitude, stations.latitude),
                longitude = coalesce(excluded.longitude, stations.longitude),
                time_zone = coalesce(excluded.time_zone, stations.time_zone),
                attributes = (stations.attributes::jsonb || excluded.attributes::jsonb)::text
            """, on: c)
    }

    func upsert(_ g: GaugeInfo, at now: Int64, on c: PostgresConnection) async throws {
        let info = String(decoding: try JSONEncoder().encode(g), as: UTF8.self)
        try await execute(
            """
            INSERT INTO gauges (lid, usgs_id, info, fetched_at) VALUES (\(g.lid), \(g.usgsID), \(info), \(now))
            ON CONFLICT (lid) DO UPDATE SET usgs_id = excluded.usgs_id, info = excluded.info,
                fetched_at = excluded.fetched_at
            """, on: c)
    }

    /// Inserts readings inside the caller's transaction and logs them for evaluation. A reading new
    /// for its (series, time) is inserted; one whose value, quality or suspect mark differs from the
    /// stored row updates it and marks it revised; an identical one changes nothing. One
    /// `INSERT … SELECT FROM unnest(…) ON CONFLICT` statement per `chunk` readings; a key repeated
    /// within a batch starts a new statement, so the later reading revises the earlier one as it
    /// does on SQLite.
    func insert(
        _ batch: [Reading], on c: PostgresConnection, known: [SeriesKey: Int64],
        additions: inout [SeriesKey: Int64], source: String?
    ) async throws -> IngestStats {
        var stats = IngestStats()
        guard !batch.isEmpty else { return stats }
        var ids = [Int64](repeating: 0, count: batch.count)
        // Series not known yet are found or created together, in two statements (one per new series
        // cost two round trips: 10,000 of them for 5,000 new stations).
        var missing: [SeriesKey: Int] = [:]
        var firsts: [Reading] = []
        for r in batch where known[r.series] == nil && additions[r.series] == nil && missing[r.series] == nil {
            missing[r.series] = firsts.count
            firsts.append(r)
        }
        if !firsts.isEmpty {
            for (key, id) in try await seriesIDs(for: firsts, on: c) { additions[key] = id }
        }
        for (i, r) in batch.enumerated() {
            guard let id = known[r.series] ?? additions[r.series] else {
                throw PostgresStoreError.server(path: path, message: "no id for series \(r.series)")
            }
            ids[i] = id
        }
        // One unit per series (`SeriesUnitRule`, as on SQLite): converted to it, or left out.
        var batch = batch
        let seriesIDs = additions
        let units = try await applyUnitRule(&batch, on: c) { known[$0] ?? seriesIDs[$0] }
        stats.note(units)
        var suspect = [Bool](repeating: false, count: batch.count)
        var check = Plausibility.SuspectCheck()
        for i in batch.indices { suspect[i] = check.isSuspect(batch[i]) }
        // Series by series (stable), as SQLite writes them: neighbouring rows share index pages.
        var order = batch.indices.sorted { ids[$0] != ids[$1] ? ids[$0] < ids[$1] : $0 < $1 }
        if let refused = units.refusedIndices { order.removeAll { refused[$0] } }
        var changed: [Int64: (minTime: Int64, count: Int64, suspect: Int64)] = [:]
        var start = 0
        while start < order.count {
            var keys: Set<[Int64]> = []
            var end = start
            while end < order.count && end - start < Self.chunk {
                let i = order[end]
                guard keys.insert([ids[i], batch[i].time]).inserted else { break }
                end += 1
            }
            // One statement per chunk, its columns as six arrays (a NULL quality is `has = false`);
            // the server sums what it wrote per series, so a few rows come back, not one per reading.
            let part = order[start..<end]
            var binds = PostgresBindings(capacity: 6)
            binds.append(part.map { ids[$0] })
            binds.append(part.map { batch[$0].time })
            binds.append(part.map { batch[$0].value })
            binds.append(part.map { batch[$0].quality ?? "" })
            binds.append(part.map { batch[$0].quality != nil })
            binds.append(part.map { suspect[$0] })
            var written: Int64 = 0
            for row in try await rows(PostgresQuery(unsafeSQL: Self.insertReadings, binds: binds), on: c) {
                let id = try row[0].decode(Int64.self)
                let minTime = try row[1].decode(Int64.self)
                let count = try row[2].decode(Int64.self)
                let marked = try row[3].decode(Int64.self)
                let inserted = try row[4].decode(Int64.self)
                stats.inserted += Int(inserted)
                stats.revised += Int(count - inserted)
                stats.suspect += Int(marked)
                let old = changed[id] ?? (minTime, 0, 0)
                changed[id] = (min(old.minTime, minTime), old.count + count, old.suspect + marked)
                written += count
            }
            stats.unchanged += part.count - Int(written)
            start = end
        }
        if !changed.isEmpty {
            try await execute("SELECT pg_advisory_xact_lock(\(Self.logLock))", on: c)
            // One statement, its columns as arrays (a statement of 25,000 parameters took 20 ms to parse).
            let rows = changed.sorted(by: { $0.key < $1.key })
            var binds = PostgresBindings(capacity: 6)
            binds.append(rows.map(\.key))
            binds.append(rows.map(\.value.minTime))
            binds.append(rows.map(\.value.count))
            binds.append(rows.map(\.value.suspect))
            binds.append(source ?? "")
            binds.append(source != nil)
            try await execute(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO ingest_log (series_id, min_time, count, suspect, source)
                        SELECT s, t, n, x, CASE WHEN $6::bool THEN $5::text END
                        FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS u(s, t, n, x, o)
                        ORDER BY o
                        """, binds: binds), on: c)
        }
        return stats
    }

    /// `SeriesUnitRule` with the units the series table holds (one query for the batch's series that
    /// name a unit); records the unit a series without one takes from this batch.
    func applyUnitRule(
        _ batch: inout [Reading], on c: PostgresConnection, id: (SeriesKey) -> Int64?
    ) async throws -> SeriesUnitRule.Outcome {
        let needed = SeriesUnitRule.seriesWithUnits(batch)
        guard !needed.isEmpty else { return SeriesUnitRule.Outcome() }
        var keyOf: [Int64: SeriesKey] = [:]
        for key in needed { if let i = id(key) { keyOf[i] = key } }
        var binds = PostgresBindings(capacity: 1)
        binds.append(Array(keyOf.keys))
        var stored: [SeriesKey: String] = [:]
        for row in try await rows(
            PostgresQuery(
                unsafeSQL: "SELECT id, unit FROM series WHERE id = ANY($1::bigint[]) AND unit IS NOT NULL",
                binds: binds), on: c)
        {
            if let key = keyOf[try row[0].decode(Int64.self)] { stored[key] = try row[1].decode(String.self) }
        }
        let outcome = SeriesUnitRule.apply(&batch, stored: stored)
        for (key, unit) in outcome.adopted.sorted(by: { $0.key < $1.key }) {
            guard let i = id(key) else { continue }
            try await execute("UPDATE series SET unit = \(unit) WHERE id = \(i) AND unit IS NULL", on: c)
        }
        return outcome
    }

    /// Finds or creates the series (and their stations) of `firsts`, the first reading of each
    /// series (its unit and source are the ones stored), in that order.
    func seriesIDs(for firsts: [Reading], on c: PostgresConnection) async throws -> [SeriesKey: Int64] {
        var seen = Set<String>()
        let stations = firsts.filter { seen.insert($0.station).inserted }
        var binds = PostgresBindings(capacity: 3)
        binds.append(stations.map(\.station))
        binds.append(stations.map { $0.source ?? "" })
        binds.append(stations.map { $0.source != nil })
        try await execute(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO stations (id, source)
                    SELECT id, CASE WHEN has THEN source END FROM unnest($1::text[], $2::text[], $3::bool[]) AS u(id, source, has)
                    ON CONFLICT (id) DO NOTHING
                    """, binds: binds), on: c)
        var series = PostgresBindings(capacity: 4)
        series.append(firsts.map(\.station))
        series.append(firsts.map(\.metric))
        series.append(firsts.map { $0.unit ?? "" })
        series.append(firsts.map { $0.unit != nil })
        var out: [SeriesKey: Int64] = [:]
        for row in try await rows(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO series (station, metric, unit)
                    SELECT station, metric, CASE WHEN has THEN unit END
                    FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[]) WITH ORDINALITY AS u(station, metric, unit, has, n)
                    ORDER BY n
                    ON CONFLICT (station, metric) DO UPDATE SET unit = coalesce(series.unit, excluded.unit)
                    RETURNING id, station, metric
                    """, binds: series), on: c)
        {
            let key = SeriesKey(station: try row[1].decode(String.self), metric: try row[2].decode(String.self))
            out[key] = try row[0].decode(Int64.self)
        }
        return out
    }

    public func recordFailure(source: String, error: String, at now: Int64, notBefore: Int64?) async throws {
        try await execute(
            """
            INSERT INTO source_state (source, last_attempt, last_error, failures, not_before)
            VALUES (\(source), \(now), \(error), 1, \(notBefore))
            ON CONFLICT (source) DO UPDATE SET last_attempt = excluded.last_attempt, last_error = excluded.last_error,
                failures = source_state.failures + 1, not_before = excluded.not_before
            """)
    }

    public func sourceState(_ source: String) async throws -> SourceStateRecord? {
        try await records(
            "SELECT to_jsonb(s)::text FROM source_state s WHERE source = \(source)", as: SourceStateRecord.self
        ).first
    }

    public func sourceStates() async throws -> [SourceStateRecord] {
        try await records("SELECT to_jsonb(s)::text FROM source_state s ORDER BY source", as: SourceStateRecord.self)
    }

    /// Creates or replaces a station's metadata.
    public func upsert(station s: StationRecord) async throws {
        try await execute(
            """
            INSERT INTO stations (id, source, name, latitude, longitude, time_zone, attributes)
            VALUES (\(s.id), \(s.source), \(s.name), \(s.latitude), \(s.longitude), \(s.timeZone), \(s.attributes))
            ON CONFLICT (id) DO UPDATE SET source = excluded.source, name = excluded.name,
                latitude = excluded.latitude, longitude = excluded.longitude, time_zone = excluded.time_zone,
                attributes = excluded.attributes
            """)
    }

    public func station(id: String) async throws -> StationRecord? {
        try await records("SELECT to_jsonb(s)::text FROM stations s WHERE id = \(id)", as: StationRecord.self).first
    }

    static let readingColumns = "s.station, s.metric, s.unit, r.time, r.value, r.quality, r.revised, r.suspect"

    func storedReadings(_ query: PostgresQuery) async throws -> [StoredReading] {
        try await rows(query).map { row in
            StoredReading(
                station: try row[0].decode(String.self), metric: try row[1].decode(String.self),
                time: try row[3].decode(Int64.self), value: try row[4].decode(Double.self),
                unit: try row[2].decode(String?.self), quality: try row[5].decode(String?.self),
                revised: try row[6].decode(Bool.self), suspect: try row[7].decode(Bool.self))
        }
    }

    /// All readings of a series, oldest first.
    public func readings(station: String, metric: String) async throws -> [StoredReading] {
        try await storedReadings(
            """
            SELECT \(unescaped: Self.readingColumns) FROM readings r JOIN series s ON s.id = r.series_id
            WHERE s.station = \(station) AND s.metric = \(metric) ORDER BY r.time
            """)
    }

    public func readingCount() async throws -> Int {
        Int(try await scalar("SELECT count(*) FROM readings", as: Int64.self) ?? 0)
    }

    public func ingestMark() async throws -> Int64 {
        try await scalar("SELECT coalesce(max(seq), 0)::bigint FROM ingest_log", as: Int64.self) ?? 0
    }

    /// Readings series by series, each in time order, a page at a time; suspect readings left out.
    public func forEachReading(
        from: Int64?, to: Int64?, page: Int,
        _ body: (_ series: SeriesKey, _ unit: String?, _ readings: [(time: Int64, value: Double)]) throws -> Void
    ) async throws {
        let page = max(1, page)
        let series = try await rows("SELECT id, station, metric, unit FROM series ORDER BY id").map { row in
            (
                id: try row[0].decode(Int64.self),
                key: SeriesKey(station: try row[1].decode(String.self), metric: try row[2].decode(String.self)),
                unit: try row[3].decode(String?.self)
            )
        }
        for s in series {
            var lower = from ?? Int64.min
            var inclusive = true
            while true {
                let found = try await pairs(
                    """
                    SELECT time, value FROM readings
                    WHERE series_id = \(s.id) AND (time > \(lower) OR (\(inclusive) AND time = \(lower)))
                      AND time <= \(to ?? Int64.max) AND NOT suspect
                    ORDER BY time LIMIT \(page)
                    """)
                if !found.isEmpty { try body(s.key, s.unit, found) }
                guard found.count == page, let last = found.last else { break }
                lower = last.time
                inclusive = false
            }
        }
    }

    func pairs(_ query: PostgresQuery, on c: PostgresConnection? = nil) async throws -> [(time: Int64, value: Double)] {
        try await rows(query, on: c).map { (try $0[0].decode(Int64.self), try $0[1].decode(Double.self)) }
    }

    public func gauges() async throws -> [GaugeInfo] {
        try await rows("SELECT info FROM gauges ORDER BY lid").compactMap {
            try? JSONDecoder().decode(GaugeInfo.self, from: Data(try $0[0].decode(String.self).utf8))
        }
    }

    public func gaugeFetchedAt(lid: String) async throws -> Int64? {
        try await scalar("SELECT fetched_at FROM gauges WHERE lid = \(lid)", as: Int64.self)
    }

    public func stationRecords() async throws -> [StationRecord] {
        try await records("SELECT to_jsonb(s)::text FROM stations s", as: StationRecord.self)
    }

    public func resolveStation(_ typed: String) async throws -> String? {
        let id = StationMetadata.typedID(typed)
        if try await scalar("SELECT EXISTS (SELECT 1 FROM stations WHERE id = \(id))", as: Bool.self) == true {
            return id
        }
        if let row = try await rows(
            "SELECT lid, usgs_id FROM gauges WHERE upper(lid) = upper(\(id)) OR usgs_id = \(id) LIMIT 1"
        ).first {
            return try row[1].decode(String?.self) ?? row[0].decode(String.self)
        }
        return try await scalar("SELECT id FROM stations WHERE upper(id) = upper(\(id)) LIMIT 1", as: String.self)
    }

    public func series(station: String) async throws -> [(metric: String, unit: String?)] {
        try await rows("SELECT metric, unit FROM series WHERE station = \(station) ORDER BY metric").map {
            (try $0[0].decode(String.self), try $0[1].decode(String?.self))
        }
    }

    public func latest(station: String, metric: String, at: Int64, includingSuspect: Bool) async throws
        -> StoredReading?
    {
        try await storedReadings(
            """
            SELECT \(unescaped: Self.readingColumns) FROM readings r JOIN series s ON s.id = r.series_id
            WHERE s.station = \(station) AND s.metric = \(metric) AND r.time <= \(at)
              AND (\(includingSuspect) OR NOT r.suspect)
            ORDER BY r.time DESC LIMIT 1
            """
        ).first
    }

    public func values(station: String, metric: String, from: Int64, to: Int64) async throws -> [(
        time: Int64, value: Double
    )] {
        try await pairs(
            """
            SELECT r.time, r.value FROM readings r JOIN series s ON s.id = r.series_id
            WHERE s.station = \(station) AND s.metric = \(metric) AND r.time > \(from) AND r.time <= \(to)
              AND NOT r.suspect
            ORDER BY r.time
            """)
    }

    public func latestTimes(metric: String?) async throws -> [SeriesKey: Int64] {
        var out: [SeriesKey: Int64] = [:]
        for row in try await rows(
            """
            SELECT s.station, s.metric, (SELECT max(time) FROM readings WHERE series_id = s.id) AS t
            FROM series s WHERE \(metric)::text IS NULL OR s.metric = \(metric)
            """)
        {
            if let t = try row[2].decode(Int64?.self) {
                out[SeriesKey(station: try row[0].decode(String.self), metric: try row[1].decode(String.self))] = t
            }
        }
        return out
    }

    public func newestReadings(limit: Int) async throws -> [StoredReading] {
        try await storedReadings(
            """
            SELECT \(unescaped: Self.readingColumns) FROM series s CROSS JOIN LATERAL (
                SELECT * FROM readings WHERE series_id = s.id AND NOT suspect ORDER BY time DESC LIMIT 1) r
            ORDER BY r.time DESC, s.station, s.metric LIMIT \(max(0, limit))
            """)
    }

    public func lastValues(station: String, metric: String, limit: Int) async throws -> [(time: Int64, value: Double)] {
        try await pairs(
            """
            SELECT r.time, r.value FROM readings r JOIN series s ON s.id = r.series_id
            WHERE s.station = \(station) AND s.metric = \(metric) AND NOT r.suspect
            ORDER BY r.time DESC LIMIT \(max(0, limit))
            """
        ).reversed()
    }
}

/// Writes readings in batches, one transaction per batch (ingest, push), caching series ids once
/// their transaction committed.
final class PostgresReadingWriter: ReadingWriter {
    private let store: PostgresStore
    private let seriesIDs = Mutex<[SeriesKey: Int64]>([:])
    /// Where the readings came from (`ingest_log.source`): `api`, `file`, nil for unknown.
    private let source: String?

    init(store: PostgresStore, source: String?) {
        self.store = store
        self.source = source
    }

    func write(_ batch: [Reading]) async throws -> IngestStats {
        guard !batch.isEmpty else { return IngestStats() }
        let known = seriesIDs.withLock { $0 }
        let (stats, additions) = try await store.transaction { c in
            var additions: [SeriesKey: Int64] = [:]
            let stats = try await self.store.insert(
                batch, on: c, known: known, additions: &additions, source: self.source)
            // PM concentrations: their NowCast series, in the same transaction (not counted: not the batch's).
            if NowCastSeries.applies(to: batch) {
                let derived = try await self.store.deriveNowCast(batch, on: c)
                _ = try await self.store.insert(
                    derived, on: c, known: known, additions: &additions, source: self.source)
            }
            return (stats, additions)
        }
        seriesIDs.withLock { $0.merge(additions) { a, _ in a } }
        return stats
    }
}
