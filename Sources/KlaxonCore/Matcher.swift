import Foundation
import KlaxonRegex

/// A label matcher as `amtool` writes them: `station=01646500`, `severity!=info`, `rule=~river-.*`,
/// `metric!~temp.*`. Regular expressions are RE2 as in Alertmanager: anchored (they must match the whole
/// value) and matched in linear time (`LinearRegex`), compiled once here, never per match.
///
/// Equality and hashing are on the text (name, operator, value); the compiled program rides along.
public struct Matcher: Sendable, Hashable, CustomStringConvertible {
    public enum Op: String, Sendable, CaseIterable {
        case equal = "="
        case notEqual = "!="
        case regex = "=~"
        case notRegex = "!~"
    }

    /// The longest label value a regex matcher evaluates, in UTF-8 bytes. Labels are short (station ids
    /// and metrics are at most 128 bytes at ingest); the bound keeps one match under
    /// `LinearRegex.maxInstructions × 1025` steps whatever the labels hold.
    public static let maxValueBytes = 1024

    public private(set) var name: String
    public private(set) var op: Op
    public private(set) var value: String
    /// The compiled expression of `=~` and `!~`; nil for `=` and `!=`, and for an unusable stored matcher.
    public let regex: LinearRegex?
    /// Why a matcher read back from storage cannot be used (see `parseStored`); it then matches nothing.
    public let problem: String?

    public init(name: String, op: Op, value: String) throws {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
            throw MatcherError(message: "matcher label name \"\(Self.shown(name))\" must be letters, digits or _")
        }
        if op == .regex || op == .notRegex {
            do {
                regex = try LinearRegex.compiled(value)
            } catch {
                let why = Self.shown("\(error)", limit: 400)
                throw MatcherError(message: "matcher \(Self.shown(name))\(op.rawValue)\(Self.shown(value)): \(why)")
            }
        } else {
            regex = nil
        }
        self.name = name
        self.op = op
        self.value = value
        self.problem = nil
    }

    private init(unusable name: String, op: Op, value: String, problem: String) {
        self.name = name
        self.op = op
        self.value = value
        self.regex = nil
        self.problem = problem
    }

    /// Parses `NAME=VALUE`, `NAME!=VALUE`, `NAME=~REGEX` or `NAME!~REGEX`.
    public static func parse(_ text: String) throws -> Matcher {
        guard let (name, op, value) = split(text) else {
            throw MatcherError(
                message:
                    "matcher \"\(shown(text))\" must look like NAME=VALUE, NAME!=VALUE, NAME=~REGEX or NAME!~REGEX")
        }
        return try Matcher(name: name, op: op, value: value)
    }

    /// A matcher read back from storage. Never throws: one that no longer parses (a regex stored before
    /// matchers became RE2, or over today's size limits) is kept, with its `problem`, and matches nothing,
    /// so a silence holding it mutes nothing rather than more than its author meant.
    public static func parseStored(_ text: String) -> Matcher {
        do {
            return try parse(text)
        } catch {
            let parts = split(text) ?? (text, .equal, "")
            return Matcher(unusable: parts.0, op: parts.1, value: parts.2, problem: "\(error)")
        }
    }

    /// A matcher read back from structured storage (its name, operator and value, each stored as
    /// itself). Never throws, as `parseStored`: an unknown operator, a bad name or a regex that no
    /// longer compiles gives a matcher with a `problem` that matches nothing.
    public static func stored(name: String, type: String, value: String) -> Matcher {
        guard let op = Op(rawValue: type) else {
            return Matcher(
                unusable: name, op: .equal, value: value, problem: "unknown matcher type \"\(shown(type))\"")
        }
        do {
            return try Matcher(name: name, op: op, value: value)
        } catch {
            return Matcher(unusable: name, op: op, value: value, problem: "\(error)")
        }
    }

    /// A matcher that matches nothing, for a stored one that cannot be read at all.
    public static func unusable(_ problem: String) -> Matcher {
        Matcher(unusable: "", op: .equal, value: "", problem: problem)
    }

    private static func split(_ text: String) -> (String, Op, String)? {
        for op in [Op.notRegex, .regex, .notEqual, .equal] {
            if let r = text.range(of: op.rawValue) {
                let name = String(text[..<r.lowerBound]).trimmingCharacters(in: .whitespaces)
                // `a!=b` contains "=" too: take the operator that starts earliest, longest first.
                if op == .equal, text[..<r.lowerBound].hasSuffix("!") { continue }
                var value = String(text[r.upperBound...]).trimmingCharacters(in: .whitespaces)
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                    value = String(value.dropFirst().dropLast())
                }
                return (name, op, value)
            }
        }
        return nil
    }

    /// Whether the labels satisfy the matcher (a missing label is the empty string, as in Alertmanager).
    /// A regex matcher does not match a value longer than `maxValueBytes` (labels are short),
    /// whichever its operator: a silence then mutes less and a route sends to its default, never more.
    public func matches(_ labels: [String: String]) -> Bool {
        guard problem == nil else { return false }
        let v = labels[name] ?? ""
        switch op {
        case .equal: return v == value
        case .notEqual: return v != value
        case .regex, .notRegex:
            guard let regex, v.utf8.count <= Self.maxValueBytes else { return false }
            return regex.fullMatch(v) == (op == .regex)
        }
    }

    /// `matches(_:)` within `budget`; nil when the budget ran out before a regex was decided.
    public func matches(_ labels: [String: String], budget: inout MatchBudget) -> Bool? {
        guard problem == nil else { return false }
        let v = labels[name] ?? ""
        switch op {
        case .equal, .notEqual:
            budget.chargeComparison()
            return (v == value) == (op == .equal)
        case .regex, .notRegex:
            guard let regex, v.utf8.count <= Self.maxValueBytes else { return false }
            return regex.fullMatch(v, budget: &budget).map { $0 == (op == .regex) }
        }
    }

    public var description: String { "\(name)\(op.rawValue)\(value)" }

    public static func == (a: Matcher, b: Matcher) -> Bool {
        a.name == b.name && a.op == b.op && a.value == b.value
    }

    public func hash(into h: inout Hasher) {
        h.combine(name)
        h.combine(op)
        h.combine(value)
    }

    /// A value as an error message shows it: control characters escaped, and at most 80 characters of a
    /// long one (a refused 480 KB pattern is not echoed back whole).
    /// (`Escape.invisiblesShown`: controls, format characters, line and paragraph separators.)
    static func shown(_ text: String, limit: Int = 80) -> String {
        let scalars = text.unicodeScalars
        guard let cut = scalars.index(scalars.startIndex, offsetBy: limit, limitedBy: scalars.endIndex),
            cut != scalars.endIndex
        else { return Escape.invisiblesShown(text) }
        return Escape.invisiblesShown(String(scalars[..<cut])) + "… (\(text.utf8.count) bytes)"
    }
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

    /// `mutes(_:at:)` within `budget`; nil when the budget ran out before it was decided. The equality
    /// matchers are asked first: one that fails decides without running any regex.
    public func mutes(_ labels: [String: String], at t: Int64, budget: inout MatchBudget) -> Bool? {
        guard isActive(at: t) else { return false }
        for m in matchers where m.regex == nil {
            if m.matches(labels, budget: &budget) == false { return false }
        }
        // Once the budget is out, the rest cost nothing: a memoized result may still decide `false`.
        var undecided = false
        for m in matchers where m.regex != nil {
            switch m.matches(labels, budget: &budget) {
            case false?: return false
            case true?: continue
            case nil: undecided = true
            }
        }
        return undecided ? nil : true
    }
}

extension Silence {
    /// The silence for one rule, or one rule at one station, from `now` for `duration` seconds: what
    /// the chat's `silence RULE [STATION] DURATION`, its *Silence 1h* button and the status site's
    /// silence form add (matchers `rule=RULE` and, when given, `station=STATION`, both equality: the
    /// names are taken literally, whatever they hold), with a fresh id, through `Silence.make`.
    public static func forAlert(
        rule: String, station: String?, duration: Int64, now: Int64, comment: String, createdBy: String
    ) throws -> Silence {
        var matchers = [try Matcher(name: "rule", op: .equal, value: rule)]
        if let station { matchers.append(try Matcher(name: "station", op: .equal, value: station)) }
        let (ends, overflow) = now.addingReportingOverflow(duration)
        return try make(
            matchers: matchers, starts: now, ends: overflow ? .max : ends, now: now, comment: comment,
            createdBy: createdBy)
    }
}

extension Transition {
    /// The labels routes and silences match on: the rule's labels plus `alertname` (= rule), `rule`,
    /// `station`, `metric`, `severity` and, for levels, `level`.
    /// One of `matchLabels`, without building the dictionary (the delivery hot path asks for a few).
    public func matchLabel(_ name: String) -> String? {
        switch name {
        case "alertname", "rule": rule
        case "station": station
        case "metric": metric
        case "severity": severity.rawValue
        case "level": level ?? labels["level"]
        default: labels[name]
        }
    }

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
