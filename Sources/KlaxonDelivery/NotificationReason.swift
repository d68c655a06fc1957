import Foundation

/// Why a notification goes out: the generic webhook's `notification_reason`, with Alertmanager's
/// words (0.33 and later; `notify/notify.go`, `NotifyReason.String()`), and a receiver template's
/// `notification_reason`.
///
/// Alertmanager decides it per group from its notification log (`notify/dedup_stage.go`,
/// `needsUpdate`): a group the receiver was never told of (or whose last message was its resolve)
/// is a `first notification`; firing alerts it had not heard of, `new alerts added`; nothing firing
/// any more, `all alerts resolved`; some resolves, `some alerts resolved`; nothing new,
/// `repeat interval elapsed`. Klaxon decides the same from the alerts of the notification and what
/// the receiver had heard of them (`of(_:)`). A level change of an alert the receiver knew firing,
/// which Alertmanager does not notify (its labels are the same), is Klaxon's one word of its own,
/// `alerts changed`: a struct, not a closed enum, so that words can be added without breaking
/// callers (as Alertmanager itself added `unknown`).
public struct NotificationReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// The receiver had not heard of any alert of the notification firing (or heard its resolve).
    public static let firstNotification = Self(rawValue: "first notification")
    /// Alerts the receiver had not heard of, beside alerts it knows firing.
    public static let newAlertsAdded = Self(rawValue: "new alerts added")
    /// Resolves of alerts the receiver heard firing, beside alerts still firing.
    public static let someAlertsResolved = Self(rawValue: "some alerts resolved")
    /// Every alert of the notification resolved (the receiver heard each firing).
    public static let allAlertsResolved = Self(rawValue: "all alerts resolved")
    /// A reminder (`repeat_interval`): nothing changed since the receiver last heard.
    public static let repeatIntervalElapsed = Self(rawValue: "repeat interval elapsed")
    /// Klaxon's own: an alert the receiver knew firing changed level (or an event was revised).
    public static let alertsChanged = Self(rawValue: "alerts changed")
    /// No reason is known (Alertmanager's fallback).
    public static let unknown = Self(rawValue: "unknown")

    /// Alertmanager's words, in its order (`NotifyReason`), without `none` (never sent).
    public static let alertmanager: [Self] = [
        .firstNotification, .newAlertsAdded, .someAlertsResolved, .allAlertsResolved, .repeatIntervalElapsed,
        .unknown,
    ]

    /// Every word Klaxon sends.
    public static let all: [Self] = alertmanager + [.alertsChanged]

    /// `repeat_interval_elapsed`: the word as a template's boolean (`{{#reason.repeat_interval_elapsed}}`).
    public var name: String { rawValue.replacingOccurrences(of: " ", with: "_") }

    /// The reason for a notification of `alerts`, in Alertmanager's order of precedence: news of
    /// alerts first, then resolves, then changes, then reminders.
    public static func of(_ alerts: [NotifiedAlert]) -> Self {
        guard !alerts.isEmpty else { return .unknown }
        var new = false
        var known = false
        var resolved = 0
        var changed = false
        for a in alerts {
            if a.transition.state == .resolved {
                // Only a receiver that heard it firing is sent a resolve.
                resolved += 1
                known = true
            } else if a.escalated {
                // The escalation's receiver hears of the alert for the first time.
                new = true
            } else if a.reminder {
                // A reminder carries the transition that last announced the alert (often its firing).
                known = true
            } else if a.isNewToReceiver {
                new = true
            } else {
                changed = true
                known = true
            }
        }
        if new { return known ? .newAlertsAdded : .firstNotification }
        if resolved == alerts.count { return .allAlertsResolved }
        if resolved > 0 { return .someAlertsResolved }
        if changed { return .alertsChanged }
        return .repeatIntervalElapsed
    }
}
