import Foundation
import KlaxonCore

/// One problem in a file a person wrote, printed as `PATH:LINE:COL: error: message`. The message
/// quotes the file (a key, a value), and the file may be hostile: the description shows control
/// characters escaped (`TerminalText`), so it cannot redraw a terminal, wherever it is printed.
public struct Diagnostic: Error, CustomStringConvertible, Sendable, Equatable {
    public var path: String
    public var line: Int
    public var column: Int
    public var message: String

    public init(path: String, line: Int, column: Int, message: String) {
        self.path = path
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String { TerminalText.safe("\(path):\(line):\(column): error: \(message)") }
}

/// Collects every problem instead of stopping at the first, like `amtool check-config`.
public final class Diagnostics: @unchecked Sendable {
    public private(set) var items: [Diagnostic] = []

    public init() {}

    public func add(_ d: Diagnostic) { items.append(d) }

    /// Things that work but deserve a look (a secret file anyone may read): printed, never fatal.
    public private(set) var warnings: [Diagnostic] = []

    public func warn(_ d: Diagnostic) { warnings.append(d) }

    public var isEmpty: Bool { items.isEmpty }
}

/// An error that carries a list of diagnostics (a file that did not load).
public struct DiagnosticsError: Error, CustomStringConvertible, Sendable {
    public var diagnostics: [Diagnostic]
    public init(diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// A plain error message for people, printed as `error: …`.
public struct UserError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
