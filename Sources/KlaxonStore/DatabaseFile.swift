import Foundation
import GRDB
import KlaxonCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Whether the database file a store opened is still the file at its path. A running daemon keeps
/// its file open: after `rm klaxon.sqlite*` it would go on writing to a deleted inode (lost at the
/// next restart), and after a new file is moved into place it would write to the old one while every
/// other command reads the new one.
public enum StoreFileState: String, Sendable {
    case ok
    /// Nothing at the path any more (deleted or moved away), or its write-ahead log was deleted.
    case deleted
    /// Another file is at the path now.
    case replaced
}

/// What a check found: the state and, when it is not ok, words for people.
public struct StoreFileCheck: Sendable, Equatable {
    public var state: StoreFileState
    public var message: String?

    public static let ok = StoreFileCheck(state: .ok, message: nil)
}

/// The (device, inode) of a database file and of its write-ahead log when the store opened them,
/// checked against what the paths name now: one `stat` per file, a few microseconds.
final class DatabaseFileIdentity: Sendable {
    /// The absolute path (the process's working directory could change).
    let path: String
    private let identity = Mutex<(main: FileID, wal: FileID?)?>(nil)

    struct FileID: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    init(path: String) {
        self.path = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    static func id(_ path: String) -> (FileID?, errno: Int32) {
        var st = stat()
        guard stat(path, &st) == 0 else { return (nil, errno) }
        return (FileID(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)), 0)
    }

    /// Remembers the files the paths name now (call once the store has opened them).
    func capture() {
        guard let main = Self.id(path).0 else { return }
        identity.withLock { $0 = (main, Self.id(path + "-wal").0) }
    }

    /// The file at the path is still the one opened. Blocking (a `stat`): call it off the pool.
    func check() -> StoreFileCheck {
        guard let opened = identity.withLock({ $0 }) else { return .ok }
        let (main, mainErrno) = Self.id(path)
        guard let main else {
            // Only a missing file is a verdict; another error (a permission changed) says nothing.
            guard mainErrno == ENOENT || mainErrno == ENOTDIR else { return .ok }
            return StoreFileCheck(
                state: .deleted,
                message:
                    "the database file \(path) was deleted or moved away while klaxon runs: what it writes now "
                    + "would be lost at the next restart. Stop klaxon, put the file back or start afresh, "
                    + "and start it again")
        }
        if main != opened.main {
            return StoreFileCheck(
                state: .replaced,
                message:
                    "the database file \(path) was replaced by another file while klaxon runs: it would go on "
                    + "writing to the old one. Restart klaxon to use the new file")
        }
        let (wal, walErrno) = Self.id(path + "-wal")
        if opened.wal == nil, let wal {
            // Made after the store opened (SQLite makes it at the first write): remember it now.
            identity.withLock { $0?.wal = wal }
        } else if opened.wal != nil {
            // While the store is open SQLite never deletes its log: gone, or another file, it was deleted.
            if (wal == nil && walErrno == ENOENT) || (wal != nil && wal != opened.wal) {
                return StoreFileCheck(
                    state: .deleted,
                    message:
                        "the database's write-ahead log \(path)-wal was deleted while klaxon runs: what it "
                        + "writes now would be lost, and another process could corrupt the database. Stop "
                        + "klaxon and check the database")
            }
        }
        return .ok
    }
}

/// Refuses every commit on the writing connection once its file is no longer the one at the path:
/// the write fails with the reason (and is rolled back) instead of landing in a deleted inode.
final class DatabaseFileGuard: TransactionObserver, @unchecked Sendable {
    let file: DatabaseFileIdentity

    init(file: DatabaseFileIdentity) { self.file = file }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool { false }
    func databaseDidChange(with event: DatabaseEvent) {}
    func databaseWillCommit() throws {
        let c = file.check()
        if c.state != .ok { throw StoreError.databaseFile(c) }
    }
    func databaseDidCommit(_ db: Database) {}
    func databaseDidRollback(_ db: Database) {}
}

extension SQLiteStore {
    /// Whether the database file is still the one this store opened. Blocking (`stat`): off the pool.
    public func storeFile() -> StoreFileCheck { file?.check() ?? .ok }

    /// Whether writes work again after a failure: room first (a tiny write may still fit in the
    /// write-ahead log's existing space while a push of any size fails), then a small real write (one
    /// row of `meta`).
    public func probeWrite() async throws {
        let writer = try requireWriter()
        let path = file?.path ?? self.path
        if let problem = try await offPool({ StoreFailure.roomProblem(path: path) }) {
            throw StoreError.noRoom(problem)
        }
        let now = Int64(Date().timeIntervalSince1970)
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO meta (key, value) VALUES ('write_probe', ?)
                    ON CONFLICT (key) DO UPDATE SET value = excluded.value
                    """, arguments: [String(now)])
        }
    }
}

/// The defaults for stores with no file of their own (PostgreSQL).
extension Store {
    public func storeFile() -> StoreFileCheck { .ok }
    public func probeWrite() async throws {}
}

/// Why a store call failed, in words for people, and how an HTTP request that met it is answered.
public struct StoreFailure: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Another connection holds the lock (SQLITE_BUSY, SQLITE_LOCKED): it passes.
        case busy
        /// No room: a full disk (SQLITE_FULL), or a write cut short by a file-size limit.
        case full
        /// The database file was deleted or replaced under the process.
        case fileGone
        /// Other failures of the database itself: I/O errors, a read-only or unopenable file, corruption.
        case failing
    }

    public var kind: Kind
    /// Clear words, with SQLite's own message after them.
    public var words: String

    /// nil for errors that are not the database's (a bad request, a programming error).
    public static func classify(_ error: any Error) -> StoreFailure? {
        if let e = error as? StoreError {
            if let c = e.fileCheck { return StoreFailure(kind: .fileGone, words: c.message ?? e.description) }
            if e.isNoRoom { return StoreFailure(kind: .full, words: e.description) }
            return nil
        }
        guard let e = error as? DatabaseError else { return nil }
        let sqlite = e.message.map { "SQLite: \($0)" } ?? "SQLite error \(e.extendedResultCode.rawValue)"
        switch e.resultCode {
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return StoreFailure(kind: .busy, words: "the database is busy (another process holds it) (\(sqlite))")
        case .SQLITE_FULL:
            return StoreFailure(kind: .full, words: "the database could not be written: disk full (\(sqlite))")
        case .SQLITE_IOERR:
            // A write past RLIMIT_FSIZE fails with EFBIG, which SQLite reports as an I/O error.
            if let limit = fileSizeLimit() {
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

    /// Room the database needs before writes count as working again: a megabyte free on its file
    /// system and under the process's file-size limit.
    static let headroom: UInt64 = 1 << 20

    /// Why there is no room to write the database at `path`, or nil. Blocking (`statvfs`, `stat`).
    static func roomProblem(path: String) -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        var vfs = statvfs()
        if statvfs(folder.isEmpty ? "." : folder, &vfs) == 0 {
            let free = UInt64(vfs.f_bavail) * UInt64(vfs.f_frsize)
            if free < headroom { return "disk full: \(free) bytes free on the database's file system" }
        }
        if let limit = fileSizeLimit() {
            func size(_ p: String) -> UInt64 {
                var st = stat()
                return stat(p, &st) == 0 ? UInt64(st.st_size) : 0
            }
            let largest = max(size(path), size(path + "-wal"))
            if largest + headroom > limit {
                return "the file-size limit of \(limit) bytes (ulimit -f, LimitFSIZE) leaves no room: the "
                    + "database's files reach \(largest) bytes"
            }
        }
        return nil
    }

    /// The process's file-size limit in bytes, or nil when there is none.
    static func fileSizeLimit() -> UInt64? {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
            return nil
        }
        return UInt64(limit.rlim_cur)
    }

    /// A write past the file-size limit kills the process with SIGXFSZ by default: ignored, the write
    /// fails with EFBIG instead, and the store reports it (a push gets 507, `/readyz` says failing).
    public static func ignoreFileSizeSignal() {
        signal(SIGXFSZ, SIG_IGN)
    }
}
