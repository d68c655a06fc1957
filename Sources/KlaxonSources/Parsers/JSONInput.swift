import Foundation
import KlaxonCore

/// Decoding a JSON body with errors a person can act on: an HTML error page is named as such, a
/// truncated body is called truncated, and a missing field is named by its path.
enum JSONInput {
    static func decode<T: Decodable>(_ type: T.Type, from data: Data, format: String) throws -> T {
        try checkLooksLikeJSON(data, format: format)
        do {
            return try JSONDecoder().decode(T.self, from: data)
        } catch let error as DecodingError {
            throw describe(error, data: data, format: format)
        } catch {
            throw ParseError(.malformed, format: format, "truncated or malformed JSON")
        }
    }

    /// Rejects an empty body and markup (`<html>…`, `<?xml …`) before the JSON decoder sees it.
    static func checkLooksLikeJSON(_ data: Data, format: String) throws {
        guard let first = firstSignificantByte(data) else {
            throw ParseError(.malformed, format: format, "empty body")
        }
        if first == UInt8(ascii: "<") {
            throw markupError(data, format: format, expected: "JSON")
        }
    }

    /// The first byte that is not whitespace or a UTF-8 byte-order mark.
    static func firstSignificantByte(_ data: Data) -> UInt8? {
        var index = data.startIndex
        if data.count >= 3, data[index] == 0xEF, data[index + 1] == 0xBB, data[index + 2] == 0xBF {
            index += 3
        }
        while index < data.endIndex {
            let b = data[index]
            if b != 0x20 && b != 0x09 && b != 0x0A && b != 0x0D { return b }
            index += 1
        }
        return nil
    }

    /// "got an HTML page, not JSON (title 'Service Unavailable')", or the same for XML.
    static func markupError(_ data: Data, format: String, expected: String) -> ParseError {
        let head = String(decoding: data.prefix(8192), as: UTF8.self)
        return markupError(head: head, format: format, expected: expected)
    }

    static func markupError(head: String, format: String, expected: String) -> ParseError {
        let lower = head.lowercased()
        let isHTML = lower.contains("<html") || lower.contains("<!doctype html") || lower.contains("<body")
        let what = isHTML ? "an HTML page" : "an XML document"
        if let open = head.range(of: "<title", options: .caseInsensitive),
            let tagEnd = head.range(of: ">", range: open.upperBound..<head.endIndex),
            let close = head.range(of: "</title", options: .caseInsensitive, range: tagEnd.upperBound..<head.endIndex)
        {
            let title = head[tagEnd.upperBound..<close.lowerBound]
            return ParseError(
                .notTheFormat, format: format,
                "got \(what), not \(expected) (title '\(ParseError.excerpt(title))')")
        }
        return ParseError(.notTheFormat, format: format, "got \(what), not \(expected) ('\(ParseError.excerpt(head))')")
    }

    static func describe(_ error: DecodingError, data: Data, format: String) -> ParseError {
        switch error {
        case .keyNotFound(let key, let context):
            if context.codingPath.isEmpty, let serverError = serverError(data, format: format) {
                return serverError
            }
            return ParseError(.missingField, format: format, "missing field '\(path(context.codingPath + [key]))'")
        case .valueNotFound(_, let context):
            return ParseError(.missingField, format: format, "field '\(path(context.codingPath))' is null")
        case .typeMismatch(let type, let context):
            if context.codingPath.isEmpty {
                return ParseError(.malformed, format: format, "the JSON is not an object with the expected fields")
            }
            return ParseError(.badValue, format: format, "field '\(path(context.codingPath))' is not \(typeName(type))")
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                return ParseError(.malformed, format: format, "truncated or malformed JSON")
            }
            return ParseError(
                .badValue, format: format,
                "bad value in field '\(path(context.codingPath))': \(context.debugDescription)")
        @unknown default:
            return ParseError(.malformed, format: format, "truncated or malformed JSON")
        }
    }

    /// `value.timeSeries[0].sourceInfo`.
    static func path(_ keys: [any CodingKey]) -> String {
        var out = ""
        for key in keys {
            if let i = key.intValue, key.stringValue == "Index \(i)" || key.stringValue == String(i) {
                out += "[\(i)]"
            } else {
                if !out.isEmpty { out += "." }
                out += key.stringValue
            }
        }
        return out
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Double.Type, is Int.Type, is Int64.Type: return "a number"
        case is Bool.Type: return "a boolean"
        default:
            let name = String(describing: type)
            if name.hasPrefix("Array") { return "an array" }
            if name.hasPrefix("Dictionary") { return "an object" }
            return "the expected type"
        }
    }

    /// A body such as `{"error":{"code":"OVER_RATE_LIMIT","message":"…"}}` or `{"message":"…"}`:
    /// the server's error document rather than data.
    static func serverError(_ data: Data, format: String) -> ParseError? {
        guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: data) else { return nil }
        var parts: [String] = []
        switch object["error"] {
        case .object(let error)?:
            for key in ["code", "message"] {
                if case .string(let s)? = error[key] { parts.append(s) }
            }
        case .string(let s)?:
            parts.append(s)
        default:
            break
        }
        if parts.isEmpty, case .string(let s)? = object["message"] { parts.append(s) }
        if parts.isEmpty, case .string("error")? = object["status"], case .string(let s)? = object["data"] {
            parts.append(s)
        }
        guard !parts.isEmpty else { return nil }
        return ParseError(
            .serverError, format: format,
            "the server sent an error, not data: \(ParseError.excerpt(parts.joined(separator: ": ")))")
    }
}

/// A field some payloads write as a string and others as a number (`methodID`, feature `id`).
struct FlexibleString: Decodable, Sendable, Hashable {
    let value: String

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if let s = try? c.decode(String.self) {
            value = s
        } else if let i = try? c.decode(Int64.self) {
            value = String(i)
        } else {
            let d = try c.decode(Double.self)
            value = String(d)
        }
    }
}

extension JSONValue {
    /// The members of a JSON object with these names (the others are skipped without being
    /// decoded: a feature's `properties` may carry large members Klaxon never reads).
    static func members(_ names: [String], of decoder: any Decoder) throws -> [String: JSONValue] {
        let c = try decoder.container(keyedBy: MemberKey.self)
        var out: [String: JSONValue] = [:]
        for name in names {
            let key = MemberKey(stringValue: name)
            if c.contains(key) { out[name] = try c.decode(JSONValue.self, forKey: key) }
        }
        return out
    }

    private struct MemberKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
