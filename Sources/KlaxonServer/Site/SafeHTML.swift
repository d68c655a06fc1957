import Foundation
import KlaxonCore
import Plot

/// The one place the status site turns text from data or the request into markup.
///
/// Plot writes attribute values exactly as given (`.attribute(named:value:)`, `.value`, `.href`,
/// `.class`, … do not escape), and its `.text` escapes `<`, `>` and `&` but leaves anything that
/// looks like an entity (`&#x27;`) alone. So the site never hands Plot a value from data: every
/// attribute value goes through the `safe…` helpers below and every text through `SafeHTML.text`,
/// which escape `&`, `<`, `>`, `"` and `'` (`HTMLText.escape`). Hrefs are also checked (a local path
/// or an absolute http(s) URL; anything else, such as `javascript:`, is dropped), and ids in paths and
/// queries are percent-encoded. A source scan (`SiteHostileTests`, `SiteSourceScan`) fails on a raw
/// Plot attribute or `.text` with a non-literal value, or a `.raw`, anywhere in `Site/` outside this
/// file.
enum SafeHTML {
    /// Text or a quoted attribute value, escaped.
    static func escape(_ s: String) -> String { HTMLText.escape(s) }

    /// Text content, fully escaped: an entity typed in a station's name is shown as typed.
    static func text<C>(_ s: String) -> Node<C> { .raw(escape(s)) }

    /// Markup the chart code wrote with `SVGWriter`, which escapes every text and attribute value
    /// itself and takes element and attribute names only as literals.
    static func chart<C>(_ svg: String) -> Node<C> { .raw(svg) }

    /// A style sheet of the code (never data).
    static func style<C>(_ css: String) -> Node<C> { .element(named: "style", nodes: [.raw(css)]) }

    // MARK: URLs

    /// A path segment or a query value: everything beyond the ASCII unreserved characters
    /// (`A–Z a–z 0–9 - . _ ~`) percent-encoded, so `/`, `?`, `#`, `%`, spaces and non-ASCII letters
    /// stay inside the segment.
    static func segment(_ s: String) -> String {
        s.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A URL the site may link to: a local path (one leading `/`, not `//` or `/\`, which browsers
    /// read as another host) or an absolute `http`/`https` URL; without spaces, control characters
    /// or backslashes. Nil for anything else (`javascript:`, `data:`, `//evil.example`).
    static func url(_ s: String) -> String? {
        guard !s.isEmpty, s.utf8.count <= 4096,
            !s.unicodeScalars.contains(where: {
                $0.value <= 0x20 || $0.value == 0x7F || (0x80...0x9F).contains($0.value) || $0 == "\\"
            })
        else { return nil }
        if s.hasPrefix("/") { return s.hasPrefix("//") ? nil : s }
        let lower = s.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else { return nil }
        return s
    }
}

extension Node {
    /// An attribute whose name is a literal of the code and whose value is escaped (nil: left out).
    static func safeAttribute(named name: StaticString, value: String?) -> Node {
        .attribute(named: name.description, value: value.map(SafeHTML.escape))
    }
}

extension Node where Context: HTMLContext {
    /// `class="…"`, escaped.
    static func safeClass(_ names: String) -> Node { .safeAttribute(named: "class", value: names) }

    /// `id="…"`, escaped.
    static func safeID(_ id: String) -> Node { .safeAttribute(named: "id", value: id) }
}

extension Node where Context: HTMLLinkableContext {
    /// `href="…"`: a local path or an http(s) URL (`SafeHTML.url`), escaped; left out otherwise.
    static func safeHref(_ url: String) -> Node {
        .safeAttribute(named: "href", value: SafeHTML.url(url))
    }
}

extension Node where Context == HTML.FormContext {
    /// `action="…"`: a local path, escaped; left out otherwise (the form then posts to its own page).
    static func safeAction(_ path: String) -> Node {
        .safeAttribute(named: "action", value: SafeHTML.url(path).flatMap { $0.hasPrefix("/") ? $0 : nil })
    }
}

extension Node where Context: HTMLValueContext {
    /// `value="…"`, escaped (an empty value is left out, as Plot's `.value` does).
    static func safeValue(_ value: String) -> Node { .safeAttribute(named: "value", value: value) }
}

// Elements whose content is attributes only (`<input>`) take `Attribute`s rather than `Node`s.
extension Attribute {
    /// An attribute whose name is a literal of the code and whose value is escaped (nil: left out).
    static func safeAttribute(named name: StaticString, value: String?) -> Attribute {
        .attribute(named: name.description, value: value.map(SafeHTML.escape))
    }
}

extension Attribute where Context: HTMLValueContext {
    /// `value="…"`, escaped (an empty value is left out, as Plot's `.value` does).
    static func safeValue(_ value: String) -> Attribute { .safeAttribute(named: "value", value: value) }
}
