import Foundation

extension Check {
    /// One problem in `klaxon check --format json`.
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

    /// `klaxon check --format json`: `{"ok", "rules", "files", "errors", "warnings"}`.
    struct Report: Encodable {
        var ok: Bool
        var rules: Int
        var files: Int
        var errors: [Problem]
        var warnings: [Problem]
    }

    /// `klaxon check`: the config at `configPath` (when there is one) and the rules under `rules`
    /// (empty: the config's `rules:`, else Rules/), with every problem reported: as text (problems and
    /// warnings on standard error, `ok: …` on standard output) or as one JSON document on standard
    /// output. Returns the exit status: 1 when there is a problem.
    public static func command(
        configPath: String?, rules: [String], json: Bool, output: CommandOutput = .standard
    ) async throws -> Int32 {
        // The rules: default comes from the config even when the config has other problems.
        let partial = configPath.map {
            Config.load(path: $0, environment: ProcessInfo.processInfo.environment, diagnostics: Diagnostics())
        }
        let rulePaths = !rules.isEmpty ? rules : partial?.rules ?? ["Rules"]
        let outcome = run(rulePaths: rulePaths, configPath: configPath)
        // `levels: nws` rules over stations the database has no flood categories for.
        let missing =
            outcome.diagnostics.isEmpty
            ? await missingCategories(rulePaths: rulePaths, database: partial?.database) : []
        if json {
            try output.json(
                Report(
                    ok: outcome.diagnostics.isEmpty, rules: outcome.rules, files: outcome.files,
                    errors: outcome.diagnostics.map(Problem.init),
                    warnings: outcome.warnings.map(Problem.init) + missing.map { Problem(message: $0) }))
            return outcome.diagnostics.isEmpty ? 0 : 1
        }
        for w in outcome.warnings { output.error(w.warningDescription) }
        for d in outcome.diagnostics { output.error(d.description) }
        for line in missing { output.error("warning: \(line)") }
        if outcome.diagnostics.isEmpty {
            output.line("ok: \(outcome.rules) rules in \(outcome.files) files")
            return 0
        }
        output.error("\(outcome.diagnostics.count) problem\(outcome.diagnostics.count == 1 ? "" : "s") found")
        return 1
    }
}
