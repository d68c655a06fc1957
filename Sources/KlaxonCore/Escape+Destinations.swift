/// The table of each place Klaxon writes text from data. `EscapeTests` pins what each makes of a
/// hostile corpus.
extension Escape {
    /// `&`, `<`, `>`, `"` and `'` as references: HTML text and quoted attribute values (email
    /// bodies, the status site, the demo's chat page).
    public static let html = Escape(htmlFive)

    /// SVG (XML 1.0) text and attribute values: `html`'s five, and each scalar XML cannot hold even
    /// as a reference (C0 controls other than tab, line feed and carriage return; U+FFFE, U+FFFF) as
    /// U+FFFD: an XML parser stops at one, and the picture with it.
    public static let svg = Escape(htmlFive + notXML)

    /// XML character data (JUnit reports): `&`, `<`, `>`, `"` (`&#34;`), `'` and carriage return as
    /// references, and what XML cannot hold as U+FFFD.
    public static let xmlText = Escape(xmlFive + notXML)

    /// An XML attribute value (JUnit reports): `xmlText`, and line feed and tab as references too,
    /// so they survive attribute-value normalization.
    public static let xmlAttribute = Escape([.map("\n", "&#xA;"), .map("\t", "&#x9;")] + xmlFive + notXML)

    private static let htmlFive: [Rule] = [
        .map("&", "&amp;"), .map("<", "&lt;"), .map(">", "&gt;"), .map("\"", "&quot;"), .map("'", "&#39;"),
    ]
    private static let xmlFive: [Rule] = [
        .map("&", "&amp;"), .map("<", "&lt;"), .map(">", "&gt;"), .map("\"", "&#34;"), .map("'", "&#39;"),
        .map("\r", "&#xD;"),
    ]
    /// Outside XML 1.0's Char production (surrogates cannot be in a Swift string).
    private static let notXML: [Rule] = [
        .map(0x00...0x08, "\u{FFFD}"), .map(0x0B...0x0C, "\u{FFFD}"), .map(0x0E...0x1F, "\u{FFFD}"),
        .map(0xFFFE...0xFFFF, "\u{FFFD}"),
    ]

    // MARK: JSON, logfmt, Go

    /// A JSON string literal (RFC 8259): `"` and `\` escaped, line feed, carriage return and tab as
    /// `\n`, `\r`, `\t`, other C0 controls as `\u001b`; in quotes.
    public static let json = Escape(jsonRules, quoting: .always("\"", "\""))

    /// `json`, with DEL and C1 controls escaped as well (RFC 8259 allows them raw; a terminal
    /// showing the log may not): JSON log lines.
    public static let jsonLog = Escape(
        jsonRules + [.map(0x7F...0x9F, .hex(prefix: "\\u", digits: 4, uppercase: false, suffix: ""))],
        quoting: .always("\"", "\""))

    private static let jsonRules: [Rule] = [
        .map("\"", "\\\""), .map("\\", "\\\\"), .map("\n", "\\n"), .map("\r", "\\r"), .map("\t", "\\t"),
        .map(0x00...0x1F, .hex(prefix: "\\u", digits: 4, uppercase: false, suffix: "")),
    ]

    /// A logfmt value: bare when it can be (not empty; no space, `=`, `"` or control), else quoted,
    /// with `\`, `"`, line feed, carriage return and tab escaped and other controls (C0, DEL, C1, the
    /// line and paragraph separators) as `\u001b`. Unlike go-logfmt, C1 controls and DEL are escaped too.
    public static let logfmtValue = Escape(
        [
            .map("\\", "\\\\"), .map("\"", "\\\"", quotes: true), .map("\n", "\\n", quotes: true),
            .map("\r", "\\r", quotes: true), .map("\t", "\\t", quotes: true),
            Rule(.range(0x20...0x20), .kept, quotes: true), Rule(.range(0x3D...0x3D), .kept, quotes: true),
        ]
            + logControls.map {
                Rule.map($0, .hex(prefix: "\\u", digits: 4, uppercase: false, suffix: ""), quotes: true)
            },
        quoting: .whenNeeded("\"", "\""))

    /// A logfmt key: what would end it or break the line (space, `=`, `"`, controls) as `_`.
    public static let logfmtKey = Escape(
        [.map(" ", "_"), .map("=", "_"), .map("\"", "_")] + logControls.map { Rule.map($0, "_") })

    /// C0 controls, DEL and C1 controls (ESC, CSI: what a terminal would act on), and the line and
    /// paragraph separators.
    private static let logControls: [ClosedRange<UInt32>] = [0x00...0x1F, 0x7F...0x9F, 0x2028...0x2029]

    /// Go's `%q` for printable text, as Alertmanager's group keys hold it: in quotes, `"` and `\`
    /// escaped, line feed, tab and carriage return as `\n`, `\t`, `\r`, other C0 controls and DEL as
    /// `\x1b`.
    public static let goQuoted = Escape(
        [
            .map("\"", "\\\""), .map("\\", "\\\\"), .map("\n", "\\n"), .map("\t", "\\t"), .map("\r", "\\r"),
            .map(0x00...0x1F, .hex(prefix: "\\x", digits: 2, uppercase: false, suffix: "")),
            .map(0x7F...0x7F, .hex(prefix: "\\x", digits: 2, uppercase: false, suffix: "")),
        ], quoting: .always("\"", "\""))

    /// A value in a matcher as Alertmanager's parser reads it (`name="value"`): in quotes, `\`, `"`
    /// and line feed escaped.
    public static let matcherValue = Escape(
        [.map("\\", "\\\\"), .map("\"", "\\\""), .map("\n", "\\n")], quoting: .always("\"", "\""))

    /// A YAML double-quoted scalar of a one-line value (`klaxon trip add`'s template): `\` and `"`
    /// escaped.
    public static let yamlQuoted = Escape([.map("\\", "\\\\"), .map("\"", "\\\"")], quoting: .always("\"", "\""))

    // MARK: Terminals and messages

    /// Text printed to a terminal (`TerminalText`): every control character shown as a visible
    /// escape: C0 (tab and line breaks too), DEL and C1 as `\t`, `\n`, `\r`, `\e`, `\x07`, `\x9B`;
    /// bidirectional marks, overrides and isolates and the line and paragraph separators as `\u{202E}`.
    public static let terminal = Escape(
        [
            .map("\t", "\\t"), .map("\n", "\\n"), .map("\r", "\\r"), .map("\u{1B}", "\\e"),
            .map(0x00...0x1F, .hex(prefix: "\\x", digits: 2, uppercase: true, suffix: "")),
            .map(0x7F...0x9F, .hex(prefix: "\\x", digits: 2, uppercase: true, suffix: "")),
        ]
            + [0x061C...0x061C, 0x200E...0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x2028...0x2029].map {
                Rule.map($0, .hex(prefix: "\\u{", digits: 1, uppercase: true, suffix: "}"))
            })

    /// A value quoted in an error message: control characters (C0, DEL, C1) as `\u{1b}`.
    public static let controlsShown = Escape([
        .map(0x00...0x1F, .hex(prefix: "\\u{", digits: 1, uppercase: false, suffix: "}")),
        .map(0x7F...0x9F, .hex(prefix: "\\u{", digits: 1, uppercase: false, suffix: "}")),
    ])

    /// A value quoted in an error message, invisible characters too: controls, format characters
    /// (bidirectional overrides, zero-width joiners) and the line and paragraph separators as `\u{202e}`.
    public static let invisiblesShown = Escape([
        .map(
            [.control, .format, .lineSeparator, .paragraphSeparator],
            .hex(prefix: "\\u{", digits: 1, uppercase: false, suffix: "}"))
    ])

    /// A code from a payload as it may be shown: controls, format characters, separators,
    /// surrogates, private-use and unassigned scalars as `?`.
    public static let printable = Escape([
        .map(
            [.control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned],
            .text("?"))
    ])

    /// A mail header value's characters: controls (CR and LF above all) and the line and paragraph
    /// separators as spaces (`EmailMessage.headerSafe` then folds the runs of white space).
    public static let mailHeader = Escape([
        .map([.control], .text(" ")), .map(0x2028...0x2029, " "),
    ])

    // MARK: Chat

    /// Slack's three: `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;` (see `ChatEscape`).
    public static let slack = Escape(slackThree)

    /// Slack's three, and a word joiner after every `@` and every `]`.
    public static let mattermost = Escape(slackThree + [.map("@", "@\u{2060}"), .map("]", "]\u{2060}")])

    /// A word joiner after every `]`.
    public static let discord = Escape([.map("]", "]\u{2060}")])

    /// A word joiner after every `]`.
    public static let msteams = Escape([.map("]", "]\u{2060}")])

    /// A word joiner after every `<`.
    public static let googlechat = Escape([.map("<", "<\u{2060}")])

    /// Telegram's HTML parse mode: the same three, the only characters its parser reads as markup.
    public static let telegram = Escape(slackThree)

    /// Telegram's HTML inside an attribute (`href`): the three and `"` → `&quot;`.
    public static let telegramAttribute = Escape(slackThree + [.map("\"", "&quot;")])

    private static let slackThree: [Rule] = [.map("&", "&amp;"), .map("<", "&lt;"), .map(">", "&gt;")]

    /// The scheme and authority of a link's URL (`ChatEscape.linkURL`): ASCII controls, space, DEL,
    /// `(`, `)`, `<`, `>`, `|`, `"`, `'`, `` ` ``, `\`, `{`, `}`, `^` and non-ASCII as `%HH` of
    /// their UTF-8 bytes (`[`, `]` bracket an IPv6 literal here).
    public static let linkAuthority = Escape(linkRules)

    /// The rest of a link's URL: `linkAuthority`, and `[`, `]` too.
    public static let linkPath = Escape(linkRules + [.map("[", "%5B"), .map("]", "%5D")])

    /// A rendered `runbook_url`: spaces and non-ASCII (a station name in a wiki path) as `%HH` of
    /// their UTF-8 bytes (`MessageRenderer.isLink` then checks what is left).
    public static let runbookURL = Escape([.map(" ", "%20"), .map(0x80...0x10FFFF, .percent)])

    private static let linkRules: [Rule] =
        [.map(0x00...0x20, .percent), .map(0x7F...0x10FFFF, .percent)]
        + Array(" ()<>|\"'`\\{}^".unicodeScalars).map { Rule.map($0.value...$0.value, .percent) }
}
