import Foundation
import KlaxonCore

/// A secret value (a webhook URL, a password, an HMAC key). It prints as `<secret>` everywhere, so it
/// cannot leak through logs, errors or `check` output by accident.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "<secret>" }
    public var debugDescription: String { "<secret>" }
}

/// A configured receiver: where notifications go.
public enum Receiver: Sendable, Hashable {
    case webhook(Webhook)
    case email(Email)
    case stdout(Stdout)
    case telegram(Telegram)
    case matrix(Matrix)
    case ntfy(Ntfy)

    public var name: String {
        switch self {
        case .webhook(let w): w.name
        case .email(let e): e.name
        case .stdout(let s): s.name
        case .telegram(let t): t.name
        case .matrix(let m): m.name
        case .ntfy(let n): n.name
        }
    }

    public struct Webhook: Sendable, Hashable {
        public enum Preset: String, Sendable, CaseIterable {
            case slack, mattermost, msteams, discord, googlechat, generic
        }

        public var name: String
        public var url: Secret
        public var preset: Preset
        /// A mustache body replacing the preset's.
        public var template: String?
        public var headers: [String: String]
        public var hmacSecret: Secret?
        /// Seconds.
        public var timeout: Double
        /// Messages per second at most (nil: no limit).
        public var rateLimit: Double?
        /// Requests in flight at once, at most.
        public var connections: Int
        /// Living messages (`edit:`): where the platform can edit a message (Discord), one message per
        /// episode or group, edited in place; false sends a new message every time, as before.
        public var edit: Bool
        /// A bot token (`bot_token`): the receiver posts through the platform's API instead of an
        /// incoming webhook (Slack's app mode, `chat.postMessage`/`chat.update`; a Mattermost bot,
        /// `/api/v4/posts`), and `url` is the API's base URL. Nil: an incoming webhook, as before.
        public var botToken: Secret?
        /// The channel the bot posts to (`channel`: a Slack channel id, a Mattermost channel id).
        public var channel: String?
        /// Slack app mode (`thread_replies`): each change is also replied in the message's thread.
        public var threadReplies: Bool

        /// Requests in flight to one webhook unless its `connections:` says otherwise: enough to keep
        /// a fast receiver busy from one process, few enough not to flood a slow one.
        public static let defaultConnections = 32

        public init(
            name: String, url: Secret, preset: Preset = .generic, template: String? = nil,
            headers: [String: String] = [:],
            hmacSecret: Secret? = nil, timeout: Double = 10, rateLimit: Double? = nil,
            connections: Int = defaultConnections, edit: Bool = true, botToken: Secret? = nil, channel: String? = nil,
            threadReplies: Bool = false
        ) {
            self.edit = edit
            self.botToken = botToken
            self.channel = channel
            self.threadReplies = threadReplies
            self.connections = connections
            self.name = name
            self.url = url
            self.preset = preset
            self.template = template
            self.headers = headers
            self.hmacSecret = hmacSecret
            self.timeout = timeout
            self.rateLimit = rateLimit
        }
    }

    public struct Email: Sendable, Hashable {
        public enum StartTLS: String, Sendable, CaseIterable {
            case required, opportunistic, off
        }

        public var name: String
        /// `smtp://host:port` or `smtps://host:port`.
        public var smtpURL: String
        public var starttls: StartTLS
        public var username: String?
        public var password: Secret?
        public var from: String
        public var to: [String]
        public var subject: String?
        public var text: String?
        public var html: String?
        /// Seconds.
        public var timeout: Double
        public var rateLimit: Double?
        /// SMTP sessions at once, at most.
        public var connections: Int

        /// SMTP sessions at once unless `connections:` says otherwise: mail relays limit clients.
        public static let defaultConnections = 4

        public init(
            name: String, smtpURL: String, starttls: StartTLS = .opportunistic, username: String? = nil,
            password: Secret? = nil, from: String, to: [String], subject: String? = nil, text: String? = nil,
            html: String? = nil, timeout: Double = 30, rateLimit: Double? = nil, connections: Int = defaultConnections
        ) {
            self.connections = connections
            self.name = name
            self.smtpURL = smtpURL
            self.starttls = starttls
            self.username = username
            self.password = password
            self.from = from
            self.to = to
            self.subject = subject
            self.text = text
            self.html = html
            self.timeout = timeout
            self.rateLimit = rateLimit
        }
    }

    /// A Telegram chat, through the Bot API (`type: telegram`).
    public struct Telegram: Sendable, Hashable {
        public var name: String
        /// The bot's token (`bot_token`): it goes in every request's path, so the path is never shown.
        public var token: Secret
        /// The chat (`chat_id`): its integer id, or `@channelusername`.
        public var chatID: String
        /// The Bot API's base URL (`url`): Telegram's, or a local Bot API server's.
        public var url: String
        /// Seconds.
        public var timeout: Double
        public var rateLimit: Double?
        public var connections: Int
        /// Living messages (`edit:`): one message per episode or group, edited in place.
        public var edit: Bool
        /// Ack and Silence 1h inline buttons on a firing alert (`buttons:`; with `chat.telegram`).
        public var buttons: Bool

        public static let defaultConnections = 4

        public init(
            name: String, token: Secret, chatID: String, url: String = TelegramBotAPI.defaultBase, timeout: Double = 10,
            rateLimit: Double? = nil, connections: Int = defaultConnections, edit: Bool = true, buttons: Bool = false
        ) {
            self.name = name
            self.token = token
            self.chatID = chatID
            self.url = url
            self.timeout = timeout
            self.rateLimit = rateLimit
            self.connections = connections
            self.edit = edit
            self.buttons = buttons
        }
    }

    /// A Matrix room, through the client-server API (`type: matrix`).
    public struct Matrix: Sendable, Hashable {
        public var name: String
        /// The homeserver's base URL (`url`: `https://matrix.example.org`).
        public var url: String
        /// The access token (`access_token`).
        public var token: Secret
        /// The room (`room_id`: `!opaque:server`).
        public var roomID: String
        public var timeout: Double
        public var rateLimit: Double?
        public var connections: Int
        /// Living messages (`edit:`): one message per episode or group, edited with `m.replace`.
        public var edit: Bool

        public static let defaultConnections = 4

        public init(
            name: String, url: String, token: Secret, roomID: String, timeout: Double = 10, rateLimit: Double? = nil,
            connections: Int = defaultConnections, edit: Bool = true
        ) {
            self.name = name
            self.url = url
            self.token = token
            self.roomID = roomID
            self.timeout = timeout
            self.rateLimit = rateLimit
            self.connections = connections
            self.edit = edit
        }
    }

    /// An ntfy topic (`type: ntfy`).
    public struct Ntfy: Sendable, Hashable {
        public var name: String
        /// The server's base URL (`url`: `https://ntfy.sh` unless given).
        public var url: String
        public var topic: String
        /// An access token (`token`), sent as `Authorization: Bearer …`; nil for an open topic.
        public var token: Secret?
        public var timeout: Double
        public var rateLimit: Double?
        public var connections: Int
        /// Living messages (`edit:`): one notification per episode or group, updated by sequence id.
        public var edit: Bool

        public static let defaultBase = "https://ntfy.sh"
        public static let defaultConnections = 4

        public init(
            name: String, url: String = defaultBase, topic: String, token: Secret? = nil, timeout: Double = 10,
            rateLimit: Double? = nil, connections: Int = defaultConnections, edit: Bool = true
        ) {
            self.name = name
            self.url = url
            self.topic = topic
            self.token = token
            self.timeout = timeout
            self.rateLimit = rateLimit
            self.connections = connections
            self.edit = edit
        }
    }

    public struct Stdout: Sendable, Hashable {
        public var name: String
        public var format: StdoutNotifier.Format
        public init(name: String, format: StdoutNotifier.Format = .text) {
            self.name = name
            self.format = format
        }
    }
}

/// Redacts a URL for logs and errors: scheme and host only (`https://hooks.slack.com/…`).
public func redactURL(_ url: String) -> String {
    guard let c = URLComponents(string: url), let scheme = c.scheme, let host = c.host else { return "<url>" }
    return "\(scheme)://\(host)\(c.port.map { ":\($0)" } ?? "")/…"
}

extension Receiver {
    /// The notifier that delivers to this receiver: a new receiver type is its case here, its
    /// notifier, and its keys in the config reader. `groupBy`: the labels its route groups by (the
    /// webhook payloads list them); `smtpCAFile`: a private CA email trusts (tests, private relays).
    public func notifier(groupBy: [String], smtpCAFile: String?, charts: ChartSource? = nil) throws -> any Notifier {
        switch self {
        case .stdout(let s): StdoutNotifier(format: s.format)
        case .webhook(let w): try WebhookNotifier(config: w, groupBy: groupBy)
        case .email(let e): try EmailNotifier(config: e, caFile: smtpCAFile, charts: charts)
        case .telegram(let t): TelegramNotifier(config: t)
        case .matrix(let m): MatrixNotifier(config: m)
        case .ntfy(let n): NtfyNotifier(config: n)
        }
    }

    /// The connections it may hold open at once (for the open-files reserve).
    public var connections: Int {
        switch self {
        case .webhook(let w): w.connections
        case .email(let e): e.connections
        case .telegram(let t): t.connections
        case .matrix(let m): m.connections
        case .ntfy(let n): n.connections
        case .stdout: 1
        }
    }
}
