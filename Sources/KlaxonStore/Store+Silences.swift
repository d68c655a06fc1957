import Foundation
import GRDB
import KlaxonCore

/// A row of `silences`.
public struct SilenceRecord: Codable, Sendable, Equatable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "silences"
    public var id: String
    /// Matchers as text, one per line (`station=01646500`).
    public var matchers: String
    public var startsAt: Int64
    public var endsAt: Int64
    public var comment: String
    public var createdBy: String
    public var createdAt: Int64

    enum CodingKeys: String, CodingKey {
        case id, matchers
        case startsAt = "starts_at"
        case endsAt = "ends_at"
        case comment
        case createdBy = "created_by"
        case createdAt = "created_at"
    }

    public init(_ s: Silence, createdAt: Int64) {
        id = s.id
        matchers = s.matchers.map(\.description).joined(separator: "\n")
        startsAt = s.starts
        endsAt = s.ends
        comment = s.comment
        createdBy = s.createdBy
        self.createdAt = createdAt
    }

    public var silence: Silence? {
        // Not `try? parse` + compactMap: dropping a matcher that no longer parses would widen the silence.
        let parsed = matchers.split(separator: "\n").map { Matcher.parseStored(String($0)) }
        return Silence(id: id, matchers: parsed, starts: startsAt, ends: endsAt, comment: comment, createdBy: createdBy)
    }
}

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
            let target: String
            if ids.contains(id) {
                target = id
            } else if ids.count == 1 {
                target = ids[0]
            } else {
                return ids.isEmpty ? .notFound : .ambiguous(ids)
            }
            try db.execute(
                sql: "UPDATE silences SET starts_at = min(starts_at, ?1 - 1), ends_at = ?1 WHERE id = ?2",
                arguments: [now, target])
            return .expired(target)
        }
    }
}

extension SQLiteStore {
    /// `silences(now:)` for async callers (the dispatcher): the read suspends instead of blocking.
    public func activeSilences(now: Int64) async throws -> [Silence] {
        try await reader.read { db in
            try SilenceRecord.order(Column("starts_at")).filter(Column("ends_at") > now).fetchAll(db).compactMap(
                \.silence)
        }
    }
}

/// What `expireSilence` did.
public enum ExpireOutcome: Sendable, Equatable {
    /// The silence with this full id ended now.
    case expired(String)
    /// No active or scheduled silence has this id, or an id starting with it.
    case notFound
    /// The prefix names several silences (their full ids): nothing was changed.
    case ambiguous([String])
}
