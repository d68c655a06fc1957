import Foundation
import KlaxonCore

/// A small SVG writer for the status site's charts. Element and attribute names are string
/// literals in the code; every attribute value and every text is escaped (`escape`), so text from
/// the store (a station's name, a quake's place) cannot leave its attribute or element, and the
/// document stays well-formed XML for librsvg (`SVGRaster`) as well as HTML for the pages.
struct SVGWriter {
    private(set) var output = ""

    init(capacity: Int = 4096) { output.reserveCapacity(capacity) }

    /// `<name a="v" …>`
    mutating func open(_ name: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:]) {
        start(name, attributes)
        output += ">"
    }

    /// `<name a="v" …/>`
    mutating func leaf(_ name: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:]) {
        start(name, attributes)
        output += "/>"
    }

    /// `<name a="v" …>text</name>`
    mutating func element(
        _ name: StaticString, _ attributes: KeyValuePairs<StaticString, String> = [:], text: String
    ) {
        open(name, attributes)
        self.text(text)
        close(name)
    }

    mutating func close(_ name: StaticString) {
        output += "</"
        output += name.description
        output += ">"
    }

    /// Escaped text content.
    mutating func text(_ s: String) { output += Self.escape(s) }

    /// `<title>…</title>`: a chart's or a mark's accessible name (and its tooltip).
    mutating func title(_ s: String) { element("title", text: s) }

    private mutating func start(_ name: StaticString, _ attributes: KeyValuePairs<StaticString, String>) {
        output += "<"
        output += name.description
        for (k, v) in attributes {
            output += " "
            output += k.description
            output += "=\""
            output += Self.escape(v)
            output += "\""
        }
    }

    /// `HTMLText.escape` for XML 1.0 too (`Escape.svg`): `&`, `<`, `>`, `"` and `'` as references,
    /// and each character XML cannot hold even as a reference (C0 controls other than tab, line feed
    /// and carriage return; U+FFFE, U+FFFF) as U+FFFD: an XML parser stops at one, and the picture
    /// with it.
    static func escape(_ text: String) -> String { Escape.svg(text) }

    /// A coordinate with at most one decimal (`12`, `12.5`, `-0.3`): enough for pixels, and short.
    static func num(_ v: Double) -> String {
        guard v.isFinite else { return "0" }
        let tenths = Int((v * 10).rounded())
        let whole = tenths / 10
        let frac = abs(tenths % 10)
        if frac == 0 { return String(whole) }
        return (tenths < 0 && whole == 0 ? "-0" : String(whole)) + "." + String(frac)
    }
}

/// Colours and the contrast between them (WCAG 2 relative luminance).
enum SiteColour {
    /// The contrast ratio of two `#RRGGBB` colours (1…21).
    static func contrast(_ a: String, _ b: String) -> Double {
        let la = luminance(a)
        let lb = luminance(b)
        return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
    }

    /// Black or white, whichever reads better on `background` (either gives at least 4.5:1 on any
    /// colour whose contrast with one of them reaches it; every scale colour does).
    static func text(on background: String) -> String {
        contrast(background, "#000000") >= contrast(background, "#FFFFFF") ? "#000000" : "#FFFFFF"
    }

    static func luminance(_ hex: String) -> Double {
        let digits = Array(hex.utf8.drop { $0 == UInt8(ascii: "#") })
        guard digits.count == 6 else { return 0 }
        func channel(_ i: Int) -> Double {
            let s = String(decoding: digits[i..<(i + 2)], as: UTF8.self)
            let c = Double(Int(s, radix: 16) ?? 0) / 255
            return c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4)
        }
        return 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4)
    }
}
