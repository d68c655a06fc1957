import Foundation
import Testing

/// The house rules the compiler cannot check alone, checked on the sources: nothing on the daemon's
/// path blocks the cooperative pool, and the store is reached only through its async interface.
@Suite("architecture")
struct ArchitectureTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Modules the daemon runs (test support and benchmarks are not among them).
    static let daemonPath = [
        "KlaxonCore", "KlaxonStore", "KlaxonPostgres", "KlaxonSources", "KlaxonDelivery", "KlaxonServer", "KlaxonApp",
        "klaxon",
    ]

    /// Each file allowed a blocking call, and why it does not block the pool.
    static let allowed: [String: String] = [
        // The parser thread and its consumer hand batches over through a condition; the consumer is a
        // thread of its own (`streamPrefetching` under `offPool`) or awaits each batch through `offPool`.
        "KlaxonApp/ReadingsFiles.swift": "NSCondition",
        // curl_easy_perform runs on a detached thread; the task awaits its continuation.
        "KlaxonDelivery/EmailNotifier.swift": "curl",
        // Reads /proc/PID/stat: a few hundred bytes from procfs, never the disk.
        "KlaxonDelivery/Instance.swift": "procfs",
        // Rule and config files, read once at start and bounded (4 MiB) before they are parsed.
        "KlaxonApp/YAMLReader.swift": "bounded file",
        // `offPool` itself: the one place work is handed to a Dispatch thread.
        "KlaxonCore/Bounded.swift": "offPool",
    ]

    static let blocking = [
        "Thread.sleep", "usleep(", "= sleep(", "\tsleep(", "Glibc.sleep(", "DispatchSemaphore", "NSCondition",
        ".wait()", "waitUntilExit",
        "readDataToEndOfFile", ".sync {", "DispatchQueue.main.sync", "FileManager.default.contents(",
        "Data(contentsOf:", "curl_easy_perform(",
    ]

    static func sources(_ module: String) throws -> [(path: String, text: String)] {
        let dir = root.appendingPathComponent("Sources/\(module)")
        guard let walker = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: nil) else { return [] }
        var out: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let relative = String(url.path.dropFirst(root.appendingPathComponent("Sources").path.count + 1))
            out.append((relative, try String(contentsOf: url, encoding: .utf8)))
        }
        return out.sorted { $0.0 < $1.0 }
    }

    @Test("no blocking call on the daemon's path outside the files that run it on a thread of their own")
    func noBlockingCalls() throws {
        var found: [String] = []
        for module in Self.daemonPath {
            for (path, text) in try Self.sources(module) where Self.allowed[path] == nil {
                for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                    for call in Self.blocking where code.contains(call) {
                        found.append("\(path):\(n + 1): \(call)")
                    }
                }
            }
        }
        #expect(found.isEmpty, "blocking calls on the daemon's path: \(found)")
    }

    @Test("only the store imports GRDB; the store's public interface is async and shows no Database")
    func storeBoundary() throws {
        var found: [String] = []
        for module in Self.daemonPath where module != "KlaxonStore" {
            for (path, text) in try Self.sources(module) where text.contains("import GRDB") {
                found.append("\(path) imports GRDB")
            }
        }
        // Opening is synchronous (a one-shot at start); everything else awaits.
        let syncAllowed = ["open(path:", "openReadOnly(path:", "readingWriter("]
        for (path, text) in try Self.sources("KlaxonStore") {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            for (n, line) in lines.enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                if trimmed.hasPrefix("public") && (trimmed.contains("Database") && !trimmed.contains("DatabaseError")) {
                    found.append("\(path):\(n + 1): public API shows a Database: \(trimmed)")
                }
                guard trimmed.hasPrefix("public func") || trimmed.hasPrefix("public static func") else { continue }
                // The signature runs to the line that opens the body.
                var signature = trimmed
                var k = n
                while !signature.hasSuffix("{"), k + 1 < lines.count {
                    k += 1
                    signature += " " + lines[k].trimmingCharacters(in: .whitespaces)
                }
                // A signature wrapped after its parenthesis reads as if written on one line.
                signature = signature.replacingOccurrences(of: "( ", with: "(")
                let isStoreMethod = path.hasPrefix("KlaxonStore/Store")
                guard isStoreMethod, signature.contains("throws"), !signature.contains("async"),
                    !syncAllowed.contains(where: { signature.contains($0) })
                else { continue }
                found.append("\(path):\(n + 1): a synchronous store call: \(trimmed)")
            }
        }
        #expect(found.isEmpty, "\(found)")
    }

    @Test("only the PostgreSQL store imports PostgresNIO; it imports neither GRDB nor anything above the store")
    func postgresBoundary() throws {
        var found: [String] = []
        for module in Self.daemonPath where module != "KlaxonPostgres" {
            for (path, text) in try Self.sources(module) where text.contains("import PostgresNIO") {
                found.append("\(path) imports PostgresNIO")
            }
        }
        let above = ["GRDB", "KlaxonSources", "KlaxonDelivery", "KlaxonServer", "KlaxonApp"]
        for (path, text) in try Self.sources("KlaxonPostgres") {
            for module in above where text.contains("import \(module)\n") {
                found.append("\(path) imports \(module)")
            }
        }
        #expect(found.isEmpty, "\(found)")
    }
}
