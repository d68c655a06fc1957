import KlaxonCore

/// A notifier whose platform can message one user directly (issue 43's watches): Slack's app mode
/// (`chat.postMessage` to a user id), a Mattermost bot (the direct channel of the bot and the
/// user) and a Telegram bot (`sendMessage` to the user's private chat). `direct(to:)` is the same
/// notifier, sharing its client (token, connections, timeout), with the user as its channel; nil
/// when `user` is not a user id of the platform or the receiver cannot send directly (an incoming
/// webhook).
public protocol DirectMessaging: Notifier {
    func direct(to user: String) -> (any Notifier)?
}

extension WebhookNotifier: DirectMessaging {
    public func direct(to user: String) -> (any Notifier)? {
        guard let app else { return nil }
        var copy = self
        switch app {
        case .slack(let api, _, let threadReplies):
            guard DirectReceiver.isUserID(user, platform: "slack") else { return nil }
            copy.app = .slack(api, channel: user, threadReplies: threadReplies)
        case .mattermost(let api, _), .mattermostDirect(let api, _):
            guard DirectReceiver.isUserID(user, platform: "mattermost") else { return nil }
            copy.app = .mattermostDirect(api, user: user)
        }
        return copy
    }
}

extension TelegramNotifier: DirectMessaging {
    public func direct(to user: String) -> (any Notifier)? {
        guard DirectReceiver.isUserID(user, platform: "telegram") else { return nil }
        var copy = self
        copy.config.chatID = user
        return copy
    }
}
