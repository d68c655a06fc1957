import KlaxonCore
import KlaxonStore

/// `Store` requirements the PostgreSQL store does not implement yet: each throws
/// `PostgresStoreError.notImplemented` naming itself, so a caller learns which one it met.
extension PostgresStore {
    private func notYet<T>(_ requirement: String = #function) throws -> T {
        throw PostgresStoreError.notImplemented(requirement)
    }

    // MARK: Quakes, trips, weather
    @discardableResult
    public func write(quakes: [QuakeEvent], at now: Int64) async throws -> QuakeWriteStats { try notYet() }
    public func quakes(from: Int64, to: Int64) async throws -> [StoredQuake] { try notYet() }
    public func quakeRevisions() async throws -> [(key: String, event: QuakeEvent)] { try notYet() }
    public func quakeRevisionCounts() async throws -> [String: Int] { try notYet() }
    public func save(trip: Trip, at now: Int64, replace: Bool) async throws { try notYet() as Void }
    public func trip(owner: String, name: String) async throws -> Trip? { try notYet() }
    public func trips(owner: String?) async throws -> [Trip] { try notYet() }
    @discardableResult
    public func removeTrip(owner: String, name: String) async throws -> Bool { try notYet() }
    @discardableResult
    public func write(weather: [DayWeather], alerts: [PlaceAlert]) async throws -> Int { try notYet() }
    public func weather(for trip: Trip, radiusKm: Double) async throws -> [DayWeather] { try notYet() }
    public func alerts(for trip: Trip, radiusKm: Double) async throws -> [(stop: Int, alert: WeatherAlert)] {
        try notYet()
    }
    public func forecasts(place: String) async throws -> [DayWeather] { try notYet() }
    public func tripAnnouncement(rule: String, owner: String, name: String) async throws -> String? { try notYet() }
    public func tripHistory(owner: String, name: String, limit: Int) async throws -> [TransitionRecord] {
        try notYet()
    }

    // MARK: Retention
    public func prunable(_ plan: RetentionPlan) async throws -> PruneCounts { try notYet() }
    public func prune(_ plan: RetentionPlan, from cursor: PruneCursor) async throws -> (
        removed: PruneCounts, next: PruneCursor
    ) { try notYet() }
}
