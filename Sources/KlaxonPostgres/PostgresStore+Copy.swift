import Foundation
import KlaxonStore
import PostgresNIO

extension PostgresStore {
    /// How many rows `table` (one of `StoreTables.copied`) holds.
    public func rowCount(table: String) async throws -> Int {
        precondition(StoreTables.copied.contains(table))
        return Int(try await scalar("SELECT count(*) FROM \(unescaped: table)", as: Int64.self) ?? 0)
    }

    /// Inserts rows given as a JSON array of objects (column → value, as `SQLiteStore.forEachPage`
    /// reads them) into `table`, in one statement; returns how many it inserted. Only `columns` are
    /// written; the server converts each value to its column's type (0/1 to a boolean, text to a
    /// double) and its keys and checks apply. A column this table lacks is an error, not dropped data.
    @discardableResult
    public func insertRows(table: String, columns: [String], json: String) async throws -> Int {
        precondition(StoreTables.copied.contains(table))
        let known = Set(
            try await rows(
                "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = \(table)"
            ).map { try $0[0].decode(String.self) })
        if let missing = columns.first(where: { !known.contains($0) }) {
            throw PostgresStoreError.server(path: path, message: "table \(table) has no column \(missing)")
        }
        let list = columns.map { "\"\($0)\"" }.joined(separator: ", ")
        return try await execute(
            """
            INSERT INTO \(unescaped: table) (\(unescaped: list))
            SELECT \(unescaped: list) FROM jsonb_populate_recordset(NULL::\(unescaped: table), \(json)::jsonb)
            RETURNING 1
            """)
    }

    /// Empties the tables `klaxon migrate-store` copies (`metric_counts`, which triggers keep while
    /// the rows are copied, before it is copied as it was).
    public func clear(table: String) async throws {
        precondition(StoreTables.copied.contains(table))
        try await execute("DELETE FROM \(unescaped: table)")
    }

    /// Moves each identity column's sequence past the largest value copied in, so new rows do not
    /// collide with copied ones.
    public func advanceIdentities() async throws {
        let identities = try await rows(
            """
            SELECT table_name::text, column_name::text FROM information_schema.columns
            WHERE table_schema = current_schema() AND is_identity = 'YES'
            """
        ).map { (try $0[0].decode(String.self), try $0[1].decode(String.self)) }
        for (table, column) in identities {
            try await execute(
                """
                SELECT setval(pg_get_serial_sequence(\(table), \(column)),
                    greatest((SELECT max(\(unescaped: "\"\(column)\"")) FROM \(unescaped: "\"\(table)\"")), 1),
                    (SELECT max(\(unescaped: "\"\(column)\"")) FROM \(unescaped: "\"\(table)\"")) IS NOT NULL)
                """)
        }
    }
}
