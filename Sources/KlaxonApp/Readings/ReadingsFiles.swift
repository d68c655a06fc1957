import Foundation
import KlaxonCore

/// Reads readings files (CSV or JSON Lines) in fixed-size chunks, so memory does not grow with the file.
public enum ReadingsFiles {
    static let chunkSize = 1 << 20

    /// Streams every line's outcome. Throws when the file cannot be opened or read.
    public static func stream(
        path: String, format: ReadingsParser.Format? = nil, _ body: (ParsedRow) -> Void
    ) throws {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else {
            throw UserError("\(path): cannot read: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: chunkSize)
        defer { buffer.deallocate() }
        var parser: ReadingsParser? = format.map { ReadingsParser(format: $0) }
        while true {
            let n = read(fd, buffer.baseAddress, chunkSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw UserError("\(path): cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            if parser == nil {
                let first = UnsafeBufferPointer(rebasing: buffer[0..<n]).first { $0 > 0x20 }
                parser = ReadingsParser(format: .guess(path: path, firstByte: first))
            }
            parser!.feed(UnsafeBufferPointer(rebasing: buffer[0..<n]), body)
        }
        parser?.finish(body)
    }
}

/// Writes to standard error (unbuffered, so it interleaves sensibly with progress).
/// Control characters in it (from a file, a store, a server's answer) are shown escaped, line feeds
/// kept (`TerminalText.safeLines`): nothing written to stderr can redraw the terminal.
public func printError(_ text: String) {
    // The throwing write: with SIGPIPE ignored, a closed stderr must not trap.
    try? FileHandle.standardError.write(contentsOf: Data((TerminalText.safeLines(text) + "\n").utf8))
}

extension ReadingsFiles {
    /// Like `stream`, but parses on a second thread while `body` runs on this one: on a 2-core machine
    /// a replay's parsing and evaluation overlap. Rows arrive in file order, in batches handed over
    /// through a queue of at most `depth` batches, so memory stays flat.
    public static func streamPrefetching(
        path: String, format: ReadingsParser.Format? = nil, batchSize: Int = 8192, depth: Int = 4,
        _ body: (ParsedRow) -> Void
    ) throws {
        let queue = BatchQueue<[ParsedRow]>(depth: depth)
        let thread = Thread {
            var batch: [ParsedRow] = []
            batch.reserveCapacity(batchSize)
            do {
                try stream(path: path, format: format) { row in
                    batch.append(row)
                    if batch.count >= batchSize {
                        queue.put(batch)
                        batch.removeAll(keepingCapacity: true)
                    }
                }
                if !batch.isEmpty { queue.put(batch) }
                queue.finish(error: nil)
            } catch {
                queue.finish(error: error)
            }
        }
        thread.stackSize = 1 << 20
        thread.start()
        while let batch = queue.take() {
            // Each row lent to `body` in place, not copied out of the batch.
            batch.withUnsafeBufferPointer { rows in
                for i in rows.indices { body(rows[i]) }
            }
        }
        if let error = queue.error { throw error }
    }
}

/// A bounded hand-over queue between a parsing thread and the thread that uses what it parsed: at
/// most `depth` items wait, so memory stays flat. The consumer may cancel, which wakes the producer
/// and makes every later `put` return false.
final class BatchQueue<Item: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var items: [Item] = []  // at most `depth`: removing the first is cheap
    private var done = false
    private var cancelled = false
    private(set) var error: (any Error)?
    private let depth: Int

    init(depth: Int) { self.depth = depth }

    var isCancelled: Bool { condition.withLock { cancelled } }

    /// Enqueues an item, waiting while `depth` are queued; false once the consumer cancelled.
    @discardableResult
    func put(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while items.count >= depth && !cancelled { condition.wait() }
        guard !cancelled else { return false }
        items.append(item)
        condition.broadcast()
        return true
    }

    func finish(error: (any Error)?) {
        condition.lock()
        done = true
        self.error = error
        condition.broadcast()
        condition.unlock()
    }

    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    /// The next item, or nil when the producer is done and the queue is empty.
    func take() -> Item? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !done { condition.wait() }
        guard !items.isEmpty else { return nil }
        let item = items.removeFirst()
        condition.broadcast()
        return item
    }
}

/// A whole file's contents, read on a thread of its own (a file may be large; the cooperative pool
/// must not wait on the disk). Nil when it cannot be read.
public func readFile(_ path: String) async throws -> Data? {
    try await offPool { FileManager.default.contents(atPath: path) }
}
