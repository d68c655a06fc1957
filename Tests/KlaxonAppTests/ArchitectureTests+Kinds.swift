import Foundation
import Testing

/// Rule kinds and source kinds are closed sets at run time (`RuleFamily`, `SourceShape`): code switches
/// over them or reads what a kind declares, and never asks a rule or a source what type it is.
///
/// What the check sees, and its limits: it finds the kind types by name (every `struct`, `enum`,
/// `class` or `protocol` whose conformance list names a kind protocol, to a fixpoint), then flags
/// `as?`, `as!`, `is` and `case … as` applied to one of those names on any line of code in the
/// daemon's modules (comments are skipped). It does not see a cast to a generic parameter or a
/// typealias, a comparison of `type(of:)` or of `kindName` strings, nor a conformance declared in an
/// `extension`; a new protocol of kinds must derive from one listed in `kindRoots`.
extension ArchitectureTests {
    static let kindRoots: Set<String> = ["RuleKind", "Source"]

    /// The kind types and protocols declared in `files`, from `roots` down.
    static func kindTypes(_ files: [String], roots: Set<String> = kindRoots) -> Set<String> {
        let declaration = try! NSRegularExpression(
            pattern: #"\b(?:struct|enum|class|protocol|actor)\s+(\w+)\s*(?:<[^>]*>)?\s*:\s*([^{]*)\{"#)
        var declared: [(name: String, conforms: [String])] = []
        for text in files {
            let range = NSRange(text.startIndex..., in: text)
            for m in declaration.matches(in: text, range: range) {
                guard let n = Range(m.range(at: 1), in: text), let c = Range(m.range(at: 2), in: text) else { continue }
                let conforms = text[c].split(separator: ",").map {
                    String($0.split(separator: " ").last { !$0.isEmpty && $0 != "any" } ?? "")
                        .trimmingCharacters(in: .whitespacesAndNewlines)
                }
                declared.append((String(text[n]), conforms))
            }
        }
        var kinds = roots
        var grew = true
        while grew {
            grew = false
            for d in declared where !kinds.contains(d.name) && d.conforms.contains(where: kinds.contains) {
                kinds.insert(d.name)
                grew = true
            }
        }
        return kinds
    }

    /// Lines of `text` that cast to, or test for, one of `kinds`.
    static func kindDowncasts(_ text: String, kinds: Set<String>) -> [(line: Int, code: String)] {
        let names = kinds.sorted().joined(separator: "|")
        let cast = try! NSRegularExpression(
            pattern: #"(?:\bas[?!]|\bis|\bcase\b[^:]*\bas)\s+(?:any\s+)?(?:"# + names + #")\b"#)
        var out: [(Int, String)] = []
        for (n, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = String(line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
            if cast.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                out.append((n + 1, code.trimmingCharacters(in: .whitespaces)))
            }
        }
        return out
    }

    @Test("no downcast decides what a rule or a source does: code switches over RuleFamily and SourceShape")
    func noDowncastOnKinds() throws {
        let files = try Self.daemonPath.flatMap { try Self.sources($0) }
        let kinds = Self.kindTypes(files.map(\.text))
        // The kinds are found: the families' protocols and a few kinds of each.
        for name in [
            "SeriesRuleKind", "QuakeFamilyRule", "TripFamilyRule", "ThresholdRule", "QuakeRule", "PlaceSource",
        ]
            + ["StreamingSource", "AQIWebSocketSource", "OpenMeteoSource", "USGSIVSource"]
        {
            #expect(kinds.contains(name), "\(name) is not seen as a kind")
        }
        var found: [String] = []
        for (path, text) in files {
            for (line, code) in Self.kindDowncasts(text, kinds: kinds) { found.append("\(path):\(line): \(code)") }
        }
        #expect(found.isEmpty, "switch over kind.family or source.shape, or declare what is asked: \(found)")
    }

    @Test("the downcast check sees casts and tests of kinds, and not upcasts, comments or other types")
    func kindDowncastsParse() {
        let declarations = """
            public protocol Source: Sendable {}
            public protocol PlaceSource: Source {}
            struct Weather: PlaceSource, Hashable {}
            struct Station: Sendable {}
            """
        let kinds = Self.kindTypes([declarations], roots: ["Source"])
        #expect(kinds == ["Source", "PlaceSource", "Weather"])
        let text = """
            if let w = s as? Weather {}
            let p = s as? any PlaceSource
            let q = s as! Weather
            if s is PlaceSource {}
            switch s { case let w as Weather: break }
            let up = w as any Source
            let other = x as? Station
            // if s is Weather
            let isWeather = true
            """
        #expect(Self.kindDowncasts(text, kinds: kinds).map(\.line) == [1, 2, 3, 4, 5])
    }
}
