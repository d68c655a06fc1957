/// Text for chat platforms' limits.
public enum ChatText {
    /// `text` in at most `limit` UTF-16 code units (never fewer than the characters a platform
    /// counts), ending with "…" when cut, never inside a character or inside one of Slack's escapes
    /// (`&amp;`, `&lt;`, `&gt;`: in escaped text every `&` begins one, and one cut short is dropped
    /// whole).
    public static func clip(_ text: String, _ limit: Int) -> String {
        guard text.utf16.count > limit else { return text }
        guard limit > 1 else { return limit == 1 ? "…" : "" }
        var out = ""
        var used = 0
        for c in text {
            let n = c.utf16.count
            guard used + n <= limit - 1 else { break }
            out.append(c)
            used += n
        }
        if let amp = out.lastIndex(of: "&"), !out[amp...].contains(";") { out = String(out[..<amp]) }
        return out + "…"
    }

    /// `09:50`: the hour and minute of `seconds` since the epoch, in UTC.
    public static func clock(_ seconds: Int64) -> String {
        let s = ((seconds % 86_400) + 86_400) % 86_400
        let h = s / 3600
        let m = (s % 3600) / 60
        return (h < 10 ? "0" : "") + String(h) + ":" + (m < 10 ? "0" : "") + String(m)
    }
}
