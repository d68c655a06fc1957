/// Escaping of values from data (station ids and names, rule names, levels, messages, explanations)
/// for each chat platform, so data is shown as written and can never ping, link or format:
///
/// - Slack: `&`, `<`, `>` as `&amp;`, `&lt;`, `&gt;` (Slack's documented escaping), so `<!channel>`,
///   `<@U123>` and `<https://evil|Ack here>` are text. Plain `@channel` does not ping from a webhook.
/// - Mattermost: Slack's escaping (its webhooks translate `<!channel>` and `<url|text>`; its Markdown
///   shows the entities as characters), a word joiner (U+2060) after every `@`, because Mattermost
///   pings on a plain `@channel`, `@here`, `@all` or `@user`, and one after every `]`, so no Markdown
///   link (`[Ack here](https://evil)`, `[x][ref]`, `[ref]: url`) can form.
/// - Discord: a word joiner after every `]` (masked links); every payload also carries
///   `allowed_mentions: {parse: []}`, so `@everyone`, `@here`, `<@id>` and `<@&role>` never ping.
/// - Teams: a word joiner after every `]` (Adaptive Card Markdown links). `<at>` mentions need an
///   `entities` list, which Klaxon never sends; Adaptive Cards render no HTML.
/// - Google Chat: a word joiner after every `<`, so `<users/all>`, `<users/123>` and
///   `<https://evil|Ack here>` are text. Google Chat documents no escape for `<`; the joiner needs none.
///
/// Word joiners are invisible and do not break a line. Emphasis characters (`*`, `_`, `~`) are
/// left as they are: they can only change how text looks, never where it leads or whom it reaches.
public enum ChatEscape {
    public static let wordJoiner: Unicode.Scalar = "\u{2060}"

    // Each is a table of `Escape` (`Escape.slack`, …); these name them as functions for the payload
    // builders, which take an escaper as `(String) -> String`.

    /// Slack's three: `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`.
    public static func slack(_ s: String) -> String { Escape.slack(s) }

    /// Slack's escaping, and a word joiner after every `@` and every `]`.
    public static func mattermost(_ s: String) -> String { Escape.mattermost(s) }

    /// A word joiner after every `]`.
    public static func discord(_ s: String) -> String { Escape.discord(s) }

    /// A word joiner after every `]`.
    public static func msteams(_ s: String) -> String { Escape.msteams(s) }

    /// A word joiner after every `<`.
    public static func googlechat(_ s: String) -> String { Escape.googlechat(s) }
}

// MARK: Links

extension ChatEscape {
    /// A checked `http(s)` URL as it may stand inside chat link markup: every character that could
    /// end the URL early or start markup of its own is percent-encoded, so a value from data in a URL
    /// (a station name in a runbook path) cannot close the link and open another. Encoded: ASCII
    /// controls, space, `(`, `)`, `<`, `>`, `|`, `"`, `'`, `` ` ``, `\`, `{`, `}`, `^`, non-ASCII (as
    /// UTF-8), and `[`, `]` past the host (inside it they bracket an IPv6 literal).
    /// A `%` is kept: the URL is already encoded where its author meant it to be.
    public static func linkURL(_ url: String) -> String {
        // Where the path starts: after `scheme://host[:port]`, at the first `/`, `?` or `#`.
        let scalars = url.unicodeScalars
        var authorityEnd = scalars.endIndex
        if let range = url.range(of: "://") {
            authorityEnd =
                scalars[range.upperBound...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? authorityEnd
        }
        return Escape.linkAuthority(String(scalars[..<authorityEnd]))
            + Escape.linkPath(String(scalars[authorityEnd...]))
    }

    /// A Markdown link, `[label](url)`, for Mattermost, Discord and Teams: the label escaped with the
    /// platform's `escape` (which joins every `]`, so no link can form inside it) and the URL through
    /// `linkURL`, so nothing in either can close the link early or form one of its own.
    public static func markdownLink(_ label: String, _ url: String, escape: (String) -> String) -> String {
        "[\(escape(label).replacingOccurrences(of: "[", with: "[\u{2060}"))](\(linkURL(url)))"
    }

    /// An angle-bracket link, `<url|label>`, for Slack mrkdwn and Google Chat: the URL through `linkURL`
    /// (`|` and `>` encoded) and the label escaped with the platform's `escape`, its `|` and `>` shown
    /// as `¦` and `›` so neither can end it.
    public static func angleLink(_ url: String, _ label: String, escape: (String) -> String) -> String {
        let text = escape(label).replacingOccurrences(of: "|", with: "¦").replacingOccurrences(of: ">", with: "›")
        return "<\(linkURL(url))|\(text)>"
    }
}
