import Foundation
import KlaxonCore

/// Counts of what an ingest did: readings, events and forecasts apart (a batch may hold all three).
public struct IngestStats: Sendable, Equatable {
    /// New readings.
    public var inserted = 0
    /// Readings whose value or quality changed for a key already stored (marked revised).
    public var revised = 0
    /// Readings identical to what was stored: nothing written.
    public var unchanged = 0
    /// Quake event versions: new events, new versions of stored ones, versions already stored.
    public var events = EventCounts()
    /// Forecast days and weather alerts written for trip places (new, or changed since stored).
    public var forecasts = 0
    /// River forecast issuances: new, unchanged, replaced, and of the new ones those out of order.
    public var issuances = ForecastCounts()
    /// Quake events kept apart from a stored event they share an associated id with (tell a person).
    public var quakeConflicts: [QuakeIDConflict] = []
    /// Of the new and revised readings, those marked suspect (`Plausibility`): stored, but left out of
    /// evaluation and statistics.
    public var suspect = 0
    /// Readings not stored because their unit is not their series' and cannot be converted to it
    /// (`SeriesUnitRule`), and the first `listedUnitNotes` of them by series and unit.
    public var unitRefusedCount = 0
    public var unitRefused: [SeriesUnitRule.Refusal] = []
    /// Readings converted to their series' unit before they were stored (the first `listedUnitNotes`).
    public var unitConverted: [SeriesUnitRule.Converted] = []

    /// The most unit refusals and conversions listed (the count says how many readings in all).
    public static let listedUnitNotes = 100

    public init() {}

    /// How many event versions a write found new, revised and unchanged.
    public struct EventCounts: Sendable, Equatable {
        public var new = 0
        public var revised = 0
        public var unchanged = 0

        public init(new: Int = 0, revised: Int = 0, unchanged: Int = 0) {
            self.new = new
            self.revised = revised
            self.unchanged = unchanged
        }
    }

    /// New readings, events and forecasts together: the "new" of `klaxon fetch`, `klaxon ingest` and
    /// the daemon's `fetched` line.
    public var newTotal: Int { inserted + events.new + forecasts + issuances.new }
    /// Revised readings and events together.
    public var revisedTotal: Int { revised + events.revised + issuances.replaced }
    /// Unchanged readings and events together.
    public var unchangedTotal: Int { unchanged + events.unchanged + issuances.unchanged }

    public static func += (a: inout IngestStats, b: IngestStats) {
        a.inserted += b.inserted
        a.revised += b.revised
        a.unchanged += b.unchanged
        a.events.new += b.events.new
        a.events.revised += b.events.revised
        a.events.unchanged += b.events.unchanged
        a.forecasts += b.forecasts
        a.issuances += b.issuances
        a.quakeConflicts += b.quakeConflicts
        a.suspect += b.suspect
        a.unitRefusedCount += b.unitRefusedCount
        a.unitRefused += b.unitRefused.prefix(max(0, listedUnitNotes - a.unitRefused.count))
        a.unitConverted += b.unitConverted.prefix(max(0, listedUnitNotes - a.unitConverted.count))
    }

    /// Records what `SeriesUnitRule.apply` did to a batch.
    public mutating func note(_ units: SeriesUnitRule.Outcome) {
        unitRefusedCount += units.refusedCount
        unitRefused += units.refused.prefix(max(0, Self.listedUnitNotes - unitRefused.count))
        unitConverted += units.converted.prefix(max(0, Self.listedUnitNotes - unitConverted.count))
    }
}
