import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

extension SQLiteStore {
    /// How many rows `table` (one of `StoreTables.copied`) holds.
    public func rowCount(table: String) async throws -> Int {
        precondition(StoreTables.copied.contains(table))
        return try await reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0 }
    }

    /// Every row of `table` (one of `StoreTables.copied`), `page` rows at a time in primary-key
    /// order: its column names and the rows as a JSON array of objects (column → value), each page
    /// read in a transaction of its own.
    public func forEachPage(
        ofTable table: String, page: Int,
        _ body: (_ columns: [String], _ json: String, _ count: Int) async throws -> Void
    ) async throws {
        precondition(StoreTables.copied.contains(table))
        let info = try await reader.read { db in
            try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))").map {
                (name: $0["name"] as String, pk: $0["pk"] as Int)
            }
        }
        let columns = info.map(\.name)
        let primary = info.filter { $0.pk > 0 }.sorted { $0.pk < $1.pk }.map(\.name)
        let key = primary.isEmpty ? ["rowid"] : primary
        let selected = columns.map { "\"\($0)\"" }.joined(separator: ", ")
        let keyList = key.joined(separator: ", ")
        var after: [DatabaseValue]? = nil
        while true {
            let from = after
            let (json, count, last) = try await reader.read { db -> (String, Int, [DatabaseValue]?) in
                var sql = "SELECT \(selected), \(keyList) FROM \(table)"
                var arguments = StatementArguments()
                if let after = from {
                    let marks = Array(repeating: "?", count: key.count).joined(separator: ", ")
                    sql += " WHERE (\(keyList)) > (\(marks))"
                    arguments = StatementArguments(after.map { $0 as (any DatabaseValueConvertible)? })
                }
                sql += " ORDER BY \(keyList) LIMIT \(page)"
                let rows = try Row.fetchAll(db, sql: sql, arguments: arguments)
                let json = "[" + rows.map { Self.jsonObject($0, columns: columns) }.joined(separator: ",") + "]"
                let last = rows.last.map { row in (0..<key.count).map { row[columns.count + $0] as DatabaseValue } }
                return (json, rows.count, last)
            }
            if count == 0 { return }
            try await body(columns, json, count)
            if count < page { return }
            after = last
        }
    }

    /// A row as a JSON object, column → value. Reals are written in Swift's shortest form that reads
    /// back to the same double (SQLite's own JSON keeps 15 digits); non-finite ones as strings
    /// (`Infinity`, as PostgreSQL reads them).
    static func jsonObject(_ row: Row, columns: [String]) -> String {
        var out = "{"
        for (i, column) in columns.enumerated() {
            if i > 0 { out += "," }
            out += JSONText.string(column) + ":"
            switch (row[i] as DatabaseValue).storage {
            case .null: out += "null"
            case .int64(let v): out += String(v)
            case .double(let v):
                out += v.isFinite ? "\(v)" : JSONText.string(v.isNaN ? "NaN" : v > 0 ? "Infinity" : "-Infinity")
            case .string(let v): out += JSONText.string(v)
            case .blob(let v): out += JSONText.string(v.base64EncodedString())
            }
        }
        return out + "}"
    }
}
