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

    /// Slack's three: `&` → `&amp;`, `<` → `&lt;`, `>` → `&gt;`.
    public static func slack(_ s: String) -> String {
        guard s.utf8.contains(where: { $0 == UInt8(ascii: "&") || $0 == UInt8(ascii: "<") || $0 == UInt8(ascii: ">") })
        else { return s }
        var out = ""
        out.reserveCapacity(s.utf8.count + 8)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Slack's escaping, then a word joiner after every `@` and every `]`.
    public static func mattermost(_ s: String) -> String {
        joinAfter(slack(s), ["@", "]"])
    }

    /// A word joiner after every `]`.
    public static func discord(_ s: String) -> String { joinAfter(s, ["]"]) }

    /// A word joiner after every `]`.
    public static func msteams(_ s: String) -> String { joinAfter(s, ["]"]) }

    /// A word joiner after every `<`.
    public static func googlechat(_ s: String) -> String { joinAfter(s, ["<"]) }

    /// Inserts a word joiner after each of `marks`.
    static func joinAfter(_ s: String, _ marks: Set<Unicode.Scalar>) -> String {
        guard s.unicodeScalars.contains(where: { marks.contains($0) }) else { return s }
        var out = ""
        out.reserveCapacity(s.utf8.count + 8)
        for scalar in s.unicodeScalars {
            out.unicodeScalars.append(scalar)
            if marks.contains(scalar) { out.unicodeScalars.append(wordJoiner) }
        }
        return out
    }
}
