import Foundation
import KlaxonCore
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// As `SQLiteStore`'s: an earlier issuance than the stored one of its area, date and pollutant is
    /// passed over; returns how many rows were written (new or changed).
    func write(airForecasts: [AirForecast], on c: PostgresConnection) async throws -> Int {
        var changed = 0
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys  // the same forecast, the same text: not a change
        for f in airForecasts {
            let json = String(decoding: try encoder.encode(f), as: UTF8.self)
            changed += try await execute(
                """
                INSERT INTO air_forecasts (area_key, date, parameter, issued, forecast)
                VALUES (\(f.area.lowercased()), \(f.date), \(f.parameter), \(f.issued), \(json))
                ON CONFLICT (area_key, date, parameter) DO UPDATE SET issued = excluded.issued,
                    forecast = excluded.forecast
                WHERE excluded.issued >= air_forecasts.issued AND excluded.forecast <> air_forecasts.forecast
                RETURNING 1
                """, on: c)
        }
        return changed
    }

    @discardableResult
    public func write(airForecasts: [AirForecast]) async throws -> Int {
        try await transaction { c in try await self.write(airForecasts: airForecasts, on: c) }
    }

    public func airForecasts(area: String) async throws -> [AirForecast] {
        Self.decodeAir(
            try await rows(
                """
                SELECT forecast FROM air_forecasts WHERE area_key = \(area.lowercased())
                ORDER BY date COLLATE "C", parameter COLLATE "C"
                """))
    }

    public func airForecasts(from: String, to: String) async throws -> [AirForecast] {
        try await airForecasts(from: from, to: to, on: nil)
    }

    func airForecasts(from: String, to: String, on c: PostgresConnection?) async throws -> [AirForecast] {
        Self.decodeAir(
            try await rows(
                """
                SELECT forecast FROM air_forecasts WHERE date BETWEEN \(from) AND \(to)
                ORDER BY area_key COLLATE "C", date COLLATE "C", parameter COLLATE "C"
                """, on: c))
    }

    /// A trip's days with their forecasts (`AirForecast.tripDays`), inside a transaction.
    func airDays(for trip: Trip, on c: PostgresConnection) async throws -> [TripAirDay] {
        let days = Packer.days(of: trip)
        guard let first = days.first?.date, let last = days.last?.date else { return [] }
        return AirForecast.tripDays(
            trip, forecasts: try await airForecasts(from: first, to: last, on: c), radiusKm: EventRounds.airRadiusKm)
    }

    static func decodeAir(_ rows: [PostgresRandomAccessRow]) -> [AirForecast] {
        rows.compactMap { row in
            guard let text = try? row[0].decode(String.self) else { return nil }
            return try? JSONDecoder().decode(AirForecast.self, from: Data(text.utf8))
        }
    }
}
