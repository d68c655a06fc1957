import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonTesting
import Testing

/// Email headers carrying data: no encoded word from data is decoded by a mail reader, CR/LF cannot
/// add a header, and lines are folded within 78 characters. Messages are read back by Python's
/// `email` package (a real mail parser, as a client would), not by our own code.
@Suite struct EmailHeaderTests {
    static let hostile = [
        "=?utf-8?b?SGk=?=", "=?UTF-8?Q?=41?=", "x =?iso-8859-1?q?caf=E9?= y", "=?", "Zürich =?utf-8?b?SGk=?=",
        "x\r\nBcc: x@y", "x\nBcc: x@y\r\n\r\nbody", "x\rX-Evil: 1", "a\u{2028}b\u{85}c", "<!channel> & \"q\" \\",
        "🌊" + String(repeating: "é", count: 90), String(repeating: "word ", count: 40),
        String(repeating: "x", count: 200), "ok",
    ]

    struct Parsed: Decodable {
        var headers: [[String]]
        var raw: [[String]]
        var defects: [String]
        var parts: [String]
    }

    /// The message as Python's `email` (policy.default) reads it: decoded and raw headers, defects.
    static func parse(_ message: String) async throws -> Parsed {
        let script = """
            import email, json, sys
            from email import policy
            m = email.message_from_bytes(sys.stdin.buffer.read(), policy=policy.default)
            defects = [type(d).__name__ for d in m.defects]
            for k, v in m.items():
                defects += [type(d).__name__ for d in getattr(v, "defects", [])]
            parts = [p.get_content() for p in m.walk() if p.get_content_maintype() != "multipart"]
            json.dump({"headers": [[k, str(v)] for k, v in m.items()], "raw": [[k, v] for k, v in m.raw_items()],
                       "defects": defects, "parts": parts}, sys.stdout)
            """
        let out = try await python(script, input: Data(message.utf8))
        return try JSONDecoder().decode(Parsed.self, from: out)
    }

    static func notifier(subject: String? = nil, text: String? = nil, html: String? = nil) throws -> EmailNotifier {
        try EmailNotifier(
            config: Receiver.Email(
                name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "Klaxon <klaxon@example.org>",
                to: ["ops@example.org"], subject: subject, text: text, html: html),
            clock: { 1_770_000_000 })
    }

    /// A message of one alert (with an id) threads by its episode: `In-Reply-To`, `References`.
    static let expectedHeaders = [
        "From", "To", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type", "X-Klaxon-Key",
        "Auto-Submitted",
    ]

    /// What a header value shows once control characters and runs of white space are folded.
    static func shown(_ s: String) -> String { EmailMessage.headerSafe(s) }

    @Test func dataInTheSubjectIsShownAsWritten() async throws {
        let templated = try Self.notifier(subject: "[{{#alerts}}{{station}}{{/alerts}}] =?utf-8?b?SGk=?=")
        for h in Self.hostile {
            var t = transition(station: h)
            t.explanation = "why \(h)"
            let n = AlertNotification(
                key: "k-1", receiver: "mail", alerts: [NotifiedAlert(transition: t, message: "msg \(h)", id: 3)])
            for (notifier, expected) in [
                (try Self.notifier(), "[Klaxon] WARNING river-levels \(h) firing minor"),
                (templated, "[\(h)] =?utf-8?b?SGk=?="),
            ] {
                let message = try notifier.render(n)
                let head = String(message[..<message.range(of: "\r\n\r\n")!.lowerBound])
                // Folded lines: every line within 78 characters, and only CRLF line ends.
                for line in head.components(separatedBy: "\r\n") {
                    #expect(line.count <= 78, "\(line.count): \(line)")
                    #expect(!line.contains("\r") && !line.contains("\n"))
                }
                #expect(head.unicodeScalars.allSatisfy { $0.isASCII })
                let parsed = try await Self.parse(message)
                #expect(parsed.headers.map { $0[0] } == Self.expectedHeaders, "\(h)")
                #expect(parsed.defects.isEmpty, "\(h): \(parsed.defects)")
                let subject = parsed.headers.first { $0[0] == "Subject" }?[1]
                #expect(subject == Self.shown(expected), "\(h)")
                // The text part is the data as written (no HTML escaping), the HTML part escapes it.
                #expect(parsed.parts.count == 2)
                #expect(parsed.parts.first?.contains("msg \(h)") == true)
                #expect(parsed.parts.last?.contains("msg \(HTMLText.escape(h))") == true)
            }
        }
    }

    @Test func templatesEscapeForTheirPart() async throws {
        let notifier = try Self.notifier(
            subject: "{{#alerts}}{{station}}{{/alerts}}", text: "{{#alerts}}{{station}}{{/alerts}}",
            html: "<p>{{#alerts}}{{station}}{{/alerts}}</p>")
        let h = "A&B <script>x</script> \"q\" 'a'"
        let n = AlertNotification(
            key: "k-2", receiver: "mail",
            alerts: [NotifiedAlert(transition: transition(station: h), message: "m", id: 1)])
        let parsed = try await Self.parse(try notifier.render(n))
        #expect(parsed.headers.first { $0[0] == "Subject" }?[1] == h)
        #expect(parsed.parts.first == h)
        #expect(parsed.parts.last == "<p>A&amp;B &lt;script&gt;x&lt;/script&gt; &quot;q&quot; &#39;a&#39;</p>")
    }

    @Test func encodedWordsAreShortAndDecodeExactly() {
        for s in Self.hostile + [
            String(repeating: "😀", count: 40), "a\u{301}\u{301}\u{301}" + String(repeating: "\u{301}", count: 80),
        ] {
            let encoded = EmailMessage.encodeWord(s, used: 9)
            var bytes: [UInt8] = []
            for (i, line) in encoded.components(separatedBy: "\r\n").enumerated() {
                #expect(line.count + (i == 0 ? 9 : 0) <= 78, "\(line)")
                for word in line.split(separator: " ") where word.hasPrefix("=?") {
                    #expect(word.count <= 75)
                    #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
                    let decoded = Data(base64Encoded: String(word.dropFirst(10).dropLast(2))) ?? Data([0xFF])
                    #expect(String(data: decoded, encoding: .utf8) != nil, "a word cut inside a character")
                    bytes += decoded
                }
            }
            // Each word holds whole UTF-8 sequences, and together they are exactly the text.
            let expected = EmailMessage.headerSafe(s)
            if encoded.hasPrefix("=?") {
                #expect(String(decoding: bytes, as: UTF8.self) == expected)
            } else {
                #expect(encoded.replacingOccurrences(of: "\r\n", with: "") == expected)
            }
        }
    }

    @Test func aNonASCIIDisplayNameIsEncoded() async throws {
        let notifier = try EmailNotifier(
            config: Receiver.Email(
                name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "Klaxon Zürich <klaxon@example.org>",
                to: ["\"Dienst =?utf-8?b?SGk=?=\" <duty@example.org>", "ops@example.org"]))
        let parsed = try await Self.parse(
            try notifier.render(
                AlertNotification(
                    key: "k", receiver: "mail", alerts: [NotifiedAlert(transition: transition(), message: "m", id: 1)]))
        )
        let raw = Dictionary(parsed.raw.map { ($0[0], $0[1]) }, uniquingKeysWith: { a, _ in a })
        #expect(raw["From"]?.unicodeScalars.allSatisfy { $0.isASCII } == true)
        let headers = Dictionary(parsed.headers.map { ($0[0], $0[1]) }, uniquingKeysWith: { a, _ in a })
        #expect(headers["From"] == "Klaxon Zürich <klaxon@example.org>")
        #expect(headers["To"]?.contains("=?utf-8?b?SGk=?=") == true)
        #expect(headers["To"]?.contains("duty@example.org") == true)
        #expect(EmailMessage.address("\"Dienst =?utf-8?b?SGk=?=\" <duty@example.org>") == "duty@example.org")
    }
}
