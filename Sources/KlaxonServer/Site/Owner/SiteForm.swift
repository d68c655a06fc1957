import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// A form the site's pages post (`application/x-www-form-urlencoded`), read strictly: a bounded
/// body, only the fields the action takes, each at most once, percent-encoding that decodes to
/// UTF-8 without control characters. Anything else is a clear 4xx, never a trap.
struct SiteForm: Sendable {
    var fields: [String: String]

    subscript(_ name: String) -> String? { fields[name] }

    /// The largest body a site form may have (its fields are short).
    static let maxBytes = 8 << 10
    /// The longest field value.
    static let maxValue = 1024

    /// Why a form was refused: the status and a message for people.
    struct Problem: Error, Sendable {
        var status: HTTPResponse.Status
        var message: String
    }

    /// Reads the request's form, taking only the `allowed` fields.
    static func read(_ request: Request, allowed: Set<String>) async -> Result<SiteForm, Problem> {
        let type = (request.headers[.contentType] ?? "").lowercased()
        guard
            type.split(separator: ";").first?.trimmingCharacters(in: .whitespaces)
                == "application/x-www-form-urlencoded"
        else {
            return .failure(
                Problem(
                    status: .unsupportedMediaType,
                    message: "The form must be sent as application/x-www-form-urlencoded."))
        }
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maxBytes {
            return .failure(tooLarge)
        }
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: maxBytes)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            return .failure(tooLarge)
        } catch let error as HTTPError where error.status == .serviceUnavailable {
            // The server's budget of buffered bodies is spent (see `BodyBudget`).
            return .failure(Problem(status: .serviceUnavailable, message: "Too many requests at once; try again."))
        } catch {
            return .failure(Problem(status: .badRequest, message: "The form could not be read."))
        }
        return parse(Array(body.readableBytesView), allowed: allowed)
    }

    static let tooLarge = Problem(status: .contentTooLarge, message: "The form is larger than \(maxBytes) bytes.")

    /// Parses a form body (exposed for tests): Hummingbird's `URLEncodedFormDecoder` reads it, and
    /// the site's rules stand on top: NAME=VALUE pairs only (no bare name, no empty pair), each
    /// percent-decoding to UTF-8; only the `allowed` fields, each at most once (the decoder refuses a
    /// repeat), short and without control characters.
    static func parse(_ bytes: [UInt8], allowed: Set<String>) -> Result<SiteForm, Problem> {
        guard bytes.count <= maxBytes else { return .failure(tooLarge) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            return .failure(bad("The form is not UTF-8."))
        }
        if text.isEmpty { return .success(SiteForm(fields: [:])) }
        let malformed = bad("The form is malformed (expected NAME=VALUE pairs joined by &).")
        // The decoder skips a pair without `=` and decodes broken UTF-8 as U+FFFD: the site refuses both.
        for pair in text.split(separator: "&", omittingEmptySubsequences: false) {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv.count == 2, decodes(kv[0]), decodes(kv[1]) else { return .failure(malformed) }
        }
        let fields: [String: String]
        do {
            fields = try URLEncodedFormDecoder().decode([String: String].self, from: text)
        } catch let error as URLEncodedFormError where error.code == .duplicateKeys {
            return .failure(bad("The form repeats the field \"\(String(error.value.prefix(40)))\"."))
        } catch {
            // `a[b]=…`, `a[]=…`: a structure, not a field of the site's.
            return .failure(malformed)
        }
        // In name order, so a form with several faults is always refused for the same one.
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard allowed.contains(name) else {
                return .failure(bad("The form has an unexpected field \"\(String(name.prefix(40)))\"."))
            }
            guard value.count <= maxValue else {
                return .failure(bad("The field \"\(name)\" is longer than \(maxValue) characters."))
            }
            guard !value.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) }) else {
                return .failure(bad("The field \"\(name)\" has control characters."))
            }
        }
        return .success(SiteForm(fields: fields))
    }

    /// Whether a name or value's percent-encoding decodes to UTF-8 (`+` is a space).
    static func decodes(_ s: Substring) -> Bool {
        String(s).replacingOccurrences(of: "+", with: " ").removingPercentEncoding != nil
    }

    static func bad(_ message: String) -> Problem { Problem(status: .badRequest, message: message) }

    /// A local path to go back to after a form (`back`, `next`): it must start with one `/` (no
    /// `//` or `/\`, which browsers read as another host), be short and printable ASCII without a
    /// backslash or characters a browser would have percent-encoded (`"<>` and the like); no scheme
    /// can follow a leading `/`. Anything else is nil: the caller's default.
    static func localPath(_ text: String?) -> String? {
        guard let t = text, t.hasPrefix("/"), !t.hasPrefix("//"), t.utf8.count <= 512,
            t.utf8.allSatisfy({ $0 > 32 && $0 < 127 && !notInPaths.contains($0) })
        else { return nil }
        return t
    }

    private static let notInPaths = Set("\\\"<>`".utf8)
}
