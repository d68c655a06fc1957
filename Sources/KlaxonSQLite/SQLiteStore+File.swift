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
    /// What the file's size has shown: its page size (set once the store opened it), the largest size
    /// seen, and whether it was seen truncated (for good: the data is gone, only a restore brings it back).
    private let sizing = Mutex<(pageSize: Int64, largest: Int64, truncated: String?)>((0, 0, nil))

    struct FileID: Equatable {
        var device: UInt64
        var inode: UInt64
    }

    init(path: String) {
        self.path = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
    }

    static func id(_ path: String) -> (FileID?, errno: Int32) {
        let (id, _, e) = look(path)
        return (id, e)
    }

    /// The file's identity and size.
    static func look(_ path: String) -> (FileID?, size: Int64, errno: Int32) {
        var st = stat()
        guard stat(path, &st) == 0 else { return (nil, 0, errno) }
        return (FileID(device: UInt64(st.st_dev), inode: UInt64(st.st_ino)), Int64(st.st_size), 0)
    }

    /// Remembers the files the paths name now (call once the store has opened them), and the
    /// database's page size.
    func capture(pageSize: Int = 0) {
        let (main, size, _) = Self.look(path)
        guard let main else { return }
        identity.withLock { $0 = (main, Self.id(path + "-wal").0) }
        sizing.withLock {
            $0.pageSize = Int64(pageSize)
            $0.largest = max($0.largest, size)
        }
    }

    /// The smallest database file SQLite writes: one page of the smallest page size (the header is
    /// on the first page).
    static let smallestDatabase: Int64 = 512

    /// Whether a file of `size` bytes is the database this store opened cut short: it held at least a
    /// page, and now holds less (`truncate -s 0`, `: > k.sqlite`), or a size that is not a whole
    /// number of pages (SQLite only ever writes and truncates it by whole pages). Sticky.
    private func truncation(size: Int64) -> String? {
        sizing.withLock { s in
            if let found = s.truncated { return found }
            let cut =
                s.largest >= Self.smallestDatabase
                && (size < Self.smallestDatabase || (s.pageSize > 0 && size % s.pageSize != 0))
            guard cut else {
                s.largest = max(s.largest, size)
                return nil
            }
            s.truncated =
                "the database file \(path) was truncated while klaxon runs (\(size) bytes now, \(s.largest) "
                + "before): the alerts and history it held are gone from it, and what klaxon writes now would "
                + "not bring them back. Stop klaxon and restore the file from a backup (klaxon will not "
                + "start on it as it is)"
            return s.truncated
        }
    }

    /// The file at the path is still the one opened. Blocking (a `stat`): call it off the pool.
    func check() -> StoreFileCheck {
        guard let opened = identity.withLock({ $0 }) else { return .ok }
        let (main, size, mainErrno) = Self.look(path)
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
        if let message = truncation(size: size) {
            return StoreFileCheck(state: .truncated, message: message)
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
    /// Refuses, before SQLite opens it, a file at `path` that held a database and no longer holds it
    /// whole; SQLite would take it for a new, empty database and klaxon would start afresh over it:
    /// - an empty (0-byte) file with a write-ahead log (`-wal`) or shared-memory file (`-shm`) beside
    ///   it: SQLite makes those only beside a database it opened in WAL mode, whose file then holds at
    ///   least its first page; an empty file alone (`touch k.sqlite`) is still a new database;
    /// - a non-empty file that does not start with SQLite's header (another file, or cut inside it);
    /// - a file shorter than its header's page count times its page size, more than its write-ahead
    ///   log could make up (a crash during a checkpoint leaves the rest in the log).
    /// Reads the first 100 bytes; changes nothing. A missing path, or a folder, is left to SQLite.
    static func refuseTruncatedFile(path: String) throws {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeRegular
        else { return }
        func size(_ p: String) -> Int64? {
            (try? FileManager.default.attributesOfItem(atPath: p))?[.size].flatMap { ($0 as? NSNumber)?.int64Value }
        }
        let length = size(path) ?? 0
        let unchanged =
            "klaxon changed nothing. Restore the file from a backup, or move it (and its -wal, -shm) away to start afresh"
        let beside = ["-wal", "-shm"].filter { FileManager.default.fileExists(atPath: path + $0) }
        if length == 0 {
            guard !beside.isEmpty else { return }
            throw StoreError.cannotOpen(
                path: path,
                reason:
                    "the file is empty (0 bytes) but \(beside.map { path + $0 }.joined(separator: " and ")) "
                    + "beside it show it held a database: it was truncated, and its alerts and history are gone. "
                    + unchanged)
        }
        var header = [UInt8]()
        if let handle = FileHandle(forReadingAtPath: path) {
            header = [UInt8]((try? handle.read(upToCount: 100)) ?? Data())
            try? handle.close()
        }
        guard header.count == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else {
            throw StoreError.cannotOpen(
                path: path,
                reason:
                    "the file (\(length) bytes) is not a SQLite database: it does not start with SQLite's "
                    + "header (another file, or a database cut short). " + unchanged)
        }
        func int(_ at: Int, _ n: Int) -> Int64 { header[at..<(at + n)].reduce(0) { $0 << 8 | Int64($1) } }
        let pageSize = int(16, 2) == 1 ? 65536 : int(16, 2)
        guard pageSize >= 512, pageSize <= 65536, pageSize & (pageSize - 1) == 0 else {
            throw StoreError.cannotOpen(
                path: path, reason: "the file's SQLite header is damaged (page size \(pageSize)). " + unchanged)
        }
        // The page count in the header is valid when its change counter matches the version that
        // wrote it (SQLite 3.7.0 on); otherwise there is nothing to compare.
        let pages = int(28, 4)
        guard pages > 0, int(24, 4) == int(92, 4) else { return }
        let needed = pages * pageSize
        if length + (size(path + "-wal") ?? 0) < needed {
            throw StoreError.cannotOpen(
                path: path,
                reason:
                    "the file is \(length) bytes but its header says \(pages) pages of \(pageSize) bytes "
                    + "(\(needed) bytes): it was truncated, and what it held past that is gone. " + unchanged)
        }
    }

    /// Whether the database file is still the one this store opened. Blocking (`stat`): off the pool.
    public func storeFile() -> StoreFileCheck { file?.check() ?? .ok }

    /// Whether writes work again after a failure: room first (a tiny write may still fit in the
    /// write-ahead log's existing space while a push of any size fails), then a small real write (one
    /// row of `meta`).
    public func probeWrite() async throws {
        let writer = try requireWriter()
        // A store in memory has no file, and no room to run out of but the process's.
        if let path = file?.path, let problem = try await offPool({ StoreFailure.roomProblem(path: path) }) {
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
