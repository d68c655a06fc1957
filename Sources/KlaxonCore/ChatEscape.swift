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

// MARK: Links

extension ChatEscape {
    /// A checked `http(s)` URL as it may stand inside chat link markup: every character that could
    /// end the URL early or start markup of its own is percent-encoded, so a value from data in a URL
    /// (a station name in a runbook path) cannot close the link and open another. Encoded: ASCII
    /// controls, space, `(`, `)`, `<`, `>`, `|`, `"`, `'`, `` ` ``, `\`, `{`, `}`, `^`, non-ASCII (as
    /// UTF-8), and `[`, `]` past the host (inside it they bracket an IPv6 literal).
    /// A `%` is kept: the URL is already encoded where its author meant it to be.
    public static func linkURL(_ url: String) -> String {
        let special: Set<Unicode.Scalar> = [
            " ", "(", ")", "<", ">", "|", "\"", "'", "`", "\\", "{", "}", "^",
        ]
        // Where the path starts: after `scheme://host[:port]`, at the first `/`, `?` or `#`.
        let scalars = Array(url.unicodeScalars)
        var authorityEnd = scalars.count
        if let range = url.range(of: "://") {
            let start = url.unicodeScalars.distance(from: url.unicodeScalars.startIndex, to: range.upperBound)
            authorityEnd = scalars[start...].firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? scalars.count
        }
        var out = ""
        out.reserveCapacity(url.utf8.count)
        for (i, s) in scalars.enumerated() {
            if s.value < 0x21 || s.value >= 0x7f || special.contains(s) || (i >= authorityEnd && (s == "[" || s == "]"))
            {
                for b in String(s).utf8 { out += "%" + String(b, radix: 16, uppercase: true).leftPadded(2) }
            } else {
                out.unicodeScalars.append(s)
            }
        }
        return out
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

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
