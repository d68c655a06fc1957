import Foundation
import KlaxonApp
import KlaxonCore

/// A page showing webhook posts as a team chat would: what the demo's local chat sink received.
///
/// Bodies are read as Slack incoming-webhook payloads (`text`, `attachments` with `color`, `title`,
/// `text`, `fields`, `footer`, `ts`), which also covers Mattermost's (the same plus `username`).
/// Block Kit `blocks` are shown instead of the attachments when a body has them: a card per header,
/// coloured by the attachment of the same position, with its sections, context lines and buttons
/// (images are left out: the page loads nothing). A body that is not such a JSON object is shown raw. Everything taken from a body is HTML-escaped;
/// colours reach the CSS only after validation.
public enum ChatPage {
    /// One webhook POST as the chat sink received it.
    public struct Post: Sendable {
        /// The receiver the post was addressed to, e.g. `team-chat`; shown as `#team-chat`.
        public var channel: String
        /// When the sink received the post.
        public var receivedAt: Date
        /// The raw request body (normally Slack incoming-webhook JSON).
        public var body: Data

        /// A post to `channel`, received at `receivedAt`, with the raw request `body`.
        public init(channel: String, receivedAt: Date, body: Data) {
            self.channel = channel
            self.receivedAt = receivedAt
            self.body = body
        }
    }

    /// The whole HTML document (UTF-8, self-contained: inline CSS, no scripts, no external resources).
    ///
    /// Posts are shown in the order given, each with its received time as `HH:mm:ss` in `timeZone`.
    public static func html(title: String, subtitle: String, posts: [Post], timeZone: TimeZone = .current) -> String {
        var channels: [String] = []
        for post in posts where !channels.contains(post.channel) { channels.append(post.channel) }
        let showTags = channels.count > 1

        var out = """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(escape(title))</title>
            <style>
            \(css)
            </style>
            </head>
            <body>
            <main class="channel">
            <header class="channel-header">
            <h1>\(escape(title))</h1>

            """
        if !subtitle.isEmpty { out += "<p class=\"subtitle\">\(escape(subtitle))</p>\n" }
        if !channels.isEmpty {
            let names = channels.map { "<span class=\"channel-name\">\(escape(channelLabel($0)))</span>" }
            out += "<p class=\"channels\">\(names.joined(separator: " "))</p>\n"
        }
        out += "</header>\n"
        if posts.isEmpty {
            out += "<p class=\"empty\">No messages were delivered.</p>\n"
        } else {
            out += "<ol class=\"messages\">\n"
            for post in posts { out += message(post, showTag: showTags, timeZone: timeZone) }
            out += "</ol>\n"
        }
        out += "</main>\n</body>\n</html>\n"
        return out
    }

    // MARK: - Messages

    /// What a body says, once read.
    private enum Content {
        case slack(
            username: String?, text: String?, attachments: [[String: JSONValue]], blocks: [[String: JSONValue]])
        case raw(String)
    }

    private static func parse(_ body: Data) -> Content {
        guard let payload = JSONValue.parse(body)?.object else { return .raw(String(decoding: body, as: UTF8.self)) }
        let attachments = (payload["attachments"]?.array ?? []).compactMap(\.object)
        let blocks = (payload["blocks"]?.array ?? []).compactMap(\.object)
        let text = nonEmpty(payload["text"])
        if text == nil && attachments.isEmpty && blocks.isEmpty { return .raw(String(decoding: body, as: UTF8.self)) }
        return .slack(username: nonEmpty(payload["username"]), text: text, attachments: attachments, blocks: blocks)
    }

    private static func message(_ post: Post, showTag: Bool, timeZone: TimeZone) -> String {
        let content = parse(post.body)
        var botName = "Klaxon"
        if case .slack(let username?, _, _, _) = content { botName = username }

        var out =
            "<li class=\"message\">\n<div class=\"avatar\" aria-hidden=\"true\">K</div>\n<div class=\"content\">\n"
        out += "<div class=\"meta\"><span class=\"bot\">\(escape(botName))</span><span class=\"app\">APP</span>"
        out += "<time datetime=\"\(isoUTC(post.receivedAt))\">\(clock(post.receivedAt, in: timeZone))</time>"
        if showTag { out += "<span class=\"tag\">\(escape(channelLabel(post.channel)))</span>" }
        out += "</div>\n"
        switch content {
        case .raw(let text):
            out += "<pre class=\"raw\">\(escape(text))</pre>\n"
        case .slack(_, _, let attachments, let blocks) where !blocks.isEmpty:
            // With blocks, `text` is the notification fallback and the attachments carry the colours.
            out += blockCards(blocks, colours: attachments.map { $0["color"] })
        case .slack(_, let text, let attachments, _):
            // Klaxon's `text` is the plain-text fallback of its attachments: shown only without them.
            if attachments.isEmpty, let text { out += "<div class=\"text\">\(richText(text))</div>\n" }
            for attachment in attachments { out += card(attachment, timeZone: timeZone) }
        }
        out += "</div>\n</li>\n"
        return out
    }

    /// Block Kit as cards: each header begins one, coloured like the attachment of its position;
    /// sections are its text, context elements its footer, buttons links (a URL) or labels. The
    /// summing-up section (`block_id` `more`) is a card of its own.
    private static func blockCards(_ blocks: [[String: JSONValue]], colours: [JSONValue?]) -> String {
        var out = ""
        var card = ""
        var colour: JSONValue? = nil
        func flush() {
            if !card.isEmpty {
                out += "<div class=\"card\" style=\"border-left-color:\(Self.colour(colour))\">\n\(card)</div>\n"
            }
            card = ""
        }
        var headers = 0
        for block in blocks {
            let text = nonEmpty(block["text"]?["text"])
            switch block["type"]?.string {
            case "header":
                flush()
                colour = headers < colours.count ? colours[headers] : nil
                headers += 1
                if let text { card += "<div class=\"card-title\">\(escape(unescapeSlack(text)))</div>\n" }
            case "section":
                if block["block_id"]?.string == "more" {
                    flush()
                    colour = nil
                }
                if let text { card += "<div class=\"card-text\">\(richText(text))</div>\n" }
                if let accessory = block["accessory"]?.object { card += buttons([accessory]) }
            case "context":
                let lines = (block["elements"]?.array ?? []).compactMap { nonEmpty($0["text"]).map(richText) }
                if !lines.isEmpty { card += "<div class=\"card-footer\">\(lines.joined(separator: " · "))</div>\n" }
            case "actions":
                card += buttons((block["elements"]?.array ?? []).compactMap(\.object))
            default: break
            }
        }
        flush()
        return out
    }

    /// Buttons: a link for one with an http(s) URL, a label for the others (the page acts on nothing).
    private static func buttons(_ elements: [[String: JSONValue]]) -> String {
        let shown = elements.compactMap { e -> String? in
            guard e["type"]?.string == "button",
                let label = nonEmpty(e["text"]?["text"]).map({ escape(unescapeSlack($0)) })
            else { return nil }
            if let url = e["url"]?.string, isWebURL(url) {
                return "<a class=\"button\" href=\"\(escape(url))\" rel=\"noopener noreferrer\">\(label)</a>"
            }
            return "<span class=\"button\">\(label)</span>"
        }
        return shown.isEmpty ? "" : "<div class=\"buttons\">\(shown.joined(separator: " "))</div>\n"
    }

    private static func card(_ attachment: [String: JSONValue], timeZone: TimeZone) -> String {
        var out = "<div class=\"card\" style=\"border-left-color:\(colour(attachment["color"]))\">\n"
        var shown = false
        if let title = nonEmpty(attachment["title"]) {
            out += "<div class=\"card-title\">\(richText(title))</div>\n"
            shown = true
        }
        if let text = nonEmpty(attachment["text"]) {
            out += "<div class=\"card-text\">\(richText(text))</div>\n"
            shown = true
        }
        let fields = (attachment["fields"]?.array ?? []).compactMap(\.object)
        var lines: [String] = []
        for field in fields {
            let title = nonEmpty(field["title"])
            let value = nonEmpty(field["value"])
            switch (title, value) {
            case (let t?, let v?):
                lines.append("<span class=\"field-title\">\(escape(t)):</span> \(richText(v))")
            case (let t?, nil): lines.append("<span class=\"field-title\">\(escape(t))</span>")
            case (nil, let v?): lines.append(richText(v))
            case (nil, nil): break
            }
        }
        if !lines.isEmpty {
            out += "<div class=\"fields\">\n"
            for line in lines { out += "<div class=\"field\">\(line)</div>\n" }
            out += "</div>\n"
            shown = true
        }
        if !shown, let fallback = nonEmpty(attachment["fallback"]) {
            out += "<div class=\"card-text\">\(richText(fallback))</div>\n"
        }
        var footer: [String] = []
        if let text = nonEmpty(attachment["footer"]) { footer.append(richText(text)) }
        if let ts = seconds(attachment["ts"]) {
            let date = Date(timeIntervalSince1970: ts)
            footer.append("<time datetime=\"\(isoUTC(date))\">\(dayAndClock(date, in: timeZone))</time>")
        }
        if !footer.isEmpty { out += "<div class=\"card-footer\">\(footer.joined(separator: " · "))</div>\n" }
        out += "</div>\n"
        return out
    }

    // MARK: - Values from JSON

    /// A string, or a number written out; nil when missing or empty.
    private static func nonEmpty(_ value: JSONValue?) -> String? {
        let string: String?
        switch value {
        case .string(let s)?: string = s
        case .number(let d)? where d == d.rounded() && abs(d) < 1e15: string = String(Int64(d))
        case .number(let d)?: string = String(d)
        default: string = nil
        }
        guard let string, !string.isEmpty else { return nil }
        return string
    }

    /// Seconds since the epoch, from a number or a numeric string (Slack accepts both).
    private static func seconds(_ value: JSONValue?) -> Double? {
        let result: Double?
        switch value {
        case .number(let d)?: result = d
        case .string(let s)?: result = Double(s)
        default: result = nil
        }
        guard let result, result.isFinite, abs(result) < 1e11 else { return nil }
        return result
    }

    private static let defaultColour = "#c3c7cc"
    private static let namedColours = ["good": "#2eb886", "warning": "#daa038", "danger": "#a30200"]

    /// A CSS colour for an attachment's `color`: `#` with 3 or 6 hex digits, or Slack's named colours;
    /// anything else is the default grey.
    private static func colour(_ value: JSONValue?) -> String {
        guard let raw = value?.string else { return defaultColour }
        if let named = namedColours[raw.lowercased()] { return named }
        let scalars = Array(raw.unicodeScalars)
        guard scalars.count == 4 || scalars.count == 7, scalars[0] == "#" else { return defaultColour }
        let hex = scalars.dropFirst()
        guard hex.allSatisfy({ $0.isASCII && $0.properties.isASCIIHexDigit }) else { return defaultColour }
        return raw.lowercased()
    }

    private static func channelLabel(_ channel: String) -> String {
        channel.hasPrefix("#") ? channel : "#" + channel
    }

    // MARK: - Times

    private static func parts(_ date: Date, in timeZone: TimeZone) -> DateComponents {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
    }

    private static func pad(_ n: Int?, _ width: Int = 2) -> String {
        let s = String(n ?? 0)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }

    /// `HH:mm:ss` in `timeZone`.
    private static func clock(_ date: Date, in timeZone: TimeZone) -> String {
        let c = parts(date, in: timeZone)
        return "\(pad(c.hour)):\(pad(c.minute)):\(pad(c.second))"
    }

    /// `yyyy-MM-dd HH:mm` in `timeZone`.
    private static func dayAndClock(_ date: Date, in timeZone: TimeZone) -> String {
        let c = parts(date, in: timeZone)
        return "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day)) \(pad(c.hour)):\(pad(c.minute))"
    }

    /// `yyyy-MM-ddTHH:mm:ssZ`, for `<time datetime>`.
    private static func isoUTC(_ date: Date) -> String {
        let c = parts(date, in: TimeZone(secondsFromGMT: 0) ?? .current)
        return "\(pad(c.year, 4))-\(pad(c.month))-\(pad(c.day))T\(pad(c.hour)):\(pad(c.minute)):\(pad(c.second))Z"
    }

    // MARK: - Text

    private static func escape(_ text: String) -> String { HTMLText.escape(text) }

    /// Slack's own escapes (`&lt;`, `&gt;`, `&amp;`) turned back into characters, as Slack shows them.
    private static func unescapeSlack(_ text: String) -> String {
        text.replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// Slack mrkdwn to HTML: `<https://url|label>` links (http and https only), `<!here>`-style mentions,
    /// `*bold*`, `_italic_`, and newlines as `<br>`. Everything else is escaped.
    private static func richText(_ raw: String) -> String {
        var html = ""
        var plain = ""
        var rest = raw[...]
        while let open = rest.firstIndex(of: "<") {
            plain += rest[..<open]
            let afterOpen = rest.index(after: open)
            if let close = rest[afterOpen...].firstIndex(of: ">"),
                let rendered = special(String(rest[afterOpen..<close]))
            {
                html += plainText(plain)
                plain = ""
                html += rendered
                rest = rest[rest.index(after: close)...]
            } else {
                plain += "<"
                rest = rest[afterOpen...]
            }
        }
        plain += rest
        return html + plainText(plain)
    }

    /// The inside of `<…>`: a link or a channel-wide mention, or nil to show it as written.
    private static func special(_ inside: String) -> String? {
        let parts = inside.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
        let target = unescapeSlack(String(parts.first ?? ""))
        let label = parts.count > 1 ? unescapeSlack(String(parts[1])) : ""
        if target.hasPrefix("!") {
            let mention = String(target.dropFirst())
            guard ["here", "channel", "everyone"].contains(mention) else { return nil }
            return "<strong class=\"mention\">@\(escape(mention))</strong>"
        }
        guard isWebURL(target) else { return nil }
        let text = label.isEmpty ? target : label
        return "<a href=\"\(escape(target))\" rel=\"noopener noreferrer\">\(escape(text))</a>"
    }

    /// An absolute http or https URL with a host and no whitespace or control characters.
    private static func isWebURL(_ text: String) -> Bool {
        guard
            !text.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F
            })
        else { return false }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty
        else { return false }
        return true
    }

    /// Text outside links: Slack escapes undone, HTML-escaped, emphasis marked, lines joined with `<br>`.
    private static func plainText(_ text: String) -> String {
        guard !text.isEmpty else { return "" }
        let lines = escape(unescapeSlack(text)).split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        return lines.map { emphasize(Array($0)) }.joined(separator: "<br>")
    }

    private static let emphasisTags: [Character: String] = ["*": "strong", "_": "em"]

    /// `*bold*` and `_italic_` in one escaped line. A marker opens only at a word's start and closes only
    /// at a word's end, so `gage_height` stays as written.
    private static func emphasize(_ chars: [Character]) -> String {
        var out = ""
        var unclosable: Set<Character> = []  // markers with no closing partner further on
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if let tag = emphasisTags[c], !unclosable.contains(c), opens(chars, at: i) {
                if let close = closing(chars, for: i) {
                    out += "<\(tag)>\(emphasize(Array(chars[(i + 1)..<close])))</\(tag)>"
                    i = close + 1
                    continue
                }
                unclosable.insert(c)
            }
            out.append(c)
            i += 1
        }
        return out
    }

    private static func isWordCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber }

    private static func opens(_ chars: [Character], at i: Int) -> Bool {
        guard i + 1 < chars.count, !chars[i + 1].isWhitespace, chars[i + 1] != chars[i] else { return false }
        return i == 0 || !isWordCharacter(chars[i - 1])
    }

    private static func closing(_ chars: [Character], for open: Int) -> Int? {
        let marker = chars[open]
        var j = open + 2
        while j < chars.count {
            if chars[j] == marker, !chars[j - 1].isWhitespace,
                j + 1 == chars.count || !isWordCharacter(chars[j + 1])
            {
                return j
            }
            j += 1
        }
        return nil
    }

    // MARK: - Style

    private static let css = """
        :root { color-scheme: light; }
        * { box-sizing: border-box; }
        body { margin: 0; background: #f4f5f7; color: #1d1c1d;
          font: 15px/1.46 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; }
        .channel { max-width: 860px; margin: 24px auto; background: #fff; border: 1px solid #e1e2e5;
          border-radius: 8px; overflow: hidden; }
        .channel-header { padding: 16px 20px; border-bottom: 1px solid #e1e2e5; }
        h1 { margin: 0; font-size: 20px; }
        .subtitle { margin: 4px 0 0; color: #616061; }
        .channels { margin: 8px 0 0; }
        .channel-name { font-weight: 600; margin-right: 8px; }
        .messages { list-style: none; margin: 0; padding: 8px 0; }
        .message { display: flex; gap: 10px; padding: 8px 20px; }
        .message:hover { background: #f8f8f8; }
        .avatar { flex: none; width: 36px; height: 36px; border-radius: 50%; background: #d93f0b; color: #fff;
          font-weight: 700; display: flex; align-items: center; justify-content: center; }
        .content { min-width: 0; flex: 1; }
        .meta { display: flex; align-items: baseline; gap: 6px; flex-wrap: wrap; }
        .bot { font-weight: 700; }
        .app { font-size: 10px; font-weight: 700; color: #616061; background: #e8e8e8; border-radius: 3px;
          padding: 0 4px; }
        .meta time { font-size: 12px; color: #616061; }
        .tag { font-size: 12px; color: #1264a3; background: #e8f5fa; border-radius: 3px; padding: 0 5px; }
        .text { margin-top: 2px; overflow-wrap: anywhere; }
        .card { margin-top: 6px; padding: 4px 12px; border-left: 4px solid #c3c7cc; border-radius: 2px;
          overflow-wrap: anywhere; }
        .card-title { font-weight: 700; }
        .fields { margin-top: 4px; white-space: pre-wrap; }
        .field-title { font-weight: 600; }
        .card-footer { margin-top: 4px; font-size: 12px; color: #7a7a7a; }
        .buttons { margin: 6px 0 2px; }
        .button { display: inline-block; margin-right: 6px; padding: 2px 10px; border: 1px solid #c3c7cc;
          border-radius: 4px; font-size: 13px; font-weight: 600; color: #1d1c1d; text-decoration: none; }
        .mention { background: #fff3c2; border-radius: 3px; padding: 0 2px; }
        a { color: #1264a3; }
        pre.raw { margin: 4px 0 0; padding: 8px; background: #f8f8f8; border: 1px solid #e1e2e5; border-radius: 4px;
          font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap;
          overflow-wrap: anywhere; }
        .empty { padding: 24px 20px; margin: 0; color: #616061; font-style: italic; }
        """
}
