import Foundation
import KlaxonCore

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

    /// The JSON object `dry-run --format json` and `--format json` adapters print.
    public static func jsonObject(_ t: Transition, message: String) -> [String: Any] {
        var o: [String: Any] = [
            "rule": t.rule, "station": t.station, "metric": t.metric, "state": t.state.rawValue,
            "at": Timestamp.format(t.at), "message": message, "severity": t.severity.rawValue,
        ]
        o["value"] = t.value.map { $0 as Any } ?? NSNull()
        if t.kind == LevelsRule.kindName {
            o["level"] = t.level.map { $0 as Any } ?? NSNull()
            o["from_level"] = t.fromLevel.map { $0 as Any } ?? NSNull()
        }
        if let u = t.unit { o["unit"] = u }
        return o
    }

    public static func jsonLine(_ t: Transition, message: String, explain: Bool = false) -> String {
        var o = jsonObject(t, message: message)
        if explain { o["explanation"] = t.explanation }
        let data =
            (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

extension StdoutNotifier: Notifier {
    public func render(_ notification: AlertNotification) throws -> String {
        var lines = notification.alerts.map { line(for: $0.transition, message: $0.message) }
        if notification.isDigest { lines.insert("— digest: \(lines.count) held during quiet hours —", at: 0) }
        return lines.joined(separator: "\n")
    }

    public func send(_ notification: AlertNotification) async throws {
        let text = try render(notification)
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }
}
