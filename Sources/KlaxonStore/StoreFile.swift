import Foundation
import KlaxonCore

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
    /// The file was truncated in place (emptied, or cut below a whole page): its data is gone.
    case truncated
}

/// What a check found: the state and, when it is not ok, words for people.
public struct StoreFileCheck: Sendable, Equatable {
    public var state: StoreFileState
    public var message: String?

    public init(state: StoreFileState, message: String?) {
        self.state = state
        self.message = message
    }

    public static let ok = StoreFileCheck(state: .ok, message: nil)
}

/// The (device, inode) of a database file and of its write-ahead log when the store opened them,

extension StoreProbe {
    public func storeFile() -> StoreFileCheck { .ok }
    public func probeWrite() async throws {}
}

/// A backend's own error that can say what it means for people (a SQLite result code, say).
public protocol BackendStoreError: Error {
    /// nil for errors that are not the database's failing (a constraint the caller broke, say).
    var storeFailure: StoreFailure? { get }
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
    /// Clear words, with the database's own message after them.
    public var words: String

    public init(kind: Kind, words: String) {
        self.kind = kind
        self.words = words
    }

    /// nil for errors that are not the database's (a bad request, a programming error).
    public static func classify(_ error: any Error) -> StoreFailure? {
        if let e = error as? StoreError {
            if let c = e.fileCheck { return StoreFailure(kind: .fileGone, words: c.message ?? e.description) }
            if e.isNoRoom { return StoreFailure(kind: .full, words: e.description) }
            return nil
        }
        return (error as? any BackendStoreError)?.storeFailure
    }

    /// Room the database needs before writes count as working again: a megabyte free on its file
    /// system and under the process's file-size limit.
    package static let headroom: UInt64 = 1 << 20

    /// Why there is no room to write the database at `path`, or nil. Blocking (`statvfs`, `stat`).
    package static func roomProblem(path: String) -> String? {
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
    package static func fileSizeLimit() -> UInt64? {
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
