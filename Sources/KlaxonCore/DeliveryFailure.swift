/// Why a send failed, in one word of a closed set: the `reason` label of
/// `klaxon_notifications_failed_total` (Alertmanager's `clientError`/`serverError`/`other` split, with
/// timeouts and connections apart), the receiver-streak warnings and the dispatcher's log lines.
/// One list for the classifier (`DeliveryError.reason`) and the metric's series made at 0.
public enum DeliveryFailureReason: String, CaseIterable, Sendable {
    /// HTTP 4xx; an SMTP 5xx (a permanent refusal of what was sent).
    case clientError
    /// HTTP 5xx; an SMTP 4xx (a transient refusal).
    case serverError
    case timeout
    case connection
    /// Rendering, configuration, anything else.
    case other
}
