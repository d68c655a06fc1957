import KlaxonCore
import KlaxonStore

/// `Store` requirements the PostgreSQL store does not implement yet: each throws
/// `PostgresStoreError.notImplemented` naming itself, so a caller learns which one it met.
extension PostgresStore {
    private func notYet<T>(_ requirement: String = #function) throws -> T {
        throw PostgresStoreError.notImplemented(requirement)
    }

    // MARK: Retention
    public func prunable(_ plan: RetentionPlan) async throws -> PruneCounts { try notYet() }
    public func prune(_ plan: RetentionPlan, from cursor: PruneCursor) async throws -> (
        removed: PruneCounts, next: PruneCursor
    ) { try notYet() }
}
