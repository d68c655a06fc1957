import Foundation

/// Any JSON value: for the parts of a document whose shape is not Klaxon's to fix (OGC feature
/// properties, error documents, the blocks of a Slack message Klaxon echoes back, a payload whose
/// format is still to be guessed, Block Kit and Adaptive Card elements). Where the shape is known,
/// a `Codable` type says it instead. A closed set of cases, and `Sendable`.
///
/// Numbers are `Double`s, as `JSONSerialization` read them; `JSONText` writes a whole one below
/// 10^15 without a fraction, as it wrote an `Int`.
public enum JSONValue: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        // Strings first: they are most of what the loosely typed parts hold.
        if c.decodeNil() {
            self = .null
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let d = try? c.decode(Double.self) {
            self = .number(d)
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let d):
            // A whole number as an integer (`3`, not `3.0`), as it was read.
            if d == d.rounded(), abs(d) < 1e15 { try c.encode(Int64(d)) } else { try c.encode(d) }
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a)
        case .object(let o): try c.encode(o)
        }
    }

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var number: Double? {
        if case .number(let d) = self { return d }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var array: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var object: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    /// A member of an object; nil for a missing member and for anything that is not an object.
    public subscript(key: String) -> JSONValue? { object?[key] }

    /// The value of `data` (nil when it is not JSON).
    public static func parse(_ data: some Sequence<UInt8>) -> JSONValue? {
        try? JSONDecoder().decode(JSONValue.self, from: Data(data))
    }
}

extension JSONValue: ExpressibleByStringInterpolation, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue {
    /// `.string(s)`, or `.null` without one.
    public init(_ s: String?) { self = s.map { .string($0) } ?? .null }
    /// `.number`, for an integer.
    public init(_ i: Int) { self = .number(Double(i)) }
    /// `.number`, for an integer.
    public init(_ i: Int64) { self = .number(Double(i)) }
}
