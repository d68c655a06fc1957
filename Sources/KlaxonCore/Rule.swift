/// A rule as loaded from a rule file: its kind plus what every kind shares.
public struct Rule: Sendable {
    public var name: String
    public var kind: any RuleKind
    public var severity: Severity
    public var labels: [String: String]
    /// Receiver names the alerts go to.
    public var notify: [String]
    /// A mustache template for the message, or nil for the default message.
    public var message: String?
    /// A link to what to do about the alert (`runbook_url`, a mustache template).
    public var runbookURL: String?
    /// Free annotations (name → mustache template), rendered per transition and sent with it.
    public var annotations: [String: String]
    /// Where the rule was defined (`Rules/river.yaml:3:3`), for messages about it.
    public var origin: String

    public init(
        name: String, kind: any RuleKind, severity: Severity = .warning, labels: [String: String] = [:],
        notify: [String] = [], message: String? = nil, origin: String = "", runbookURL: String? = nil,
        annotations: [String: String] = [:]
    ) {
        self.name = name
        self.kind = kind
        self.severity = severity
        self.labels = labels
        self.notify = notify
        self.message = message
        self.origin = origin
        self.runbookURL = runbookURL
        self.annotations = annotations
    }

    public func transition(_ change: Change, _ context: SeriesContext) -> Transition {
        Transition(
            rule: name, kind: kind.kindName, station: context.station, metric: context.metric, state: change.state,
            level: change.level, fromLevel: change.fromLevel, at: change.at, value: change.value, unit: context.unit,
            severity: severity, labels: labels, summary: change.summary, explanation: change.explanation,
            place: change.place ?? context.placeName, details: change.details, headline: change.headline)
    }
}
