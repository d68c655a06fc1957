// libyaml's event API, which Yams keeps private: the bounds below must be checked before Yams builds
// (and hashes) a tree. CYaml is the C target inside the Yams package (libyaml's sources as of its
// commit acd6f6f, vendored), built and linked with it: the libyaml in the binary whatever else is
// installed. What is relied on is pinned (Yams 6.2.x in Package.swift) and tested (`YAMLLimitsTests`:
// the events, their anchors and marks), so an update that changes it fails a test, not a hostile file.
internal import CYaml
import Foundation
import KlaxonCore
import Yams

/// Reads YAML strictly: every value is type-checked, unknown and duplicate keys are errors, and every
/// problem carries the line and column it came from. (Codable over Yams would silently drop unknown
/// keys and lose positions; this walks the composed node tree instead.)
struct YAMLFile {
    let path: String
    let diagnostics: Diagnostics

    /// Reads a YAML file of at most `YAMLLimits.maxBytes`, reading no further than that, or nil
    /// with a diagnostic (cannot read, too large, not UTF-8).
    func read() -> String? {
        switch YAMLLimits.read(path: path) {
        case .success(let text):
            return text
        case .failure(let problem):
            diagnostics.add(Diagnostic(path: path, line: 1, column: 1, message: problem.message))
            return nil
        }
    }

    /// Parses the text into a node tree; a syntax error becomes a diagnostic. Text beyond
    /// `YAMLLimits` (size, nesting, alias expansion) is refused before any tree is built.
    func compose(_ text: String) -> Node? {
        if let problem = YAMLLimits.check(text) {
            diagnostics.add(
                Diagnostic(path: path, line: problem.line, column: problem.column, message: problem.message))
            return nil
        }
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

    /// A duration of at most `DurationText.maximum` (ten years), or nil with a diagnostic.
    func duration(_ node: Node, what: String) -> Int64? {
        guard let scalar = node.scalar else {
            error(node, "\(what) must be a duration like 30s, 15m, 6h or 2d, not \(Self.show(node))")
            return nil
        }
        switch DurationText.read(scalar.string) {
        case .success(let v):
            return v
        case .failure(.tooLong):
            error(
                node,
                "\(what) is longer than the limit of \(DurationText.format(DurationText.maximum)) (10 years): \(Self.show(node))"
            )
            return nil
        case .failure(.malformed):
            error(node, "\(what) must be a duration like 30s, 15m, 6h or 2d, not \(Self.show(node))")
            return nil
        }
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
        case .scalar(let s) where s.string.count > 60: return "\"\(s.string.prefix(60))…\""
        case .scalar(let s): return "\"\(s.string)\""
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .alias: return "an alias"
        }
    }
}

/// Bounds on a YAML document (config, rules, rule tests, trips), checked before Yams builds a tree.
///
/// Yams resolves an alias by sharing the anchored node, but hashing a mapping key (Yams checks keys
/// for duplicates) or walking a value visits every copy: a few hundred bytes of nested aliases (a
/// "billion laughs" document) would take hours. `check` walks libyaml's events once, counting for
/// each anchor the nodes it stands for, so its cost is linear in the text whatever the aliases do.
enum YAMLLimits {
    /// The largest YAML file or text read.
    static let maxBytes = 4 << 20
    /// The deepest nesting of lists and mappings.
    static let maxDepth = 64
    /// The most nodes aliases may copy in one text, in all (after expansion).
    static let maxAliasNodes = 100_000

    struct Problem: Error {
        var line = 1
        var column = 1
        var message: String
    }

    /// A file's text, reading at most one byte past `limit` (so a huge file is not read whole), or
    /// why it cannot be used. Only a regular file (or a link to one) is read: a FIFO, a device or a
    /// socket is refused by its type, found with `fstat` on a descriptor opened with `O_NONBLOCK`,
    /// so neither the open nor a read can wait for a writer (a FIFO named `x.yaml` in the rules
    /// folder would otherwise hold every later reload).
    static func read(path: String, limit: Int = maxBytes) -> Result<String, Problem> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            return .failure(Problem(message: "cannot read the file: \(reason)"))
        }
        let handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
        defer { try? handle.close() }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            return .failure(Problem(message: "cannot read the file: \(String(cString: strerror(errno)))"))
        }
        if let type = notRegular(info.st_mode) {
            return .failure(Problem(message: "is \(type): only regular files are read"))
        }
        var data = Data()
        do {
            while data.count <= limit, let chunk = try handle.read(upToCount: limit + 1 - data.count),
                !chunk.isEmpty
            {
                data.append(chunk)
            }
        } catch {
            return .failure(Problem(message: "cannot read the file: \(error.localizedDescription)"))
        }
        if data.count > limit { return .failure(tooLarge(limit)) }
        guard let text = String(data: data, encoding: .utf8) else {
            return .failure(Problem(message: "the file is not UTF-8 text"))
        }
        return .success(text)
    }

    /// What a file of mode `mode` is, in words, when it is not a regular file.
    static func notRegular(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG: nil
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a folder"
        default: "not a regular file"
        }
    }

    static func tooLarge(_ limit: Int = maxBytes) -> Problem {
        let size = limit >= 1 << 20 ? "\(limit >> 20) MiB" : "\(limit >> 10) KiB"
        return Problem(
            message: "the file is larger than \(size)\(limit == maxBytes ? ", the limit for a YAML file" : "")")
    }

    /// The first bound the text breaks, with its position, or nil. Syntax errors are left to Yams,
    /// which words them; the walk stops at the first one.
    static func check(_ text: String) -> Problem? {
        var text = text
        if text.utf8.count > maxBytes { return tooLarge() }
        return text.withUTF8 { bytes -> Problem? in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }  // libyaml asserts non-NULL
            var parser = yaml_parser_t()
            guard yaml_parser_initialize(&parser) == 1 else { return nil }
            defer { yaml_parser_delete(&parser) }
            yaml_parser_set_input_string(&parser, base, bytes.count)
            // Nodes each anchor stands for (a later anchor of the same name replaces it, as in YAML).
            var sizes: [String: Int] = [:]
            // Open lists and mappings: their anchor and the nodes seen in them so far (themselves included).
            var open: [(anchor: String?, nodes: Int)] = []
            var copied = 0
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                let line = Int(event.start_mark.line) + 1
                let column = Int(event.start_mark.column) + 1
                let nodes: Int  // what this event adds to the enclosing list or mapping
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_SCALAR_EVENT:
                    if let anchor = name(event.data.scalar.anchor) { sizes[anchor] = 1 }
                    nodes = 1
                case YAML_ALIAS_EVENT:
                    nodes = name(event.data.alias.anchor).flatMap { sizes[$0] } ?? 1
                    copied += nodes
                    if copied > maxAliasNodes {
                        return Problem(
                            line: line, column: column,
                            message:
                                "YAML aliases expand to more than \(maxAliasNodes) nodes (a \"billion laughs\" document?); write the values out or use fewer aliases"
                        )
                    }
                case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                    guard open.count < maxDepth else {
                        return Problem(
                            line: line, column: column,
                            message: "YAML nested more than \(maxDepth) levels deep")
                    }
                    let anchor =
                        event.type == YAML_SEQUENCE_START_EVENT
                        ? name(event.data.sequence_start.anchor) : name(event.data.mapping_start.anchor)
                    open.append((anchor, 1))
                    continue
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    guard let closed = open.popLast() else { continue }
                    if let anchor = closed.anchor { sizes[anchor] = closed.nodes }
                    nodes = closed.nodes
                default:
                    continue
                }
                // Never more than the text's own nodes plus `maxAliasNodes`: no overflow.
                if !open.isEmpty { open[open.count - 1].nodes += nodes }
            }
        }
    }

    private static func name(_ anchor: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        anchor.map { String(cString: $0) }
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
