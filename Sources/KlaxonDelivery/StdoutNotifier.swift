import Foundation
import KlaxonCore
import KlaxonStore

/// Prints transitions: one readable line each, or one JSON object per line.
public struct StdoutNotifier: Sendable {
    public enum Format: String, Sendable, CaseIterable {
        case text, json
    }

    public let format: Format

    public init(format: Format = .text) {
        self.format = format
    }

    /// The line for one transition (without the newline).
    public func line(for t: Transition, message: String) -> String {
        switch format {
        case .text: return Self.textLine(t, message: message)
        case .json: return Self.jsonLine(t, message: message)
        }
    }

    public func write(_ t: Transition, message: String) {
        print(line(for: t, message: message))
    }

    public static func mark(_ t: Transition) -> String {
        switch (t.state, t.severity) {
        case (.resolved, _): "✅"
        case (_, .critical): "🔴"
        case (_, .warning): "🟠"
        case (_, .info): "🔵"
        }
    }

    /// `🟠 WARNING river-flood 01646500 gage_height CHANGED minor←action 12.3 ft — message`
    public static func textLine(_ t: Transition, message: String) -> String {
        var parts = [
            mark(t), t.severity.rawValue.uppercased(), t.rule, t.station, t.metric, t.state.rawValue.uppercased(),
        ]
        switch (t.level, t.fromLevel) {
        case (let l?, let f?): parts.append("\(f)→\(l)")
        case (let l?, nil): parts.append(l)
        case (nil, let f?): parts.append("from \(f)")
        default: break
        }
        if let v = t.value { parts.append(SeriesContext(station: t.station, metric: t.metric, unit: t.unit).show(v)) }
        parts.append("at \(Timestamp.format(t.at))")
        return parts.joined(separator: " ") + " — " + message
    }

    /// One transition as a JSON object on one line: `rule`, `station`, `metric`, `state`, `level` and
    /// `from_level` (levels rules only), `at`, `value`, `message`, in that order — the format
    /// `dry-run --format json` promises. `details` adds `severity` and `unit` (the stdout adapter);
    /// `explain` adds `explanation`. Written directly, as UTF-8 bytes into one buffer: replays print
    /// many of these.
    public static func jsonLine(_ t: Transition, message: String, explain: Bool = false, details: Bool = true) -> String
    {
        var o: [UInt8] = []
        o.reserveCapacity(160 + message.utf8.count + (explain ? t.explanation.utf8.count + t.details.utf8.count : 0))
        func raw(_ s: StaticString) { s.withUTF8Buffer { o.append(contentsOf: $0) } }
        func string(_ s: String) { Escape.json.write(s, into: &o) }
        raw("{\"rule\":")
        string(t.rule)
        raw(",\"station\":")
        string(t.station)
        raw(",\"metric\":")
        string(t.metric)
        raw(",\"state\":\"")
        o.append(contentsOf: t.state.rawValue.utf8)
        raw("\"")
        if t.kind == LevelsRule.kindName {
            raw(",\"level\":")
            if let l = t.level { string(l) } else { raw("null") }
            raw(",\"from_level\":")
            if let f = t.fromLevel { string(f) } else { raw("null") }
        }
        raw(",\"at\":\"")
        Timestamp.append(t.at, to: &o)
        raw("\",\"value\":")
        if let v = t.value { o.append(contentsOf: JSONText.number(v).utf8) } else { raw("null") }
        raw(",\"message\":")
        string(message)
        if details {
            raw(",\"severity\":\"")
            o.append(contentsOf: t.severity.rawValue.utf8)
            raw("\"")
            if let u = t.unit {
                raw(",\"unit\":")
                string(u)
            }
        }
        if explain {
            raw(",\"explanation\":")
            string(t.explanation)
            if !t.details.isEmpty {
                raw(",\"details\":")
                string(t.details)
            }
        }
        raw("}")
        return String(decoding: o, as: UTF8.self)
    }
}

extension StdoutNotifier {
    /// The line for one notified alert: as `line(for:message:)`, presented as its receiver learns it
    /// (firing, for an episode first heard of here) with the way it went (`(via action → minor)`),
    /// its id and, when late, the data's age.
    public func line(for a: NotifiedAlert) -> String {
        let (t, via) = a.presented
        switch format {
        case .text:
            var line = Self.textLine(t, message: a.message)
            if !via.isEmpty, let dash = line.range(of: " — ") {
                line.insert(contentsOf: " (via " + via.joined(separator: " → ") + ")", at: dash.lowerBound)
            }
            if a.late, let dash = line.range(of: " — ") { line.insert(contentsOf: " (late)", at: dash.lowerBound) }
            return line
        case .json:
            var o = Self.jsonLine(t, message: a.message)
            o.removeLast()
            if a.id > 0 { o += ",\"alert_id\":\(a.id)" }
            o += ",\"starts_at\":\"\(Timestamp.format(a.startedAt))\""
            let route = a.route
            if !a.path.isEmpty && route.count > 1 {
                o += ",\"path\":[" + route.map(JSONText.string).joined(separator: ",") + "]"
            }
            if a.late { o += ",\"late\":true" }
            return o + "}"
        }
    }
}

extension StdoutNotifier: Notifier {
    public var integration: String { "stdout" }

    public func render(_ notification: AlertNotification) throws -> String {
        var lines = notification.alerts.map { line(for: $0) }
        if notification.isDigest { lines.insert("— digest: \(lines.count) held during quiet hours —", at: 0) }
        return lines.joined(separator: "\n")
    }

    public func send(_ notification: AlertNotification) async throws {
        let text = try render(notification)
        do {
            try FileHandle.standardOutput.write(contentsOf: Data((text + "\n").utf8))
        } catch {
            // A closed pipe or a full disk: retrying will not help, so the row is dead at once and
            // the fallback receiver hears of it.
            let posix = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)?.code
            let why = posix.map { String(cString: strerror(Int32($0))) } ?? "\(error)"
            throw DeliveryError(
                kind: .connection, retryable: false, message: "receiver \(notification.receiver): stdout: \(why)")
        }
    }
}
