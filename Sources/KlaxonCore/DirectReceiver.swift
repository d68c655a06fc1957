import Foundation

/// The receiver of a person's direct messages (issue 43): the app receiver that carries a platform's
/// direct messages (`watches.direct`) and the user it sends to, named `BASE+dm:USER`. Each person
/// is a receiver of their own to the outbox, the living messages and the quiet-hours digests, so
/// no group, message or timeline ever mixes two people's alerts; the dispatcher sends through the
/// base receiver's client (its connections, token and timeout), to the user.
public struct DirectReceiver: Sendable, Hashable {
    /// The configured receiver that carries the direct messages (`slack-app`).
    public var base: String
    /// The platform's id of the user (`U024BE7LH`, a Mattermost user id, a Telegram user id).
    public var user: String

    public init(base: String, user: String) {
        self.base = base
        self.user = user
    }

    /// What separates the base receiver's name from the user in `name`.
    public static let separator = "+dm:"

    /// `slack-app+dm:U024BE7LH`.
    public var name: String { base + Self.separator + user }

    /// The direct receiver `name` names; nil for any other name (a configured receiver's).
    public init?(name: String) {
        guard let r = name.range(of: Self.separator, options: .backwards) else { return nil }
        let base = String(name[..<r.lowerBound])
        let user = String(name[r.upperBound...])
        guard !base.isEmpty, Self.isUserID(user) else { return nil }
        self.init(base: base, user: user)
    }

    /// A user id as the platforms spell them: 1 to 64 of ASCII letters, digits, `_` and `-`.
    public static func isUserID(_ s: String) -> Bool {
        (1...64).contains(s.utf8.count)
            && s.utf8.allSatisfy {
                ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 95 || $0 == 45
            }
    }

    /// Whether `user` is a user id of `platform` a direct message can go to: Slack's `U…`/`W…`
    /// (capital letters and digits), Mattermost's 26 of `[a-z0-9]`, Telegram's positive integer
    /// (a private chat's id is its user's).
    public static func isUserID(_ user: String, platform: String) -> Bool {
        let bytes = Array(user.utf8)
        switch platform {
        case "slack":
            return (2...40).contains(bytes.count) && (bytes[0] == 85 || bytes[0] == 87)
                && bytes.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) }
        case "mattermost":
            return bytes.count == 26 && bytes.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 122) }
        case "telegram":
            return (1...15).contains(bytes.count) && bytes[0] != 48 && bytes.allSatisfy { $0 >= 48 && $0 <= 57 }
        default:
            return false
        }
    }

    /// The platforms direct messages go to.
    public static let platforms = ["slack", "mattermost", "telegram"]
}
