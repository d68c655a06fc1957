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

    public var name: String {
        switch self {
        case .webhook(let w): w.name
        case .email(let e): e.name
        case .stdout(let s): s.name
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

        /// Requests in flight to one webhook unless its `connections:` says otherwise: enough to keep
        /// a fast receiver busy from one process, few enough not to flood a slow one.
        public static let defaultConnections = 32

        public init(
            name: String, url: Secret, preset: Preset = .generic, template: String? = nil,
            headers: [String: String] = [:],
            hmacSecret: Secret? = nil, timeout: Double = 10, rateLimit: Double? = nil,
            connections: Int = defaultConnections, edit: Bool = true
        ) {
            self.edit = edit
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
        }
    }

    /// The connections it may hold open at once (for the open-files reserve).
    public var connections: Int {
        switch self {
        case .webhook(let w): w.connections
        case .email(let e): e.connections
        case .stdout: 1
        }
    }
}
