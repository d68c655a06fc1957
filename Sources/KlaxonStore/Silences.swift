import Foundation
import KlaxonCore

/// A row of `silences`.
public struct SilenceRecord: Codable, Sendable, Equatable {
    public var id: String
    /// The matchers as Alertmanager keeps them, each its name, operator and value, as a JSON array:
    /// `[{"name":"station","type":"=","value":"~.*"}]` (`StoredMatcher`). Rows written before
    /// (SQLite v17-silence-matchers, PostgreSQL v6-silence-matchers) held `name=value` lines, which
    /// cannot say whether `station=~.*` is a regex or the value `~.*`; the migrations rewrite them
    /// (`structured(legacy:createdBy:)`), and a row an older version writes later is read the same way.
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
        matchers = Self.encode(s.matchers)
        startsAt = s.starts
        endsAt = s.ends
        comment = s.comment
        createdBy = s.createdBy
        self.createdAt = createdAt
    }

    public var silence: Silence? {
        Silence(
            id: id, matchers: Self.decode(matchers, createdBy: createdBy), starts: startsAt, ends: endsAt,
            comment: comment, createdBy: createdBy)
    }

    /// One stored matcher: Alertmanager's `{name, type, value}` (`type` is `=`, `!=`, `=~` or `!~`).
    public struct StoredMatcher: Codable, Sendable, Equatable {
        public var name: String
        public var type: String
        public var value: String
    }

    /// The `matchers` column for these matchers.
    public static func encode(_ matchers: [Matcher]) -> String {
        let stored = matchers.map { StoredMatcher(name: $0.name, type: $0.op.rawValue, value: $0.value) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings cannot fail.
        return String(decoding: (try? encoder.encode(stored)) ?? Data("[]".utf8), as: UTF8.self)
    }

    /// The matchers a `matchers` column holds: the JSON array, or the lines of an older row. Never
    /// drops one: a matcher that cannot be read matches nothing, so the silence mutes less, never more.
    public static func decode(_ text: String, createdBy: String) -> [Matcher] {
        guard text.hasPrefix("[") else { return legacy(text, createdBy: createdBy) }
        guard let stored = try? JSONDecoder().decode([StoredMatcher].self, from: Data(text.utf8)) else {
            return [.unusable("the stored matchers are not a JSON array of {name, type, value}")]
        }
        if stored.isEmpty { return [.unusable("no stored matchers")] }
        return stored.map { Matcher.stored(name: $0.name, type: $0.type, value: $0.value) }
    }

    /// The authors whose silences could only hold equality matchers, each written `name=value`
    /// with the value as given: the chat command and buttons (`slack:`, `mattermost:`) and the status
    /// site (`web:`) make only `rule=` and `station=` (`Silence.forAlert`), and no client may claim
    /// these prefixes (`Silence.claimedAuthorProblem`).
    static let equalityOnlyAuthors = ["slack:", "mattermost:", "web:"]

    /// The matchers of an older row (`name=value` lines). A line from the chat or the site is an
    /// equality on everything after the first `=`, as it was made (`rule=~.*` is the rule named
    /// `~.*`, `station="S2"` the station `"S2"`); any other is read as before (`Matcher.parseStored`).
    static func legacy(_ text: String, createdBy: String) -> [Matcher] {
        let equalityOnly = equalityOnlyAuthors.contains { createdBy.hasPrefix($0) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        if lines.allSatisfy(\.isEmpty) { return [.unusable("no stored matchers")] }
        return lines.filter { !$0.isEmpty }.map { line in
            if equalityOnly, let eq = line.firstIndex(of: "="), ["rule", "station"].contains(line[..<eq]) {
                return Matcher.stored(
                    name: String(line[..<eq]), type: "=", value: String(line[line.index(after: eq)...]))
            }
            return Matcher.parseStored(String(line))
        }
    }

    /// An older row's `matchers` rewritten as the JSON array, meaning what `legacy` reads; nil when
    /// it is JSON already. The migrations' one step.
    public static func structured(legacy text: String, createdBy: String) -> String? {
        guard !text.hasPrefix("[") else { return nil }
        return encode(legacy(text, createdBy: createdBy))
    }
}

/// What `replaceSilence` did.
public enum ReplaceOutcome: Sendable, Equatable {
    /// The old silence ended now and the new one was added, in one transaction.
    case replaced
    /// No silence has this id: nothing was changed.
    case notFound
    /// The old silence had already ended (expired, or replaced by another update): nothing was changed.
    case ended
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
