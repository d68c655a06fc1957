import Foundation
import GRDB
import KlaxonCore
import KlaxonStore

/// SQLite's result codes in words for people, and how a request that met one is answered.
extension DatabaseError: BackendStoreError {
    public var storeFailure: StoreFailure? {
        let e = self
        let sqlite = e.message.map { "SQLite: \($0)" } ?? "SQLite error \(e.extendedResultCode.rawValue)"
        switch e.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreFailure(kind: .busy, words: "the database is busy (another process holds it) (\(sqlite))")
        case .SQLITE_FULL:
            return StoreFailure(kind: .full, words: "the database could not be written: disk full (\(sqlite))")
        case .SQLITE_IOERR:
            // A write past RLIMIT_FSIZE fails with EFBIG, which SQLite reports as an I/O error.
            if let limit = StoreFailure.fileSizeLimit() {
                return StoreFailure(
                    kind: .full,
                    words:
                        "the database could not be written: an I/O error, likely the file-size limit of "
                        + "\(limit) bytes (ulimit -f, LimitFSIZE) or a full disk (\(sqlite))")
            }
            return StoreFailure(
                kind: .failing,
                words: "the database could not be written or read: an I/O error (a full disk or a failing one) "
                    + "(\(sqlite))")
        case .SQLITE_READONLY:
            return StoreFailure(
                kind: .failing,
                words: "the database is read-only (its file's permissions, or a read-only file system) (\(sqlite))")
        case .SQLITE_CANTOPEN:
            return StoreFailure(
                kind: .failing,
                words: "the database file cannot be opened (deleted, moved, or its folder's permissions) (\(sqlite))")
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return StoreFailure(kind: .failing, words: "the database file is damaged or not a database (\(sqlite))")
        case .SQLITE_PERM, .SQLITE_AUTH:
            return StoreFailure(kind: .failing, words: "the database refused access (\(sqlite))")
        case .SQLITE_NOMEM:
            return StoreFailure(kind: .failing, words: "the database ran out of memory (\(sqlite))")
        default:
            return nil
        }
    }
}

/// SQLite's errors in words (`ErrorWords.describe`): the store's words for a failing database,
/// else SQLite's own message with its result code (`SQLite error 19: UNIQUE constraint failed: …`).
extension GRDB.DatabaseError: KlaxonCore.WordedError {
    public var words: String {
        if let failure = storeFailure { return failure.words }
        let code = "SQLite error \(extendedResultCode.rawValue)"
        return message.map { "\(code): \($0)" } ?? code
    }
}
