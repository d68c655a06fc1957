import Foundation

/// An error that can say what went wrong in a sentence for people (not a Swift debug description).
/// Library errors get it by conformances beside the code that links the library: NIO's and
/// AsyncHTTPClient's in KlaxonSources, SQLite's in KlaxonSQLite, PostgreSQL's in KlaxonPostgres.
public protocol WordedError: Error {
    /// One sentence, lower-case first, no trailing period: `connection refused`.
    var words: String { get }
}

/// Errors in words, for the log's `error=` and the command line's `error: …`.
public enum ErrorWords {
    /// `error` as a sentence: its own words when it has some (`WordedError`), else what Foundation
    /// knows (`DecodingError`, `LocalizedError`, a POSIX error), else its description.
    public static func describe(_ error: any Error) -> String {
        switch error {
        case let e as any WordedError:
            return e.words
        case is CancellationError:
            return "cancelled"
        case let e as DecodingError:
            return decoding(e)
        case let e as EncodingError:
            if case .invalidValue(_, let context) = e { return "cannot encode: \(context.debugDescription)" }
            return "cannot encode"
        case let e as POSIXError:
            return errno(e.code.rawValue)
        case let e as any LocalizedError:
            if let text = e.errorDescription { return text }
            return String(describing: e)
        default:
            let ns = error as NSError
            if ns.domain == NSPOSIXErrorDomain { return errno(Int32(ns.code)) }
            return String(describing: error)
        }
    }

    /// `strerror` in lower case: `address already in use`.
    public static func errno(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        let s = String(cString: text)
        return s.prefix(1).lowercased() + s.dropFirst()
    }

    /// A decoding error as a path and what was wrong: `at sources[2].url: expected a string`.
    static func decoding(_ e: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            var out = ""
            for key in context.codingPath {
                if let i = key.intValue {
                    out += "[\(i)]"
                } else {
                    out += (out.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return out.isEmpty ? "" : " at \(out)"
        }
        switch e {
        case .typeMismatch(let type, let c):
            return "cannot decode\(path(c)): expected \(type)"
        case .valueNotFound(let type, let c):
            return "cannot decode\(path(c)): a \(type) is missing"
        case .keyNotFound(let key, let c):
            return "cannot decode\(path(c)): the key \"\(key.stringValue)\" is missing"
        case .dataCorrupted(let c):
            return "cannot decode\(path(c)): \(c.debugDescription)"
        @unknown default:
            return "cannot decode"
        }
    }
}
