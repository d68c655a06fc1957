import Foundation
import KlaxonCore

/// A row of `silences`.
public struct SilenceRecord: Codable, Sendable, Equatable {
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

/// What `expireSilence` did.
public enum ExpireOutcome: Sendable, Equatable {
    /// The silence with this full id ended now.
    case expired(String)
    /// No active or scheduled silence has this id, or an id starting with it.
    case notFound
    /// The prefix names several silences (their full ids): nothing was changed.
    case ambiguous([String])
}

extension ExpireOutcome {
    /// The silence an id or id prefix names among `ids` (the unended silences it prefixes): the one
    /// with exactly this id, else the only one; otherwise what `expireSilence` answers.
    public static func target(_ id: String, among ids: [String]) -> (id: String?, otherwise: ExpireOutcome) {
        if ids.contains(id) { return (id, .expired(id)) }
        if ids.count == 1 { return (ids[0], .expired(ids[0])) }
        return (nil, ids.isEmpty ? .notFound : .ambiguous(ids))
    }
}
