import Foundation
import KlaxonCore

/// `klaxon.yaml`. Strict like rule files: unknown keys are errors with `PATH:LINE:COL`.
/// Relative paths inside it are relative to the config file's folder.
public struct Config: Sendable {
    /// The SQLite database file.
    public var database: String?
    /// Rule files or folders.
    public var rules: [String]?

    public init(database: String? = nil, rules: [String]? = nil) {
        self.database = database
        self.rules = rules
    }

    public static let keys = ["database", "rules"]

    public static func load(path: String) throws -> Config {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw UserError("\(path): cannot read the config file")
        }
        let diagnostics = Diagnostics()
        let file = YAMLFile(path: path, diagnostics: diagnostics)
        var config = Config()
        if let root = file.compose(text), var m = file.map(root, what: "the config") {
            let dir = (path as NSString).deletingLastPathComponent
            func resolve(_ p: String) -> String {
                p.hasPrefix("/") || dir.isEmpty ? p : (dir as NSString).appendingPathComponent(p)
            }
            config.database = m.value("database").flatMap { file.string($0, what: "database") }.map(resolve)
            if let n = m.value("rules") {
                if n.scalar != nil {
                    config.rules = file.string(n, what: "rules").map { [resolve($0)] }
                } else {
                    config.rules = file.stringList(n, what: "rules")?.map(resolve)
                }
            }
            m.rejectUnknown(known: keys, what: "the config")
        }
        guard diagnostics.isEmpty else { throw DiagnosticsError(diagnostics: diagnostics.items) }
        return config
    }
}
