import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct OutboxCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "outbox", abstract: "Inspect and retry queued notifications.",
        subcommands: [List.self, Retry.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List outbox rows, newest first.")
        @OptionGroup var store: StoreOptions
        @Option(help: ArgumentHelp("Only rows in this state: \(OutboxCommands.states).", valueName: "state"))
        var state: String?
        @Option(help: "At most this many rows, newest first (1 to 1000000).")
        var limit: Int = 200
        @Option(
            help: ArgumentHelp(
                "Output format: text or json.",
                discussion:
                    "json: an array of {\"id\", \"state\", \"receiver\", \"alert\", \"attempts\", \"due\", \"created\", \"sent\", \"last_error\"} (times ISO 8601)."
            ))
        var format: OutputFormat = .text

        func run() async throws {
            try await guarded {
                // Checked before the store is opened: a wrong word is the error to report.
                let filter = try OutboxCommands.filter(state: state, limit: limit)
                return try await store.withStore(readOnly: true) { db in
                    try await OutboxCommands.list(store: db, state: filter, limit: limit, json: format == .json)
                }
            }
        }
    }

    struct Retry: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Queue a dead, dropped or muted row again (same id).")
        @OptionGroup var store: StoreOptions
        @Argument(help: "The outbox row id.")
        var id: String

        func run() async throws {
            try await guarded {
                return try await store.withStore { db in
                    try await OutboxCommands.retry(id: id, store: db, now: nowMillis())
                }
            }
        }
    }
}
