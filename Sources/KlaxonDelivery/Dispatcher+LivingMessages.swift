import Foundation
import KlaxonCore
import KlaxonStore
import Logging

/// The send stage for a receiver that edits (`Notifier.editsMessages`): one living message per
/// episode, or per group where the receiver's route groups several alerts together. The first
/// notification posts it; every later one edits it, showing the timeline so far. The message's
/// platform id and timeline are kept in the store (`LivingMessageStore`), so a restart or the other
/// daemon of an HA pair edits the same message. An edit is a send like any other: paced by the
/// receiver's `rate_limit`, retried with backoff (or as a 429's `Retry-After` asks), under the
/// batch's idempotency key; a retry that finds its own earlier edit recorded edits again.
extension Dispatcher {
    /// The most alerts of a group whose acks are looked up for its timeline (one read each).
    static let livingAckLookups = 10
    /// The most characters of who acked kept in a timeline entry.
    static let livingNameLimit = 80

    func sendLiving(_ n: AlertNotification, through notifier: any Notifier) async throws {
        guard let thread = Self.livingThread(n) else {
            // A quiet-hours digest, or a message of no logged alert (a test): sent as before.
            try await notifier.send(n)
            return
        }
        let store = self.store
        let receiver = n.receiver
        let found = try await livingStoreCall("reading a living message") {
            try await store.livingMessage(receiver: receiver, thread: thread)
        }
        // A thread that ended (everything in it resolved) is not edited again, except by a resend of
        // the batch that ended it; a group that fires again gets a new message.
        let current = found.flatMap { !$0.closed || $0.batch == n.key ? $0 : nil }
        let grouped = thread.hasPrefix("group:")
        var entries = n.alerts.flatMap { Self.timeline(of: $0, grouped: grouped) }
        for a in n.alerts.prefix(Self.livingAckLookups) where a.id > 0 && !a.transition.isEvent {
            let key = a.transition.alertKey
            let episode = a.id
            if let ack = try await livingStoreCall(
                "reading an ack", { try await store.episodeAck(alert: key, episode: episode) })
            {
                let who = String(ack.by.prefix(Self.livingNameLimit))
                entries.append(
                    TimelineEntry(at: ack.at, text: (grouped ? Self.place(a) + ": " : "") + "acked by \(who)"))
            }
        }
        var timeline = TimelineEntry.merge(current?.timeline ?? [], entries)
        var living = n
        living.living = LivingView(timeline: timeline)
        var messageID: String
        if let current {
            do {
                try await notifier.edit(living, messageID: current.messageID)
                messageID = current.messageID
            } catch let error as DeliveryError where error.isMessageGone {
                // Deleted in the channel, or a reference from a store restored from an older backup:
                // a new message takes its place and says so.
                logger.notice(
                    "living message gone; posting a new one in its place",
                    metadata: ["receiver": "\(receiver)", "thread": "\(thread)", "error": "\(error.message)"])
                // Told in the timeline, so every later edit still says so.
                timeline = TimelineEntry.merge(
                    timeline,
                    [TimelineEntry(at: clock() / 1000, text: "posted anew: message \(current.messageID) was deleted")])
                living.living = LivingView(timeline: timeline)
                messageID = try await notifier.post(living)
            }
        } else {
            messageID = try await notifier.post(living)
        }
        guard !messageID.isEmpty else {
            logger.warning(
                "living message posted without an id in the answer: the next notification posts a new one",
                metadata: ["receiver": "\(receiver)", "thread": "\(thread)"])
            return
        }
        let now = clock()
        let saved = LivingMessage(
            receiver: receiver, thread: thread, messageID: messageID, timeline: timeline, batch: n.key,
            closed: TimelineEntry.ended(timeline),
            createdAt: current.flatMap { $0.messageID == messageID ? $0.createdAt : nil } ?? now, updatedAt: now)
        do {
            try await livingStoreCall("recording a living message") { try await store.saveLivingMessage(saved) }
        } catch {
            // Sent all the same: recording the send matters more than a reference that would be
            // missed once (the next notification then posts a new message).
            logger.warning(
                "living message not recorded: the next notification of it posts a new message",
                metadata: [
                    "receiver": "\(receiver)", "thread": "\(thread)", "error": "\(ErrorWords.describe(error))",
                ])
        }
    }

    /// A store call of the send stage, with the `storeDeadline`; a failure is a retryable delivery
    /// error (the notification goes out again later), not a send's.
    func livingStoreCall<T: Sendable>(_ what: String, _ call: @escaping @Sendable () async throws -> T) async throws
        -> T
    {
        do {
            return try await bounded(what, call)
        } catch let error as CancellationError {
            throw error
        } catch {
            throw DeliveryError(
                kind: .connection, retryable: true, message: "\(what): \(ErrorWords.describe(error))")
        }
    }

    /// The thread a notification's message belongs to: its alert's episode, or its group where the
    /// route groups several alerts together (`group_by` without one of rule, station, metric); nil
    /// for a quiet-hours digest or an alert never logged.
    static func livingThread(_ n: AlertNotification) -> String? {
        guard !n.isDigest, let first = n.alerts.first, first.id > 0 else { return nil }
        if let by = n.groupBy, !["rule", "station", "metric"].allSatisfy(by.contains) {
            return LivingMessage.thread(group: n.groupKey(by))
        }
        return LivingMessage.thread(episode: first.id)
    }

    /// What an alert's notification adds to the timeline: the states folded into it, then its own
    /// (`rose to moderate`, `fell to minor`, `resolved`); in a group's message, each after the place.
    static func timeline(of a: NotifiedAlert, grouped: Bool) -> [TimelineEntry] {
        let t = a.transition
        let prefix = grouped ? place(a) + ": " : ""
        let alert = OutboxRecord.alertKey(t)
        var out: [TimelineEntry] = []
        for step in a.path where step.episode == nil || step.episode == a.id {
            out.append(
                TimelineEntry(
                    at: step.at, text: prefix + words(step.state, level: step.level, headline: nil), alert: alert,
                    state: step.state))
        }
        out.append(
            TimelineEntry(
                at: t.at, text: prefix + words(t.state, level: t.level, headline: t.headline), alert: alert,
                state: t.state))
        return out
    }

    /// `firing at action`, `rose to moderate` (`fell to minor` when the headline says it went down),
    /// `changed to low`, `resolved`.
    static func words(_ state: TransitionState, level: String?, headline: String?) -> String {
        let level = level.map { String($0.prefix(livingNameLimit)) }
        switch state {
        case .resolved: return "resolved"
        case .firing: return level.map { "firing at \($0)" } ?? "firing"
        case .changed:
            guard let level else { return "changed" }
            if let h = headline {
                if h.contains(", down from ") || h.contains(", better than ") { return "fell to \(level)" }
                if h.contains(", up from ") || h.contains(", worse than ") { return "rose to \(level)" }
            }
            return "changed to \(level)"
        }
    }

    /// The alert's place in a group's timeline (bounded).
    static func place(_ a: NotifiedAlert) -> String {
        String(WebhookPayloads.place(a.transition).prefix(livingNameLimit))
    }
}
