/// A bound on the matching work of one request or one delivery batch: the regex steps (instructions
/// visited, `LinearRegex.fullMatch(_:steps:)`) every silence and filter it matches may spend together.
///
/// Why: each regex match is linear, but a silence may hold 64 regex matchers of 10,000 instructions,
/// and a page or a dispatcher pass matches every active silence against every alert it shows or sends,
/// so linear per match still multiplies to minutes of CPU. With a budget the caller decides what an
/// undecided match means: a page says which rows it could not check, the API answers 503, delivery
/// sends (a silence mutes less, never more). Results that cost something are memoized per program
/// (`LinearRegex.fullMatch(_:budget:)`), so the next request or pass continues where this one stopped.
public struct MatchBudget: Sendable {
    /// A request's budget (a page, an API answer): about a tenth of a second of one core.
    public static let requestSteps = 20_000_000
    /// A delivery batch's budget for its mute stage.
    public static let batchSteps = 20_000_000

    /// The steps this budget allows.
    public let limit: Int
    /// The steps spent so far (at most one scalar's work over `limit`).
    public private(set) var spent = 0
    /// Whether a match ran out of budget before it was decided.
    public private(set) var ranOut = false
    /// Regex matches answered from a program's memo, without work.
    public internal(set) var memoHits = 0
    /// Regex matches run (decided or not).
    public private(set) var regexMatches = 0

    public init(steps: Int) {
        limit = steps
    }

    /// The steps left.
    public var remaining: Int { max(0, limit - spent) }

    mutating func charge(_ steps: Int, decided: Bool) {
        spent += steps
        regexMatches += 1
        if !decided { ranOut = true }
    }

    /// Charges a comparison that needs no regex (one step), so even equality-only matching is bounded.
    public mutating func chargeComparison() { spent += 1 }
}
