import Crypto
import Foundation
import KlaxonCore

/// Threads through a Google Chat incoming webhook. A webhook cannot edit what it posted, but it can
/// reply in a thread: the URL gets `messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD` and the
/// body `"thread": {"threadKey": KEY}` (Google's webhook guide, "Start or reply to a message
/// thread"), so the first notification of an episode starts a thread and every later one (level
/// changes, the resolve) is a reply in it. The key is the episode's (or, where the route groups
/// alerts, the group's), so every notification of one episode lands in one thread.
extension WebhookNotifier {
    /// The query parameter that makes a webhook message reply to the thread its key names.
    static let googleChatReplyOption = "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"

    /// Whether this receiver threads: Google Chat's preset, unless `edit: false`.
    var threadsMessages: Bool { config.edit && config.preset == .googlechat }

    /// The thread key of a notification: `klaxon-episode-ID-START` for an episode (its start keeps
    /// a new database's episode 1 out of an old database's thread), `klaxon-group-HASH` for a group
    /// (its key holds label values: hashed, so the key is short and plain). Nil for a quiet-hours
    /// digest or a message of no logged alert (it starts a thread of its own).
    static func googleChatThreadKey(_ n: AlertNotification) -> String? {
        guard let thread = Dispatcher.livingThread(n), let first = n.alerts.first else { return nil }
        if thread.hasPrefix("group:") {
            let digest = SHA256.hash(data: Data(thread.utf8)).prefix(16).map { String(format: "%02x", $0) }.joined()
            return "klaxon-group-" + digest
        }
        return "klaxon-episode-\(first.id)-\(first.startedAt)"
    }

    /// The preset's body with the thread's key, when it threads.
    func threaded(_ object: [String: JSONValue], _ n: AlertNotification) -> [String: JSONValue] {
        guard threadsMessages, let key = Self.googleChatThreadKey(n) else { return object }
        var body = object
        body["thread"] = .object(["threadKey": .string(key)])
        return body
    }

    /// The webhook URL with `messageReplyOption` set (the URL's `key` and `token` kept; a
    /// deprecated `threadKey` parameter dropped, so the body's key is the one that counts). Nil when
    /// the receiver does not thread or the URL does not parse.
    func googleChatURL() -> URL? {
        guard threadsMessages, var c = URLComponents(string: config.url.value) else { return nil }
        // As written: the webhook's `token` is percent-encoded (`…%3D`) and must reach Google so.
        var items = (c.percentEncodedQueryItems ?? []).filter {
            $0.name != "messageReplyOption" && $0.name != "threadKey"
        }
        items.append(URLQueryItem(name: "messageReplyOption", value: Self.googleChatReplyOption))
        c.percentEncodedQueryItems = items
        return c.url
    }
}
