import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    public func addSilence(_ s: Silence, now: Int64) async throws {
        try await requireWriter().write { db in try SilenceRecord(s, createdAt: now).insert(db) }
    }

    /// Silences that have not ended by `now` (active or scheduled), or all with `includeExpired`.
    public func silences(now: Int64, includeExpired: Bool) async throws -> [Silence] {
        try await reader.read { db in
            var request = SilenceRecord.order(Column("starts_at"))
            if !includeExpired { request = request.filter(Column("ends_at") > now) }
            return try request.fetchAll(db).compactMap(\.silence)
        }
    }

    /// Ends a silence now. `id` is a full id, or a prefix taken literally that names exactly one
    /// silence that has not ended; an ambiguous prefix changes nothing.
    public func expireSilence(id: String, now: Int64) async throws -> ExpireOutcome {
        guard !id.isEmpty else { return .notFound }
        return try await requireWriter().write { db in
            // `instr(id, ?) = 1` is a literal prefix test: no LIKE wildcards (`_`, `%`) to escape.
            let ids = try String.fetchAll(
                db, sql: "SELECT id FROM silences WHERE ends_at > ? AND instr(id, ?) = 1 ORDER BY id",
                arguments: [now, id])
            let found = ExpireOutcome.target(id, among: ids)
            guard let target = found.id else { return found.otherwise }
            try db.execute(
                sql: "UPDATE silences SET starts_at = min(starts_at, ?1 - 1), ends_at = ?1 WHERE id = ?2",
                arguments: [now, target])
            return .expired(target)
        }
    }

    public func replaceSilence(id: String, with new: Silence, now: Int64) async throws -> ReplaceOutcome {
        try await requireWriter().write { db in
            guard let ends = try Int64.fetchOne(db, sql: "SELECT ends_at FROM silences WHERE id = ?", arguments: [id])
            else { return .notFound }
            guard ends > now else { return .ended }
            try db.execute(
                sql: "UPDATE silences SET starts_at = min(starts_at, ?1 - 1), ends_at = ?1 WHERE id = ?2",
                arguments: [now, id])
            try SilenceRecord(new, createdAt: now).insert(db)
            return .replaced
        }
    }
}
