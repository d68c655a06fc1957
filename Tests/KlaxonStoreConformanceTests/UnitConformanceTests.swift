import Foundation
import KlaxonCore
import KlaxonStore
import Testing

/// One unit per series, on every backend: a batch in another unit is converted to the series' unit
/// or refused, through the bulk writer (ingest, push) and the source batch write (fetch) alike.
@Suite(.timeLimit(.minutes(10))) struct UnitConformanceTests {
    func temp(_ station: String, _ minute: Int, _ value: Double, _ unit: String?) -> Reading {
        Reading(
            station: station, metric: "temperature", time: 1_767_225_600 + Int64(minute) * 60, value: value,
            unit: unit)
    }

    @Test(
        "°F into a °C series is converted; ft is refused; no unit means the series' unit", arguments: Backend.allCases)
    func convertOrRefuse(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let ingester = try store.readingWriter()
            var s = try await ingester.write([temp("K", 0, -35, "°C"), temp("K", 1, 3.2, "°C")])
            #expect(s.inserted == 2 && s.unitRefusedCount == 0 && s.unitConverted.isEmpty)
            // The same observations in °F: converted back, identical, nothing written.
            s = try await ingester.write([temp("K", 0, -31, "°F"), temp("K", 1, 37.76, "°F")])
            #expect(s.unchanged == 2 && s.inserted == 0 && s.revised == 0)
            #expect(s.unitConverted.map(\.count) == [2])
            // A unit that does not convert is refused, alone; the rest of the batch is stored.
            s = try await ingester.write([temp("K", 2, 4, "ft"), temp("K", 3, 5, nil), temp("K", 4, 41, "degF")])
            #expect(s.unitRefusedCount == 1 && s.inserted == 2)
            #expect(s.unitRefused.first?.description.hasPrefix("K/temperature: 1 reading in ft not stored") == true)
            let stored = try await store.readings(station: "K", metric: "temperature")
            #expect(stored.map(\.value) == [-35, 3.2, 5, 5])
            #expect(stored.allSatisfy { $0.unit == "°C" })
            // Through a source batch (fetch, ingest --format) the same.
            let w = try await store.write(
                SourceBatch(readings: [temp("K", 5, 32, "°F"), temp("K", 6, 1, "hPa")]), source: "x", cursor: nil,
                at: 1_767_225_600)
            #expect(w.inserted == 1 && w.unitRefusedCount == 1)
            #expect(try await store.readings(station: "K", metric: "temperature").last?.value == 0)
            #expect(try await store.series(station: "K").map(\.unit) == ["°C"])
        }
    }

    @Test("a series without a unit takes the first one a batch brings, and keeps it", arguments: Backend.allCases)
    func adoption(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let ingester = try store.readingWriter()
            _ = try await ingester.write([temp("N", 0, 1, nil)])
            #expect(try await store.series(station: "N").map(\.unit) == [nil])
            let s = try await ingester.write([temp("N", 1, 50, "°F"), temp("N", 2, 10, "°C"), temp("N", 3, 1, "m")])
            #expect(s.inserted == 2 && s.unitRefusedCount == 1)
            #expect(try await store.series(station: "N").map(\.unit) == ["°F"])
            #expect(try await store.readings(station: "N", metric: "temperature").map(\.value) == [1, 50, 50])
            // The cached series (same writer) still sees the unit it took.
            let again = try await ingester.write([temp("N", 4, 0, "°C")])
            #expect(again.inserted == 1)
            #expect(try await store.readings(station: "N", metric: "temperature").last?.value == 32)
        }
    }
}
