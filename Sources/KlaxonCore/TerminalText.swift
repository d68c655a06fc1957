/// Text from data (a silence's comment, an author, a receiver's error, a station name) made safe to
/// print to a terminal: nothing in it can move the cursor, recolour, retitle the window, hide what
/// follows or reorder it. Control characters are shown as visible escapes (`\e`, `\n`, `\x07`,
/// `\u{202E}`), so an operator sees that something was there; everything else is left as it is.
public enum TerminalText {
    /// `text` with every control character escaped: C0 (tab and line breaks too: one record, one
    /// line), DEL, C1 (whose 0x9B is a one-byte CSI on some terminals), bidirectional overrides and
    /// isolates (which reorder what a reader sees), and the Unicode line and paragraph separators.
    /// An ESC sequence loses its ESC, so the rest of it prints as plain characters.
    public static func safe(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 8)
        for s in text.unicodeScalars {
            if isUnsafe(s) { out += escape(s) } else { out.unicodeScalars.append(s) }
        }
        return out
    }

    /// The same for text of several lines (a report): line feeds stay, every other control is escaped.
    public static func safeLines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { safe(String($0)) }.joined(
            separator: "\n")
    }

    /// Why `text` cannot be stored as something people will read in a terminal (a comment, an
    /// author), or nil when it can: a control character or a bidirectional override.
    public static func problem(_ text: String) -> String? {
        guard let s = text.unicodeScalars.first(where: isUnsafe) else { return nil }
        return "contains a control character (\(escape(s))); use plain text"
    }

    /// True for characters a terminal acts on or that reorder the text around them.
    public static func isUnsafe(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x00...0x1F, 0x7F...0x9F: true  // C0, DEL, C1
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true  // bidi marks, overrides, isolates
        case 0x2028, 0x2029: true  // line and paragraph separators
        default: false
        }
    }

    static func escape(_ s: Unicode.Scalar) -> String {
        switch s.value {
        case 0x09: return "\\t"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x1B: return "\\e"
        case 0...0xFF:
            let hex = String(s.value, radix: 16, uppercase: true)
            return "\\x" + (hex.count < 2 ? "0" + hex : hex)
        default: return "\\u{" + String(s.value, radix: 16, uppercase: true) + "}"
        }
    }
}
