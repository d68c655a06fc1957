import Foundation
import KlaxonCore
import Mustache

/// Checks a template's names against the closed set of variables it will see, so `{{statoin}}` is
/// an error at `klaxon check` (and at start), not an empty string in a message at 3 a.m.
///
/// Written here rather than taken from swift-mustache: the library renders an unknown name as
/// nothing by design (the mustache spec says so) and exposes no parsed tree to walk. The scan reads
/// tags only (`{{…}}`, `{{{…}}}`, with the sigils `# ^ / & ! > %`); a template that changes its
/// delimiters (`{{=<% %>=}}`) is not checked past that point. Syntax errors come from the library's
/// parser, put in words (`TemplateCheck.words`).
public enum TemplateCheck {
    /// The variables of a rule's `message` (`MessageRenderer.context`).
    public static let message: Set<String> = [
        "rule", "kind", "station", "metric", "state", "at", "severity", "summary", "explanation", "labels", "firing",
        "resolved", "changed", "value", "unit", "level", "from_level", "place", "headline",
    ]
    /// The variables of each alert in a receiver's template (`{{#alerts}}…{{/alerts}}`).
    public static let alert: Set<String> = message.union([
        "message", "title", "alert_id", "starts_at", "path", "late", "url", "page_url", "chart_url", "runbook_url",
        "annotations",
    ])
    /// The variables of a receiver's template outside `{{#alerts}}`.
    public static let notification: Set<String> = [
        "receiver", "status", "digest", "key", "alerts", "notification_reason", "reason",
    ]

    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// 1-based, in the template's text.
        public var line: Int
        public var column: Int
        public var message: String
        public var description: String { "line \(line), column \(column): \(message)" }
    }

    /// Inside these sections any name goes: `labels` is the rule's own, open set.
    static let anyName: Set<String> = ["*"]

    /// Problems with the names a rule's `message` uses.
    public static func checkMessage(_ text: String) -> [Problem] {
        check(text, top: message, sections: ["labels": anyName])
    }

    /// Problems with the names a receiver's template uses (the alerts' names only inside `{{#alerts}}`).
    /// `escapedAs`: the language the template's output is in and its values are escaped for (`JSON`,
    /// `HTML`); a tag that inserts a value unescaped (`{{{name}}}`, `{{& name}}`) is then a problem,
    /// as a station name or a summary could close the string or the element it stands in.
    public static func checkReceiver(_ text: String, escapedAs language: String? = nil) -> [Problem] {
        check(
            text, top: notification, sections: ["alerts": alert, "labels": anyName, "annotations": anyName],
            escapedAs: language)
    }

    /// Every tag's name checked against `top`, or inside a section named in `sections`, against that
    /// section's names and the ones outside it (mustache looks names up the context stack). A dotted
    /// name is checked by its first part (`labels.team`); `.` is the current item.
    /// With `escapedAs` (a language), a raw tag (`{{{name}}}`, `{{& name}}`) is a problem too.
    public static func check(
        _ text: String, top: Set<String>, sections: [String: Set<String>], escapedAs language: String? = nil
    ) -> [Problem] {
        var problems: [Problem] = []
        var scopes: [Set<String>] = [top]
        var open: [String] = []
        let chars = Array(text.unicodeScalars)
        var i = 0
        var line = 1
        var column = 1
        func advance(_ n: Int) {
            for _ in 0..<n where i < chars.count {
                if chars[i] == "\n" {
                    line += 1
                    column = 1
                } else {
                    column += 1
                }
                i += 1
            }
        }
        func starts(_ s: String) -> Bool {
            let u = Array(s.unicodeScalars)
            guard i + u.count <= chars.count else { return false }
            return Array(chars[i..<(i + u.count)]) == u
        }
        while i < chars.count {
            guard starts("{{") else {
                advance(1)
                continue
            }
            let (tagLine, tagColumn) = (line, column)
            let triple = starts("{{{")
            let close = triple ? "}}}" : "}}"
            advance(triple ? 3 : 2)
            var inner = ""
            while i < chars.count && !starts(close) {
                inner.unicodeScalars.append(chars[i])
                advance(1)
            }
            advance(close.unicodeScalars.count)
            var body = inner.trimmingCharacters(in: .whitespaces)
            let sigil = body.first.map(String.init) ?? ""
            switch sigil {
            case "!", ">", "%", "<", "$": continue
            case "=": return problems  // new delimiters: not followed
            default: break
            }
            if "#^/&".contains(sigil) { body = String(body.dropFirst()).trimmingCharacters(in: .whitespaces) }
            if let language, triple || sigil == "&" {
                let tag = triple ? "{{{\(body)}}}" : "{{& \(body)}}"
                problems.append(
                    Problem(
                        line: tagLine, column: tagColumn,
                        message:
                            "\(tag) inserts a value unescaped into \(language), where it can break out of its string or element; use {{\(body)}}, which escapes it"
                    ))
            }
            // A transform (`uppercased(name)`) names its argument.
            if let open = body.lastIndex(of: "("), let shut = body.firstIndex(of: ")"), open < shut {
                body = String(body[body.index(after: open)..<shut]).trimmingCharacters(in: .whitespaces)
            }
            guard !body.isEmpty, body != "." else { continue }
            let head = String(body.split(separator: ".", maxSplits: 1).first ?? "")
            if sigil == "/" {
                if open.last == head {
                    open.removeLast()
                    scopes.removeLast()
                }
                continue
            }
            let known = scopes.reduce(into: Set<String>()) { $0.formUnion($1) }
            if !known.contains(head) && !known.contains("*") {
                var message = "unknown variable {{\(body)}}"
                if let inside = sections.first(where: { $0.value.contains(head) && $0.value != anyName })?.key,
                    !open.contains(inside)
                {
                    message += " (it is set only inside {{#\(inside)}}…{{/\(inside)}})"
                } else if let near = NearNames.near(head, among: known.subtracting(anyName), limit: 3).first {
                    message += "; did you mean {{\(near)}}?"
                }
                problems.append(Problem(line: tagLine, column: tagColumn, message: message))
            }
            if sigil == "#" || sigil == "^" {
                open.append(head)
                scopes.append(sections[head] ?? [])
            }
        }
        return problems
    }

    /// A parser error of swift-mustache in words.
    public static func words(_ error: MustacheTemplate.ParserError) -> String {
        let what: String
        switch error.error {
        case let e as MustacheTemplate.Error:
            switch e {
            case .sectionCloseNameIncorrect: what = "a {{/name}} closes a section that is not the one open"
            case .unfinishedName: what = "a tag is not closed with }}"
            case .expectedSectionEnd: what = "a section {{#name}} or {{^name}} is not closed by {{/name}}"
            case .invalidSetDelimiter: what = "a {{=… …=}} delimiter change is not valid"
            case .unrecognisedConfigVariable, .invalidConfigVariableSyntax: what = "a {{%…}} setting is not known"
            default: what = "\(e)"
            }
        default: what = "\(error.error)"
        }
        return "line \(error.context.lineNumber), column \(error.context.columnNumber): \(what)"
    }
}
