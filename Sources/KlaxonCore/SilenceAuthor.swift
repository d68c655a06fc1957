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
        if author.trimmingCharacters(in: .whitespaces).isEmpty { return "the author is empty" }
        if author.count > maxAuthorLength { return "the author is longer than \(maxAuthorLength) characters" }
        if let problem = TerminalText.problem(author) { return "the author \(problem)" }
        // Compared without case or leading spaces: `Slack:alice` and ` web:bob` read the same to a person.
        let folded = author.drop { $0 == " " }.lowercased()
        if let prefix = verifiedAuthorPrefixes.first(where: { folded.hasPrefix($0) }) {
            return "the author prefix \"\(prefix)\" is reserved for identities the server verified "
                + "(a status-site sign-in, a signed chat request); give a plain name"
        }
        return nil
    }

    /// Why a client-given comment cannot be recorded; nil when it can.
    public static func commentProblem(_ comment: String) -> String? {
        if comment.count > maxCommentLength { return "the comment is longer than \(maxCommentLength) characters" }
        if let problem = TerminalText.problem(comment) { return "the comment \(problem)" }
        return nil
    }
}
