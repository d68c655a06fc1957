import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Saves a new trip; a trip of the same owner and name is an error unless `replace`.
    public func save(trip: Trip, at now: Int64, replace: Bool) async throws {
        let json = String(decoding: try JSONEncoder().encode(trip), as: UTF8.self)
        try await requireWriter().write { db in
            let exists =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM trips WHERE owner = ? AND name = ?)",
                    arguments: [trip.owner, trip.name]) ?? false
            if exists && !replace {
                throw TripError("trip \"\(trip.name)\" already exists for \(trip.owner) (use `trip edit` to change it)")
            }
            try db.execute(
                sql: """
                    INSERT INTO trips (owner, name, trip, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (owner, name) DO UPDATE SET trip = excluded.trip, updated_at = excluded.updated_at
                    """, arguments: [trip.owner, trip.name, json, now, now])
        }
    }

    /// A trip by owner and name; nil when that owner has none by that name.
    public func trip(owner: String, name: String) async throws -> Trip? {
        try await reader.read { db in
            try String.fetchOne(
                db, sql: "SELECT trip FROM trips WHERE owner = ? AND name = ?", arguments: [owner, name]
            ).flatMap { try? JSONDecoder().decode(Trip.self, from: Data($0.utf8)) }
        }
    }

    /// Trips of one owner (nil: every owner's), by owner then name.
    public func trips(owner: String?) async throws -> [Trip] {
        try await reader.read { db in try Self.trips(owner: owner, db) }
    }

    static func trips(owner: String?, _ db: Database) throws -> [Trip] {
        try String.fetchAll(
            db, sql: "SELECT trip FROM trips WHERE ?1 IS NULL OR owner = ?1 ORDER BY owner, name",
            arguments: [owner]
        ).compactMap { try? JSONDecoder().decode(Trip.self, from: Data($0.utf8)) }
    }

    /// A trip's packing-list history, newest first. The rules come from the trip's announcements, so
    /// the search uses the transitions' (rule, station, metric, id) index, not the whole log.
    public func tripHistory(owner: String, name: String, limit: Int) async throws -> [TransitionRecord] {
        let station = TripPackingRule.key(Trip(name: name, owner: owner, stops: []))
        return try await reader.read { db in
            try TransitionRecord.fetchAll(
                db,
                sql: """
                    SELECT * FROM transitions
                    WHERE rule IN (SELECT rule FROM trip_announcements WHERE owner = ?1 AND name = ?2)
                        AND station = ?3 AND metric = 'packing'
                    ORDER BY id DESC LIMIT ?4
                    """, arguments: [owner, name, station, max(0, limit)])
        }
    }

    /// Removes a trip (and what rules announced for it); false when there was none.
    @discardableResult
    public func removeTrip(owner: String, name: String) async throws -> Bool {
        try await requireWriter().write { db in
            try db.execute(sql: "DELETE FROM trips WHERE owner = ? AND name = ?", arguments: [owner, name])
            let removed = db.changesCount > 0
            try db.execute(
                sql: "DELETE FROM trip_announcements WHERE owner = ? AND name = ?", arguments: [owner, name])
            return removed
        }
    }

    static func write(weather: [DayWeather], alerts: [PlaceAlert], _ db: Database) throws -> Int {
        var seq =
            try Int64.fetchOne(
                db,
                sql:
                    "SELECT max(s) FROM (SELECT max(seq) AS s FROM forecasts UNION ALL SELECT max(seq) FROM weather_alerts)"
            )
            ?? 0
        var changed = 0
        for w in weather {
            guard let point = PlacePoint(key: w.place) else {
                throw TripError("forecast place \"\(w.place)\" is not a \"lat,lon\" key")
            }
            let json = String(decoding: try JSONEncoder().encode(w), as: UTF8.self)
            let stored = try Row.fetchOne(
                db, sql: "SELECT issued, weather FROM forecasts WHERE place = ? AND date = ? AND source = ?",
                arguments: [w.place, w.date, w.source])
            if let stored {
                let issued: Int64 = stored["issued"]
                // An older issue never replaces a newer one; the same values are not a change.
                if w.issued < issued { continue }
                var old = (try? JSONDecoder().decode(DayWeather.self, from: Data((stored["weather"] as String).utf8)))
                old?.issued = w.issued
                if old == w { continue }
            }
            seq += 1
            changed += 1
            try db.execute(
                sql: """
                    INSERT INTO forecasts (place, date, source, latitude, longitude, issued, climatology, weather, seq)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (place, date, source) DO UPDATE SET issued = excluded.issued,
                        climatology = excluded.climatology, weather = excluded.weather, seq = excluded.seq
                    """,
                arguments: [
                    w.place, w.date, w.source, point.latitude, point.longitude, w.issued, w.climatology, json, seq,
                ])
        }
        for a in alerts {
            let json = String(decoding: try JSONEncoder().encode(a.alert), as: UTF8.self)
            let exists =
                try Bool.fetchOne(
                    db, sql: "SELECT EXISTS (SELECT 1 FROM weather_alerts WHERE id = ? AND place = ?)",
                    arguments: [a.alert.id, a.place]) ?? false
            if exists { continue }
            seq += 1
            changed += 1
            try db.execute(
                sql: "INSERT INTO weather_alerts (id, place, alert, seq) VALUES (?, ?, ?, ?)",
                arguments: [a.alert.id, a.place, json, seq])
        }
        return changed
    }

    /// Stores forecasts and alerts (one transaction); returns how many rows changed.
    @discardableResult
    public func write(weather: [DayWeather], alerts: [PlaceAlert]) async throws -> Int {
        try await requireWriter().write { db in try Self.write(weather: weather, alerts: alerts, db) }
    }

    /// The weather for each day of a trip: per stop, the stored forecasts of the nearest place within
    /// `radiusKm` of the stop; per date, a real forecast (newest issue) before climatology.
    public func weather(for trip: Trip, radiusKm: Double) async throws -> [DayWeather] {
        try await reader.read { db in try Self.weather(for: trip, radiusKm: radiusKm, db) }
    }

    static func weather(for trip: Trip, radiusKm: Double, _ db: Database) throws -> [DayWeather] {
        let places = try Row.fetchAll(db, sql: "SELECT DISTINCT place, latitude, longitude FROM forecasts").map {
            (place: $0["place"] as String, latitude: $0["latitude"] as Double, longitude: $0["longitude"] as Double)
        }
        var out: [DayWeather] = []
        for day in TripPlaces.forecastDays(trip, places: places, radiusKm: radiusKm) {
            let rows = try String.fetchAll(
                db,
                sql: """
                    SELECT weather FROM forecasts WHERE place = ? AND date = ?
                    ORDER BY climatology, issued DESC LIMIT 1
                    """, arguments: [day.place, day.date])
            if var w = rows.first.flatMap({ try? JSONDecoder().decode(DayWeather.self, from: Data($0.utf8)) }) {
                w.place = day.stopPlace
                out.append(w)
            }
        }
        return out
    }

    /// Alerts stored for places within `radiusKm` of a trip's stops.
    public func alerts(for trip: Trip, radiusKm: Double) async throws -> [(stop: Int, alert: WeatherAlert)] {
        try await reader.read { db in try Self.alerts(for: trip, radiusKm: radiusKm, db) }
    }

    static func alerts(for trip: Trip, radiusKm: Double, _ db: Database) throws -> [(stop: Int, alert: WeatherAlert)] {
        do {
            var out: [(Int, WeatherAlert)] = []
            for row in try Row.fetchAll(db, sql: "SELECT place, alert FROM weather_alerts ORDER BY seq") {
                guard let p = PlacePoint(key: row["place"]),
                    let a = try? JSONDecoder().decode(WeatherAlert.self, from: Data((row["alert"] as String).utf8))
                else { continue }
                if let i = TripPlaces.stop(of: trip, near: p, radiusKm: radiusKm) { out.append((i, a)) }
            }
            return out
        }
    }

    /// Forecast rows stored, for `trip export` and `gauge`-like views.
    public func forecasts(place: String) async throws -> [DayWeather] {
        try await reader.read { db in
            try String.fetchAll(
                db, sql: "SELECT weather FROM forecasts WHERE place = ? ORDER BY date, source", arguments: [place]
            ).compactMap { try? JSONDecoder().decode(DayWeather.self, from: Data($0.utf8)) }
        }
    }

    /// What a rule last announced for a trip (JSON the caller owns).
    public func tripAnnouncement(rule: String, owner: String, name: String) async throws -> String? {
        try await reader.read { db in
            try String.fetchOne(
                db, sql: "SELECT announced FROM trip_announcements WHERE rule = ? AND owner = ? AND name = ?",
                arguments: [rule, owner, name])
        }
    }
}
