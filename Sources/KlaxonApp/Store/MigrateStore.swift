import Foundation
import KlaxonPostgres
import KlaxonSQLite
import KlaxonStore
import Logging

/// `klaxon migrate-store`: copies a SQLite store into an empty PostgreSQL database, table by table
/// (`StoreTables.copied`: readings, stations and series, the ingest log and cursors, source state,
/// alert states, transitions, the outbox, silences, acks, quakes, trips, forecasts), with the same
/// ids, then compares each table's row count on both sides.
public enum MigrateStore {
    /// One table's rows in the source and in the target after the copy.
    public struct Count: Sendable {
        public var table: String
        public var source: Int
        public var target: Int
        public var matches: Bool { source == target }
    }

    /// Opens both stores and copies: `from` must be a SQLite file that exists (opened read-only), `to`
    /// a PostgreSQL database.
    public static func run(
        from: StoreLocation, to: StoreLocation, logger: Logger, copied: (Count) -> Void = { _ in }
    ) async throws -> [Count] {
        guard let path = from.sqlitePath else {
            throw UserError("--from must be a SQLite file: copying from PostgreSQL is not supported")
        }
        guard case .postgres(let configuration) = to else {
            throw UserError("--to must be a postgres:// URL: migrate-store copies a SQLite store to PostgreSQL")
        }
        guard FileManager.default.fileExists(atPath: path) else { throw UserError("no database at \(path)") }
        let source = try SQLiteStore.openReadOnly(path: path)
        return try await PostgresStore.withChecked(configuration, logger: logger) { target in
            try await run(from: source, to: target, copied: copied)
        }
    }

    /// Copies `source` into `target`, `page` rows per statement; `copied` is told each table as it
    /// is done. A target holding any row (but the defaults its migrations write) is refused. The copy
    /// is not one transaction: after a failure, empty the database and run it again.
    public static func run(
        from source: SQLiteStore, to target: PostgresStore, page: Int = 5_000, copied: (Count) -> Void = { _ in }
    ) async throws -> [Count] {
        for table in StoreTables.copied where !["meta", "metric_counts"].contains(table) {
            if try await target.rowCount(table: table) > 0 {
                throw UserError(
                    "\(target.path) is not empty (its table \(table) has rows): migrate-store copies into an empty database"
                )
            }
        }
        var counts: [Count] = []
        for table in StoreTables.copied {
            // The target's own defaults (meta) and the counts its triggers kept while rows were
            // copied (metric_counts) give way to the source's.
            if ["meta", "metric_counts"].contains(table) { try await target.clear(table: table) }
            try await source.forEachPage(ofTable: table, page: page) { columns, json, _ in
                try await target.insertRows(table: table, columns: columns, json: json)
            }
            let count = Count(
                table: table, source: try await source.rowCount(table: table),
                target: try await target.rowCount(table: table))
            copied(count)
            counts.append(count)
        }
        try await target.advanceIdentities()
        return counts
    }
}
