import Foundation
import KlaxonCore

/// One alert inside a notification.
public struct NotifiedAlert: Sendable {
    public var transition: Transition
    /// The rendered message (rule template or summary).
    public var message: String
    /// The transition log id.
    public var id: Int64

    public init(transition: Transition, message: String, id: Int64) {
        self.transition = transition
        self.message = message
        self.id = id
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

    public init(key: String, receiver: String, alerts: [NotifiedAlert], attempt: Int = 1, isDigest: Bool = false) {
        self.key = key
        self.receiver = receiver
        self.alerts = alerts
        self.attempt = attempt
        self.isDigest = isDigest
    }

    /// `firing` if any alert in it is firing or changed, else `resolved` (Alertmanager's rule).
    public var status: String {
        alerts.contains { $0.transition.state != .resolved } ? "firing" : "resolved"
    }
}

/// Why a delivery failed, and whether trying again may help. Cases can grow without breaking callers.
public struct DeliveryError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable, Equatable {
        case connection, timeout
        case httpStatus(Int)
        case smtp(Int)
        case rendering, configuration
    }

    public let kind: Kind
    public let retryable: Bool
    /// Seconds the far end asked us to wait (`Retry-After`), already capped.
    public let retryAfter: Double?
    /// Safe to log: never holds a secret or a full webhook URL.
    public let message: String

    public init(kind: Kind, retryable: Bool, retryAfter: Double? = nil, message: String) {
        self.kind = kind
        self.retryable = retryable
        self.retryAfter = retryAfter
        self.message = message
    }

    public var description: String { message }

    /// HTTP statuses: 408, 429 and 5xx may succeed later; other 4xx will not.
    public static func http(_ status: Int, retryAfter: Double?, receiver: String) -> DeliveryError {
        let retry = status == 408 || status == 429 || (500...599).contains(status)
        return DeliveryError(
            kind: .httpStatus(status), retryable: retry, retryAfter: retryAfter,
            message: "receiver \(receiver): HTTP \(status)\(retry ? "" : " (not retried)")")
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
}

extension Notifier {
    public var rateLimit: Double? { nil }
    public var connections: Int { 1 }
}
