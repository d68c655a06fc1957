/// A payload a parser could not read. The description names the format, the line when there is
/// one, and what is wrong: `usgs-rdb:14: bad time '2016-13-09 00:00'`,
/// `cwms-json: missing field 'values'`. It never quotes more than a short excerpt of the payload.
public struct ParseError: Error, CustomStringConvertible, Sendable, Hashable {
    /// What kind of problem it is, so callers can decide without matching on text.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Code: Hashable, Sendable {
            case notTheFormat, malformed, missingField, badValue, serverError
        }
        private let code: Code

        /// The body is another format: an HTML error page, an XML document, JSON instead of RDB.
        public static let notTheFormat = Kind(code: .notTheFormat)
        /// The body is truncated or not well-formed.
        public static let malformed = Kind(code: .malformed)
        /// A field the format requires is absent (or null, or of the wrong type).
        public static let missingField = Kind(code: .missingField)
        /// A field is present but its value cannot be read (a time, a time zone, a series name).
        public static let badValue = Kind(code: .badValue)
        /// The body is the server's error document rather than data.
        public static let serverError = Kind(code: .serverError)

        public var description: String {
            switch code {
            case .notTheFormat: "not the format"
            case .malformed: "malformed"
            case .missingField: "missing field"
            case .badValue: "bad value"
            case .serverError: "server error"
            }
        }
    }

    public let kind: Kind
    /// The format being read: `usgs-iv-json`, `usgs-rdb`, `usgs-ogc-json`, `nwps-json`, `cwms-json`.
    public let format: String
    /// The 1-based line, for line-oriented formats.
    public let line: Int?
    public let message: String

    public init(_ kind: Kind, format: String, line: Int? = nil, _ message: String) {
        self.kind = kind
        self.format = format
        self.line = line
        self.message = message
    }

    public var description: String {
        if let line { return "\(format):\(line): \(message)" }
        return "\(format): \(message)"
    }
}

extension ParseError {
    /// At most `limit` characters of payload text, on one line, for quoting in a message.
    static func excerpt(_ text: some StringProtocol, limit: Int = 60) -> String {
        var out = ""
        var lastWasSpace = false
        var count = 0
        for ch in text {
            if ch.isWhitespace || ch.isNewline {
                if lastWasSpace || out.isEmpty { continue }
                lastWasSpace = true
                out.append(" ")
            } else {
                lastWasSpace = false
                out.append(ch)
            }
            count += 1
            if count >= limit {
                return out.trimmingTrailingSpace() + "…"
            }
        }
        return out.trimmingTrailingSpace()
    }
}

extension String {
    fileprivate func trimmingTrailingSpace() -> String {
        var s = self
        while s.last == " " { s.removeLast() }
        return s
    }
}
