import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore
import Logging

struct MigrateStoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate-store",
        abstract: "Copy a SQLite store into an empty PostgreSQL database, checked by each table's row count.",
        discussion: """
            Copies readings, stations and series, the ingest log and cursors, source state, alert states, \
            transitions, the outbox, silences, acks, quakes, trips and forecasts with their ids, then prints each \
            table's rows in both stores; exit status 1 if any count differs. Stop the daemon first. The copy is \
            not one transaction: after a failure, empty the database and run it again.
            """)

    @OptionGroup var log: LogOptions

    @Option(help: "The SQLite database to copy (opened read-only).")
    var from: String

    @Option(help: "The PostgreSQL database: postgres://USER@HOST:PORT/DATABASE (${NAME} from the environment).")
    var to: String

    func run() async throws {
        try await guarded {
            let environment = ProcessInfo.processInfo.environment
            let source = try StoreLocation.parse(from, environment: environment)
            let target = try StoreLocation.parse(to, environment: environment)
            var mismatched = 0
            _ = try await MigrateStore.run(from: source, to: target, logger: storeLogger) { count in
                if !count.matches { mismatched += 1 }
                print(
                    "\(count.table): \(count.source) → \(count.target)\(count.matches ? "" : "  MISMATCH")")
            }
            printError(
                mismatched == 0
                    ? "migrate-store: \(source) → \(target): every table's count matches"
                    : "migrate-store: \(mismatched) table\(mismatched == 1 ? "" : "s") differ")
            return mismatched == 0 ? 0 : 1
        }
    }
}
