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
    /// Writes a JSON value with the keys of each object sorted (by code point), numbers as `number`
    /// writes them and strings as `string` does: the bytes of every webhook preset and stored extra.
    /// Much cheaper than `JSONSerialization`, which bridges every value through Objective-C-style objects.
    public static func encode(_ value: JSONValue) -> String {
        var out = ""
        write(value, into: &out)
        return out
    }

    /// A flat object of strings (labels), keys sorted.
    public static func encode(_ object: [String: String]) -> String {
        var out = "{"
        for (n, key) in object.keys.sorted().enumerated() {
            if n > 0 { out += "," }
            out += string(key) + ":" + string(object[key]!)
        }
        return out + "}"
    }

    static func write(_ value: JSONValue, into out: inout String) {
        switch value {
        case .string(let s): out += string(s)
        case .bool(let b): out += b ? "true" : "false"
        case .number(let d): out += number(d)
        case .null: out += "null"
        case .object(let d):
            out += "{"
            for (n, key) in d.keys.sorted().enumerated() {
                if n > 0 { out += "," }
                out += string(key) + ":"
                write(d[key]!, into: &out)
            }
            out += "}"
        case .array(let a):
            out += "["
            for (n, item) in a.enumerated() {
                if n > 0 { out += "," }
                write(item, into: &out)
            }
            out += "]"
        }
    }
}
