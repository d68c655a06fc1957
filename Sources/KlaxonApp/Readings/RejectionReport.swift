import Foundation

/// The rejected lines of one readings file, as reported: the first `limit` word for word, the rest
/// counted, then one line with the count and, when the file looks like a service response, what it
/// looks like and the `--format` to try. A 38,000-line file of the wrong kind makes a dozen lines of
/// report, not 38,000.
struct RejectionReport {
    /// Rejected lines reported word for word, per file.
    static let limit = 10

    let path: String
    /// Every rejected line of the file, reported or not.
    private(set) var count = 0

    init(path: String) { self.path = path }

    /// The message for a rejected line, nil once `limit` have been reported.
    mutating func add(line: Int, reason: String) -> String? {
        count += 1
        return count <= Self.limit ? "\(path):\(line): \(reason)" : nil
    }

    /// Rejected lines beyond the limit (counted, not reported).
    var unlisted: Int { max(0, count - Self.limit) }

    /// The closing lines for the file: how many more were rejected, and what the file looks like
    /// when that is not a readings file (`advice` words it; by default, for `ingest`). `look` is
    /// asked only when something was rejected.
    func closing(look: () -> PayloadLook?, advice: (PayloadLook) -> String? = { $0.hint(given: .readings) })
        -> [String]
    {
        guard count > 0 else { return [] }
        var lines: [String] = []
        if unlisted > 0 {
            let s = unlisted == 1 ? "" : "s"
            lines.append("\(path): \(unlisted) more rejected line\(s) not listed (\(count) in all)")
        }
        if let look = look(), let advice = advice(look) {
            lines.append("\(path): \(advice)")
        }
        return lines
    }
}
