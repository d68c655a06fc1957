/// Text from data (a silence's comment, an author, a receiver's error, a station name) made safe to
/// print to a terminal: nothing in it can move the cursor, recolour, retitle the window, hide what
/// follows or reorder it. Control characters are shown as visible escapes (`\e`, `\n`, `\x07`,
/// `\u{202E}`), so an operator sees that something was there; everything else is left as it is.
public enum TerminalText {
    /// `text` with every control character escaped: C0 (tab and line breaks too: one record, one
    /// line), DEL, C1 (whose 0x9B is a one-byte CSI on some terminals), bidirectional overrides and
    /// isolates (which reorder what a reader sees), and the Unicode line and paragraph separators.
    /// An ESC sequence loses its ESC, so the rest of it prints as plain characters.
    public static func safe(_ text: String) -> String { Escape.terminal(text) }

    /// The same for text of several lines (a report): line feeds stay, every other control is escaped.
    public static func safeLines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { safe(String($0)) }.joined(
            separator: "\n")
    }

    /// Why `text` cannot be stored as something people will read in a terminal (a comment, an
    /// author), or nil when it can: a control character or a bidirectional override.
    public static func problem(_ text: String) -> String? {
        guard let s = Escape.terminal.firstReplaced(in: text) else { return nil }
        return "contains a control character (\(Escape.terminal(String(s)))); use plain text"
    }

    /// True for characters a terminal acts on or that reorder the text around them.
    /// (C0, DEL, C1; bidirectional marks, overrides and isolates; the line and paragraph
    /// separators: the scalars `Escape.terminal` replaces.)
    public static func isUnsafe(_ s: Unicode.Scalar) -> Bool { Escape.terminal.replaces(s) }
}
