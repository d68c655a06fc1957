import ArgumentParser
import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSources
import KlaxonStore

struct CheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check", abstract: "Validate rule files (and --config); report every problem.")

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Config file to validate too (default: $KLAXON_CONFIG, else /etc/klaxon/klaxon.yaml if it exists).",
            valueName: "file"),
        completion: .file(extensions: ["yaml", "yml"]))
    var config: String?

    @OptionGroup var rules: RulesOption

    @Option(
        help: ArgumentHelp(
            "Output format: text or json.",
            discussion:
                "json: {\"ok\", \"rules\", \"files\", \"errors\": [{\"file\", \"line\", \"column\", \"message\"}], \"warnings\": [the same; a warning without a position has only \"message\"]}."
        ))
    var format: OutputFormat = .text

    struct Problem: Encodable {
        var file: String?
        var line: Int?
        var column: Int?
        var message: String
        init(_ d: Diagnostic) {
            file = d.path
            line = d.line
            column = d.column
            message = d.message
        }
        init(message: String) { self.message = message }
    }

    struct Report: Encodable {
        var ok: Bool
        var rules: Int
        var files: Int
        var errors: [Problem]
        var warnings: [Problem]
    }

    func run() async throws {
        try await guarded {
            let configPath = resolvedConfigPath(config)
            // The rules: default comes from the config even when the config has other problems.
            let partial = configPath.map {
                Config.load(path: $0, environment: ProcessInfo.processInfo.environment, diagnostics: Diagnostics())
            }
            let outcome = Check.run(rulePaths: rules.paths(partial), configPath: configPath)
            // `levels: nws` rules over stations the database has no flood categories for.
            let missing =
                outcome.diagnostics.isEmpty
                ? await Check.missingCategories(rulePaths: rules.paths(partial), database: partial?.database) : []
            if format == .json {
                try printJSON(
                    Report(
                        ok: outcome.diagnostics.isEmpty, rules: outcome.rules, files: outcome.files,
                        errors: outcome.diagnostics.map(Problem.init),
                        warnings: outcome.warnings.map(Problem.init) + missing.map { Problem(message: $0) }))
                return outcome.diagnostics.isEmpty ? 0 : 1
            }
            for w in outcome.warnings { printError(w.warningDescription) }
            for d in outcome.diagnostics { printError(d.description) }
            for line in missing { printError("warning: \(line)") }
            if outcome.diagnostics.isEmpty {
                print("ok: \(outcome.rules) rules in \(outcome.files) files")
                return 0
            }
            printError("\(outcome.diagnostics.count) problem\(outcome.diagnostics.count == 1 ? "" : "s") found")
            return 1
        }
    }
}
