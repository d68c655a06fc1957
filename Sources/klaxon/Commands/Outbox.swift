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
        /// The states `--state` accepts, in the words of its help and of its error.
        static let states = OutboxRecord.State.allCases.map(\.rawValue).joined(separator: ", ")

        @Option(help: ArgumentHelp("Only rows in this state: \(List.states).", valueName: "state"))
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

        struct Row: Encodable {
            var id: String
            var state: String
            var receiver: String
            var alert: String
            var attempts: Int
            var due: String
            var created: String
            var sent: String?
            var last_error: String?
        }

        func run() async throws {
            try await guarded {
                guard (1...1_000_000).contains(limit) else { throw UserError("--limit must be from 1 to 1000000") }
                // Checked before the store is opened: a wrong word is the error to report.
                let filter = try state.map { (word: String) throws -> OutboxRecord.State in
                    guard let s = OutboxRecord.State(rawValue: word) else {
                        throw UserError("--state must be one of \(Self.states) (not \"\(word)\")")
                    }
                    return s
                }
                return try await store.withStore(readOnly: true) { db in
                    let rows = try await db.outbox(state: filter, limit: limit)
                    if rows.count == limit {
                        printError("outbox list: the newest \(limit) rows; --limit shows more")
                    }
                    if format == .json {
                        try printJSON(
                            rows.map {
                                Row(
                                    id: $0.id, state: $0.state.rawValue, receiver: $0.receiver, alert: $0.alert,
                                    attempts: Int($0.attempts), due: Timestamp.format($0.dueAt / 1000),
                                    created: Timestamp.format($0.createdAt / 1000),
                                    sent: $0.sentAt.map { Timestamp.format($0 / 1000) }, last_error: $0.lastError)
                            })
                        return 0
                    }
                    if rows.isEmpty { print("(empty)") }
                    for r in rows {
                        let due = Timestamp.format(r.dueAt / 1000)
                        // last_error quotes what a receiver answered: hostile text, escaped.
                        print(
                            TerminalText.safe(
                                "\(r.id)  \(r.state.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0))  \(r.receiver)  \(r.alert)  attempts=\(r.attempts)  due=\(due)\(r.lastError.map { "  error=\($0)" } ?? "")"
                            ))
                    }
                    return 0
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
                    guard try await db.retryOutbox(id: id, now: nowMillis()) else {
                        throw UserError("no dead, dropped or muted outbox row \(id)")
                    }
                    print("queued \(id) again")
                    return 0
                }
            }
        }
    }
}
