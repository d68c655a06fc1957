import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore

/// `klaxon watches [-o json]`, `klaxon watches remove ID`: people's watches (issue 43).
struct WatchesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "watches", abstract: "List people's watches, or remove one.",
        subcommands: [List.self, Remove.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every watch: its id, owner, number, what it watches and where it posts.",
            discussion:
                "With -o json: an array of objects with the fields id, number, owner, owner_name, kind, what, subject, destination, rule, created."
        )
        @OptionGroup var store: StoreOptions
        @Option(
            name: [.customShort("o"), .customLong("output"), .customLong("format")],
            help: "Output format: text or json.")
        var output: OutputFormat = .text

        func run() async throws {
            try await guarded {
                try await store.withStore(readOnly: true) { db in
                    try await WatchCommands.list(store: db, json: output == .json)
                }
            }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a watch by its id (its firing alerts resolve at the daemon's next evaluation).")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The watch's id (the first column of `klaxon watches`).")
        var id: Int64

        func run() async throws {
            try await guarded {
                try await store.withStore { db in try await WatchCommands.remove(id: id, store: db) }
            }
        }
    }
}
