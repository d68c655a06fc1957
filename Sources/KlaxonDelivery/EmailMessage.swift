import Foundation
import KlaxonCore

/// Builds RFC 5322 messages: `multipart/alternative` with text and HTML parts. Values that come from
/// data (station names, quake places, city names) can never create or alter a header: every header
/// value has CR, LF and other control characters removed, and non-ASCII text is RFC 2047 encoded.
public enum EmailMessage {
    /// Removes control characters (CR and LF above all) and folds runs of white space.
    public static func headerSafe(_ s: String) -> String {
        let cleaned = s.unicodeScalars.map { scalar -> String in
            scalar.properties.generalCategory == .control || scalar == "\u{2028}" || scalar == "\u{2029}"
                ? " " : String(scalar)
        }.joined()
        return cleaned.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    /// An unstructured header value: ASCII as is, otherwise RFC 2047 `=?UTF-8?B?…?=` words.
    public static func encodeWord(_ s: String) -> String {
        let safe = headerSafe(s)
        if safe.unicodeScalars.allSatisfy({ $0.isASCII }) { return safe }
        // Encoded words are at most 75 characters: split the UTF-8 on character boundaries.
        var words: [String] = []
        var chunk = ""
        for ch in safe {
            if (chunk + String(ch)).utf8.count > 45 {
                words.append(chunk)
                chunk = ""
            }
            chunk.append(ch)
        }
        if !chunk.isEmpty { words.append(chunk) }
        return words.map { "=?UTF-8?B?\(Data($0.utf8).base64EncodedString())?=" }.joined(separator: "\r\n ")
    }

    /// `Sat, 21 Nov 2026 01:30:00 +0000`.
    public static func date(_ t: Int64) -> String {
        HTTPDate.format(t).replacingOccurrences(of: " GMT", with: " +0000")
    }

    /// The domain of an address, for Message-IDs (`klaxon` when there is none).
    static func domain(_ address: String) -> String {
        let trimmed = address.trimmingCharacters(in: CharacterSet(charactersIn: "<> "))
        guard let at = trimmed.lastIndex(of: "@") else { return "klaxon" }
        let d = trimmed[trimmed.index(after: at)...].filter { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }
        return d.isEmpty ? "klaxon" : String(d)
    }

    /// The bare address in `Name <a@b>` or `a@b`.
    public static func address(_ s: String) -> String {
        let safe = headerSafe(s)
        if let open = safe.lastIndex(of: "<"), let close = safe.lastIndex(of: ">"), open < close {
            return String(safe[safe.index(after: open)..<close])
        }
        return safe
    }

    static func base64Lines(_ text: String) -> String {
        let encoded = Data(text.utf8).base64EncodedString()
        var lines: [String] = []
        var i = encoded.startIndex
        while i < encoded.endIndex {
            let j = encoded.index(i, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[i..<j]))
            i = j
        }
        return lines.joined(separator: "\r\n")
    }

    /// The whole message, CRLF line endings.
    public static func build(
        from: String, to: [String], subject: String, text: String, html: String, messageID key: String, date t: Int64
    ) -> String {
        let boundary = "klaxon-" + String(key.filter { $0.isLetter || $0.isNumber }.prefix(24))
        let headers = [
            "From: \(headerSafe(from))",
            "To: \(to.map(headerSafe).joined(separator: ", "))",
            "Subject: \(encodeWord(subject))",
            "Date: \(date(t))",
            "Message-ID: <\(headerSafe(key).replacingOccurrences(of: " ", with: ""))@\(domain(from))>",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "X-Klaxon-Key: \(headerSafe(key))",
        ]
        let parts = [
            "--\(boundary)", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", "",
            base64Lines(text), "--\(boundary)", "Content-Type: text/html; charset=utf-8",
            "Content-Transfer-Encoding: base64",
            "", base64Lines(html), "--\(boundary)--", "",
        ]
        return (headers + [""] + parts).joined(separator: "\r\n")
    }
}
