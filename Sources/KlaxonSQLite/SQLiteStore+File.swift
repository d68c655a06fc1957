import Foundation
import GRDB
import KlaxonCore
import KlaxonStore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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
