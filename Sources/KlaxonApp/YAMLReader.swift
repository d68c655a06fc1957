import Foundation
import KlaxonCore
import Yams

/// Reads YAML strictly: every value is type-checked, unknown and duplicate keys are errors, and every
/// problem carries the line and column it came from. (Codable over Yams would silently drop unknown
/// keys and lose positions; this walks the composed node tree instead.)
struct YAMLFile {
    let path: String
    let diagnostics: Diagnostics

    /// Parses the text into a node tree; a syntax error becomes a diagnostic.
    func compose(_ text: String) -> Node? {
        do {
            return try Yams.compose(yaml: text)
        } catch let error as YamlError {
            diagnostics.add(Self.diagnostic(for: error, path: path))
        } catch {
            diagnostics.add(Diagnostic(path: path, line: 1, column: 1, message: "\(error)"))
        }
        return nil
    }

    static func diagnostic(for error: YamlError, path: String) -> Diagnostic {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let what = [context?.text, problem].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ": ")
            return Diagnostic(path: path, line: mark.line, column: mark.column, message: "YAML syntax: \(what)")
        case .reader(let problem, _, _, _):
            return Diagnostic(path: path, line: 1, column: 1, message: "YAML: \(problem)")
        default:
            return Diagnostic(path: path, line: 1, column: 1, message: "YAML: \(error)")
        }
    }

    func error(_ node: Node?, _ message: String) {
        let mark = node?.mark
        diagnostics.add(Diagnostic(path: path, line: mark?.line ?? 1, column: mark?.column ?? 1, message: message))
    }

    /// A mapping reader, or nil (with a diagnostic) when the node is not a mapping.
    func map(_ node: Node, what: String) -> YAMLMap? {
        guard let mapping = node.mapping else {
            error(node, "\(what) must be a mapping of keys to values")
            return nil
        }
        return YAMLMap(file: self, node: node, mapping: mapping)
    }

    func list(_ node: Node, what: String) -> [Node]? {
        guard let seq = node.sequence else {
            error(node, "\(what) must be a list")
            return nil
        }
        return Array(seq)
    }

    /// A scalar's text, or nil with a diagnostic.
    func string(_ node: Node, what: String) -> String? {
        guard let scalar = node.scalar else {
            error(node, "\(what) must be a string")
            return nil
        }
        return scalar.string
    }

    func number(_ node: Node, what: String) -> Double? {
        guard let scalar = node.scalar, scalar.style == .plain, let v = Double(scalar.string), v.isFinite else {
            error(node, "\(what) must be a number, not \(Self.show(node))")
            return nil
        }
        return v
    }

    func integer(_ node: Node, what: String) -> Int? {
        guard let scalar = node.scalar, scalar.style == .plain, let v = Int(scalar.string) else {
            error(node, "\(what) must be a whole number, not \(Self.show(node))")
            return nil
        }
        return v
    }

    func bool(_ node: Node, what: String) -> Bool? {
        guard let scalar = node.scalar, scalar.style == .plain, let v = Bool(scalar.string.lowercased()) else {
            error(node, "\(what) must be true or false, not \(Self.show(node))")
            return nil
        }
        return v
    }

    func duration(_ node: Node, what: String) -> Int64? {
        guard let scalar = node.scalar, let v = DurationText.parse(scalar.string) else {
            error(node, "\(what) must be a duration like 30s, 15m, 6h or 2d, not \(Self.show(node))")
            return nil
        }
        return v
    }

    func time(_ node: Node, what: String) -> Int64? {
        guard let scalar = node.scalar, let v = Timestamp.parse(scalar.string) else {
            error(
                node,
                "\(what) must be an ISO 8601 time with Z or an offset, like 2026-01-01T00:00:00Z, not \(Self.show(node))"
            )
            return nil
        }
        return v
    }

    func stringList(_ node: Node, what: String) -> [String]? {
        guard let items = list(node, what: what) else { return nil }
        var out: [String] = []
        for item in items {
            guard let s = string(item, what: "each item of \(what)") else { return nil }
            out.append(s)
        }
        return out
    }

    func stringMap(_ node: Node, what: String) -> [String: String]? {
        guard var m = map(node, what: what) else { return nil }
        var out: [String: String] = [:]
        for (key, value) in m.entries {
            guard let s = string(value, what: "\(what).\(key)") else { continue }
            out[key] = s
        }
        m.markAllUsed()
        return out
    }

    static func show(_ node: Node) -> String {
        switch node {
        case .scalar(let s): return "\"\(s.string)\""
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        }
    }
}

/// Reads the keys of one YAML mapping, remembering which were used so the rest can be reported.
struct YAMLMap {
    let file: YAMLFile
    let node: Node
    /// Keys in file order with their key node (for positions) and value.
    private(set) var keyed: [(key: String, keyNode: Node, value: Node)] = []
    private var used: Set<String> = []

    init(file: YAMLFile, node: Node, mapping: Node.Mapping) {
        self.file = file
        self.node = node
        var seen: Set<String> = []
        for (k, v) in mapping {
            guard let name = k.scalar?.string else {
                file.error(k, "keys must be strings")
                continue
            }
            if seen.contains(name) {
                file.error(k, "duplicate key \"\(name)\"")
                continue
            }
            seen.insert(name)
            keyed.append((name, k, v))
        }
    }

    var entries: [(String, Node)] { keyed.map { ($0.key, $0.value) } }

    func has(_ key: String) -> Bool { keyed.contains { $0.key == key } }

    mutating func value(_ key: String) -> Node? {
        guard let entry = keyed.first(where: { $0.key == key }) else { return nil }
        used.insert(key)
        // `key: ~` or `key:` means absent.
        if case .scalar(let s) = entry.value, s.style == .plain, ["", "~", "null"].contains(s.string) { return nil }
        return entry.value
    }

    mutating func required(_ key: String, what: String) -> Node? {
        guard let v = value(key) else {
            file.error(node, "\(what) is missing required key \"\(key)\"")
            return nil
        }
        return v
    }

    mutating func markAllUsed() { used = Set(keyed.map(\.key)) }

    /// Reports every key that was not read, suggesting the closest known key.
    func rejectUnknown(known: [String], what: String) {
        for entry in keyed where !used.contains(entry.key) {
            var message = "unknown key \"\(entry.key)\" in \(what)"
            if let near = closest(entry.key, in: known) { message += " (did you mean \"\(near)\"?)" }
            file.error(entry.keyNode, message)
        }
    }
}

/// The known word nearest to a misspelling, if it is close enough to be a likely typo.
func closest(_ word: String, in candidates: [String]) -> String? {
    func distance(_ a: [Character], _ b: [Character]) -> Int {
        var prev = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var cur = [i] + Array(repeating: 0, count: b.count)
            for j in 1...max(b.count, 1) where !b.isEmpty {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            prev = cur
        }
        return prev[b.count]
    }
    let w = Array(word)
    let best = candidates.map { ($0, distance(w, Array($0))) }.min { $0.1 < $1.1 }
    guard let best, best.1 <= max(1, word.count / 3) else { return nil }
    return best.0
}
