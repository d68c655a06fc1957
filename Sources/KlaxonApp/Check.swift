import Foundation
import KlaxonCore

/// `klaxon check`: validates rule files (and the config) and reports every problem.
public enum Check {
    public struct Outcome: Sendable {
        public var rules = 0
        public var files = 0
        public var diagnostics: [Diagnostic] = []
    }

    public static func run(rulePaths: [String], configPath: String?) -> Outcome {
        var outcome = Outcome()
        let diagnostics = Diagnostics()
        if let configPath {
            do { _ = try Config.load(path: configPath) } catch let e as DiagnosticsError {
                e.diagnostics.forEach(diagnostics.add)
            } catch {
                diagnostics.add(Diagnostic(path: configPath, line: 1, column: 1, message: "\(error)"))
            }
        }
        do {
            outcome.files = try RuleLoader.ruleFiles(rulePaths).count
            outcome.rules = try RuleLoader.load(paths: rulePaths, diagnostics: diagnostics).count
        } catch {
            diagnostics.add(Diagnostic(path: rulePaths.joined(separator: " "), line: 1, column: 1, message: "\(error)"))
        }
        outcome.diagnostics = diagnostics.items
        return outcome
    }
}
