import KlaxonCore
import KlaxonStore

/// What a receiver that edits would be sent, for `dry-run --render`: which notification posts its
/// thread's message and which edits it, with the timeline each would show. The dispatcher's send
/// stage (`Dispatcher.sendLiving`) without the store and the platform: the same threads
/// (`Dispatcher.livingThread`), the same timeline entries, a thread closed when everything in it
/// has resolved. Acks are not replayed, so a preview's timeline has none.
public struct LivingPreview: Sendable {
    struct Thread: Sendable {
        var messageID: String
        var timeline: [TimelineEntry]
        var closed: Bool
    }

    var threads: [String: Thread] = [:]

    public init() {}

    /// `n` as it would go out (its `living` view set), and the message it edits: nil when it posts a
    /// new message, which from then on is `messageID`. A notification of no thread (a quiet-hours
    /// digest, a test message) posts and is kept nowhere.
    public mutating func next(_ n: AlertNotification, messageID: String) -> (
        notification: AlertNotification, edits: String?
    ) {
        guard let thread = Dispatcher.livingThread(n) else { return (n, nil) }
        let current = threads[thread].flatMap { $0.closed ? nil : $0 }
        let grouped = thread.hasPrefix("group:")
        let timeline = TimelineEntry.merge(
            current?.timeline ?? [], n.alerts.flatMap { Dispatcher.timeline(of: $0, grouped: grouped) })
        var shown = n
        shown.living = LivingView(timeline: timeline)
        let id = current?.messageID ?? messageID
        threads[thread] = Thread(messageID: id, timeline: timeline, closed: TimelineEntry.ended(timeline))
        return (shown, current?.messageID)
    }
}
