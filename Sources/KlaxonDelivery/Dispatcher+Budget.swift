import Foundation
import KlaxonCore
import KlaxonStore
import Logging
import Synchronization

/// The budget stage (issue 41, "no storms"): a receiver with a `budget: {messages: N, per: DURATION}`
/// is sent at most N new messages in any window of that length. Past it, a notification is folded
/// (its rows end `skipped` with a reason the history shows as `folded`) into one summary message of
/// the storm, itself kept up to date: edited in place where the receiver edits (living messages),
/// else at most one new summary per window. Every folded alert still reaches the site, the API and
/// `klaxon_notifications_folded_total{receiver}`.
///
/// What counts: each message posted to the receiver. An edit of an open living message is not a new
/// message: it is never counted nor folded. A resolve the receiver is owed (it heard the alert
/// firing) is never folded: it is sent, and counts. The resolve of a folded alert takes it out of
/// the summary (its count goes down); no resolve message is sent for it (the receiver never heard
/// it firing, the resolve contract in docs/receivers.md).
///
/// The window lives in the store (`BudgetStore`), changed in one locked transaction per decision:
/// it survives a restart, and two daemons never both spend the last message.
extension Dispatcher {
    /// Decides `batch` against the receiver's budget. True when it was folded (or failed and is
    /// retried): the send stage is skipped.
    func foldedPastBudget(
        _ batch: OutboxBatch, live: [(OutboxRecord, NotifiedAlert)], budget: Budget, notifier: any Notifier,
        now: Int64, pass: inout Pass, into outcomes: Outcomes
    ) async throws -> Bool {
        let receiver = batch.receiver
        let alerts = live.map(\.1)
        do {
            if try await editsOpenLivingMessage(batch, alerts: alerts, notifier: notifier) { return false }
            let owed = alerts.contains { $0.transition.state == .resolved }
            let folded = alerts.filter { $0.transition.state != .resolved }.map { Self.folded($0, at: now) }
            let store = self.store
            let key = batch.key
            let (decision, began) = try await livingStoreCall("deciding the budget") {
                try await store.updateBudget(receiver: receiver, now: now) {
                    (w: inout BudgetWindow) -> (BudgetWindow.Decision, Bool) in
                    let storm = w.stormStart
                    let d = w.admit(batch: key, alerts: folded, owed: owed, now: now, budget: budget)
                    return (d, d == .fold && storm == nil)
                }
            }
            guard decision == .fold else { return false }
            outcomes.add(
                .finish(batch, state: .skipped, now: now, retryAt: nil, error: budget.foldedReason(receiver: receiver)))
            pass.folded += 1
            settings.observeFold?(receiver, folded.count)
            if began {
                logger.notice(
                    "receiver over its budget: new alerts are folded into one summary message",
                    metadata: ["receiver": "\(receiver)", "budget": "\(budget.description)"])
            }
        } catch let error as DeliveryError {
            try fail(batch, error: error, now: now, pass: &pass, into: outcomes)
            return true
        }
        await refreshSummary(receiver: receiver, budget: budget, notifier: notifier)
        return true
    }

    /// Resolves of folded alerts (not sent: the receiver never heard them firing): they leave the
    /// storm summary's count, which is brought up to date.
    func budgetResolved(_ alerts: [NotifiedAlert], receiver: String, budget: Budget) async {
        let gone = alerts.map { ResolvedFold(alert: OutboxRecord.alertKey($0.transition), episode: $0.id) }
        guard !gone.isEmpty, let notifier = self.notifier(receiver) else { return }
        let store = self.store
        let now = clock()
        let storm = try? await livingStoreCall("updating the budget") {
            try await store.updateBudget(receiver: receiver, now: now) { (w: inout BudgetWindow) -> Bool in
                w.prune(now: now, budget: budget)
                return w.resolved(gone)
            }
        }
        guard storm == true else { return }
        await refreshSummary(receiver: receiver, budget: budget, notifier: notifier)
    }

    /// Brings the storm's summary message up to date: one at a time per receiver in this process
    /// (a caller that finds it already showing the latest does nothing, so a burst of folds makes a
    /// few edits, not one each; nor is it edited when its words would not change), and a post marked
    /// in the store so the other daemon does not post one too. After a post or an edit it looks
    /// again: folds the other daemon made while this one posted (it left the summary to this one)
    /// are shown too. A summary that cannot be sent is logged and tried again with backoff (or as a
    /// 429 asks) at a later pass, also when no fold or resolve comes (`retryDueSummaries`), until it
    /// goes out or `give_up_after` has passed since the first failure.
    func refreshSummary(receiver: String, budget: Budget, notifier: any Notifier) async {
        await budgetSummaries.serially(receiver) {
            for _ in 0..<3 {
                guard await self.refreshSummaryOnce(receiver: receiver, budget: budget, notifier: notifier) else {
                    break
                }
            }
        }
    }

    /// One step of `refreshSummary`: true when the summary was posted or edited.
    func refreshSummaryOnce(receiver: String, budget: Budget, notifier: any Notifier) async -> Bool {
        let store = self.store
        let now = clock()
        let lease = settings.lease
        let canEdit = notifier.editsMessages
        var step = BudgetWindow.SummaryAction.none
        do {
            let (next, window) = try await livingStoreCall("reading the budget") {
                try await store.updateBudget(receiver: receiver, now: now) {
                    (w: inout BudgetWindow) -> (BudgetWindow.SummaryAction, BudgetWindow) in
                    w.prune(now: now, budget: budget)
                    return (w.summaryStep(canEdit: canEdit, now: now, lease: lease, budget: budget), w)
                }
            }
            step = next
            guard step != .none else {
                budgetSummaries.succeeded(receiver)
                return false
            }
            let tally = try await livingStoreCall("counting the folded alerts") {
                try await store.foldTally(receiver: receiver)
            }
            let (n, text) = summaryNotification(
                tally, receiver: receiver, budget: budget, stormStart: window.stormStart ?? now, now: now)
            let version = window.version
            func shown(posted id: String?) async throws {
                try await livingStoreCall("recording the summary") {
                    try await store.updateBudget(receiver: receiver, now: self.clock()) {
                        $0.summaryShown(version: version, text: text, posted: id, now: now)
                    }
                }
            }
            switch step {
            case .none:
                return false
            case .edit where text == window.shownText:
                try await shown(posted: nil)
                return false
            case .post:
                if let rate = notifier.rateLimit { try await pacer.wait(receiver: receiver, rate: rate, clock: clock) }
                let id = try await notifier.post(n)
                step = .none
                try await shown(posted: id)
            case .edit(let id):
                if let rate = notifier.rateLimit { try await pacer.wait(receiver: receiver, rate: rate, clock: clock) }
                do {
                    try await notifier.edit(n, messageID: id)
                } catch let error as DeliveryError where error.isMessageGone {
                    // Deleted in the channel: the next refresh posts a new one.
                    try await livingStoreCall("recording the summary") {
                        try await store.updateBudget(receiver: receiver, now: now) { (w: inout BudgetWindow) in
                            if w.summaryID == id { (w.summaryID, w.summaryPostedAt) = (nil, nil) }
                        }
                    }
                    throw error
                }
                try await shown(posted: nil)
            }
            budgetSummaries.succeeded(receiver)
            return true
        } catch {
            let wait = max(
                settings.backoff.delay(attempt: budgetSummaries.failures(receiver) + 1, random: random()),
                (error as? DeliveryError)?.retryAfter ?? 0)
            let retry = budgetSummaries.failed(
                receiver, now: now, retryAt: now.addingClamped(Int64(wait * 1000)),
                giveUpAfter: settings.giveUpAfter.multipliedClamped(by: 1000))
            if step == .post {
                // Not posted (or not recorded): another sender may post it.
                _ = try? await store.updateBudget(receiver: receiver, now: now) { $0.postFailed() }
            }
            let outcome = retry ? "tried again later" : "given up after give_up_after"
            logger.warning(
                "storm summary not sent; \(outcome)",
                metadata: ["receiver": "\(receiver)", "error": "\(ErrorWords.describe(error))"])
            return false
        }
    }

    /// Tries again the storm summaries whose last update failed and whose retry is due (`run` and
    /// `dispatchOnce` look at every turn; the look is in memory, no store call).
    func retryDueSummaries(now: Int64) async {
        for receiver in budgetSummaries.takeDue(now: now) { await retrySummary(receiver) }
    }

    /// Tries receiver's summary again; a receiver no longer configured with a budget is dropped.
    func retrySummary(_ receiver: String) async {
        guard let budget = settings.budgets[receiver], let notifier = notifiers[receiver] else {
            budgetSummaries.succeeded(receiver)
            return
        }
        await refreshSummary(receiver: receiver, budget: budget, notifier: notifier)
    }

    /// The summary as a notification of one alert Klaxon raises about itself, so every preset
    /// renders (and escapes) it as it does any alert; and its words.
    func summaryNotification(
        _ tally: FoldTally, receiver: String, budget: Budget, stormStart: Int64, now: Int64
    ) -> (AlertNotification, String) {
        let summary = FoldSummary(tally, receiver: receiver, budget: budget, externalURL: settings.externalURL)
        let text = summary.text
        let t = Transition(
            rule: "storm-summary", kind: "system", station: "*", metric: "budget", state: .firing, at: now / 1000,
            value: nil, severity: .warning, labels: ["receiver": receiver], summary: text,
            explanation: "\(receiver) is over its budget of \(budget.description)",
            place: "Storm summary", headline: summary.headline)
        let n = AlertNotification(
            key: "storm-\(receiver)-\(stormStart)", receiver: receiver,
            alerts: [NotifiedAlert(transition: t, message: text, id: 0)], externalURL: settings.externalURL)
        return (n, text)
    }

    /// Whether the notification edits a living message that is open (an edit is not a new message).
    func editsOpenLivingMessage(_ batch: OutboxBatch, alerts: [NotifiedAlert], notifier: any Notifier) async throws
        -> Bool
    {
        guard notifier.editsMessages, batch.rows.contains(where: { $0.purpose != "repeat" }) else { return false }
        let n = AlertNotification(
            key: batch.key, receiver: batch.receiver, alerts: alerts, isDigest: batch.key.hasPrefix("digest-"),
            groupBy: routing.route(batch.route).groupBy)
        guard let thread = Self.livingThread(n) else { return false }
        let store = self.store
        let receiver = batch.receiver
        let found = try await livingStoreCall("reading a living message") {
            try await store.livingMessage(receiver: receiver, thread: thread)
        }
        guard let found else { return false }
        return !found.closed || found.batch == batch.key
    }

    /// The alert as the summary keeps it.
    static func folded(_ a: NotifiedAlert, at now: Int64) -> FoldedAlert {
        let t = a.transition
        return FoldedAlert(
            alert: OutboxRecord.alertKey(t), episode: a.id, subject: SubjectPage.of(metric: t.metric).rawValue,
            station: t.station, place: WebhookPayloads.place(t), at: now)
    }
}

/// One summary update at a time per receiver (in this process), and the summaries whose last
/// update failed, to be tried again.
final class BudgetSummaries: Sendable {
    private let waiting = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    /// A summary whose update failed: since when (ms), how many times, and when to try again (nil:
    /// being tried now).
    struct Retry {
        var since: Int64
        var failures: Int
        var at: Int64?
    }
    private let retries = Mutex<[String: Retry]>([:])

    /// How many times in a row the receiver's summary failed.
    func failures(_ receiver: String) -> Int { retries.withLock { $0[receiver]?.failures ?? 0 } }

    /// Notes a failed update, to be tried again at `retryAt` (ms); false when it has failed for
    /// `giveUpAfter` (ms) since the first failure: it is given up.
    func failed(_ receiver: String, now: Int64, retryAt: Int64, giveUpAfter: Int64) -> Bool {
        retries.withLock { r in
            var entry = r[receiver] ?? Retry(since: now, failures: 0, at: nil)
            entry.failures += 1
            guard now - entry.since < giveUpAfter else {
                r[receiver] = nil
                return false
            }
            entry.at = retryAt
            r[receiver] = entry
            return true
        }
    }

    /// The summary is up to date: nothing to try again.
    func succeeded(_ receiver: String) { _ = retries.withLock { $0.removeValue(forKey: receiver) } }

    /// The receivers whose retry is due at `now` (ms), marked as being tried.
    func takeDue(now: Int64) -> [String] {
        retries.withLock { r in
            let due = r.filter { $0.value.at.map { $0 <= now } ?? false }.keys.sorted()
            for k in due { r[k]?.at = nil }
            return due
        }
    }

    func serially(_ receiver: String, _ body: @Sendable () async -> Void) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = waiting.withLock { w -> Bool in
                if w[receiver] == nil {
                    w[receiver] = []
                    return true
                }
                w[receiver]!.append(c)
                return false
            }
            if now { c.resume() }
        }
        await body()
        let next = waiting.withLock { w -> CheckedContinuation<Void, Never>? in
            guard var queue = w[receiver], !queue.isEmpty else {
                w[receiver] = nil
                return nil
            }
            let first = queue.removeFirst()
            w[receiver] = queue
            return first
        }
        next?.resume()
    }
}
