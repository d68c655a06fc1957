import Foundation

/// Where a one-shot command's lines go: standard output (what it reports, for scripts) and standard
/// error (progress, warnings, errors; escaped for the terminal by `printError`). The `klaxon`
/// commands use `standard`; a test runs the same code in process and collects both.
public struct CommandOutput: Sendable {
    /// One line of standard output, without its newline.
    public var line: @Sendable (String) -> Void
    /// One line (or several) of standard error, without the final newline.
    public var error: @Sendable (String) -> Void

    public init(line: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void) {
        self.line = line
        self.error = error
    }

    /// The process's standard output and standard error.
    public static let standard = CommandOutput(line: { print($0) }, error: { printError($0) })
}

extension CommandOutput {
    /// `value` as one JSON document on standard output (keys sorted, so output is stable across runs).
    public func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        line(String(decoding: try encoder.encode(value), as: UTF8.self))
    }
}
