import Foundation

/// A receiver's budget (`budget: {messages: N, per: DURATION}`, issue 41 "no storms"): at most
/// `messages` new messages in any window of `per` seconds. Past it, new notifications for the
/// receiver are folded into one summary message (`FoldSummary`) that is kept up to date. A resolve
/// the receiver is owed (it heard the alert firing) is never folded: it is sent, and counts.
/// Off unless configured (Alertmanager has no such budget either).
public struct Budget: Sendable, Hashable {
    /// Messages per window, 1 or more.
    public var messages: Int
    /// The sliding window, seconds.
    public var per: Int64

    public init(messages: Int, per: Int64) {
        self.messages = messages
        self.per = per
    }

    /// The bounds `klaxon check` holds a budget to.
    public static let messageRange = 1...10_000
    public static let perRange: ClosedRange<Int64> = 1...(7 * 86400)

    /// `5 per 10m`.
    public var description: String { "\(messages) per \(DurationText.format(per))" }

    /// Why a folded notification was not sent (its outbox row's `last_error`; the history shows
    /// such rows as `folded`).
    public func foldedReason(receiver: String) -> String {
        Self.foldedPrefix + ": \(receiver) is over its budget of \(description)"
    }

    /// What every folded row's reason starts with.
    public static let foldedPrefix = "folded into the storm summary"
}

/// One alert folded into a receiver's storm summary.
public struct FoldedAlert: Codable, Sendable, Equatable {
    /// `rule|station|metric` (`OutboxRecord.alertKey`).
    public var alert: String
    public var episode: Int64
    /// What the summary groups it by (`SubjectPage.of(metric:)`'s raw value).
    public var subject: String
    /// The station id (counted: "on 12 gauges").
    public var station: String
    /// Its place in words (bounded; hostile: escaped by each destination when shown).
    public var place: String
    /// When it was folded (ms).
    public var at: Int64

    public init(alert: String, episode: Int64, subject: String, station: String, place: String, at: Int64) {
        self.alert = alert
        self.episode = episode
        self.subject = subject
        self.station = station
        self.place = String(place.prefix(Self.placeLimit))
        self.at = at
    }

    /// The most characters of a place kept.
    public static let placeLimit = 80

    enum CodingKeys: String, CodingKey {
        case alert = "a"
        case episode = "e"
        case subject = "k"
        case station = "s"
        case place = "p"
        case at
    }
}

/// A receiver's budget as the store keeps it (one row per receiver, read and written in one
/// transaction so two daemons never both spend the last message): the messages sent in the window,
/// the alerts folded in the current storm, and its summary message. Pure: the dispatcher's budget
/// stage (`Dispatcher+Budget.swift`) decides with it; the store only keeps it.
public struct BudgetWindow: Codable, Sendable, Equatable {
    /// A message counted in the window: when (ms) and its batch (a retry of it is not counted again).
    public struct Send: Codable, Sendable, Equatable {
        public var at: Int64
        public var batch: String
        public init(at: Int64, batch: String) {
            self.at = at
            self.batch = batch
        }
    }

    /// Messages sent in the window, oldest first.
    public var sends: [Send] = []
    /// Alerts folded in the current storm and not resolved since, oldest first (at most `foldedLimit`).
    public var folded: [FoldedAlert] = []
    /// Alerts folded beyond `foldedLimit` (counted, not kept).
    public var overflow = 0
    /// Alerts folded in the current storm in all, resolved or not.
    public var total = 0
    /// When the current storm's first and last folds were (ms; nil: no storm).
    public var stormStart: Int64?
    public var lastFold: Int64?
    /// The summary message of the current storm (editing receivers), and when a summary was last
    /// posted (ms).
    public var summaryID: String?
    public var summaryPostedAt: Int64?
    /// Set while one sender posts the summary (ms, until when): another (the other daemon) leaves it.
    public var posting: Int64?
    /// Grows with every change of what the summary shows; `shown` is the one it last showed.
    public var version = 0
    public var shown = 0

    public init() {}

    /// The most folded alerts kept by name (the rest are counted): bounds the row and the work per
    /// fold in a storm of 100,000 transitions.
    public static let foldedLimit = 500

    /// What the budget stage does with a notification.
    public enum Decision: Sendable, Equatable {
        case send
        case fold
    }

    /// Forgets what has left the window: sends older than `per`, and a storm that has had no fold
    /// for a whole window (its summary is final; the next fold starts a new storm and a new summary).
    public mutating func prune(now: Int64, budget: Budget) {
        let start = now - budget.per * 1000
        if let i = sends.firstIndex(where: { $0.at > start }) {
            if i > 0 { sends.removeFirst(i) }
        } else {
            sends = []
        }
        if let last = lastFold, last <= start, posting.map({ $0 <= now }) ?? true {
            // The storm is over: its summary stays as it last was.
            folded = []
            overflow = 0
            total = 0
            stormStart = nil
            lastFold = nil
            summaryID = nil
            posting = nil
            shown = version
        }
    }

    /// Decides a notification of `alerts` sent in `batch`: sent while the window has room (or when
    /// `owed`, a resolve the receiver must get), folded past it. A batch decided `send` before (a
    /// retry) is sent again without counting twice. A sent alert leaves the summary; a folded one
    /// joins it (once per alert and episode).
    public mutating func admit(
        batch: String, alerts: [FoldedAlert], owed: Bool, now: Int64, budget: Budget
    ) -> Decision {
        prune(now: now, budget: budget)
        if sends.contains(where: { $0.batch == batch }) { return .send }
        if owed || sends.count < budget.messages {
            sends.append(Send(at: now, batch: batch))
            // Bounded even when owed resolves go past the budget.
            let cap = budget.messages * 2 + 64
            if sends.count > cap { sends.removeFirst(sends.count - cap) }
            remove(alerts.map { (alert: $0.alert, episode: $0.episode) }, allEpisodes: true)
            return .send
        }
        for a in alerts {
            if let i = folded.firstIndex(where: { $0.alert == a.alert && $0.episode == a.episode }) {
                folded[i].place = a.place
            } else if folded.count < Self.foldedLimit {
                folded.append(a)
                total += 1
            } else {
                overflow += 1
                total += 1
            }
        }
        stormStart = stormStart ?? now
        lastFold = now
        version += 1
        return .fold
    }

    /// Alerts that resolved: they leave the summary (its count goes down). True when one was in it.
    @discardableResult
    public mutating func resolved(_ alerts: [(alert: String, episode: Int64)]) -> Bool {
        remove(alerts, allEpisodes: false)
    }

    @discardableResult
    mutating func remove(_ alerts: [(alert: String, episode: Int64)], allEpisodes: Bool) -> Bool {
        guard !folded.isEmpty, !alerts.isEmpty else { return false }
        let before = folded.count
        folded.removeAll { f in
            alerts.contains { $0.alert == f.alert && (allEpisodes || $0.episode == f.episode) }
        }
        guard folded.count != before else { return false }
        version += 1
        return true
    }

    /// What to do about the summary message now.
    public enum SummaryAction: Sendable, Equatable {
        /// It shows the latest already, or may not be posted yet (a receiver that cannot edit gets at
        /// most one summary per window), or another sender is posting it.
        case none
        /// Post a new one (the storm's first, or a receiver that cannot edit, once per window).
        case post
        /// Edit the storm's summary message.
        case edit(String)
    }

    /// Decides the summary's next step, and marks a post as under way (`posting`, until `now +
    /// lease`) so that no other sender posts one meanwhile.
    public mutating func summaryStep(canEdit: Bool, now: Int64, lease: Int64, budget: Budget) -> SummaryAction {
        guard version != shown, stormStart != nil else { return .none }
        if let until = posting, until > now { return .none }
        if canEdit, let id = summaryID { return .edit(id) }
        // A receiver that cannot edit gets at most one summary per window; so does one that edits
        // when the platform gave no id for this storm's summary.
        if let last = summaryPostedAt, now - last < budget.per * 1000,
            !canEdit || stormStart.map({ last >= $0 }) ?? false
        {
            return .none
        }
        posting = now + lease
        return .post
    }

    /// The summary now shows `version`; `posted`: a new message (`id`, "" when the platform gave
    /// none) went out at `now`.
    public mutating func summaryShown(version shownVersion: Int, posted id: String?, now: Int64) {
        shown = max(shown, shownVersion)
        if let id {
            posting = nil
            summaryPostedAt = now
            summaryID = id.isEmpty ? nil : id
        }
    }

    /// A post that failed: another sender may try.
    public mutating func postFailed() { posting = nil }

    /// The column's text.
    public func encoded() -> String {
        (try? String(decoding: JSONEncoder().encode(self), as: UTF8.self)) ?? "{}"
    }

    /// A row's text (a damaged one reads as an empty window: the budget starts afresh).
    public static func decode(_ text: String?) -> BudgetWindow {
        guard let text, let w = try? JSONDecoder().decode(BudgetWindow.self, from: Data(text.utf8)) else {
            return BudgetWindow()
        }
        return w
    }
}
