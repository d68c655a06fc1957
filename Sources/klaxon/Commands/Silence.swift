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
            let author = self.author ?? CurrentUser.name
            try await guarded {
                let request = try SilenceCommands.Request(
                    match: match, for: self.for, comment: comment, author: author)
                let config = try store.loadConfig()
                return try await store.withStore(config: config) { db in
                    try await SilenceCommands.add(request, store: db, config: config, now: nowSeconds())
                }
            }
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

        func run() async throws {
            try await guarded {
                return try await store.withStore(readOnly: true) { db in
                    try await SilenceCommands.list(store: db, all: all, json: format == .json, now: nowSeconds())
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
                    try await SilenceCommands.expire(id: id, store: db, now: nowSeconds())
                }
            }
        }
    }
}
