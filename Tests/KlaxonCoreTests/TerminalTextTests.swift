import KlaxonCore
import Testing

@Suite("text printed to a terminal")
struct TerminalTextTests {
    /// Control sequences a hostile comment, author, station or receiver error might carry.
    static let hostile: [(String, String)] = [
        ("\u{1B}[2J\u{1B}[H", "\\e[2J\\e[H"),  // clear the screen, cursor home
        ("\u{1B}]0;pwned\u{07}", "\\e]0;pwned\\x07"),  // set the window title (OSC … BEL)
        ("\u{1B}]8;;https://evil.example\u{1B}\\click\u{1B}]8;;\u{1B}\\", "\\e]8;;https://evil.example\\e\\click"),
        ("\u{9B}31mred", "\\x9B31mred"),  // C1 CSI, one byte on some terminals
        ("ok\rFORGED", "ok\\rFORGED"),  // carriage return overwrites the line
        ("a\nb  by admin: fine", "a\\nb  by admin: fine"),  // a forged second line
        ("tab\there\u{0}nul\u{7F}del", "tab\\there\\x00nul\\x7Fdel"),
        ("\u{202E}evil\u{202C}", "\\u{202E}evil\\u{202C}"),  // right-to-left override
        ("\u{2066}iso\u{2069}\u{200F}", "\\u{2066}iso\\u{2069}\\u{200F}"),  // isolates, RLM
        ("line\u{2028}sep\u{2029}", "line\\u{2028}sep\\u{2029}"),
        ("\u{85}next line", "\\x85next line"),
    ]

    @Test("control characters are shown as escapes: none reaches the terminal")
    func escapesHostileText() {
        for (input, expected) in Self.hostile {
            let safe = TerminalText.safe(input)
            #expect(safe.unicodeScalars.allSatisfy { !TerminalText.isUnsafe($0) }, "\(expected)")
            #expect(safe.contains(expected) || safe == expected, "\(safe) should contain \(expected)")
            #expect(!safe.contains("\u{1B}"))
            #expect(TerminalText.problem(input) != nil, "\(expected) should be refused as stored text")
        }
    }

    @Test("plain text, accents, emoji and other scripts pass unchanged")
    func plainTextUnchanged() {
        for text in [
            "", "flood-stage S1 → back to normal", "Müller’s gauge, São Paulo", "🚨 river up", "日本語のコメント",
            "עברית (Hebrew is fine; only the override characters are not)", "C:\\path\\x1b stays as typed",
        ] {
            #expect(TerminalText.safe(text) == text)
            #expect(TerminalText.problem(text) == nil)
        }
    }

    @Test("a report keeps its lines; other controls in it are escaped")
    func multiline() {
        #expect(TerminalText.safeLines("one\ntwo\u{1B}[31m\n\nfour") == "one\ntwo\\e[31m\n\nfour")
    }

    @Test("authors the server writes for verified identities cannot be claimed by a client")
    func reservedAuthors() {
        for claimed in [
            "slack:U024BE7LH", "Slack:alice", "  web:bob", "mattermost:x", "api:robot", "WEB:Alice", "slack:",
        ] {
            let problem = Silence.claimedAuthorProblem(claimed)
            #expect(problem?.contains("reserved for identities the server verified") == true, "\(claimed)")
        }
        for bad in ["", "   ", "eve\u{1B}[2J", "\u{202E}nimda", String(repeating: "u", count: 5_000)] {
            #expect(Silence.claimedAuthorProblem(bad) != nil, "\(bad.prefix(20))")
        }
        for fine in ["alice", "alice@example.org", "ops team", "cli:alice", "web-team", "slacker", "api"] {
            #expect(Silence.claimedAuthorProblem(fine) == nil, "\(fine)")
        }
        #expect(Silence.commentProblem("river work, see ticket #12") == nil)
        #expect(Silence.commentProblem("") == nil)
        #expect(Silence.commentProblem("x\u{1B}]0;t\u{07}") != nil)
        #expect(Silence.commentProblem(String(repeating: "c", count: 8_000)) != nil)
    }
}
