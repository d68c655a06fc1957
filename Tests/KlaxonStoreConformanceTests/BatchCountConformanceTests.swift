import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// A source's batch may hold readings, quake events and forecasts at once: each backend counts them
/// apart (`IngestStats`), and the totals people see are their sums.
@Suite(.timeLimit(.minutes(3))) struct BatchCountConformanceTests {
    func batch() -> SourceBatch {
        var b = SourceBatch(readings: [
            reading("A", "2026-01-01T00:00:00Z", 1), reading("A", "2026-01-01T00:15:00Z", 2),
        ])
        b.quakes = [
            QuakeEvent(
                id: "nc1", time: 1_790_000_000_000, updated: 1_790_000_100_000, magnitude: 4.8, place: "off the coast",
                latitude: 40.5, longitude: -124.9, depthKm: 10, status: "automatic")
        ]
        b.weather = [
            DayWeather(
                place: "39.74,-104.99", date: "2026-12-01", tempMaxC: -2, tempMinC: -12, precipitationMm: 8,
                precipitationProbability: 80, snowfallCm: 6, windMaxKmh: 30, weatherCode: 73, source: "open-meteo",
                issued: 1_790_000_000)
        ]
        return b
    }

    @Test("readings, events and forecasts of one batch are counted apart", arguments: Backend.allCases)
    func countsApart(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let first = try await f.store.write(batch(), source: "mixed", cursor: nil, at: 1_790_001_000)
            #expect(first.inserted == 2 && first.revised == 0 && first.unchanged == 0)
            #expect(first.events == IngestStats.EventCounts(new: 1))
            #expect(first.forecasts == 1)
            #expect(first.newTotal == 4 && first.revisedTotal == 0 && first.unchangedTotal == 0)

            let again = try await f.store.write(batch(), source: "mixed", cursor: nil, at: 1_790_001_060)
            #expect(again.inserted == 0 && again.unchanged == 2)
            #expect(again.events == IngestStats.EventCounts(unchanged: 1))
            #expect(again.forecasts == 0)
            #expect(again.newTotal == 0 && again.unchangedTotal == 3)

            var sum = first
            sum += again
            #expect(sum.inserted == 2 && sum.events == IngestStats.EventCounts(new: 1, unchanged: 1))
            #expect(sum.forecasts == 1)
        }
    }
}
