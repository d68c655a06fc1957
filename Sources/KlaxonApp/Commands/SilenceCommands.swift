import Foundation
import KlaxonCore
import KlaxonStore

/// `klaxon silence add|list|expire` once the command line is read: the command opens the store and
/// calls these, which write through `output`.
public enum SilenceCommands {
    /// What `silence add` needs from the store: silences, what fires, and the names it may match.
    public typealias AddStore = SilenceStore & AlertReads & StationReads & SeriesReads & TripStore

    /// A silence to add, checked before the store is opened (a wrong word is the error to report).
    public struct Request: Sendable {
        public var matchers: [Matcher]
        /// Seconds.
        public var duration: Int64
        public var comment: String
        public var author: String

        /// `--match`, `--for`, `--comment` and the author (`--author`, else the user).
        public init(match: [String], for text: String, comment: String, author: String) throws {
            guard !match.isEmpty else { throw UserError("give at least one --match KEY=VALUE") }
            // Stored text people read later in a terminal and on the site: no control characters,
            // and no author only the server may write (`slack:…` is someone a chat platform verified).
            if let problem = Silence.commentProblem(comment) { throw UserError("--comment: \(problem)") }
            if let problem = Silence.claimedAuthorProblem(author) { throw UserError("--author: \(problem)") }
            guard let d = DurationText.parse(text), d > 0 else {
                throw UserError("--for \"\(text)\" is not a duration like 2h")
            }
            matchers = try match.map { try Matcher.parse($0) }
            duration = d
            self.comment = comment
            self.author = author
        }
    }

    /// `silence add`: stores the silence from `now`, prints its id, end and matchers, then what it
    /// mutes now; a rule or station name nothing knows is a warning on standard error.
    public static func add(
        _ request: Request, store db: any AddStore, config: Config?, now: Int64, output: CommandOutput = .standard
    ) async throws -> Int32 {
        let silence: Silence
        do {
            silence = try Silence.make(
                matchers: request.matchers, starts: now, ends: now + request.duration, now: now,
                comment: request.comment, createdBy: request.author)
        } catch let e as SilenceError {
            throw UserError(e.message)
        }
        try await db.addSilence(silence, now: now)
        output.line(
            TerminalText.safe(
                "\(silence.id)  until \(Timestamp.format(silence.ends))  \(request.matchers.map(\.description).joined(separator: " "))"
            ))
        // Added; now say what it reaches: a mistyped name mutes nothing, and says so.
        let firing = try await SilenceReach.firing(db, limit: nil)
        let rules = silence.namesRule || silence.namesStation ? knownRules(config, output: output) : nil
        var ruleNames: Set<String>? = nil
        if silence.namesRule {
            // Without --config, the rules the store has alerts of.
            ruleNames = config == nil ? try await ruleNamesInStore(db) : rules.map { Set($0.map(\.name)) }
        }
        var stations: Set<String>? = nil
        if silence.namesStation {
            stations = try await SilenceReach.knownStations(
                db, firing: firing, listed: SilenceReach.listedStations(rules ?? []))
        }
        let reach = SilenceReach(silence, firing: firing, rules: ruleNames, stations: stations, now: now)
        output.line(reach.mutedText)
        for unknown in reach.unknown { output.error(TerminalText.safe("warning: \(unknown)")) }
        return 0
    }

    /// The rules of `--config`; nil without one, or when they do not load (said on stderr).
    static func knownRules(_ config: Config?, output: CommandOutput) -> [Rule]? {
        guard let config else { return nil }
        do {
            return try RuleLoader.load(paths: config.rules ?? ["Rules"])
        } catch {
            output.error("warning: rule names not checked: the rules did not load (klaxon check says why)")
            return nil
        }
    }

    /// The rules the store holds alert states of (nil when none, such as a new store: then
    /// nothing is checked).
    static func ruleNamesInStore(_ db: any AlertReads) async throws -> Set<String>? {
        let names = Set(try await db.alertStates().keys.map(\.rule))
        return names.isEmpty ? nil : names
    }

    /// One silence in `silence list --format json` (times ISO 8601).
    struct Row: Encodable {
        var id: String
        var matchers: [String]
        var starts: String
        var ends: String
        var created_by: String
        var comment: String
        var active: Bool
    }

    /// `silence list`: the silences that have not ended (`all`: every one), as text or JSON.
    public static func list(
        store db: any SilenceStore, all: Bool, json: Bool, now: Int64, output: CommandOutput = .standard
    ) async throws -> Int32 {
        let list = try await db.silences(now: now, includeExpired: all)
        if json {
            try output.json(
                list.map {
                    Row(
                        id: $0.id, matchers: $0.matchers.map(\.description), starts: Timestamp.format($0.starts),
                        ends: Timestamp.format($0.ends), created_by: $0.createdBy, comment: $0.comment,
                        active: $0.isActive(at: now))
                })
            return 0
        }
        if list.isEmpty { output.line("(no silences)") }
        for s in list {
            // Every part was stored from outside (API, chat, site, an older version): escaped.
            output.line(
                TerminalText.safe(
                    "\(s.id)  \(Timestamp.format(s.starts)) → \(Timestamp.format(s.ends))  \(s.matchers.map(\.description).joined(separator: " "))  by \(s.createdBy): \(s.comment)"
                ))
        }
        return 0
    }

    /// `silence expire`: ends the silence `id` (or a unique prefix) now.
    public static func expire(
        id: String, store db: any SilenceStore, now: Int64, output: CommandOutput = .standard
    ) async throws -> Int32 {
        switch try await db.expireSilence(id: id, now: now) {
        case .expired(let full):
            output.line("expired \(full)")
            return 0
        case .notFound:
            throw UserError("no active silence \(id)")
        case .ambiguous(let ids):
            throw UserError("\(id) names \(ids.count) silences; give more of the id: \(ids.joined(separator: ", "))")
        }
    }
}
