import Foundation

/// Why a silence cannot be made (`Silence.make`).
public struct SilenceError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension Silence {
    /// The most matchers one silence may have.
    public static let maxMatchers = 64

    /// The one constructor of a new silence: the chat's command and buttons, the status site, `klaxon
    /// silence add`, `/api/v1/silences` and Alertmanager's `/api/v2/silences` all make theirs here,
    /// so each gets the same checks. Matchers are kept as given (name, operator, value): no path
    /// turns a value into text and back. It starts at `starts` or `now`, whichever is later.
    ///
    /// Refused: no matchers or more than `maxMatchers`; one that cannot be used; only matchers that
    /// match the empty string (the silence would mute almost everything, as Alertmanager refuses it);
    /// an end not after the start, in the past, or more than `DurationText.maximum` (3650d) from now;
    /// a comment or author `commentProblem` or `authorProblem` refuses. Whether a client may name
    /// this author (`claimedAuthorProblem`) is the caller's to check: the server writes `slack:…`.
    public static func make(
        id: String = UUID().uuidString.lowercased(), matchers: [Matcher], starts: Int64, ends: Int64, now: Int64,
        comment: String, createdBy: String
    ) throws -> Silence {
        guard !matchers.isEmpty else { throw SilenceError("a silence needs at least one matcher") }
        guard matchers.count <= maxMatchers else {
            throw SilenceError("a silence has at most \(maxMatchers) matchers")
        }
        if let bad = matchers.first(where: { $0.problem != nil }) {
            throw SilenceError("matcher \(Matcher.shown(bad.description)) cannot be used: \(bad.problem!)")
        }
        guard !matchers.allSatisfy(\.matchesEmpty) else {
            throw SilenceError("at least one matcher must not match the empty string")
        }
        let starts = max(starts, now)
        guard ends > starts else { throw SilenceError("the end must be after the start") }
        guard ends - now <= DurationText.maximum else {
            throw SilenceError(
                "a silence ends at most \(DurationText.format(DurationText.maximum)) from now (10 years)")
        }
        if let problem = commentProblem(comment) ?? authorProblem(createdBy) { throw SilenceError(problem) }
        return Silence(
            id: id, matchers: matchers, starts: starts, ends: ends, comment: comment, createdBy: createdBy)
    }
}

extension Matcher {
    /// Whether the matcher matches the empty string (a missing label).
    public var matchesEmpty: Bool {
        switch op {
        case .equal: value.isEmpty
        case .regex: regex?.fullMatch("") ?? false
        case .notEqual: !value.isEmpty
        case .notRegex: !(regex?.fullMatch("") ?? true)
        }
    }
}
