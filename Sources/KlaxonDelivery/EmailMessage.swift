import Foundation
import KlaxonCore

/// Builds RFC 5322 messages: `multipart/alternative` with text and HTML parts. Values that come from
/// data (station names, quake places, city names) can never create or alter a header: every header
/// value has CR, LF and other control characters removed, and non-ASCII text (or text holding `=?`,
/// which a client would decode) is RFC 2047 encoded; lines are folded to 78 characters.
public enum EmailMessage {
    /// Removes control characters (CR and LF above all) and folds runs of white space.
    public static func headerSafe(_ s: String) -> String {
        Escape.mailHeader(s).split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    /// Lines of a header at most this long (RFC 5322's SHOULD; its MUST is 998).
    static let lineLimit = 78

    /// An unstructured header value (`Subject`), for a line where `used` characters (`Subject: `)
    /// come before it. Plain ASCII is folded at its spaces into lines of at most 78 characters.
    /// Anything else is written whole as RFC 2047 `=?UTF-8?B?…?=` words: non-ASCII text, a word too
    /// long to fold, and text holding `=?`, so an encoded word inside data (`=?utf-8?b?SGk=?=`) is
    /// shown as written: a client decodes only Klaxon's encoding, whose content is that literal text.
    public static func encodeWord(_ s: String, used: Int = 0) -> String {
        let safe = headerSafe(s)
        if safe.unicodeScalars.allSatisfy({ $0.isASCII }), !safe.contains("=?"),
            let folded = fold(safe, used: used)
        {
            return folded
        }
        return encodedWords(safe, used: used)
    }

    /// ASCII words (single spaces between them) folded before a space; nil if a word cannot fit a line.
    static func fold(_ s: String, used: Int) -> String? {
        var out = ""
        var length = used
        var first = true
        for word in s.split(separator: " ", omittingEmptySubsequences: true) {
            if first {
                guard used + word.count <= lineLimit else { return nil }
                out += word
                length += word.count
                first = false
            } else if length + 1 + word.count <= lineLimit {
                out += " " + word
                length += 1 + word.count
            } else {
                guard 1 + word.count <= lineLimit else { return nil }
                out += "\r\n " + word
                length = 1 + word.count
            }
        }
        return out
    }

    /// `s` as `=?UTF-8?B?…?=` words, each at most 75 characters and each line at most 78. Words are
    /// cut between Unicode scalars, never inside one's UTF-8 bytes; decoders drop the folding
    /// white space between adjacent encoded words, so the text comes back exactly.
    static func encodedWords(_ s: String, used: Int) -> String {
        let overhead = "=?UTF-8?B??=".count
        // Base64 characters a word may hold: within 75 per word and 78 per line (4 per 3 bytes).
        func capacity(_ lineUsed: Int) -> Int { max(1, (min(75, lineLimit - lineUsed) - overhead) / 4) * 3 }
        var words: [String] = []
        var chunk: [UInt8] = []
        var limit = capacity(used)
        for scalar in s.unicodeScalars {
            let bytes = Array(String(scalar).utf8)
            if chunk.count + bytes.count > limit, !chunk.isEmpty {
                words.append("=?UTF-8?B?\(Data(chunk).base64EncodedString())?=")
                chunk = []
                limit = capacity(1)
            }
            chunk += bytes
        }
        if !chunk.isEmpty || words.isEmpty { words.append("=?UTF-8?B?\(Data(chunk).base64EncodedString())?=") }
        return words.joined(separator: "\r\n ")
    }

    /// A mailbox from the configuration (`Name <a@b>` or `a@b`), header-safe, with a display name that
    /// is not plain ASCII (or holds `=?`) written as RFC 2047 words.
    public static func mailbox(_ s: String) -> String {
        let safe = headerSafe(s)
        guard let open = safe.lastIndex(of: "<"), safe.last == ">" else { return safe }
        var name = safe[..<open].trimmingCharacters(in: .whitespaces)
        if name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") { name = String(name.dropFirst().dropLast()) }
        guard !name.isEmpty, !name.unicodeScalars.allSatisfy({ $0.isASCII }) || name.contains("=?") else {
            return safe
        }
        return encodedWords(name, used: 6) + " " + safe[open...]
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

    static func base64Lines(_ text: String) -> String { base64Lines(Data(text.utf8)) }

    /// An image shown inline in the HTML part (`<img src="cid:ID">`).
    public struct InlineImage: Sendable {
        /// The Content-ID, without angle brackets (`chart-123@example.org`).
        public var contentID: String
        public var png: Data
        public var filename: String

        public init(contentID: String, png: Data, filename: String = "chart.png") {
            self.contentID = contentID
            self.png = png
            self.filename = filename
        }
    }

    /// How a message takes its place in a thread: its own `Message-ID`, and the message it answers
    /// (`In-Reply-To`, `References`), if any. Ids without angle brackets or domain.
    public struct Threading: Sendable, Equatable {
        public var messageID: String
        public var replyTo: String?

        public init(messageID: String, replyTo: String?) {
            self.messageID = messageID
            self.replyTo = replyTo
        }
    }

    /// The whole message, CRLF line endings: `multipart/alternative` of the text and the HTML, the
    /// HTML with its image in a `multipart/related` (RFC 2387) when there is one.
    public static func build(
        from: String, to: [String], subject: String, text: String, html: String, messageID key: String, date t: Int64,
        thread: String? = nil, threading: Threading? = nil, image: InlineImage? = nil
    ) -> String {
        let boundary = "klaxon-" + String(key.filter { $0.isLetter || $0.isNumber }.prefix(24))
        func id(_ s: String) -> String { "<\(headerSafe(s).replacingOccurrences(of: " ", with: ""))@\(domain(from))>" }
        var headers = [
            "From: \(mailbox(from))",
            "To: \(to.map(mailbox).joined(separator: ", "))",
            "Subject: \(encodeWord(subject, used: "Subject: ".count))",
            "Date: \(date(t))",
            "Message-ID: \(id(threading?.messageID ?? key))",
            "MIME-Version: 1.0",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "X-Klaxon-Key: \(headerSafe(key))",
            // RFC 3834: made by a machine, so vacation responders and auto-replies stay quiet.
            "Auto-Submitted: auto-generated",
        ]
        // Every later message of one alert episode answers the episode's first (`alert-123@domain`).
        if let reply = threading?.replyTo ?? thread {
            headers += ["In-Reply-To: \(id(reply))", "References: \(id(reply))"]
        }
        var parts = [
            "--\(boundary)", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64", "",
            base64Lines(text), "--\(boundary)",
        ]
        let htmlPart = [
            "Content-Type: text/html; charset=utf-8", "Content-Transfer-Encoding: base64", "", base64Lines(html),
        ]
        if let image {
            let related = boundary + "-related"
            let cid = headerSafe(image.contentID).filter { !$0.isWhitespace && $0 != "<" && $0 != ">" }
            let name = headerSafe(image.filename).filter { $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" }
            parts += [
                "Content-Type: multipart/related; boundary=\"\(related)\"; type=\"text/html\"", "", "--\(related)",
            ]
            parts += htmlPart
            parts += [
                "--\(related)", "Content-Type: image/png; name=\"\(name)\"", "Content-Transfer-Encoding: base64",
                "Content-ID: <\(cid)>", "Content-Disposition: inline; filename=\"\(name)\"", "",
                base64Lines(image.png), "--\(related)--", "",
            ]
        } else {
            parts += htmlPart
        }
        parts += ["--\(boundary)--", ""]
        return (headers + [""] + parts).joined(separator: "\r\n")
    }

    static func base64Lines(_ data: Data) -> String {
        let encoded = data.base64EncodedString()
        var lines: [String] = []
        var i = encoded.startIndex
        while i < encoded.endIndex {
            let j = encoded.index(i, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[i..<j]))
            i = j
        }
        return lines.joined(separator: "\r\n")
    }
}
