import Foundation
import KlaxonCore

/// Errors the store reports to people.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    private enum Code: Sendable {
        case cannotOpen, readOnly, missingFile, databaseFile, noRoom
    }

    private let code: Code
    public let description: String
    /// For a database file deleted or replaced under the process: what was found.
    public private(set) var fileCheck: StoreFileCheck? = nil

    /// A command that expects a database found none at the path (and created none).
    public var isMissingFile: Bool { code == .missingFile }

    /// No room to write the database (a full disk, a file-size limit).
    public var isNoRoom: Bool { code == .noRoom }

    package static func noRoom(_ problem: String) -> StoreError {
        StoreError(code: .noRoom, description: "the database could not be written: \(problem)")
    }

    public static func missingFile(path: String) -> StoreError {
        StoreError(
            code: .missingFile,
            description:
                "cannot open database \(path): no such file; start `klaxon run` or `klaxon ingest` first (they "
                + "create it), or check --db/--config")
    }

    package static func databaseFile(_ check: StoreFileCheck) -> StoreError {
        var e = StoreError(code: .databaseFile, description: check.message ?? "the database file changed")
        e.fileCheck = check
        return e
    }

    public static func cannotOpen(path: String, reason: String) -> StoreError {
        StoreError(code: .cannotOpen, description: "cannot open database \(path): \(reason)")
    }

    public static func readOnly(path: String) -> StoreError {
        StoreError(code: .readOnly, description: "database \(path) is open read-only")
    }
}
