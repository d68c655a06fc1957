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
    /// Each rule's annotation templates (`runbook_url` among them), by rule.
    private let annotationTemplates: [String: [(String, MustacheTemplate)]]

    /// Compiles every rule's template; a template that does not compile is an error naming the rule.
    /// A message is plain text (values are not escaped): each destination escapes it for itself.
    public init(rules: [Rule]) throws {
        var templates: [String: MustacheTemplate] = [:]
        var annotations: [String: [(String, MustacheTemplate)]] = [:]
        for rule in rules {
            var own: [(String, MustacheTemplate)] = []
            if let url = rule.runbookURL {
                // A URL: values substituted into it are percent-encoded, not HTML-escaped.
                own.append(
                    ("runbook_url", try Self.compile(url, origin: "rule \(rule.name) runbook_url", escaping: .text)))
            }
            for (key, text) in rule.annotations.sorted(by: { $0.key < $1.key }) {
                own.append(
                    (key, try Self.compile(text, origin: "rule \(rule.name) annotations.\(key)", escaping: .text)))
            }
            if !own.isEmpty { annotations[rule.name] = own }
            guard let text = rule.message else { continue }
            templates[rule.name] = try Self.compile(text, origin: "rule \(rule.name)", escaping: .text)
        }
        self.templates = templates
        self.annotationTemplates = annotations
    }

    /// The longest annotation kept (a template over data could otherwise grow without bound).
    public static let annotationLimit = 2_048

    /// A rule's annotations rendered for a transition; `runbook_url` is kept only when it renders to
    /// an `http(s)` URL without spaces or control characters (data substituted into it cannot turn it
    /// into `javascript:`).
    public func annotations(_ t: Transition) -> [String: String] {
        guard let own = annotationTemplates[t.rule] else { return [:] }
        let c = Self.context(t)
        var out: [String: String] = [:]
        for (key, template) in own {
            var text = template.render(c).trimmingCharacters(in: .whitespacesAndNewlines)
            if key == "runbook_url" {
                // Spaces and non-ASCII from data are percent-encoded (a station name in a wiki path).
                text = Escape.runbookURL(text)
                guard Self.isLink(text) else { continue }
            }
            if text.count > Self.annotationLimit { text = String(text.prefix(Self.annotationLimit - 1)) + "…" }
            if !text.isEmpty { out[key] = text }
        }
        return out
    }

    /// An absolute `http`/`https` URL of at most 2,048 bytes with no whitespace, control characters,
    /// quotes, angle brackets or backslashes: safe in an `href`, a chat link and a button.
    public static func isLink(_ s: String) -> Bool {
        let lower = s.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://"), s.utf8.count <= 2_048,
            URL(string: s)?.host?.isEmpty == false
        else { return false }
        // ASCII only: no bidirectional overrides or look-alike letters can disguise where it goes.
        return !s.unicodeScalars.contains {
            $0.value < 0x21 || $0.value >= 0x7f || "\"'<>\\`|{}^".unicodeScalars.contains($0)
        }
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
        c["place"] = t.place ?? t.station
        if let h = t.headline { c["headline"] = h }
        return c
    }
}

public struct TemplateError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}
