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
        "KlaxonRegex", "KlaxonCore", "KlaxonStore", "KlaxonSQLite", "KlaxonPostgres", "KlaxonSources", "KlaxonDelivery",
        "KlaxonServer",
        "KlaxonApp", "KlaxonDemo", "klaxon",
    ]

    /// Each file allowed a blocking call, and why it does not block the pool.
    static let allowed: [String: String] = [
        // The parser thread and its consumer hand batches over through a condition; the consumer is a
        // thread of its own (`streamPrefetching` under `offPool`) or awaits each batch through `offPool`.
        "KlaxonApp/Readings/ReadingsFiles.swift": "NSCondition",
        // curl_easy_perform runs on a detached thread; the task awaits its continuation.
        "KlaxonDelivery/EmailNotifier.swift": "curl",
        // Reads /proc/PID/stat: a few hundred bytes from procfs, never the disk.
        "KlaxonDelivery/Instance.swift": "procfs",
        // Rule and config files, read once at start and bounded (4 MiB) before they are parsed.
        "KlaxonApp/Config/YAMLReader.swift": "bounded file",
        // The chart renderer's own threads wait for jobs on a semaphore; callers await each job.
        "KlaxonServer/Site/Charts/RenderThreads.swift": "render threads",
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

    /// What each module on the daemon's path may import (besides Foundation, the standard library's
    /// modules and the C library): the module graph, from the core up. A backend never imports the
    /// other; `KlaxonStore` imports no driver. The regex engine is the bottom: it imports nothing of Klaxon's.
    static let allowedImports: [String: Set<String>] = [
        "KlaxonRegex": [],
        "KlaxonCore": ["KlaxonRegex", "Logging"],
        "KlaxonStore": ["KlaxonCore", "KlaxonRegex", "Logging"],
        "KlaxonSQLite": ["KlaxonCore", "KlaxonStore", "GRDB", "GRDBSQLite", "Logging"],
        "KlaxonPostgres": ["KlaxonCore", "KlaxonStore", "PostgresNIO", "NIOCore", "NIOPosix", "Logging"],
    ]

    static let systemModules: Set<String> = [
        "Foundation", "FoundationEssentials", "Dispatch", "Synchronization", "Glibc", "Musl", "Darwin", "Testing",
    ]

    static func imports(_ text: String) -> Set<String> {
        var out: Set<String> = []
        for line in text.split(separator: "\n") {
            var t = line.trimmingCharacters(in: .whitespaces)
            for prefix in ["@testable ", "@_exported ", "package ", "public ", "internal ", "@preconcurrency "]
            where t.hasPrefix(prefix) {
                t.removeFirst(prefix.count)
            }
            guard t.hasPrefix("import ") else { continue }
            let name = t.dropFirst("import ".count).split(separator: " ").last.map(String.init) ?? ""
            out.insert(String(name.split(separator: ".").first ?? ""))
        }
        return out
    }

    @Test("each store module imports only what its place in the graph allows: no driver in KlaxonStore, no sibling")
    func storeModuleImports() throws {
        var found: [String] = []
        for (module, allowed) in Self.allowedImports {
            let files = try Self.sources(module)
            #expect(!files.isEmpty, "no sources for \(module)")
            for (path, text) in files {
                for name in Self.imports(text) where !allowed.contains(name) && !Self.systemModules.contains(name) {
                    found.append("\(path) imports \(name)")
                }
            }
        }
        // Nothing outside the backends (and the wiring that picks one) imports a backend or a driver.
        let wiring: Set<String> = ["KlaxonApp", "KlaxonDemo", "KlaxonSQLite", "KlaxonPostgres"]
        for module in Self.daemonPath where !wiring.contains(module) {
            for (path, text) in try Self.sources(module) {
                let names = Self.imports(text)
                for banned in ["GRDB", "GRDBSQLite", "PostgresNIO", "KlaxonSQLite", "KlaxonPostgres"]
                where names.contains(banned) {
                    found.append("\(path) imports \(banned)")
                }
            }
        }
        #expect(found.isEmpty, "\(found)")
    }

    /// The targets of `Package.swift` and what each depends on (targets and products by name), read
    /// from the manifest's text: `.target(name: "X", dependencies: [...])`.
    static func manifest() throws -> [String: [String]] {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        var out: [String: [String]] = [:]
        var rest = Substring(text)
        while let open = rest.range(of: "name: \"") {
            let afterName = rest[open.upperBound...]
            guard let close = afterName.firstIndex(of: "\"") else { break }
            let name = String(afterName[..<close])
            rest = afterName[close...]
            // A target's dependencies follow its name, before the next target's name.
            let next = rest.range(of: "\n        .")?.lowerBound ?? rest.endIndex
            let body = rest[..<next]
            guard let deps = body.range(of: "dependencies: [") else { continue }
            var depth = 1
            var i = deps.upperBound
            while i < body.endIndex, depth > 0 {
                if body[i] == "[" { depth += 1 } else if body[i] == "]" { depth -= 1 }
                i = body.index(after: i)
            }
            let list = body[deps.upperBound..<i]
            var names: [String] = []
            var scan = list
            while let q = scan.firstIndex(of: "\"") {
                let from = scan.index(after: q)
                guard let end = scan[from...].firstIndex(of: "\"") else { break }
                let word = String(scan[from..<end])
                // `.product(name: "P", package: "p")`: the product's name, not the package's.
                let before = scan[..<q]
                if !before.hasSuffix("package: ") { names.append(word) }
                scan = scan[scan.index(after: end)...]
            }
            out[name] = names
        }
        return out
    }

    @Test("KlaxonDelivery and KlaxonServer link no database driver; the backends never depend on each other")
    func linkedDrivers() throws {
        let graph = try Self.manifest()
        func closure(_ target: String) -> Set<String> {
            var seen: Set<String> = []
            var stack = [target]
            while let t = stack.popLast() {
                for d in graph[t] ?? [] where seen.insert(d).inserted { stack.append(d) }
            }
            return seen
        }
        #expect(graph["KlaxonStore"] != nil && graph["KlaxonSQLite"] != nil && graph["KlaxonPostgres"] != nil)
        let drivers: Set<String> = ["GRDB", "GRDBSQLite", "PostgresNIO", "KlaxonSQLite", "KlaxonPostgres"]
        for target in ["KlaxonStore", "KlaxonDelivery", "KlaxonServer", "KlaxonSources", "KlaxonCore"] {
            #expect(
                closure(target).isDisjoint(with: drivers), "\(target) links \(closure(target).intersection(drivers))")
        }
        #expect(!closure("KlaxonSQLite").contains("KlaxonPostgres") && !closure("KlaxonSQLite").contains("PostgresNIO"))
        #expect(!closure("KlaxonPostgres").contains("KlaxonSQLite") && !closure("KlaxonPostgres").contains("GRDB"))
        // The demo's stand-in servers are the demo's own target: the app itself links no Hummingbird.
        #expect(graph["KlaxonApp"].map { !$0.contains { $0.hasPrefix("Hummingbird") } } == true)
        // The command line is thin: it parses arguments and calls the app, never a backend.
        #expect(graph["klaxon"].map { $0.allSatisfy { !drivers.contains($0) } } == true)
    }

    @Test("the regex engine is a pure library at the bottom: KlaxonRegex depends on nothing, the core on it")
    func regexAtTheBottom() throws {
        let graph = try Self.manifest()
        #expect(graph["KlaxonRegex"] == [], "KlaxonRegex depends on \(graph["KlaxonRegex"] ?? ["(no target)"])")
        #expect(graph["KlaxonCore"]?.contains("KlaxonRegex") == true)
        for (path, text) in try Self.sources("KlaxonRegex") {
            let names = Self.imports(text).subtracting(Self.systemModules)
            #expect(names.isEmpty, "\(path) imports \(names.sorted())")
        }
    }

    @Test(
        "the server shows alerts through the core's AlertIdentity: KlaxonServer neither depends on nor imports KlaxonDelivery"
    )
    func serverWithoutNotifiers() throws {
        let graph = try Self.manifest()
        #expect(graph["KlaxonServer"].map { !$0.contains("KlaxonDelivery") } == true, "\(graph["KlaxonServer"] ?? [])")
        var found: [String] = []
        for (path, text) in try Self.sources("KlaxonServer") where Self.imports(text).contains("KlaxonDelivery") {
            found.append(path)
        }
        #expect(found.isEmpty, "\(found)")
    }

    /// The files that may hold `[String: Any]`, with how many lines do, and why: only the templates'
    /// free-form context (Mustache takes any map). Everything else is `Codable`, or `JSONValue` where
    /// the shape is not Klaxon's (Block Kit echoed back, a payload still to be recognised).
    static let freeFormMaps: [String: (lines: Int, why: String)] = [
        "KlaxonDelivery/MessageRenderer.swift": (2, "a rule message's Mustache context (`context`)"),
        "KlaxonDelivery/WebhookPayloads.swift": (2, "a receiver template's Mustache context (`templateContext`)"),
        // Read as JSONSerialization reads it, so its errors word a broken template as before and
        // Discord's `allowed_mentions` goes into every object it accepts.
        "KlaxonDelivery/TemplateBody.swift": (1, "the body a receiver's template rendered"),
        // Test support: a received body as the tests (148 uses) read it, `JSONSerialization`'s objects.
        "KlaxonTesting/HTTPSink.swift": (1, "a test sink's received body (`json`)"),
    ]

    @Test("[String: Any] only where templates need free-form maps: every other JSON is Codable or JSONValue")
    func freeFormMapsOnlyForTemplates() throws {
        let modules = try FileManager.default.contentsOfDirectory(
            atPath: Self.root.appendingPathComponent("Sources").path)
        var counts: [String: Int] = [:]
        for module in modules.sorted() {
            for (path, text) in try Self.sources(module) {
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
                let n = lines.filter { $0.contains("[String: Any]") }.count
                if n > 0 { counts[path] = n }
            }
        }
        #expect(modules.contains("KlaxonCore") && modules.contains("KlaxonTesting"), "\(modules)")
        var found: [String] = []
        for (path, n) in counts.sorted(by: { $0.key < $1.key }) {
            guard let allowed = Self.freeFormMaps[path] else {
                found.append("\(path): \(n) lines with [String: Any] (make it Codable, or JSONValue)")
                continue
            }
            if n != allowed.lines { found.append("\(path): \(n) lines, \(allowed.lines) allowed (\(allowed.why))") }
        }
        for path in Self.freeFormMaps.keys.sorted() where counts[path] == nil {
            found.append("\(path): allowed but has none: take it off the list")
        }
        #expect(found.isEmpty, "\(found)")
    }

    @Test(
        "every path makes a new silence with Silence.make: no memberwise Silence(id:…) outside the core and the store")
    func oneSilenceConstructor() throws {
        // The core's constructor itself, and the store reading back a silence it holds.
        let allowed = ["KlaxonCore/Silence+Making.swift", "KlaxonStore/Silences.swift", "KlaxonCore/Matcher.swift"]
        var found: [String] = []
        for module in Self.daemonPath {
            for (path, text) in try Self.sources(module) where !allowed.contains(path) {
                let flat = text.replacingOccurrences(of: "\n", with: " ").replacingOccurrences(of: " ", with: "")
                // `Silence(id:` itself, not `expireSilence(id:` or `replaceSilence(id:`.
                var rest = flat[...]
                while let r = rest.range(of: "Silence(id:") {
                    let before = r.lowerBound == flat.startIndex ? " " : flat[flat.index(before: r.lowerBound)]
                    if !before.isLetter && !before.isNumber && before != "_" {
                        found.append(path)
                        break
                    }
                    rest = rest[r.upperBound...]
                }
            }
        }
        #expect(found.isEmpty, "make the silence with Silence.make (or forAlert): \(found)")
    }

    @Test(
        "an evaluation holds what to evaluate: no closure in Evaluation or the planners the app evaluates with; one observer beside it"
    )
    func evaluationHoldsNoClosures() throws {
        /// The stored properties of the type declared by `opening` in `text`: the `let`/`var` lines
        /// at its top level that open no body (a `{` after ` = ` is a default value, not a body).
        func storedProperties(_ opening: String, in text: String) -> [String]? {
            guard let start = text.range(of: opening) else { return nil }
            var out: [String] = []
            var depth = 0
            for line in text[start.lowerBound...].split(separator: "\n", omittingEmptySubsequences: false) {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                let words = trimmed.split(separator: " ").prefix(3)
                let body = trimmed.firstIndex(of: "{").map { !trimmed[..<$0].contains(" = ") } ?? false
                if depth == 1, !trimmed.hasPrefix("//"), words.contains("let") || words.contains("var"), !body {
                    out.append(trimmed)
                }
                depth += line.filter { $0 == "{" }.count - line.filter { $0 == "}" }.count
                if depth == 0, line.contains("}") { break }
            }
            return out
        }
        let store = Dictionary(uniqueKeysWithValues: try Self.sources("KlaxonStore"))
        let app = Dictionary(uniqueKeysWithValues: try Self.sources("KlaxonApp"))
        let declarations = [
            ("public struct Evaluation<", store["KlaxonStore/Store.swift"] ?? ""),
            ("public struct RulePlanner", app["KlaxonApp/Evaluation/Evaluate.swift"] ?? ""),
            ("struct RemovedRulesPlanner", app["KlaxonApp/Daemon/Daemon+RemovedRules.swift"] ?? ""),
        ]
        for (opening, text) in declarations {
            let stored = try #require(storedProperties(opening, in: text), "\(opening) not found")
            #expect(stored.count >= 3, "\(opening): \(stored)")
            for property in stored {
                #expect(
                    !property.contains("->") && !property.contains("@Sendable") && !property.contains("any "),
                    "\(opening) holds a closure or an existential: \(property)")
            }
        }
        #expect(!(store["KlaxonStore/Store.swift"] ?? "").contains("struct Handoff"), "the handoff is the observer's")
    }

    @Test("the store's public interface is async and shows no Database")
    func storeBoundary() throws {
        var found: [String] = []
        // Opening is synchronous (a one-shot at start); everything else awaits.
        let syncAllowed = ["open(path:", "openReadOnly(path:", "readingWriter("]
        for module in ["KlaxonStore", "KlaxonSQLite"] {
            for (path, text) in try Self.sources(module) {
                let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                for (n, line) in lines.enumerated() {
                    let trimmed = line.trimmingCharacters(in: .whitespaces)
                    if module == "KlaxonStore", trimmed.hasPrefix("public"), trimmed.contains("Database"),
                        !trimmed.contains("DatabaseError")
                    {
                        found.append("\(path):\(n + 1): public API shows a Database: \(trimmed)")
                    }
                    guard trimmed.hasPrefix("public func") else { continue }
                    // The signature runs to the line that opens the body.
                    var signature = trimmed
                    var k = n
                    while !signature.hasSuffix("{"), k + 1 < lines.count {
                        k += 1
                        signature += " " + lines[k].trimmingCharacters(in: .whitespaces)
                    }
                    signature = signature.replacingOccurrences(of: "( ", with: "(")
                    guard path.hasPrefix("KlaxonSQLite/SQLiteStore"), signature.contains("throws"),
                        !signature.contains("async"), !syncAllowed.contains(where: { signature.contains($0) })
                    else { continue }
                    found.append("\(path):\(n + 1): a synchronous store call: \(trimmed)")
                }
            }
        }
        #expect(found.isEmpty, "\(found)")
    }

    @Test("the server reads every request body through collectBody, within its route's limit and the server's budget")
    func bodiesAreReadAgainstTheBudget() throws {
        var found: [String] = []
        for (path, text) in try Self.sources("KlaxonServer") where path != "KlaxonServer/BodyBudget.swift" {
            for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains("request.body.collect(") || code.contains(".body.consumeWithInboundCloseHandler") {
                    found.append("\(path):\(n + 1)")
                }
            }
        }
        #expect(found.isEmpty, "request bodies read outside BodyBudget.collectBody: \(found)")
    }

    /// The command types a source declares: (name, nested) for each `struct`, `enum`, `class` or
    /// `extension` whose conformance list names `ParsableCommand` or `AsyncParsableCommand`. Nested is
    /// an indented one (a group's subcommand).
    static func commandTypes(_ text: String) -> [(name: String, nested: Bool)] {
        var out: [(String, Bool)] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            var words = trimmed.split(separator: " ", maxSplits: 1).map(String.init)
            while let first = words.first,
                ["public", "internal", "package", "fileprivate", "private", "final"].contains(first), words.count == 2
            {
                words = words[1].split(separator: " ", maxSplits: 1).map(String.init)
            }
            guard words.count == 2, ["struct", "enum", "class", "extension"].contains(words[0]),
                let colon = words[1].firstIndex(of: ":")
            else { continue }
            let name = words[1][..<colon].trimmingCharacters(in: .whitespaces)
            let conformances = words[1][words[1].index(after: colon)...].split(separator: "{").first ?? ""
            let isCommand = conformances.split(separator: ",").contains {
                let c = $0.trimmingCharacters(in: .whitespaces)
                return ["ParsableCommand", "AsyncParsableCommand"].contains(
                    c.split(separator: ".").last.map(String.init))
            }
            if isCommand { out.append((name, trimmed.count != line.count)) }
        }
        return out
    }

    @Test(
        "each klaxon command has its own file in Sources/klaxon/Commands (a group with its subcommands); only the root is elsewhere"
    )
    func oneCommandPerFile() throws {
        var found: [String] = []
        var commandFiles = 0
        for (path, text) in try Self.sources("klaxon") {
            let commands = Self.commandTypes(text)
            let inCommands = path.hasPrefix("klaxon/Commands/")
            if inCommands { commandFiles += 1 }
            if path == "klaxon/Klaxon.swift" {
                // The root: its configuration lists the subcommands; it declares no other.
                if commands.map(\.name) != ["Klaxon"] { found.append("\(path): the root alone, not \(commands)") }
            } else if !inCommands, !commands.isEmpty {
                found.append("\(path): \(commands.map(\.name)) belong in klaxon/Commands/, one file each")
            } else if inCommands {
                let topLevel = commands.filter { !$0.nested }.map(\.name)
                if topLevel.count != 1 {
                    found.append("\(path): one top-level command per file (subcommands nested in it), not \(topLevel)")
                }
            }
        }
        #expect(commandFiles > 0, "no Sources/klaxon/Commands folder")
        #expect(found.isEmpty, "\(found)")
    }

    @Test("the command check sees top-level and nested commands, and nothing else")
    func commandTypesParse() {
        let text = """
            struct A: AsyncParsableCommand {
                struct B: ArgumentParser.ParsableCommand, Sendable {}
            }
            struct StoreOptions: ParsableArguments {}
            /// struct C: ParsableCommand
            extension D: ParsableCommand {}
            """
        let found = Self.commandTypes(text)
        #expect(found.map(\.name) == ["A", "B", "D"])
        #expect(found.map(\.nested) == [false, true, false])
    }
}
