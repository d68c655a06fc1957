import Foundation
import KlaxonCore
import KlaxonStore

/// One alert inside a notification.
public struct NotifiedAlert: Sendable {
    public var transition: Transition
    /// The rendered message (rule template or summary).
    public var message: String
    /// The alert's id: its episode's (the id of the firing that opened it), the same in every message
    /// of the episode; what `ack` takes. 0 for an alert never logged (a test message).
    public var id: Int64
    /// When the episode began (seconds): `startsAt`, "firing since".
    public var startedAt: Int64
    /// The states folded into this notification since the receiver last heard of the alert, oldest
    /// first ("rose to moderate via minor").
    public var path: [PathStep]
    /// The data is older than the route's `notify_max_age`: a catch-up, not news as it happens.
    public var late: Bool
    /// A reminder (`repeat_interval`): the receiver heard this already and nothing changed since.
    public var reminder: Bool = false
    /// Sent to a route's `escalate_to` receiver, which hears of the alert for the first time.
    public var escalated: Bool = false

    public init(
        transition: Transition, message: String, id: Int64, startedAt: Int64? = nil, path: [PathStep] = [],
        late: Bool = false
    ) {
        self.transition = transition
        self.message = message
        self.id = id
        self.startedAt = startedAt ?? transition.at
        self.path = path
        self.late = late
    }

    /// The notification of a logged transition.
    public init(record: TransitionRecord, path: [PathStep] = [], late: Bool = false) {
        self.init(
            transition: record.transition, message: record.message, id: record.episodeID,
            startedAt: record.startedAt, path: path, late: late)
    }

    /// The levels (or states) of this episode since the receiver last heard of it, the current one
    /// last: where it was (for an episode it had heard of), then each it went through
    /// (`["action", "minor", "moderate"]`).
    public var route: [String] {
        let episode = id
        let steps = path.filter { $0.episode == nil || $0.episode == episode }
        var names: [String] = []
        if let first = steps.first, first.state != .firing, let from = first.from { names.append(from) }
        names += steps.map { $0.level ?? $0.state.rawValue }
        names.append(transition.level ?? transition.fromLevel ?? transition.state.rawValue)
        var out: [String] = []
        for n in names where out.last != n { out.append(n) }
        return out
    }

    /// The alert as its receiver learns it: firing, for an episode it first hears of here (its
    /// firing was folded in); a change from the level it last heard; and the levels in between
    /// (`via`). What the headlines of every preset and stdout show.
    public var presented: (transition: Transition, via: [String]) {
        var t = transition
        guard !path.isEmpty, t.state != .resolved else { return (t, []) }
        let route = self.route
        if isNewToReceiver {
            t.state = .firing
            t.fromLevel = nil
            return (t, Array(route.dropLast()))
        }
        if t.state == .changed, route.count > 1 {
            t.fromLevel = route.first
            return (t, Array(route.dropFirst().dropLast()))
        }
        return (t, [])
    }

    /// Whether the receiver hears of this episode for the first time in this notification (its
    /// firing was folded in): it is presented as firing, whatever the last transition was.
    public var isNewToReceiver: Bool {
        transition.state == .firing || path.contains { $0.state == .firing && $0.episode == id }
    }
}

/// One message to one receiver: one alert, or a group of them (grouping, quiet-hours digest).
public struct AlertNotification: Sendable {
    /// The idempotency key: stable across retries and crashes. Sent as `Idempotency-Key` and in the
    /// email `Message-ID`.
    public var key: String
    public var receiver: String
    public var alerts: [NotifiedAlert]
    /// 1 on the first attempt.
    public var attempt: Int
    /// A digest of notifications held back by quiet hours.
    public var isDigest: Bool
    /// The base URL people reach the status site at (`external_url`; "" when not set): links.
    public var externalURL: String
    /// The label names the notification's route groups by (nil: the notifier's own).
    public var groupBy: [String]?
    /// The route's key as Alertmanager prints it (`{}` for the root, `{}/{team="x"}` below it).
    public var routeKey: String
    /// Signs the context of Mattermost's Ack and Silence buttons (with `chat.mattermost` and
    /// `external_url`); nil: Mattermost messages carry no buttons.
    public var chatActions: ChatActionSigner?
    /// For a receiver that edits (`Notifier.editsMessages`): the timeline its one message shows, and
    /// the message it replaces; nil otherwise.
    public var living: LivingView?

    public init(
        key: String, receiver: String, alerts: [NotifiedAlert], attempt: Int = 1, isDigest: Bool = false,
        externalURL: String = "", groupBy: [String]? = nil, routeKey: String = "{}",
        chatActions: ChatActionSigner? = nil, living: LivingView? = nil
    ) {
        self.living = living
        self.key = key
        self.receiver = receiver
        self.alerts = alerts
        self.attempt = attempt
        self.isDigest = isDigest
        self.externalURL = externalURL
        self.groupBy = groupBy
        self.routeKey = routeKey
        self.chatActions = chatActions
    }

    /// The page of an alert on the status site, if `external_url` is set.
    public func link(_ a: NotifiedAlert) -> String? {
        guard !externalURL.isEmpty, a.id > 0 else { return nil }
        return Self.trimmed(externalURL) + "/alerts/\(a.id)"
    }

    /// `external_url` without a trailing `/`.
    static func trimmed(_ url: String) -> String {
        var u = url
        while u.hasSuffix("/") { u.removeLast() }
        return u
    }

    /// Why it goes out (`notification_reason`): Alertmanager's words, from its alerts.
    public var reason: NotificationReason { NotificationReason.of(alerts) }

    /// `firing` if any alert in it is firing or changed, else `resolved` (Alertmanager's rule).
    public var status: String {
        alerts.contains { $0.transition.state != .resolved } ? "firing" : "resolved"
    }

    /// The group's labels, as Alertmanager builds them: the values the first alert has for the
    /// route's `group_by` names (`rule` is the alert's name, `alertname`).
    public func groupLabels(_ fallback: [String]) -> [(key: String, value: String)] {
        guard let first = alerts.first?.transition else { return [] }
        return AlertIdentity.groupLabels(of: first, by: groupBy ?? fallback)
    }

    /// Alertmanager's `groupKey`: the route's key, then the group's labels with Go-quoted values
    /// (`{}:{alertname="FloodStage", station="01646500"}`).
    public func groupKey(_ fallback: [String]) -> String { groupKey(labels: groupLabels(fallback)) }

    /// `groupKey` of labels already worked out (`groupLabels`).
    public func groupKey(labels: [(key: String, value: String)]) -> String {
        routeKey + ":{" + labels.map { "\($0.key)=\(Self.goQuoted($0.value))" }.joined(separator: ", ") + "}"
    }

    /// A string as Go's `%q` writes it for printable text: quotes, with `"` and `\` escaped and
    /// control characters as escapes (`Escape.goQuoted`).
    static func goQuoted(_ s: String) -> String { Escape.goQuoted(s) }
}

/// Why a delivery failed, and whether trying again may help. Cases can grow without breaking callers.
public struct DeliveryError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        case connection, timeout
        case httpStatus(Int)
        case smtp(Int)
        case rendering, configuration
        /// A platform's Web API refused the call with its own error code in a 2xx answer (Slack's
        /// `{"ok": false, "error": "invalid_auth"}`, Telegram's `description`).
        case platform(String)
    }

    public let kind: Kind
    public let retryable: Bool
    /// Seconds the far end asked us to wait (`Retry-After`), already capped.
    public let retryAfter: Double?
    /// Safe to log: never holds a secret or a full webhook URL.
    public let message: String

    /// The platform said the message to edit is gone (Slack's `message_not_found`).
    let gone: Bool

    public init(kind: Kind, retryable: Bool, retryAfter: Double? = nil, message: String, messageGone: Bool = false) {
        self.kind = kind
        self.retryable = retryable
        self.retryAfter = retryAfter
        self.message = message
        self.gone = messageGone
    }

    public var description: String { message }

    /// An edit failed because the platform no longer has the message (HTTP 404 or 410: Discord's
    /// "Unknown Message", code 10008, Mattermost's missing post; Slack's `message_not_found`): a new
    /// message takes its place.
    public var isMessageGone: Bool { gone || kind == .httpStatus(404) || kind == .httpStatus(410) }

    /// Why it failed, as `klaxon_notifications_failed_total`'s `reason` label (see `DeliveryFailureReason`).
    public var reason: String { failureReason.rawValue }

    public var failureReason: DeliveryFailureReason {
        switch kind {
        case .httpStatus(let status) where (400..<500).contains(status): .clientError
        case .httpStatus(let status) where (500..<600).contains(status): .serverError
        case .smtp(let code) where (400..<500).contains(code): .serverError
        case .smtp(let code) where (500..<600).contains(code): .clientError
        case .timeout: .timeout
        case .connection: .connection
        case .platform: retryable ? .serverError : .clientError
        default: .other
        }
    }

    /// HTTP statuses: 408, 429 and 5xx may succeed later; other 4xx will not.
    public static func http(_ status: Int, retryAfter: Double?, receiver: String) -> DeliveryError {
        let retry = status == 408 || status == 429 || (500...599).contains(status)
        return DeliveryError(
            kind: .httpStatus(status), retryable: retry, retryAfter: retryAfter,
            message: "receiver \(receiver): HTTP \(status)\(retry ? "" : " (not retried)")")
    }
}

/// What a living message shows beyond the notification (`AlertNotification.living`).
public struct LivingView: Sendable, Equatable {
    /// The episode's (or group's) story so far, oldest first.
    public var timeline: [TimelineEntry]

    public init(timeline: [TimelineEntry]) {
        self.timeline = timeline
    }

    /// `rose to action 14:00 · rose to minor 14:05 · acked by ana 14:09 · resolved 16:40` (UTC):
    /// the first entry and as many of the newest as fit in `limit` characters.
    public func text(limit: Int = 1000) -> String {
        let parts = timeline.map { "\($0.text) \(Timestamp.format($0.at).dropFirst(11).prefix(5))" }
        var text = parts.joined(separator: " · ")
        guard text.count > limit, parts.count > 1 else { return text }
        var kept: [String] = []
        var size = parts[0].count + 5
        for p in parts.dropFirst().reversed() {
            guard size + p.count + 3 <= limit else { break }
            kept.insert(p, at: 0)
            size += p.count + 3
        }
        text = ([parts[0], "…"] + kept).joined(separator: " · ")
        return text
    }
}

/// A delivery adapter (webhook preset, email, stdout). One file per adapter, behind this protocol.
public protocol Notifier: Sendable {
    /// The exact payload the receiver would get: the JSON body, or the full email source.
    func render(_ notification: AlertNotification) throws -> String
    /// Sends; throws `DeliveryError` saying whether a retry may help.
    func send(_ notification: AlertNotification) async throws
    /// Messages per second at most (nil: no limit).
    var rateLimit: Double? { get }
    /// Sends to this receiver in flight at once, at most (connections in flight).
    var connections: Int { get }
    /// What kind of integration it is (the `integration` label of the delivery metrics, as
    /// Alertmanager's): `webhook`, `slack`, `msteams`, `email`, `stdout`, ….
    var integration: String { get }
    /// Whether it keeps one living message per episode (or group) and edits it: the dispatcher then
    /// sends with `post` and `edit` instead of `send`.
    var editsMessages: Bool { get }
    /// Posts a new message and returns the platform's id of it.
    func post(_ notification: AlertNotification) async throws -> String
    /// Edits the message `messageID` to show `notification`. A message the platform no longer has
    /// throws a `DeliveryError` whose `isMessageGone` is true.
    func edit(_ notification: AlertNotification, messageID: String) async throws
    /// For a receiver that edits: the request that edits message `messageID` to show `notification`,
    /// as `render` shows a post (what `notify-test` and `dry-run --render` print); nil for a receiver
    /// that does not edit. Never holds a secret: a token in a path shows as `<secret>`.
    func renderEdit(_ notification: AlertNotification, messageID: String) throws -> RenderedEdit?
}

/// An edit request as `notify-test` and `dry-run --render` show it: the method and where it goes
/// (`POST chat.update`, `PATCH …/messages/{id}`), and its body (JSON).
public struct RenderedEdit: Sendable, Equatable {
    public var request: String
    public var body: String

    public init(request: String, body: String) {
        self.request = request
        self.body = body
    }
}

extension Notifier {
    public var rateLimit: Double? { nil }
    public var connections: Int { 1 }
    public var integration: String { "webhook" }
    public var editsMessages: Bool { false }
    public func post(_ notification: AlertNotification) async throws -> String {
        try await send(notification)
        return ""
    }
    public func edit(_ notification: AlertNotification, messageID: String) async throws {
        try await send(notification)
    }
    public func renderEdit(_ notification: AlertNotification, messageID: String) throws -> RenderedEdit? { nil }
}

extension AlertNotification {
    /// The page of what the alert is about (the gauge, the city's air, the station, the quakes, the
    /// trip), if `external_url` is set.
    public func subjectLink(_ a: NotifiedAlert) -> String? {
        guard !externalURL.isEmpty,
            let path = SubjectPage.path(station: a.transition.station, metric: a.transition.metric)
        else { return nil }
        return Self.trimmed(externalURL) + path
    }

    /// The chart's URL when the chat platform's servers can fetch it: `external_url` is `https` on a
    /// public host name (not `localhost`, a single label, `.local`/`.internal`/`.lan`, or a loopback,
    /// private or link-local address). Slack refuses a whole message whose image it cannot download,
    /// so a chart behind a firewall is left out rather than risked.
    public func publicChartLink(_ a: NotifiedAlert, range: String = "48h") -> String? {
        guard Self.isPublic(externalURL) else { return nil }
        return chartLink(a, range: range)
    }

    /// Whether `url` is `https` on a host the internet can reach (by its name or address alone).
    static func isPublic(_ url: String) -> Bool {
        guard let c = URLComponents(string: url), c.scheme?.lowercased() == "https",
            let host = c.host?.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]")), !host.isEmpty
        else { return false }
        if host == "localhost" || host.hasSuffix(".localhost") || !host.contains(".") && !host.contains(":") {
            return false
        }
        for suffix in [".local", ".internal", ".lan", ".home", ".corp", ".intranet"] where host.hasSuffix(suffix) {
            return false
        }
        if host.contains(":") {
            // IPv6: loopback, unique local (fc00::/7), link-local (fe80::/10), unspecified.
            return
                !(host == "::1" || host == "::" || host.hasPrefix("fc") || host.hasPrefix("fd") || host.hasPrefix("fe8")
                || host.hasPrefix("fe9") || host.hasPrefix("fea") || host.hasPrefix("feb"))
        }
        let parts = host.split(separator: ".").compactMap { Int($0) }
        if parts.count == 4 && host.allSatisfy({ $0.isNumber || $0 == "." }) {
            let (a, b) = (parts[0], parts[1])
            if a == 10 || a == 127 || a == 0 || (a == 169 && b == 254) || (a == 172 && (16...31).contains(b))
                || (a == 192 && b == 168) || (a == 100 && (64...127).contains(b))
            {
                return false
            }
        }
        return true
    }

    /// The PNG chart of what the alert is about over `range`, if `external_url` is set and the page
    /// has a chart.
    public func chartLink(_ a: NotifiedAlert, range: String = "48h") -> String? {
        guard !externalURL.isEmpty,
            let path = SubjectPage.chartPath(station: a.transition.station, metric: a.transition.metric, range: range)
        else { return nil }
        return Self.trimmed(externalURL) + path
    }
}
