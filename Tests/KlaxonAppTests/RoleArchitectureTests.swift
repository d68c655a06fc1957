import Foundation
import Testing

/// The store's seams, checked on the sources: consumers take the roles they use, and roles stay small.
extension ArchitectureTests {
    /// The composition root: the files that hold the whole store (`any Store`), and why. Everything
    /// else in the server and the app takes the roles it uses (`SiteStore`, `ChatStore`, `RepeatStore`…).
    static let wholeStoreAllowed: [String: String] = [
        // Opens the store (SQLite or PostgreSQL) for the daemon and the commands.
        "KlaxonApp/Store/StoreLocation.swift": "opens the store",
        // The daemon: holds the store it was given and wires each service with the roles that service takes.
        "KlaxonApp/Daemon/Daemon.swift": "wires the services",
    ]

    /// The lines of `text` that name the whole store (`any Store`, not `any StoreProbe`), comments left out.
    static func wholeStoreUses(_ text: String) -> [Int] {
        var out: [Int] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            var rest = code[...]
            while let r = rest.range(of: "any Store") {
                let next = rest[r.upperBound...].first
                if next.map({ !($0.isLetter || $0.isNumber || $0 == "_") }) ?? true {
                    out.append(n + 1)
                    break
                }
                rest = rest[r.upperBound...]
            }
        }
        return out
    }

    @Test("the server and the app take store roles; only the composition root holds the whole store")
    func consumersTakeRoles() throws {
        var found: [String] = []
        for module in ["KlaxonServer", "KlaxonApp"] {
            for (path, text) in try Self.sources(module) where Self.wholeStoreAllowed[path] == nil {
                for n in Self.wholeStoreUses(text) { found.append("\(path):\(n)") }
            }
        }
        #expect(
            found.isEmpty, "take the roles used (KlaxonStore/Store.swift, ServerRoles.swift), not any Store: \(found)")
    }

    /// Each protocol declared in `text` with the number of its own requirements (inherited ones not
    /// counted: a composition such as `ReadingStore` declares none).
    static func protocolRequirements(_ text: String) -> [(name: String, requirements: Int)] {
        var out: [(String, Int)] = []
        var current: (name: String, count: Int)? = nil
        var depth = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let code = (line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: .whitespaces)
            if current == nil {
                var words = code.split(separator: " ").map(String.init)
                while let first = words.first, ["public", "internal", "package"].contains(first) {
                    words.removeFirst()
                }
                if words.count >= 2, words[0] == "protocol" {
                    let name = String(words[1].prefix { $0.isLetter || $0.isNumber || $0 == "_" })
                    current = (name, 0)
                    depth = 0
                } else {
                    continue
                }
            } else if depth == 1 {
                var words = code.split(separator: " ").map(String.init)
                while let first = words.first, first.hasPrefix("@") || ["static", "mutating"].contains(first) {
                    words.removeFirst()
                }
                if let first = words.first,
                    ["func", "var", "let", "init", "subscript", "associatedtype"].contains(
                        String(first.prefix { $0.isLetter }))
                {
                    current?.count += 1
                }
            }
            depth += code.filter { $0 == "{" }.count - code.filter { $0 == "}" }.count
            if let c = current, depth <= 0, code.contains("}") {
                out.append((c.name, c.count))
                current = nil
            }
        }
        return out
    }

    @Test("no role of the store has more than 12 requirements: derived reads are extensions")
    func rolesStaySmall() throws {
        var roles: [String: Int] = [:]
        for (_, text) in try Self.sources("KlaxonStore") {
            for (name, count) in Self.protocolRequirements(text) { roles[name] = count }
        }
        // The parse sees the roles (not a vacuous pass): a few known ones, with their sizes.
        #expect(roles["Store"] == 0)
        #expect(roles["ReadingStore"] == 0)
        #expect((roles["SeriesReads"] ?? 0) > 5)
        #expect(roles["ReplayGuard"] == 2)
        let big = roles.filter { $0.value > 12 }.sorted { $0.key < $1.key }
        #expect(big.isEmpty, "split these roles, or make derived reads extensions: \(big)")
    }

    @Test("the role checks see what they look for, and nothing else")
    func roleChecksParse() {
        let text = """
            public protocol Big: Sendable {
                /// A comment with func in it.
                func a() async throws -> Int
                @discardableResult
                func b(
                    x: Int
                ) async throws -> Int
                var c: String { get }
                static func d()
            }
            protocol Empty: Big, Sendable {}
            let s: any Store  // any Store
            let p: any StoreProbe
            func f(_ x: (any Store)?) {}
            """
        #expect(Self.protocolRequirements(text).map { "\($0.name)=\($0.requirements)" } == ["Big=4", "Empty=0"])
        #expect(Self.wholeStoreUses(text) == [12, 14])
    }
}
