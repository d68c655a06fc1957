import Foundation
import KlaxonCore

/// Runs `python3 -c script` with `input` on its standard input, off the cooperative pool, and
/// returns its standard output: the tests read mail back with Python's own `email` package.
public func python(_ script: String, input: Data) async throws -> Data {
    try await offPool { () throws -> Data in
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        p.arguments = ["-c", script]
        let stdin = Pipe()
        let stdout = Pipe()
        p.standardInput = stdin
        p.standardOutput = stdout
        try launchProcess(p)
        stdin.fileHandleForWriting.writeAllRetrying(input)
        try stdin.fileHandleForWriting.close()
        let data = stdout.fileHandleForReading.readAllRetrying()
        p.waitUntilExit()
        return data
    }
}
