import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

/// Quake events, trips and their weather, as `SQLiteStore` keeps them. Each write that numbers rows
/// (`seq`, the evaluation order) holds a transaction-scoped advisory lock, so concurrent writers
/// number in commit order, never twice the same.
extension PostgresStore {
    static let quakeCursorKey = "evaluated_quake_seq"
    static let quakeLock: Int64 = 0x6b6c_786e_7175_6101
    static let weatherLock: Int64 = 0x6b6c_786e_7765_6101

    @discardableResult
    public func write(quakes: [QuakeEvent], at now: Int64) async throws -> QuakeWriteStats {
        try await transaction { c in try await self.write(quakes: quakes, at: now, on: c) }
    }

    /// Stores quake events once each, a newer `updated` replacing the stored version (kept as a
    /// revision), exactly as `SQLiteStore.write(quakes:at:)`.
    func write(quakes: [QuakeEvent], at now: Int64, on c: PostgresConnection) async throws -> QuakeWriteStats {
        var stats = QuakeWriteStats()
        guard !quakes.isEmpty else { return stats }
        try await execute("SELECT pg_advisory_xact_lock(\(Self.quakeLock))", on: c)
        var seq = try await scalar("SELECT coalesce(max(seq), 0)::bigint FROM quake_events", as: Int64.self, on: c) ?? 0
        for e in quakes.sorted(by: { ($0.updated, $0.id) < ($1.updated, $1.id) }) {
            var seen: Set<String> = []
            let aliases = ([e.id] + e.ids).filter { seen.insert($0).inserted }
            let match = QuakeIdentity.match(e, among: try await candidates(sharing: aliases, on: c))
            stats.conflicts += match.conflicts
            let json = String(decoding: try JSONEncoder().encode(e), as: UTF8.self)
            if let key = match.key,
                let storedUpdated = try await scalar(
                    "SELECT updated FROM quake_events WHERE id = \(key)", as: Int64.self, on: c)
            {
                guard e.updated > storedUpdated else {
                    stats.unchanged += 1
                    try await addAliases(aliases, key: key, on: c)
                    continue
                }
                seq += 1
                try await execute(
                    """
                    UPDATE quake_events SET time = \(e.time), updated = \(e.updated), magnitude = \(e.magnitude),
                        latitude = \(e.latitude), longitude = \(e.longitude), depth_km = \(e.depthKm),
                        status = \(e.status), type = \(e.type), event = \(json), seq = \(seq)
                    WHERE id = \(key)
                    """, on: c)
                try await execute(
                    """
                    INSERT INTO quake_revisions (event_id, updated, event, recorded_at)
                    VALUES (\(key), \(e.updated), \(json), \(now)) ON CONFLICT DO NOTHING
                    """, on: c)
                try await addAliases(aliases, key: key, on: c)
                stats.revised += 1
            } else {
                seq += 1
                let key = match.key ?? e.id
                try await execute(
                    """
                    INSERT INTO quake_events (id, time, updated, magnitude, latitude, longitude, depth_km, status,
                        type, event, seq, first_seen)
                    VALUES (\(key), \(e.time), \(e.updated), \(e.magnitude), \(e.latitude), \(e.longitude),
                        \(e.depthKm), \(e.status), \(e.type), \(json), \(seq), \(now))
                    """, on: c)
                try await execute(
                    """
                    INSERT INTO quake_revisions (event_id, updated, event, recorded_at)
                    VALUES (\(key), \(e.updated), \(json), \(now))
                    """, on: c)
                try await addAliases(aliases, key: key, on: c)
                stats.new += 1
            }
        }
        return stats
    }

    func candidates(sharing aliases: [String], on c: PostgresConnection) async throws -> [(
        key: String, event: QuakeEvent
    )] {
        var out: [(key: String, event: QuakeEvent)] = []
        var seen: Set<String> = []
        for a in aliases {
            guard
                let k = try await scalar(
                    "SELECT event_id FROM quake_aliases WHERE alias = \(a)", as: String.self, on: c),
                seen.insert(k).inserted,
                let json = try await scalar("SELECT event FROM quake_events WHERE id = \(k)", as: String.self, on: c)
            else { continue }
            out.append((k, QuakeEvent.stored(json: json, key: k)))
        }
        return out
    }

    func addAliases(_ aliases: [String], key: String, on c: PostgresConnection) async throws {
        for a in aliases {
            try await execute(
                "INSERT INTO quake_aliases (alias, event_id) VALUES (\(a), \(key)) ON CONFLICT (alias) DO NOTHING",
                on: c)
        }
    }

    public func quakes(from: Int64, to: Int64) async throws -> [StoredQuake] {
        try await rows(
            "SELECT id, event, seq FROM quake_events WHERE time >= \(from) AND time <= \(to) ORDER BY time DESC"
        ).compactMap { row in
            guard let e = try? JSONDecoder().decode(QuakeEvent.self, from: Data(try row[1].decode(String.self).utf8))
            else { return nil }
            return StoredQuake(key: try row[0].decode(String.self), event: e, seq: try row[2].decode(Int64.self))
        }
    }

    public func quakeRevisions() async throws -> [(key: String, event: QuakeEvent)] {
        try await rows("SELECT event_id, event FROM quake_revisions ORDER BY updated, event_id").compactMap { row in
            guard let e = try? JSONDecoder().decode(QuakeEvent.self, from: Data(try row[1].decode(String.self).utf8))
            else { return nil }
            return (try row[0].decode(String.self), e)
        }
    }

    public func quakeRevisionCounts() async throws -> [String: Int] {
        var out: [String: Int] = [:]
        for row in try await rows("SELECT event_id, count(*) FROM quake_revisions GROUP BY 1") {
            out[try row[0].decode(String.self)] = Int(try row[1].decode(Int64.self))
        }
        return out
    }

    // MARK: Trips

    public func save(trip: Trip, at now: Int64, replace: Bool) async throws {
        let json = String(decoding: try JSONEncoder().encode(trip), as: UTF8.self)
        try await transaction { c in
            let exists =
                try await self.scalar(
                    "SELECT EXISTS (SELECT 1 FROM trips WHERE owner = \(trip.owner) AND name = \(trip.name))",
                    as: Bool.self, on: c) ?? false
            if exists && !replace {
                throw TripError("trip \"\(trip.name)\" already exists for \(trip.owner) (use `trip edit` to change it)")
            }
            try await self.execute(
                """
                INSERT INTO trips (owner, name, trip, created_at, updated_at)
                VALUES (\(trip.owner), \(trip.name), \(json), \(now), \(now))
                ON CONFLICT (owner, name) DO UPDATE SET trip = excluded.trip, updated_at = excluded.updated_at
                """, on: c)
        }
    }

    public func trip(owner: String, name: String) async throws -> Trip? {
        try await scalar("SELECT trip FROM trips WHERE owner = \(owner) AND name = \(name)", as: String.self).flatMap {
            try? JSONDecoder().decode(Trip.self, from: Data($0.utf8))
        }
    }

    public func trips(owner: String?) async throws -> [Trip] { try await trips(owner: owner, on: nil) }

    func trips(owner: String?, on c: PostgresConnection?) async throws -> [Trip] {
        try await rows(
            "SELECT trip FROM trips WHERE \(owner)::text IS NULL OR owner = \(owner) ORDER BY owner, name", on: c
        ).compactMap { try? JSONDecoder().decode(Trip.self, from: Data(try $0[0].decode(String.self).utf8)) }
    }

    public func tripHistory(owner: String, name: String, limit: Int) async throws -> [TransitionRecord] {
        let station = TripPackingRule.key(Trip(name: name, owner: owner, stops: []))
        return try await records(
            """
            SELECT to_jsonb(t)::text FROM transitions t
            WHERE rule IN (SELECT rule FROM trip_announcements WHERE owner = \(owner) AND name = \(name))
                AND station = \(station) AND metric = 'packing'
            ORDER BY id DESC LIMIT \(max(0, limit))
            """, as: TransitionRecord.self)
    }

    @discardableResult
    public func removeTrip(owner: String, name: String) async throws -> Bool {
        try await transaction { c in
            let removed = try await self.execute(
                "DELETE FROM trips WHERE owner = \(owner) AND name = \(name) RETURNING 1", on: c)
            try await self.execute("DELETE FROM trip_announcements WHERE owner = \(owner) AND name = \(name)", on: c)
            return removed > 0
        }
    }

    @discardableResult
    public func write(weather: [DayWeather], alerts: [PlaceAlert]) async throws -> Int {
        try await transaction { c in try await self.write(weather: weather, alerts: alerts, on: c) }
    }

    /// Stores forecasts (an older issue never replaces a newer one; the same values are no change)
    /// and alerts; returns how many rows changed.
    func write(weather: [DayWeather], alerts: [PlaceAlert], on c: PostgresConnection) async throws -> Int {
        guard !weather.isEmpty || !alerts.isEmpty else { return 0 }
        try await execute("SELECT pg_advisory_xact_lock(\(Self.weatherLock))", on: c)
        var seq =
            try await scalar(
                """
                SELECT coalesce(max(s), 0)::bigint FROM (
                    SELECT max(seq) AS s FROM forecasts UNION ALL SELECT max(seq) FROM weather_alerts) x
                """, as: Int64.self, on: c) ?? 0
        var changed = 0
        for w in weather {
            guard let point = PlacePoint(key: w.place) else {
                throw TripError("forecast place \"\(w.place)\" is not a \"lat,lon\" key")
            }
            let json = String(decoding: try JSONEncoder().encode(w), as: UTF8.self)
            if let stored = try await rows(
                """
                SELECT issued, weather FROM forecasts
                WHERE place = \(w.place) AND date = \(w.date) AND source = \(w.source)
                """, on: c
            ).first {
                if w.issued < (try stored[0].decode(Int64.self)) { continue }
                var old = try? JSONDecoder().decode(DayWeather.self, from: Data(try stored[1].decode(String.self).utf8))
                old?.issued = w.issued
                if old == w { continue }
            }
            seq += 1
            changed += 1
            try await execute(
                """
                INSERT INTO forecasts (place, date, source, latitude, longitude, issued, climatology, weather, seq)
                VALUES (\(w.place), \(w.date), \(w.source), \(point.latitude), \(point.longitude), \(w.issued),
                    \(w.climatology), \(json), \(seq))
                ON CONFLICT (place, date, source) DO UPDATE SET issued = excluded.issued,
                    climatology = excluded.climatology, weather = excluded.weather, seq = excluded.seq
                """, on: c)
        }
        for a in alerts {
            let json = String(decoding: try JSONEncoder().encode(a.alert), as: UTF8.self)
            seq += 1
            let inserted = try await execute(
                """
                INSERT INTO weather_alerts (id, place, alert, seq) VALUES (\(a.alert.id), \(a.place), \(json), \(seq))
                ON CONFLICT (id, place) DO NOTHING RETURNING 1
                """, on: c)
            if inserted > 0 { changed += 1 } else { seq -= 1 }
        }
        return changed
    }

    public func weather(for trip: Trip, radiusKm: Double) async throws -> [DayWeather] {
        try await weather(for: trip, radiusKm: radiusKm, on: nil)
    }

    /// Per day of a trip, the nearest stored place's forecast within `radiusKm` of the stop (a real
    /// forecast, newest issue, before climatology).
    func weather(for trip: Trip, radiusKm: Double, on c: PostgresConnection?) async throws -> [DayWeather] {
        let places = try await rows("SELECT DISTINCT place, latitude, longitude FROM forecasts", on: c).map {
            (
                place: try $0[0].decode(String.self), latitude: try $0[1].decode(Double.self),
                longitude: try $0[2].decode(Double.self)
            )
        }
        var out: [DayWeather] = []
        for day in TripPlaces.forecastDays(trip, places: places, radiusKm: radiusKm) {
            let json = try await scalar(
                """
                SELECT weather FROM forecasts WHERE place = \(day.place) AND date = \(day.date)
                ORDER BY climatology, issued DESC LIMIT 1
                """, as: String.self, on: c)
            if var w = json.flatMap({ try? JSONDecoder().decode(DayWeather.self, from: Data($0.utf8)) }) {
                w.place = day.stopPlace
                out.append(w)
            }
        }
        return out
    }

    public func alerts(for trip: Trip, radiusKm: Double) async throws -> [(stop: Int, alert: WeatherAlert)] {
        try await alerts(for: trip, radiusKm: radiusKm, on: nil)
    }

    func alerts(for trip: Trip, radiusKm: Double, on c: PostgresConnection?) async throws -> [(
        stop: Int, alert: WeatherAlert
    )] {
        var out: [(Int, WeatherAlert)] = []
        for row in try await rows("SELECT place, alert FROM weather_alerts ORDER BY seq", on: c) {
            guard let p = PlacePoint(key: try row[0].decode(String.self)),
                let a = try? JSONDecoder().decode(WeatherAlert.self, from: Data(try row[1].decode(String.self).utf8))
            else { continue }
            if let i = TripPlaces.stop(of: trip, near: p, radiusKm: radiusKm) { out.append((i, a)) }
        }
        return out
    }

    public func forecasts(place: String) async throws -> [DayWeather] {
        try await rows("SELECT weather FROM forecasts WHERE place = \(place) ORDER BY date, source").compactMap {
            try? JSONDecoder().decode(DayWeather.self, from: Data(try $0[0].decode(String.self).utf8))
        }
    }

    public func tripAnnouncement(rule: String, owner: String, name: String) async throws -> String? {
        try await scalar(
            """
            SELECT announced FROM trip_announcements WHERE rule = \(rule) AND owner = \(owner) AND name = \(name)
            """, as: String.self)
    }

    // MARK: Announcements

    /// What an event rule last announced about one thing, stored as JSON under its key columns.
    /// The announcement (a rule's JSON) stored under `key` (column, value pairs), or nil.
    func loadAnnouncement(table: String, key: [(column: String, value: String)], on c: PostgresConnection)
        async throws -> String?
    {
        var binds = PostgresBindings()
        for k in key { binds.append(k.value) }
        let condition = key.enumerated().map { "\($0.element.column) = $\($0.offset + 1)" }.joined(separator: " AND ")
        return try await rows(
            PostgresQuery(unsafeSQL: "SELECT announced FROM \(table) WHERE \(condition)", binds: binds), on: c
        ).first.map { try $0[0].decode(String.self) }
    }

    /// The announcements stored under each of `keys`, in order (an event round's `wanted`).
    func loadAnnouncements(table: String, _ keys: [[(column: String, value: String)]], on c: PostgresConnection)
        async throws -> [String?]
    {
        var out: [String?] = []
        for key in keys { out.append(try await loadAnnouncement(table: table, key: key, on: c)) }
        return out
    }

    /// Stores `json` under `key`, replacing what was there.
    func saveAnnouncement(
        _ json: String, table: String, key: [(column: String, value: String)], on c: PostgresConnection
    )
        async throws
    {
        var binds = PostgresBindings()
        for k in key { binds.append(k.value) }
        binds.append(json)
        let columns = key.map(\.column).joined(separator: ", ")
        let marks = (1...(key.count + 1)).map { "$\($0)" }.joined(separator: ", ")
        try await execute(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO \(table) (\(columns), announced) VALUES (\(marks))
                    ON CONFLICT (\(columns)) DO UPDATE SET announced = excluded.announced
                    """, binds: binds), on: c)
    }
}
