/// How urgent an alert is. Ordered: `info < warning < critical`.
public enum Severity: String, Sendable, Codable, CaseIterable, Comparable {
    case info, warning, critical

    public static func < (a: Severity, b: Severity) -> Bool { a.rank < b.rank }

    var rank: Int {
        switch self {
        case .info: 0
        case .warning: 1
        case .critical: 2
        }
    }
}
