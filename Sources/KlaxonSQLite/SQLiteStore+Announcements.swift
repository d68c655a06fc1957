import Foundation
import GRDB
import KlaxonStore

/// What an event rule (quake, trip-packing) last announced about one thing, kept as JSON in its
/// table (`quake_announcements`, `trip_announcements`) under the rule and the thing's key columns.
enum Announcements {
    /// The announcement (a rule's JSON) stored under `key` (column, value pairs), or nil.
    static func load(_ db: Database, table: String, key: [(column: String, value: String)]) throws -> String? {
        let condition = key.map { "\($0.column) = ?" }.joined(separator: " AND ")
        return try String.fetchOne(
            db, sql: "SELECT announced FROM \(table) WHERE \(condition)",
            arguments: StatementArguments(key.map(\.value)))
    }

    /// The announcements stored under each of `keys`, in order (an event round's `wanted`).
    static func load(_ db: Database, table: String, _ keys: [[(column: String, value: String)]]) throws -> [String?] {
        try keys.map { try load(db, table: table, key: $0) }
    }

    /// Stores `json` under `key`, replacing what was there.
    static func save(_ json: String, _ db: Database, table: String, key: [(column: String, value: String)]) throws {
        let columns = key.map(\.column).joined(separator: ", ")
        let marks = Array(repeating: "?", count: key.count + 1).joined(separator: ", ")
        try db.execute(
            sql: """
                INSERT INTO \(table) (\(columns), announced) VALUES (\(marks))
                ON CONFLICT (\(columns)) DO UPDATE SET announced = excluded.announced
                """, arguments: StatementArguments(key.map(\.value) + [json]))
    }
}
