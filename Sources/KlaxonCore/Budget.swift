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

/// What a decision changes in the receiver's folded alerts (the store's `budget_folds` rows, one per
/// alert and episode folded in the current storm), applied by the store in the same transaction as
/// the window. Kept apart from the window's own row so that a fold writes one small row, whatever
/// the storm's size.
public struct FoldChanges: Sendable, Equatable {
    /// Forget every folded alert of the receiver (its storm ended).
    public var clear = false
    /// Alerts folded now (an alert and episode already folded is left as it is).
    public var add: [FoldedAlert] = []
    /// Alerts the receiver was sent (any episode): no longer folded.
    public var heard: [String] = []
    /// Folded alerts whose episode resolved: kept, marked resolved (the summary's count goes down).
    public var resolved: [ResolvedFold] = []

    public init() {}

    public var isEmpty: Bool { !clear && add.isEmpty && heard.isEmpty && resolved.isEmpty }
}

/// A folded alert's episode that resolved.
public struct ResolvedFold: Sendable, Equatable {
    public var alert: String
    public var episode: Int64
    public init(alert: String, episode: Int64) {
        self.alert = alert
        self.episode = episode
    }
}

/// A receiver's budget as the store keeps it (one small row per receiver, read locked and written
/// in one transaction so two daemons never both spend the last message): the messages sent in the
/// window, the current storm, and its summary message. The alerts folded in the storm are rows of
/// their own (`changes` says what a decision does to them; `FoldTally` is what the summary reads).
/// Pure: the dispatcher's budget stage (`Dispatcher+Budget.swift`) decides with it; the store keeps it.
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
    /// When the current storm's first and last folds were (ms; nil: no storm).
    public var stormStart: Int64?
    public var lastFold: Int64?
    /// The summary message of the current storm (editing receivers), and when a summary was last
    /// posted (ms).
    public var summaryID: String?
    public var summaryPostedAt: Int64?
    /// Set while one sender posts the summary (ms, until when): another (the other daemon) leaves it.
    public var posting: Int64?
    /// Grows with every change that may change what the summary shows; `shown` is the one it last
    /// showed, and `shownText` its words (a change that leaves them as they were edits nothing).
    public var version = 0
    public var shown = 0
    public var shownText: String?
    /// What the last decision does to the folded alerts (not stored: the store applies it).
    public var changes = FoldChanges()

    enum CodingKeys: String, CodingKey {
        case sends, stormStart, lastFold, summaryID, summaryPostedAt, posting, version, shown, shownText
    }

    public init() {}

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
            changes.clear = true
            changes.add = []
            changes.heard = []
            changes.resolved = []
            stormStart = nil
            lastFold = nil
            summaryID = nil
            posting = nil
            shown = version
            shownText = nil
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
            if stormStart != nil, !alerts.isEmpty {
                changes.heard += alerts.map(\.alert)
                version += 1
            }
            return .send
        }
        changes.add += alerts
        stormStart = stormStart ?? now
        lastFold = now
        version += 1
        return .fold
    }

    /// Alerts that resolved, not sent (the receiver never heard them firing): those folded in this
    /// storm leave the summary's count. True when there is a storm (its summary may change).
    @discardableResult
    public mutating func resolved(_ alerts: [ResolvedFold]) -> Bool {
        guard stormStart != nil, !alerts.isEmpty else { return false }
        changes.resolved += alerts
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

    /// The summary now shows `version` in words `text`; `posted`: a new message (`id`, "" when the
    /// platform gave none) went out at `now`.
    public mutating func summaryShown(version shownVersion: Int, text: String?, posted id: String?, now: Int64) {
        if shownVersion > shown {
            shown = shownVersion
            shownText = text
        }
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

/// The alerts folded in a receiver's current storm, by subject, as the store counts its rows: what
/// the summary says.
public struct FoldTally: Sendable, Equatable {
    public struct Subject: Sendable, Equatable {
        /// `SubjectPage`'s raw value.
        public var subject: String
        /// Folded and still firing.
        public var firing: Int
        /// Folded in all (resolved or not).
        public var total: Int
        /// Distinct stations of those still firing.
        public var stations: Int
        public init(subject: String, firing: Int, total: Int, stations: Int) {
            self.subject = subject
            self.firing = firing
            self.total = total
            self.stations = stations
        }
    }

    public var subjects: [Subject]
    /// Places of alerts still firing, in fold order (`subject`, `station`, `place`), at most
    /// `placeRows`: the summary names the first few of each subject.
    public var places: [(subject: String, station: String, place: String)]

    public init(subjects: [Subject] = [], places: [(subject: String, station: String, place: String)] = []) {
        self.subjects = subjects
        self.places = places
    }

    /// The most place rows a tally reads.
    public static let placeRows = 200

    public static func == (a: FoldTally, b: FoldTally) -> Bool {
        a.subjects == b.subjects && a.places.elementsEqual(b.places) { $0 == $1 }
    }

    /// The tally of folded alerts held in memory (the in-memory store, tests): `rows` in fold order,
    /// each with whether it resolved.
    public static func of(_ rows: [(fold: FoldedAlert, resolved: Bool)]) -> FoldTally {
        var subjects: [String: Subject] = [:]
        var order: [String] = []
        var stations: [String: Set<String>] = [:]
        for (f, resolved) in rows {
            if subjects[f.subject] == nil {
                subjects[f.subject] = Subject(subject: f.subject, firing: 0, total: 0, stations: 0)
                order.append(f.subject)
            }
            subjects[f.subject]!.total += 1
            guard !resolved else { continue }
            subjects[f.subject]!.firing += 1
            if stations[f.subject, default: []].insert(f.station).inserted { subjects[f.subject]!.stations += 1 }
        }
        let places = rows.filter { !$0.resolved }.prefix(placeRows).map {
            (subject: $0.fold.subject, station: $0.fold.station, place: $0.fold.place)
        }
        return FoldTally(subjects: order.compactMap { subjects[$0] }, places: places)
    }
}
