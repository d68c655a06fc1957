import Foundation
import KlaxonCore
import KlaxonSQLite

/// `klaxon check`: validates rule files (and the config) and reports every problem.
public enum Check {
    public struct Outcome: Sendable {
        public var rules = 0
        public var files = 0
        public var diagnostics: [Diagnostic] = []
        /// Printed, but they do not fail the check (a secret file anyone may read).
        public var warnings: [Diagnostic] = []
    }

    /// Warnings about `levels: nws` rules over stations the SQLite database at `database` (when it
    /// exists) has no flood categories for. Opens it read-only; says nothing when it cannot.
    public static func missingCategories(rulePaths: [String], database: String?) async -> [String] {
        guard let db = database, FileManager.default.fileExists(atPath: db),
            let ruleList = try? RuleLoader.load(paths: rulePaths),
            let store = try? SQLiteStore.openReadOnly(path: db)
        else { return [] }
        return (try? await WaterContext.missingCategories(rules: ruleList, store: store)) ?? []
    }

    public static func run(rulePaths: [String], configPath: String?) -> Outcome {
        checked(configPath: configPath, rulePaths: { _ in rulePaths }).outcome
    }

    /// What the daemon starts with and what a reload (SIGHUP, `POST /-/reload`) reads: the config
    /// at `configPath` and the rules it names (`rules:`, else Rules/), checked as `klaxon check`
    /// checks them, by the same path. A config with errors does not hide the rules' errors: the
    /// `DiagnosticsError` thrown lists every problem of both, as `check` prints them. `warnings`
    /// are those `check` prints (a secret file anyone may read).
    public static func load(configPath: String) throws -> (config: Config, rules: [Rule], warnings: [String]) {
        let (outcome, config, rules) = checked(configPath: configPath) { $0?.rules ?? ["Rules"] }
        guard outcome.diagnostics.isEmpty, let config else { throw DiagnosticsError(diagnostics: outcome.diagnostics) }
        return (config, rules, outcome.warnings.map(\.warningDescription))
    }

    /// The one checking path: the config (when given), then the rules under `rulePaths(config)`
    /// (the config as far as it loaded), then their cross-references; every problem of all three.
    static func checked(configPath: String?, rulePaths: (Config?) -> [String]) -> (
        outcome: Outcome, config: Config?, rules: [Rule]
    ) {
        var outcome = Outcome()
        let diagnostics = Diagnostics()
        let config = configPath.map {
            Config.load(path: $0, environment: ProcessInfo.processInfo.environment, diagnostics: diagnostics)
        }
        let paths = rulePaths(config)
        var rules: [Rule] = []
        do {
            outcome.files = try RuleLoader.ruleFiles(paths).count
            rules = try RuleLoader.load(paths: paths, diagnostics: diagnostics)
            outcome.rules = rules.count
            // Cross-references: a rule's notify must name a receiver of the config.
            if let config { config.check(rules: rules).forEach(diagnostics.add) }
        } catch {
            diagnostics.add(Diagnostic(path: paths.joined(separator: " "), line: 1, column: 1, message: "\(error)"))
        }
        outcome.warnings = diagnostics.warnings
        outcome.diagnostics = diagnostics.items.sorted { ($0.path, $0.line, $0.column) < ($1.path, $1.line, $1.column) }
        return (outcome, config, rules)
    }
}
