import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore

/// `--format text|json` of the commands that list or report (`check`, `test`, `silence list`,
/// `outbox list`, `alerts`, `routes`). JSON is for scripts: field names are stable and documented in
/// docs/cli.md; text is for people and may change.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    case text, json
}

/// Prints `value` as one JSON document (keys sorted, so output is stable across runs).
func printJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    print(String(decoding: try encoder.encode(value), as: UTF8.self))
}

/// Aligned columns for people: each cell escaped for the terminal (`TerminalText`: stored text came
/// from outside), padded to its column's width; the last column is not padded.
func table(_ header: [String], _ rows: [[String]]) -> String {
    let all = [header] + rows.map { $0.map(TerminalText.safe) }
    var widths = Array(repeating: 0, count: header.count)
    for row in all {
        for (i, cell) in row.enumerated() where i < widths.count { widths[i] = max(widths[i], cell.count) }
    }
    return all.map { row in
        row.enumerated().map { i, cell in
            i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0)
        }.joined(separator: "  ")
    }.joined(separator: "\n")
}

/// The config file a command reads: `--config`, `KLAXON_CONFIG`, /etc/klaxon/klaxon.yaml (if it
/// exists), else nil.
func resolvedConfigPath(_ flag: String?) -> String? {
    ConfigLookup.resolve(flag: flag)?.path
}

/// The same, for a command that cannot run without a config.
func requiredConfigPath(_ flag: String?, for what: String) throws -> String {
    guard let path = resolvedConfigPath(flag) else {
        throw ValidationError(
            "\(what) needs a config: give --config klaxon.yaml or set \(ConfigLookup.environmentVariable) "
                + "(\(ConfigLookup.systemPath) is read when it exists)")
    }
    return path
}

/// Shell completion of names from the config the command line would read. Runs when a user presses
/// TAB: it must be quick and quiet, so every failure completes nothing.
enum ConfigCompletion {
    /// The `--config` value on the command line being completed, else the lookup's.
    static func configPath(_ words: [String]) -> String? {
        var flag: String?
        for (i, w) in words.enumerated() {
            if w == "--config", i + 1 < words.count { flag = words[i + 1] }
            if w.hasPrefix("--config=") { flag = String(w.dropFirst("--config=".count)) }
        }
        return resolvedConfigPath(flag.map(unquoted))
    }

    static func unquoted(_ word: String) -> String {
        var w = word
        if w.count >= 2, let f = w.first, f == "\"" || f == "'", w.last == f { w = String(w.dropFirst().dropLast()) }
        return w
    }

    static func config(_ words: [String]) -> Config? {
        guard let path = configPath(words) else { return nil }
        return Config.load(
            path: path, environment: ProcessInfo.processInfo.environment, diagnostics: Diagnostics())
    }

    /// Receiver names of the config.
    static func receivers(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        (config(words)?.receivers.map(\.name) ?? []).filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// Rule names of the config's rules (or Rules/).
    static func ruleNames(_ words: [String]) -> [String] {
        let paths = config(words)?.rules ?? ["Rules"]
        return ((try? RuleLoader.load(paths: paths)) ?? []).map(\.name)
    }

    /// Matchers and labels: `rule=NAME` from the rules, `severity=LEVEL`, `receiver=NAME`, else the
    /// label names.
    static func labels(_ words: [String], _ index: Int, _ prefix: String) -> [String] {
        let candidates: [String]
        if prefix.hasPrefix("rule=") || prefix.hasPrefix("alertname=") {
            let key = prefix.hasPrefix("rule=") ? "rule=" : "alertname="
            candidates = ruleNames(words).map { key + $0 }
        } else if prefix.hasPrefix("severity=") {
            candidates = Severity.allCases.map { "severity=" + $0.rawValue }
        } else {
            candidates = ["rule=", "station=", "metric=", "severity=", "level="]
        }
        return Array(Set(candidates.filter { $0.hasPrefix(prefix) })).sorted()
    }
}
