import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonStore

/// `klaxon ack ID`: the ack the status site, the chat and the API make (`Store.ack`).
struct AckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ack",
        abstract: "Acknowledge a firing alert: no reminders or escalation until it resolves.",
        discussion: "ID is the number `klaxon alerts` shows (the alert's id for its episode, as in messages and chat).")

    @OptionGroup var store: StoreOptions

    @Option(help: "Who acks (default: the user running the command).")
    var by: String?

    @Argument(help: "The alert id (from `klaxon alerts`).")
    var id: String

    func run() async throws {
        try await guarded {
            let digits = id.hasPrefix("#") ? String(id.dropFirst()) : id
            guard digits.utf8.count <= 19, let number = Int64(digits), number > 0 else {
                throw ValidationError("the alert id is a positive number, like 42 (`klaxon alerts` lists them)")
            }
            let who = by ?? CurrentUser.name
            if let problem = Silence.claimedAuthorProblem(who) { throw ValidationError("--by: \(problem)") }
            return try await store.withStore { db in
                guard let acked = try await db.ackSayingWho(transitionID: number, by: who, at: nowSeconds()) else {
                    throw UserError("no firing alert has id \(number); `klaxon alerts` lists them")
                }
                // The first ack of an episode holds: a second one says who acked, not that it took.
                if let first = acked.earlier {
                    print(
                        TerminalText.safe(
                            "#\(number): \(acked.key.rule) at \(acked.key.station) was already acked by \(first.by) at \(Timestamp.format(first.at)); unchanged"
                        ))
                    return 0
                }
                print(
                    TerminalText.safe(
                        "acked #\(number): \(acked.key.rule) at \(acked.key.station) by \(who); no reminders or escalation until it resolves"
                    ))
                return 0
            }
        }
    }
}
