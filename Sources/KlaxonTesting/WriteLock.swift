import Foundation

/// Another process holding a SQLite database's write lock (`BEGIN IMMEDIATE` in Python's sqlite3),
/// as a `sqlite3` session or a long `klaxon evaluate` would. Started and released off the
/// cooperative pool.
public final class WriteLock: @unchecked Sendable {
    let process: Process
    let input: Pipe

    private init(process: Process, input: Pipe) {
        self.process = process
        self.input = input
    }

    /// Returns once the other process holds the lock. It keeps it until `release()`, or for
    /// `seconds` at most (so a failed test cannot leave it behind).
    public static func hold(_ path: String, seconds: Double = 120) async throws -> WriteLock {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try WriteLock(path: path, seconds: seconds) })
            }
        }
    }

    /// Holds the lock while `body` runs, and releases it (awaited) before returning, also when `body`
    /// throws.
    public static func with<T>(
        _ path: String, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async throws -> T {
        try await holding(try await hold(path), body)
    }

    /// Runs `body` while `lock` (already held) is held, and releases it (awaited) before returning, also
    /// when `body` throws.
    public static func holding<T>(
        _ lock: WriteLock, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async throws -> T {
        let outcome = await Result { try await body() }
        await lock.release()
        return try outcome.get()
    }

    private convenience init(path: String, seconds: Double) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        let script = """
            import sqlite3, sys, select
            c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
            c.execute("BEGIN IMMEDIATE")
            print("locked", flush=True)
            select.select([sys.stdin], [], [], float(sys.argv[2]))
            c.execute("COMMIT")
            print("released", flush=True)
            """
        p.arguments = ["-c", script, path, String(seconds)]
        let input = Pipe()
        let output = Pipe()
        p.standardInput = input
        p.standardOutput = output
        p.standardError = FileHandle.nullDevice
        try launchProcess(p)
        // Blocking reads, on the Dispatch thread `hold` runs this on.
        let line = String(decoding: output.fileHandleForReading.readSomeRetrying(), as: UTF8.self)
        guard line.hasPrefix("locked") else {
            p.terminate()
            throw SinkError(message: "could not lock \(path): \(line)")
        }
        self.init(process: p, input: input)
    }

    /// Commits (ends the lock) and waits for the process to end.
    public func release() async {
        let process = self.process
        let input = self.input
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                try? input.fileHandleForWriting.write(contentsOf: Data("x\n".utf8))
                try? input.fileHandleForWriting.close()
                process.waitUntilExit()
                continuation.resume()
            }
        }
    }
}
