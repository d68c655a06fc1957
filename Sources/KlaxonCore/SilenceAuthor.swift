import Foundation

extension Silence {
    /// Author prefixes the server itself writes for identities it has checked: `web:` (a status-site
    /// session), `slack:` and `mattermost:` (a verified chat request), `api:`. A client that names
    /// its own author (`klaxon silence add --author`, `created_by` in the API) may not use them, or
    /// anyone could sign a silence as a colleague someone verified.
    public static let verifiedAuthorPrefixes = ["web:", "slack:", "mattermost:", "api:"]

    /// The most characters a client-given author or comment may have.
    public static let maxAuthorLength = 200
    public static let maxCommentLength = 4_000

    /// Why `author`, given by a client rather than checked by the server, cannot be recorded; nil
    /// when it can.
    public static func claimedAuthorProblem(_ author: String) -> String? {
        if let problem = authorProblem(author) { return problem }
        // Compared as a person reads it: without case, spaces of any kind, invisible characters
        // (a zero-width space) or look-alike letters (Cyrillic `ѕ` for `s`), so ` Slack:alice`,
        // `\u{A0}web:bob` and `ѕlack:eve` are refused as `slack:` and `web:` are.
        let folded = readAs(author)
        if let prefix = verifiedAuthorPrefixes.first(where: { folded.hasPrefix($0) }) {
            return "the author prefix \"\(prefix)\" is reserved for identities the server verified "
                + "(a status-site sign-in, a signed chat request); give a plain name"
        }
        return nil
    }

    /// Why an author, whoever wrote it, cannot be recorded: empty, too long, or with a control character.
    public static func authorProblem(_ author: String) -> String? {
        if author.trimmingCharacters(in: .whitespaces).isEmpty { return "the author is empty" }
        if author.count > maxAuthorLength { return "the author is longer than \(maxAuthorLength) characters" }
        if let problem = TerminalText.problem(author) { return "the author \(problem)" }
        return nil
    }

    /// `text` as a person reads it, for comparing with the reserved prefixes: compatibility forms
    /// folded and accents split off and dropped (NFKD: a full-width `ｓ` is `s`, `ś` is `s`), spaces and
    /// invisible characters dropped, lower case, and
    /// the letters that look like ASCII ones in common fonts (Cyrillic, Greek, Latin variants) mapped
    /// to them. Only the first 40 characters matter (the prefixes are short).
    static func readAs(_ text: String) -> String {
        var out = ""
        for s in String(text.prefix(40)).decomposedStringWithCompatibilityMapping.lowercased().unicodeScalars {
            let p = s.properties
            if p.isWhitespace || p.isDefaultIgnorableCodePoint || p.generalCategory == .format
                || p.generalCategory == .nonspacingMark || p.generalCategory == .enclosingMark
            {
                continue
            }
            out.unicodeScalars.append(lookAlikes[s] ?? s)
        }
        return out
    }

    /// Letters and colons that render like the ASCII ones the reserved prefixes use (Unicode's
    /// confusables for `a`–`z` and `:`, the ones fonts draw identically).
    static let lookAlikes: [Unicode.Scalar: Unicode.Scalar] = {
        let pairs: [(String, Character)] = [
            ("аɑαа", "a"), ("ьƅ", "b"), ("сϲᴄⅽ", "c"), ("ԁⅾ", "d"), ("еєҽ", "e"), ("ғ", "f"), ("ɡց", "g"),
            ("һհ", "h"), ("іιɩӏⅰ", "i"), ("јϳ", "j"), ("κкᴋ", "k"), ("ӏⅼǀ", "l"), ("мⅿ", "m"), ("ոп", "n"),
            ("оοօσ", "o"), ("рρ", "p"), ("ԛ", "q"), ("гᴦ", "r"), ("ѕ", "s"), ("т", "t"), ("υսᴜ", "u"),
            ("νѵᴠⅴ", "v"), ("ԝѡ", "w"), ("хχⅹ", "x"), ("уγ", "y"), ("ᴢ", "z"),
            ("꞉∶։׃ː˸᛬︓﹕", ":"),
        ]
        var map: [Unicode.Scalar: Unicode.Scalar] = [:]
        for (from, to) in pairs {
            for s in from.unicodeScalars { map[s] = to.unicodeScalars.first! }
        }
        return map
    }()

    /// Why a client-given comment cannot be recorded; nil when it can.
    public static func commentProblem(_ comment: String) -> String? {
        if comment.count > maxCommentLength { return "the comment is longer than \(maxCommentLength) characters" }
        if let problem = TerminalText.problem(comment) { return "the comment \(problem)" }
        return nil
    }
}
