import Foundation
import KlaxonCore

/// A firing alert as lists show it: its current transition and the ack that holds for it, if any.
public struct FiringAlert: Sendable {
    public var key: AlertKey
    /// The id of the transition that last announced the alert.
    public var transitionID: Int64
    public var transition: Transition
    public var ack: Ack?
    /// The alert's id for its whole episode (what `ack` takes, what messages show).
    public var episode: Int64
    /// When the episode began: "firing since". `transition.at` is when its current level was reached.
    public var startedAt: Int64

    public init(
        key: AlertKey, transitionID: Int64, transition: Transition, ack: Ack?, episode: Int64? = nil,
        startedAt: Int64? = nil
    ) {
        self.key = key
        self.transitionID = transitionID
        self.transition = transition
        self.ack = ack
        self.episode = episode ?? transitionID
        self.startedAt = startedAt ?? transition.at
    }

    /// A firing alert from its newest transition.
    public init(record: TransitionRecord, ack: Ack?) {
        self.init(
            key: AlertKey(rule: record.rule, station: record.station, metric: record.metric),
            transitionID: record.id ?? 0, transition: record.transition, ack: ack, episode: record.episodeID,
            startedAt: record.startedAt)
    }

    /// Where the next page starts when this alert is the last one shown.
    public var cursor: FiringCursor {
        FiringCursor(severity: transition.severity, at: transition.at, transitionID: transitionID)
    }
}

/// A position in the list of firing alerts, whose order is: most severe first, then newest first,
/// then the higher transition id first. A page "after" a cursor starts right after that alert, so
/// following `next` visits each alert once however many there are (keyset paging: no offset to
/// skip, no row counted twice when earlier alerts resolve meanwhile).
///
/// As text (a query parameter): `RANK_AT_ID`, like `2_1767225600_4711` (rank 2 is critical).
public struct FiringCursor: Sendable, Hashable, LosslessStringConvertible {
    public var severity: Severity
    public var at: Int64
    public var transitionID: Int64

    public init(severity: Severity, at: Int64, transitionID: Int64) {
        self.severity = severity
        self.at = at
        self.transitionID = transitionID
    }

    /// Reads the text form; nil for anything else (it comes from a request: hostile).
    public init?(_ text: String) {
        guard text.utf8.count <= 64 else { return nil }
        let parts = text.split(separator: "_", omittingEmptySubsequences: false)
        guard parts.count == 3, let rank = Self.integer(parts[0]), let at = Self.integer(parts[1]),
            let id = Self.integer(parts[2]), id >= 0,
            let severity = Severity.allCases.first(where: { Int64($0.pagingRank) == rank })
        else { return nil }
        self.init(severity: severity, at: at, transitionID: id)
    }

    public var description: String { "\(severity.pagingRank)_\(at)_\(transitionID)" }

    /// A decimal integer (an optional `-`, then 1–19 digits), nothing else: no `+`, spaces or hex.
    static func integer(_ s: Substring) -> Int64? {
        let digits = s.hasPrefix("-") ? s.dropFirst() : s
        guard (1...19).contains(digits.utf8.count), digits.utf8.allSatisfy({ (48...57).contains($0) }) else {
            return nil
        }
        return Int64(s)
    }

    /// Before every alert: the first page.
    static let start = FiringCursor(severity: .critical, at: .max, transitionID: .max)
    /// The rank the first page compares with (above every severity's).
    static let startRank = 3
}

/// One page of firing alerts and where the next one starts (nil: this was the last).
public struct FiringPage: Sendable {
    public var alerts: [FiringAlert]
    public var next: FiringCursor?

    public init(alerts: [FiringAlert], next: FiringCursor?) {
        self.alerts = alerts
        self.next = next
    }
}

/// How many alerts are firing, by severity: from one aggregate query, never from the rows.
public struct FiringCounts: Sendable, Equatable {
    public var bySeverity: [Severity: Int]

    public init(bySeverity: [Severity: Int] = [:]) { self.bySeverity = bySeverity }

    public var total: Int { bySeverity.values.reduce(0, +) }
}

/// A position in the list of silences (ordered by start, then id): `STARTS_ID` as text.
public struct SilenceCursor: Sendable, Hashable, LosslessStringConvertible {
    public var starts: Int64
    public var id: String

    public init(starts: Int64, id: String) {
        self.starts = starts
        self.id = id
    }

    public init?(_ text: String) {
        guard text.utf8.count <= 200, let cut = text.firstIndex(of: "_"),
            let starts = FiringCursor.integer(text[..<cut])
        else { return nil }
        let id = text[text.index(after: cut)...]
        guard !id.isEmpty, id.utf8.count <= 128 else { return nil }
        self.init(starts: starts, id: String(id))
    }

    public var description: String { "\(starts)_\(id)" }
}

/// One page of silences, how many there are in all, and where the next page starts.
public struct SilencePage: Sendable {
    public var silences: [Silence]
    public var total: Int
    public var next: SilenceCursor?

    public init(silences: [Silence], total: Int, next: SilenceCursor?) {
        self.silences = silences
        self.total = total
        self.next = next
    }
}

extension Severity {
    /// The order lists show severities in, as stored queries compute it (`FiringQueries.rank`).
    public var pagingRank: Int {
        switch self {
        case .info: 0
        case .warning: 1
        case .critical: 2
        }
    }
}

/// SQL both backends share for firing alerts.
public enum FiringQueries {
    /// A transition's severity as its sort rank (`t` is the transition).
    public static let rank = "(CASE t.severity WHEN 'critical' THEN 2 WHEN 'warning' THEN 1 ELSE 0 END)"
    /// The most rows one page returns, whatever a caller asks.
    public static let maximumPage = 10_000

    /// A page size within 1…`maximumPage`.
    public static func clamp(_ limit: Int) -> Int { min(max(1, limit), maximumPage) }

    /// The cursor's values as the query compares them.
    public static func bounds(_ after: FiringCursor?) -> (rank: Int, at: Int64, id: Int64) {
        guard let after else { return (FiringCursor.startRank, .max, .max) }
        return (after.severity.pagingRank, after.at, after.transitionID)
    }
}

/// The newest stored earthquakes of a span, how many match in all, and the revision count of
/// each one listed.
public struct QuakePage: Sendable {
    public var quakes: [StoredQuake]
    public var total: Int
    public var revisions: [String: Int]

    public init(quakes: [StoredQuake], total: Int, revisions: [String: Int]) {
        self.quakes = quakes
        self.total = total
        self.revisions = revisions
    }
}
