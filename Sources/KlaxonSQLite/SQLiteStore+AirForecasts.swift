import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// Stores forecasts; an earlier issuance than the stored one of its area, date and pollutant is
    /// passed over. Returns how many rows were written (new or changed).
    static func write(airForecasts: [AirForecast], _ db: Database) throws -> Int {
        var changed = 0
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys  // the same forecast, the same text: not a change
        for f in airForecasts {
            let json = String(decoding: try encoder.encode(f), as: UTF8.self)
            try db.execute(
                sql: """
                    INSERT INTO air_forecasts (area_key, date, parameter, issued, forecast) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (area_key, date, parameter) DO UPDATE SET issued = excluded.issued,
                        forecast = excluded.forecast
                    WHERE excluded.issued >= air_forecasts.issued AND excluded.forecast <> air_forecasts.forecast
                    """, arguments: [f.area.lowercased(), f.date, f.parameter, f.issued, json])
            changed += db.changesCount
        }
        return changed
    }

    @discardableResult
    public func write(airForecasts: [AirForecast]) async throws -> Int {
        try await requireWriter().write { db in try Self.write(airForecasts: airForecasts, db) }
    }

    public func airForecasts(area: String) async throws -> [AirForecast] {
        try await reader.read { db in
            try Self.decodeAir(
                String.fetchAll(
                    db, sql: "SELECT forecast FROM air_forecasts WHERE area_key = ? ORDER BY date, parameter",
                    arguments: [area.lowercased()]))
        }
    }

    public func airForecasts(from: String, to: String) async throws -> [AirForecast] {
        try await reader.read { db in try Self.airForecasts(from: from, to: to, db) }
    }

    static func airForecasts(from: String, to: String, _ db: Database) throws -> [AirForecast] {
        try decodeAir(
            String.fetchAll(
                db,
                sql: """
                    SELECT forecast FROM air_forecasts WHERE date BETWEEN ? AND ? ORDER BY area_key, date, parameter
                    """, arguments: [from, to]))
    }

    /// A trip's days with their forecasts (`AirForecast.tripDays`), inside a transaction.
    static func airDays(for trip: Trip, _ db: Database) throws -> [TripAirDay] {
        let days = Packer.days(of: trip)
        guard let first = days.first?.date, let last = days.last?.date else { return [] }
        return AirForecast.tripDays(
            trip, forecasts: try airForecasts(from: first, to: last, db), radiusKm: EventRounds.airRadiusKm)
    }

    static func decodeAir(_ rows: [String]) -> [AirForecast] {
        rows.compactMap { try? JSONDecoder().decode(AirForecast.self, from: Data($0.utf8)) }
    }
}
