import KlaxonCore
import Logging

/// One log record as one line of text: logfmt or JSON, with a journald priority prefix when stderr
/// is the journal. Written by hand (no mirrored package writes logfmt), so it is tested byte for
/// byte (`LogHandlerTests`).
///
/// logfmt follows the de-facto specification (brandur/go-logfmt): `time=… level=… msg=…` first,
/// then `logger=…` for loggers other than the daemon's own, then metadata in key order. A value is
/// quoted when it is empty or holds a space, `=`, `"` or a control character; inside quotes `\`,
/// `"`, `\n`, `\r`, `\t` are escaped, and other control characters as `\u00XX`. Unlike go-logfmt,
/// C1 controls and DEL are escaped too (and quoted): a hostile value never reaches a terminal raw.
/// JSON lines carry numbers and Booleans typed when the metadata value is one
/// (`.stringConvertible(3)`, not the string `"3"`).
public enum LogLine {
    /// The journal's syslog priority of a level (`<N>` prefix; sd-daemon(3)).
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// The label whose lines carry no `logger=` (the daemon's and commands' own).
    public static let mainLabel = "klaxon"

    /// The line, with its trailing newline. `timeMs` is milliseconds since the epoch; in journal
    /// mode there is no time (the journal stamps each line) and the line starts with `<N>`.
    public static func render(
        format: LogFormat, journal: Bool, timeMs: Int64, level: Logger.Level, message: String, label: String,
        metadata: Logger.Metadata
    ) -> String {
        var fields: [(String, Logger.MetadataValue)] = []
        if !journal { fields.append(("time", .string(rfc3339(ms: timeMs)))) }
        fields.append(("level", .string(level.rawValue)))
        fields.append(("msg", .string(message)))
        if label != mainLabel { fields.append(("logger", .string(label))) }
        let reserved: Set<String> = ["time", "level", "msg", "logger"]
        for key in metadata.keys.sorted() {
            // A metadata key that collides with a field of the line's own keeps its value under `meta.KEY`.
            fields.append((reserved.contains(key) ? "meta.\(key)" : key, metadata[key]!))
        }
        var out = journal ? "<\(priority(level))>" : ""
        switch format {
        case .logfmt:
            var first = true
            for (key, value) in fields {
                for (k, text) in flatten(key, value) {
                    if !first { out += " " }
                    first = false
                    out += logfmtKey(k) + "=" + logfmtValue(text)
                }
            }
        case .json:
            out += "{"
            for (n, (key, value)) in fields.enumerated() {
                if n > 0 { out += "," }
                out += jsonString(key) + ":" + json(value)
            }
            out += "}"
        }
        return out + "\n"
    }

    /// Nested metadata in logfmt: a dictionary's entries as `key.sub` (in key order), an array as
    /// one value `[a, b]`.
    static func flatten(_ key: String, _ value: Logger.MetadataValue) -> [(String, String)] {
        switch value {
        case .string(let s): return [(key, s)]
        case .stringConvertible(let c): return [(key, c.description)]
        case .array(let items): return [(key, "[" + items.map(plain).joined(separator: ", ") + "]")]
        case .dictionary(let d):
            if d.isEmpty { return [(key, "")] }
            return d.keys.sorted().flatMap { flatten("\(key).\($0)", d[$0]!) }
        }
    }

    /// A value as plain text (inside an array).
    static func plain(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let s): s
        case .stringConvertible(let c): c.description
        case .array(let items): "[" + items.map(plain).joined(separator: ", ") + "]"
        case .dictionary(let d): "{" + d.keys.sorted().map { "\($0): \(plain(d[$0]!))" }.joined(separator: ", ") + "}"
        }
    }

    /// A value in JSON: a `.stringConvertible` integer, finite floating-point number or Boolean as a
    /// JSON number or `true`/`false` (`"failures":1`); every other value, `.string` included (its text
    /// is the caller's, whatever it looks like), as a string; dictionaries as objects in key order,
    /// arrays as arrays.
    static func json(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let s): jsonString(s)
        case .stringConvertible(let c): typed(c) ?? jsonString(c.description)
        case .array(let items): "[" + items.map(json).joined(separator: ",") + "]"
        case .dictionary(let d):
            "{" + d.keys.sorted().map { jsonString($0) + ":" + json(d[$0]!) }.joined(separator: ",") + "}"
        }
    }

    /// The JSON text of a number or Boolean; nil for anything else (NaN and infinities too: JSON has
    /// no such numbers).
    static func typed(_ c: any CustomStringConvertible & Sendable) -> String? {
        switch c {
        case let b as Bool: return b ? "true" : "false"
        case let i as any BinaryInteger: return "\(i)"
        case let d as Double: return d.isFinite ? "\(d)" : nil
        case let f as Float: return f.isFinite ? "\(f)" : nil
        default: return nil
        }
    }

    /// `JSONText.string`, with DEL and C1 controls escaped as well (`Escape.jsonLog`: RFC 8259 allows
    /// them raw; a terminal showing the log may not).
    static func jsonString(_ s: String) -> String { Escape.jsonLog(s) }

    /// A logfmt key: bytes that would end it or break the line (space, `=`, `"`, controls) become `_`
    /// (`Escape.logfmtKey`).
    static func logfmtKey(_ key: String) -> String { key.isEmpty ? "_" : Escape.logfmtKey(key) }

    /// A logfmt value: bare when it can be, else quoted and escaped (`Escape.logfmtValue`).
    static func logfmtValue(_ value: String) -> String { Escape.logfmtValue(value) }

    /// `2026-11-28T01:02:03.456Z` (RFC 3339, UTC, milliseconds).
    public static func rfc3339(ms: Int64) -> String {
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let millis = Int(ms - seconds * 1000)
        let base = Timestamp.format(seconds)  // 2026-11-28T01:02:03Z
        let fraction = String(millis)
        return String(base.dropLast()) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction + "Z"
    }
}

/// `--log-format`: logfmt (the default) or JSON lines.
public enum LogFormat: String, Sendable, CaseIterable {
    case logfmt, json
}
