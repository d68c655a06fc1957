import KlaxonCore

/// An RFC 6901 JSON pointer: `""` (the whole document), `/data/0/temp_f`, with `~1` for `/` and
/// `~0` for `~` inside a name.
public struct JSONPointer: Sendable, Hashable, CustomStringConvertible {
    public let tokens: [String]
    public let description: String

    /// The longest pointer accepted, in bytes, and the most parts.
    static let maxBytes = 1_024
    static let maxTokens = 64

    /// The pointer `text` spells, or why it is not one.
    public static func read(_ text: String) -> Result<JSONPointer, PointerProblem> {
        guard text.utf8.count <= maxBytes else { return .failure(.init("is longer than \(maxBytes) bytes")) }
        guard !text.isEmpty else { return .success(JSONPointer(tokens: [], description: "")) }
        guard text.hasPrefix("/") else {
            return .failure(.init("must be \"\" (the whole document) or start with \"/\" (RFC 6901)"))
        }
        var tokens: [String] = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            var token = ""
            var escape = false
            for ch in raw {
                if escape {
                    switch ch {
                    case "0": token.append("~")
                    case "1": token.append("/")
                    default: return .failure(.init("has \"~\(ch)\": only ~0 (for ~) and ~1 (for /) are escapes"))
                    }
                    escape = false
                } else if ch == "~" {
                    escape = true
                } else {
                    token.append(ch)
                }
            }
            if escape { return .failure(.init("ends with a lone \"~\" (write ~0 for ~)")) }
            tokens.append(token)
        }
        guard tokens.count <= maxTokens else { return .failure(.init("has more than \(maxTokens) parts")) }
        return .success(JSONPointer(tokens: tokens, description: text))
    }

    public init?(_ text: String) {
        guard case .success(let p) = Self.read(text) else { return nil }
        self = p
    }

    private init(tokens: [String], description: String) {
        self.tokens = tokens
        self.description = description
    }

    /// Why a text is not a pointer.
    public struct PointerProblem: Error, Sendable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The value the pointer names in `root`, nil when it names nothing. An array is indexed by a
    /// decimal index without leading zeros (`-`, past the end, names nothing).
    func resolve(_ root: JSONValue) -> JSONValue? {
        var node = root
        for token in tokens {
            switch node {
            case .object(let o):
                guard let next = o[token] else { return nil }
                node = next
            case .array(let a):
                guard let i = Self.index(token), i < a.count else { return nil }
                node = a[i]
            default:
                return nil
            }
        }
        return node
    }

    static func index(_ token: String) -> Int? {
        guard !token.isEmpty, token.utf8.count <= 9, token.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
            token == "0" || !token.hasPrefix("0")
        else { return nil }
        return Int(token)
    }
}
