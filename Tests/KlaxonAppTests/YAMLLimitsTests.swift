import Foundation
import Testing

@testable import KlaxonApp

/// What `YAMLLimits.check` relies on in libyaml's event API, reached through Yams' C target `CYaml`
/// (not a Yams product; Yams is pinned to 6.2.x for it): the events of lists, mappings, scalars and
/// aliases with their anchors, and the marks they carry. A Yams update that changes any of it fails
/// here (issue 40), not on a hostile file.
@Suite("YAML limits: the libyaml internals they walk")
struct YAMLLimitsTests {
    /// `KEY: [x, x, …]` with `count` scalars: an anchored list of `count + 1` nodes.
    static func anchoredList(_ key: String, _ anchor: String, count: Int) -> String {
        "\(key): &\(anchor) [" + Array(repeating: "x", count: count).joined(separator: ", ") + "]"
    }

    /// `KEY: [*a, *a, …]`: the k-th alias (from 1) starts at column 5 + 4 (k - 1) of `b: [`.
    static func aliases(_ key: String, _ anchor: String, count: Int) -> String {
        "\(key): [" + Array(repeating: "*\(anchor)", count: count).joined(separator: ", ") + "]"
    }

    @Test("an anchored list counts itself and its items; the alias that passes the limit is named by position")
    func anchoredListAliases() throws {
        // 1 000 nodes a copy: 100 copies are exactly the limit, the 101st is past it.
        let limit = Self.anchoredList("a", "a", count: 999) + "\n" + Self.aliases("b", "a", count: 100) + "\n"
        #expect(YAMLLimits.check(limit) == nil)
        let past = Self.anchoredList("a", "a", count: 999) + "\n" + Self.aliases("b", "a", count: 101) + "\n"
        let problem = try #require(YAMLLimits.check(past))
        #expect((problem.line, problem.column) == (2, 5 + 4 * 100))
        #expect(problem.message.hasPrefix("YAML aliases expand to more than 100000 nodes"))
    }

    @Test("an anchored mapping counts itself, its keys and its values")
    func anchoredMappingAliases() throws {
        // The mapping, its key and a list of 997 scalars: 1 + 1 + 998 = 1 000 nodes a copy.
        let list = "[" + Array(repeating: "x", count: 997).joined(separator: ", ") + "]"
        let past = "m: &m {k: \(list)}\n" + Self.aliases("b", "m", count: 101) + "\n"
        let problem = try #require(YAMLLimits.check(past))
        #expect((problem.line, problem.column) == (2, 5 + 4 * 100))
        let limit = "m: &m {k: \(list)}\n" + Self.aliases("b", "m", count: 100) + "\n"
        #expect(YAMLLimits.check(limit) == nil)
    }

    @Test("a later anchor of the same name replaces the earlier one")
    func shadowedAnchor() {
        let text =
            Self.anchoredList("a", "a", count: 999) + "\nc: &a x\n" + Self.aliases("b", "a", count: 500) + "\n"
        #expect(YAMLLimits.check(text) == nil)
    }

    @Test("nesting deeper than 64 levels is refused at the list that goes past it")
    func depth() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "\n"
        #expect(YAMLLimits.check(ok) == nil)
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65) + "\n"
        let problem = try #require(YAMLLimits.check(deep))
        #expect((problem.line, problem.column, problem.message) == (1, 65, "YAML nested more than 64 levels deep"))
    }

    @Test("a billion laughs stops at the first alias of f, whichever Yams would hash")
    func laughs() throws {
        let problem = try #require(YAMLLimits.check(HostileInputTests.laughs))
        #expect((problem.line, problem.column) == (6, 8))
    }

    @Test("a syntax error is left to Yams, which words it")
    func syntax() {
        #expect(YAMLLimits.check("a: [1, 2\nb: }\n") == nil)
    }
}
