import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore
import Logging

struct DispatchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dispatch", abstract: "Deliver the outbox: send due notifications, with retries.")

    @OptionGroup var store: StoreOptions
    @OptionGroup var log: LogOptions

    @Flag(help: "Stop when nothing is left to send now or soon (waiting out retries up to --deadline).")
    var untilEmpty = false

    @Option(help: "With --until-empty: give up waiting after this long.")
    var deadline: String = "5m"

    @Option(
        help:
            "How long a claim lasts unless renewed (every third of it while a send is in flight); a dispatcher that dies on this host is taken over at once (default: delivery_lease in the config, else 30s)."
    )
    var lease: String?

    func run() async throws {
        let code: Int32
        do {
            let config = try requireConfig(store)
            code = try await store.withStore(config: config) { db in
                let logger = Logger(label: "klaxon.dispatch")
                var leaseMs: Int64? = nil
                if let lease {
                    guard let seconds = DurationText.parse(lease), seconds > 0 else {
                        throw ValidationError("--lease \"\(lease)\" is not a duration")
                    }
                    leaseMs = seconds * 1000
                }
                let dispatcher = try DeliveryWiring.dispatcher(
                    store: db, config: config, logger: logger, lease: leaseMs)
                // Reminders for alerts still firing (repeat_interval), then deliver.
                let rules = try RuleLoader.load(paths: config.rules ?? ["Rules"])
                let reminders = try await Repeats.enqueue(
                    store: db, rules: rules, routing: config.routing, now: nowMillis())
                if reminders > 0 { printError("dispatch: \(reminders) reminders queued (repeat_interval)") }
                let escalated = try await Escalations.enqueue(
                    store: db, rules: rules, routing: config.routing, now: nowMillis())
                if escalated > 0 { printError("dispatch: \(escalated) escalations queued (escalate_after)") }
                if untilEmpty {
                    guard let d = DurationText.parse(deadline) else {
                        throw ValidationError("--deadline \"\(deadline)\" is not a duration")
                    }
                    let p = try await dispatcher.runUntilEmpty(deadline: nowMillis() + d * 1000)
                    let counts = try await db.outboxCounts()
                    printError(
                        "dispatch: \(p.sent) sent, \(p.retried) retried, \(p.dead) dead, \(p.muted) muted, \(p.dropped) dropped, \(p.deferred) deferred\(p.folded > 0 ? ", \(p.folded) folded" : ""); \(counts[.pending, default: 0] + counts[.sending, default: 0]) still queued"
                    )
                    return 0
                } else {
                    try await dispatcher.run()
                    return 0
                }
            }
        } catch let e as DiagnosticsError {
            printError(e.description)
            code = 1
        } catch let e as ValidationError {
            printError("error: \(e.message)")
            code = ExitCode.validationFailure.rawValue
        } catch {
            printError("error: \(ErrorWords.describe(error))")
            code = 1
        }
        if code != 0 { throw ExitCode(code) }
    }
}
