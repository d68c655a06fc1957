/// Minimal JSON writing for hot output paths (replays of millions of readings).
public enum JSONText {
    /// A JSON string literal, escaped per RFC 8259.
    public static func string(_ s: String) -> String {
        // Most strings need no escape: one pass over the bytes, then a single copy.
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            return "\"" + s + "\""
        }
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// A JSON number: whole values without a fraction, others in Swift's shortest round-trip form.
    public static func number(_ v: Double) -> String {
        guard v.isFinite else { return "null" }
        if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }
}

extension JSONText {
    /// Writes a JSON value built from dictionaries, arrays, strings, numbers, booleans and `NSNull`
    /// (what the webhook payload builders produce), keys sorted. Much cheaper than `JSONSerialization`,
    /// which bridges every value through Objective-C-style objects.
    public static func encode(_ value: Any) -> String {
        var out = ""
        write(value, into: &out)
        return out
    }

    static func write(_ value: Any, into out: inout String) {
        switch value {
        case let s as String: out += string(s)
        case let b as Bool: out += b ? "true" : "false"
        case let i as Int: out += String(i)
        case let i as Int64: out += String(i)
        case let d as Double: out += number(d)
        case let d as [String: String]:
            out += "{"
            for (n, key) in d.keys.sorted().enumerated() {
                if n > 0 { out += "," }
                out += string(key) + ":" + string(d[key]!)
            }
            out += "}"
        case let d as [String: Any]:
            out += "{"
            for (n, key) in d.keys.sorted().enumerated() {
                if n > 0 { out += "," }
                out += string(key) + ":"
                write(d[key]!, into: &out)
            }
            out += "}"
        case let a as [Any]:
            out += "["
            for (n, item) in a.enumerated() {
                if n > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        default:
            out += "null"  // NSNull and anything unexpected
        }
    }
}
