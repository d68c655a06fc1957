import Crypto
import Foundation
import KlaxonCore

/// The signed context of Klaxon's Mattermost message buttons. Mattermost posts a pressed button's
/// `context` back to the integration URL with nothing that proves where it came from, so Klaxon
/// signs the context it puts in each button and checks it when a press arrives:
///
///     {"action": "ack", "episode": "123", "issued": "1767225600", "nonce": "<32 hex>", "sig": "<64 hex>"}
///
/// `sig` is hex HMAC-SHA256 over `klaxon-mm-v1\naction\nepisode\nissued\nnonce` with a key derived from
/// the Mattermost token (HMAC-SHA256(token, "klaxon-mattermost-actions")): changing the token
/// voids every button. A press is taken when the signature matches (compared in constant time),
/// the context was issued at most `maxAge` ago, and its nonce has not acted before.
public enum MattermostActions {
    /// Where Mattermost posts presses, under `external_url`.
    public static let path = "/chat/mattermost/actions"

    /// How long a button works after its message was made (seconds): a day. After that, `ack ID`.
    public static let maxAge: Int64 = 86_400

    /// The key buttons are signed with. It never prints.
    public struct Key: Sendable, CustomStringConvertible {
        let bytes: [UInt8]
        var symmetric: SymmetricKey { SymmetricKey(data: bytes) }
        public var description: String { "<secret>" }
    }

    /// The signing key of a Mattermost token.
    public static func key(token: String) -> Key {
        let derived = HMAC<SHA256>.authenticationCode(
            for: Data("klaxon-mattermost-actions".utf8), using: SymmetricKey(data: Data(token.utf8)))
        return Key(bytes: Array(derived))
    }

    /// The signed context of a button for `action` on `episode`, issued at `now`.
    public static func context(
        _ action: ChatAction, episode: Int64, key: Key, now: Int64, nonce: String = newNonce()
    ) -> [String: String] {
        let fields = ["action": action.rawValue, "episode": String(episode), "issued": String(now), "nonce": nonce]
        var out = fields
        out["sig"] = signature(fields, key: key)
        return out
    }

    /// 16 random bytes in hex.
    public static func newNonce() -> String {
        UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// A context that verified.
    public struct Verified: Sendable, Equatable {
        public var action: ChatAction
        public var episode: Int64
        public var issued: Int64
        public var nonce: String
    }

    /// Why a context was not taken.
    public enum Refusal: Error, Equatable {
        /// Missing fields, wrong shapes or a signature that does not match: forged or tampered.
        case forged
        /// Signed, but older than `maxAge` (or dated ahead of `now` by more than `skew`).
        case expired
    }

    /// Checks a pressed button's context: its shape, then its signature, then its age.
    public static func verify(_ context: JSONValue?, key: Key, now: Int64, skew: Int64 = 300) -> Result<
        Verified, Refusal
    > {
        guard let c = context?.object, let actionText = c["action"]?.string,
            let episodeText = c["episode"]?.string, let issuedText = c["issued"]?.string,
            let nonce = c["nonce"]?.string, let sig = c["sig"]?.string,
            actionText.utf8.count <= 32, isHex(nonce, count: 32), isHex(sig, count: 64),
            let action = ChatAction(rawValue: actionText),
            let episode = ChatEndpoints.strictInteger(episodeText, in: 1...Int64.max),
            let issued = ChatEndpoints.strictInteger(issuedText, in: ChatEndpoints.timestampRange)
        else { return .failure(.forged) }
        let fields = ["action": actionText, "episode": episodeText, "issued": issuedText, "nonce": nonce]
        guard ChatEndpoints.equal(sig, signature(fields, key: key)) else { return .failure(.forged) }
        guard issued <= now + skew, now - issued <= maxAge else { return .failure(.expired) }
        return .success(Verified(action: action, episode: episode, issued: issued, nonce: nonce))
    }

    static func signature(_ fields: [String: String], key: Key) -> String {
        let message = ["klaxon-mm-v1", fields["action"], fields["episode"], fields["issued"], fields["nonce"]]
            .map { $0 ?? "" }.joined(separator: "\n")
        let mac = HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: key.symmetric)
        return mac.map { String(format: "%02x", $0) }.joined()
    }

    static func isHex(_ s: String, count: Int) -> Bool {
        s.utf8.count == count && s.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}
