import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct SilenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "silence", abstract: "Mute alerts for a while.", subcommands: [Add.self, List.self, Expire.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a silence.")
        @OptionGroup var store: StoreOptions
        @Option(
            name: .long, parsing: .upToNextOption,
            help: "Matchers: KEY=VALUE, KEY!=VALUE, KEY=~REGEX (rule, station, metric, severity, level, labels).")
        var match: [String] = []
        @Option(name: .long, help: "How long, like 2h or 3d.")
        var `for`: String
        @Option(help: "Why.")
        var comment: String
        @Option(
            help: ArgumentHelp(
                "Who (default: the user running the command).",
                discussion:
                    "web:, slack:, mattermost: and api: are for identities the server verified: a name with one is refused."
            ))
        var author: String?

        func run() async throws {
            let author =
                self.author ?? CurrentUser.name
            try await guarded {
                guard !match.isEmpty else { throw UserError("give at least one --match KEY=VALUE") }
                // Stored text people read later in a terminal and on the site: no control characters,
                // and no author only the server may write (`slack:…` is someone a chat platform verified).
                if let problem = Silence.commentProblem(comment) { throw UserError("--comment: \(problem)") }
                if let problem = Silence.claimedAuthorProblem(author) { throw UserError("--author: \(problem)") }
                guard let d = DurationText.parse(self.for), d > 0 else {
                    throw UserError("--for \"\(self.for)\" is not a duration like 2h")
                }
                let matchers = try match.map { try Matcher.parse($0) }
                let config = try store.loadConfig()
                return try await store.withStore(config: config) { db in
                    let now = nowSeconds()
                    let silence: Silence
                    do {
                        silence = try Silence.make(
                            matchers: matchers, starts: now, ends: now + d, now: now, comment: comment,
                            createdBy: author)
                    } catch let e as SilenceError {
                        throw UserError(e.message)
                    }
                    try await db.addSilence(silence, now: now)
                    print(
                        TerminalText.safe(
                            "\(silence.id)  until \(Timestamp.format(silence.ends))  \(matchers.map(\.description).joined(separator: " "))"
                        ))
                    // Added; now say what it reaches: a mistyped name mutes nothing, and says so.
                    let firing = try await SilenceReach.firing(db, limit: nil)
                    let rules = silence.namesRule || silence.namesStation ? knownRules(config) : nil
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
                    print(reach.mutedText)
                    for unknown in reach.unknown { printError(TerminalText.safe("warning: \(unknown)")) }
                    return 0
                }
            }
        }

        /// The rules of `--config`; nil without one, or when they do not load (said on stderr).
        func knownRules(_ config: Config?) -> [Rule]? {
            guard let config else { return nil }
            do {
                return try loadRules(config.rules ?? ["Rules"])
            } catch {
                printError("warning: rule names not checked: the rules did not load (klaxon check says why)")
                return nil
            }
        }

        /// The rules the store holds alert states of (nil when none, such as a new store: then
        /// nothing is checked).
        func ruleNamesInStore(_ db: any Store) async throws -> Set<String>? {
            let names = Set(try await db.alertStates().keys.map(\.rule))
            return names.isEmpty ? nil : names
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List silences that have not ended.")
        @OptionGroup var store: StoreOptions
        @Flag(help: "Include ended silences.")
        var all = false
        @Option(
            help: ArgumentHelp(
                "Output format: text or json.",
                discussion:
                    "json: an array of {\"id\", \"matchers\", \"starts\", \"ends\", \"created_by\", \"comment\", \"active\"} (times ISO 8601)."
            ))
        var format: OutputFormat = .text

        struct Row: Encodable {
            var id: String
            var matchers: [String]
            var starts: String
            var ends: String
            var created_by: String
            var comment: String
            var active: Bool
        }

        func run() async throws {
            try await guarded {
                return try await store.withStore(readOnly: true) { db in
                    let now = nowSeconds()
                    let list = try await db.silences(now: now, includeExpired: all)
                    if format == .json {
                        try printJSON(
                            list.map {
                                Row(
                                    id: $0.id, matchers: $0.matchers.map(\.description),
                                    starts: Timestamp.format($0.starts),
                                    ends: Timestamp.format($0.ends), created_by: $0.createdBy, comment: $0.comment,
                                    active: $0.isActive(at: now))
                            })
                        return 0
                    }
                    if list.isEmpty { print("(no silences)") }
                    for s in list {
                        // Every part was stored from outside (API, chat, site, an older version): escaped.
                        print(
                            TerminalText.safe(
                                "\(s.id)  \(Timestamp.format(s.starts)) → \(Timestamp.format(s.ends))  \(s.matchers.map(\.description).joined(separator: " "))  by \(s.createdBy): \(s.comment)"
                            ))
                    }
                    return 0
                }
            }
        }
    }

    struct Expire: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "End a silence now.")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The silence id (or a unique prefix).")
        var id: String

        func run() async throws {
            try await guarded {
                return try await store.withStore { db in
                    switch try await db.expireSilence(id: id, now: nowSeconds()) {
                    case .expired(let full):
                        print("expired \(full)")
                        return 0
                    case .notFound:
                        throw UserError("no active silence \(id)")
                    case .ambiguous(let ids):
                        throw UserError(
                            "\(id) names \(ids.count) silences; give more of the id: \(ids.joined(separator: ", "))")
                    }
                }
            }
        }
    }
}
