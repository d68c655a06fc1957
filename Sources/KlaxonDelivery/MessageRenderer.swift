import Foundation
import KlaxonCore
import Mustache

/// Renders alert messages from mustache templates. A rule without a template gets its kind's summary.
///
/// Template variables: `rule`, `kind`, `station`, `metric`, `state`, `level`, `from_level`, `value`,
/// `unit`, `at` (ISO 8601 UTC), `severity`, `summary`, `explanation`, `labels.NAME`, and the booleans
/// `firing`, `resolved`, `changed`.
public struct MessageRenderer: Sendable {
    private let templates: [String: MustacheTemplate]

    /// Compiles every rule's template; a template that does not compile is an error naming the rule.
    /// A message is plain text (values are not escaped): each destination escapes it for itself.
    public init(rules: [Rule]) throws {
        var templates: [String: MustacheTemplate] = [:]
        for rule in rules {
            guard let text = rule.message else { continue }
            templates[rule.name] = try Self.compile(text, origin: "rule \(rule.name)", escaping: .text)
        }
        self.templates = templates
    }

    /// Compiles a template, turning the parser's error into a message with line and column. Values
    /// substituted with `{{name}}` are escaped as `escaping` says (`{{{name}}}` stays raw).
    public static func compile(_ text: String, origin: String, escaping: TemplateEscaping = .html) throws
        -> MustacheTemplate
    {
        let template: MustacheTemplate
        do {
            template = try MustacheTemplate(string: text)
        } catch let error as MustacheTemplate.ParserError {
            throw TemplateError(message: "\(origin): template error at \(TemplateCheck.words(error))")
        }
        if escaping == .html { return template }
        // The escaping is chosen by a content-type pragma on a line of its own before the text: a
        // standalone tag, so it adds no output and the text's first line keeps its standalone tags.
        // (Compiled as written first, so errors name the operator's lines and columns.)
        _ = TemplateEscaping.registered
        do {
            return try MustacheTemplate(string: "{{%CONTENT_TYPE:\(escaping.contentTypeName)}}\n" + text)
        } catch {
            throw TemplateError(message: "\(origin): template error: \(error)")
        }
    }

    public func render(_ t: Transition) -> String {
        guard let template = templates[t.rule] else { return t.summary }
        return template.render(Self.context(t)).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The values a template sees.
    public static func context(_ t: Transition) -> [String: Any] {
        var c: [String: Any] = [
            "rule": t.rule, "kind": t.kind, "station": t.station, "metric": t.metric, "state": t.state.rawValue,
            "at": Timestamp.format(t.at), "severity": t.severity.rawValue, "summary": t.summary,
            "explanation": t.explanation, "labels": t.labels,
            "firing": t.state == .firing, "resolved": t.state == .resolved, "changed": t.state == .changed,
        ]
        if let v = t.value { c["value"] = formatValue(v) }
        if let u = t.unit { c["unit"] = u }
        if let l = t.level { c["level"] = l }
        if let f = t.fromLevel { c["from_level"] = f }
        return c
    }
}

public struct TemplateError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}
