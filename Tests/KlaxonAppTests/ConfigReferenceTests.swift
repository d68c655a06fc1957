import Foundation
import KlaxonApp
import KlaxonDelivery
import Testing

/// The documentation is checked against the code, so it cannot drift: the configuration reference
/// against the reader's key tables, the template variable list against `TemplateCheck`, and the
/// README's walk-through by running its files and commands through the built `klaxon`.
@Suite("docs: the reference and the walk-through match the code")
struct ConfigReferenceTests {
    /// The lines of a file in the package.
    static func lines(_ path: String) throws -> [String] {
        let text = try String(contentsOf: packageRoot.appendingPathComponent(path), encoding: .utf8)
        return text.components(separatedBy: "\n")
    }

    /// The names in backticks in a table row's first cell (`` `token`, `token_file` ``).
    static func firstCellNames(_ row: String) -> [String] {
        let cells = row.split(separator: "|", omittingEmptySubsequences: false)
        guard cells.count > 2 else { return [] }
        let parts = cells[1].split(separator: "`", omittingEmptySubsequences: false)
        return stride(from: 1, to: parts.count, by: 2).map { String(parts[$0]) }
    }

    /// Each `<!-- MARKER: SECTION -->` in the file and the names in the first column of the table
    /// that follows it (the table ends at the first line that is not a row).
    static func markedTables(_ path: String, marker: String) throws -> [String: [String]] {
        let lines = try lines(path)
        var out: [String: [String]] = [:]
        var i = 0
        while i < lines.count {
            let line = lines[i].trimmingCharacters(in: .whitespaces)
            i += 1
            guard line.hasPrefix("<!-- \(marker): "), line.hasSuffix(" -->") else { continue }
            let section = String(line.dropFirst("<!-- \(marker): ".count).dropLast(" -->".count))
            #expect(out[section] == nil, "\(path): section \(section) is marked twice")
            while i < lines.count, !lines[i].hasPrefix("|") { i += 1 }
            var names: [String] = []
            var row = 0
            while i < lines.count, lines[i].hasPrefix("|") {
                if row >= 2 { names += firstCellNames(lines[i]) }  // past the header and its rule
                row += 1
                i += 1
            }
            out[section] = names
        }
        return out
    }

    @Test("docs/configuration.md documents every key of every section the reader knows, and no other")
    func configurationReference() throws {
        let documented = try Self.markedTables("docs/configuration.md", marker: "keys")
        let reader = ConfigKeys.sections
        for section in Set(reader.keys).subtracting(documented.keys).sorted() {
            Issue.record("docs/configuration.md has no table for \(section) (keys \(reader[section]!.sorted()))")
        }
        for section in Set(documented.keys).subtracting(reader.keys).sorted() {
            Issue.record("docs/configuration.md documents \(section), which the reader does not know")
        }
        for (section, keys) in reader.sorted(by: { $0.key < $1.key }) {
            guard let doc = documented[section] else { continue }
            let missing = Set(keys).subtracting(doc).sorted()
            let extra = Set(doc).subtracting(keys).sorted()
            #expect(missing.isEmpty, "docs/configuration.md, \(section): undocumented keys \(missing)")
            #expect(extra.isEmpty, "docs/configuration.md, \(section): keys the reader rejects \(extra)")
            #expect(doc.count == Set(doc).count, "docs/configuration.md, \(section): a key is listed twice")
        }
    }

    @Test("docs/rules.md lists every template variable, and no other")
    func templateVariables() throws {
        let documented = try Self.markedTables("docs/rules.md", marker: "variables")
        let code: [String: Set<String>] = [
            "message": TemplateCheck.message,
            "alert": TemplateCheck.alert.subtracting(TemplateCheck.message),
            "notification": TemplateCheck.notification,
        ]
        #expect(Set(documented.keys) == Set(code.keys))
        for (section, names) in code {
            let doc = Set(documented[section] ?? [])
            #expect(
                doc == names,
                "docs/rules.md, \(section): missing \((names.subtracting(doc)).sorted()), extra \(doc.subtracting(names).sorted())"
            )
        }
    }

    /// The README's walk-through blocks: `<!-- walkthrough: NAME -->` before a fenced block.
    static func walkthrough() throws -> [String: String] {
        let lines = try lines("README.md")
        var out: [String: String] = [:]
        var i = 0
        while i < lines.count {
            let line = lines[i]
            i += 1
            guard line.hasPrefix("<!-- walkthrough: "), line.hasSuffix(" -->") else { continue }
            let name = String(line.dropFirst("<!-- walkthrough: ".count).dropLast(" -->".count))
            while i < lines.count, !lines[i].hasPrefix("```") { i += 1 }
            i += 1
            var body: [String] = []
            while i < lines.count, !lines[i].hasPrefix("```") {
                body.append(lines[i])
                i += 1
            }
            out[name] = body.joined(separator: "\n") + "\n"
        }
        return out
    }

    @Test("the README's walk-through: its files pass klaxon check, and its commands run as written")
    func readmeWalkthrough() async throws {
        let blocks = try Self.walkthrough()
        let files = blocks.filter { $0.key != "commands" }
        #expect(Set(files.keys) == ["klaxon.yaml", "rules/potomac.yaml", "readings.csv"])
        let scratch = try Scratch()
        for (name, text) in files { try scratch.write(name, text) }
        // The secret file the walk-through makes with `install -m 600`.
        let secret = try scratch.write("slack-webhook-url", "https://hooks.slack.com/services/T000/B000/XXXX\n")
        #expect(chmod(secret, 0o600) == 0)

        let commands = try #require(blocks["commands"]).split(separator: "\n").map {
            $0.trimmingCharacters(in: .whitespaces)
        }.filter { $0.hasPrefix("klaxon ") }
        let check = try #require(commands.first { $0.hasPrefix("klaxon check ") })
        let dryRun = try #require(commands.first { $0.hasPrefix("klaxon dry-run ") })
        #expect(commands.contains { $0.hasPrefix("klaxon run ") })

        let checked = try await klaxonAsync(Self.arguments(check), in: scratch.dir)
        #expect(checked.status == 0, "\(check): \(checked.stdout)\(checked.stderr)")
        let replayed = try await klaxonAsync(Self.arguments(dryRun), in: scratch.dir)
        #expect(replayed.status == 0, "\(dryRun): \(replayed.stderr)")
        // What the README says the replay shows: action, then minor, then back down, each to Slack.
        for state in ["firing", "changed", "resolved"] {
            #expect(replayed.stdout.contains(state), "\(dryRun) printed \(replayed.stdout)")
        }
        #expect(replayed.stdout.contains("team-slack"))
        #expect(replayed.stdout.contains("action→minor"))
    }

    /// `klaxon check --config klaxon.yaml` → `["check", "--config", "klaxon.yaml"]` (no quoting is
    /// used in the walk-through's commands).
    static func arguments(_ command: String) -> [String] {
        let words = command.split(separator: "#").first.map { $0.split(separator: " ").map(String.init) } ?? []
        return Array(words.dropFirst())
    }
}
