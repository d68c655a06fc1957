/// Minimal JSON writing for hot output paths (replays of millions of readings).
public enum JSONText {
    /// A JSON string literal, escaped per RFC 8259.
    public static func string(_ s: String) -> String { Escape.json(s) }

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
