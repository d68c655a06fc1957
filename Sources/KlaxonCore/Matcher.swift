import Foundation

/// A label matcher as `amtool` writes them: `station=01646500`, `severity!=info`, `rule=~river-.*`,
/// `metric!~temp.*`. Regular expressions are anchored (they must match the whole value).
public struct Matcher: Sendable, Hashable, CustomStringConvertible {
    public enum Op: String, Sendable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case regex = "=~"
        case notRegex = "!~"
    }

    public var name: String
    public var op: Op
    public var value: String

    public init(name: String, op: Op, value: String) throws {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
            throw MatcherError(message: "matcher label name \"\(name)\" must be letters, digits or _")
        }
        if op == .regex || op == .notRegex {
            guard (try? NSRegularExpression(pattern: "^(?:\(value))$")) != nil else {
                throw MatcherError(message: "matcher \(name)\(op.rawValue)\(value): not a valid regular expression")
            }
        }
        self.name = name
        self.op = op
        self.value = value
    }

    /// Parses `NAME=VALUE`, `NAME!=VALUE`, `NAME=~REGEX` or `NAME!~REGEX`.
    public static func parse(_ text: String) throws -> Matcher {
        for op in [Op.notRegex, .regex, .notEqual, .equal] {
            if let r = text.range(of: op.rawValue) {
                let name = String(text[..<r.lowerBound]).trimmingCharacters(in: .whitespaces)
                // `a!=b` contains "=" too: take the operator that starts earliest, longest first.
                if op == .equal, text[..<r.lowerBound].hasSuffix("!") { continue }
                var value = String(text[r.upperBound...]).trimmingCharacters(in: .whitespaces)
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                    value = String(value.dropFirst().dropLast())
                }
                return try Matcher(name: name, op: op, value: value)
            }
        }
        throw MatcherError(
            message: "matcher \"\(text)\" must look like NAME=VALUE, NAME!=VALUE, NAME=~REGEX or NAME!~REGEX")
    }

    /// Whether the labels satisfy the matcher (a missing label is the empty string, as in Alertmanager).
    public func matches(_ labels: [String: String]) -> Bool {
        let v = labels[name] ?? ""
        switch op {
        case .equal: return v == value
        case .notEqual: return v != value
        case .regex: return Self.fullMatch(value, v)
        case .notRegex: return !Self.fullMatch(value, v)
        }
    }

    static func fullMatch(_ pattern: String, _ text: String) -> Bool {
        guard let re = try? NSRegularExpression(pattern: "^(?:\(pattern))$") else { return false }
        return re.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    public var description: String { "\(name)\(op.rawValue)\(value)" }
}

public struct MatcherError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}

/// A silence: alerts whose labels match every matcher are not delivered between `starts` and `ends`.
/// A muted alert keeps its state; it is only not sent.
public struct Silence: Sendable, Hashable {
    public var id: String
    public var matchers: [Matcher]
    public var starts: Int64
    public var ends: Int64
    public var comment: String
    public var createdBy: String

    public init(id: String, matchers: [Matcher], starts: Int64, ends: Int64, comment: String, createdBy: String) {
        self.id = id
        self.matchers = matchers
        self.starts = starts
        self.ends = ends
        self.comment = comment
        self.createdBy = createdBy
    }

    public func isActive(at t: Int64) -> Bool { t >= starts && t < ends }

    public func mutes(_ labels: [String: String], at t: Int64) -> Bool {
        isActive(at: t) && matchers.allSatisfy { $0.matches(labels) }
    }
}

extension Silence {
    /// The silence for one rule, or one rule at one station, from `now` for `duration` seconds: what
    /// the chat's `silence RULE [STATION] DURATION` and the status site's silence form add
    /// (matchers `rule=RULE` and, when given, `station=STATION`), with a fresh id.
    public static func forAlert(
        rule: String, station: String?, duration: Int64, now: Int64, comment: String, createdBy: String
    ) throws -> Silence {
        var matchers = [try Matcher(name: "rule", op: .equal, value: rule)]
        if let station { matchers.append(try Matcher(name: "station", op: .equal, value: station)) }
        return Silence(
            id: UUID().uuidString.lowercased(), matchers: matchers, starts: now, ends: now + duration,
            comment: comment, createdBy: createdBy)
    }
}

extension Transition {
    /// The labels routes and silences match on: the rule's labels plus `alertname` (= rule), `rule`,
    /// `station`, `metric`, `severity` and, for levels, `level`.
    public var matchLabels: [String: String] {
        var l = labels
        l["alertname"] = rule
        l["rule"] = rule
        l["station"] = station
        l["metric"] = metric
        l["severity"] = severity.rawValue
        if let level { l["level"] = level }
        return l
    }
}
