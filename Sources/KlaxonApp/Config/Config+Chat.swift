import Foundation
import KlaxonCore
import Yams

/// `chat:` in `klaxon.yaml`: Slack's signing secret and response URLs, Mattermost's token, the chat
/// users who own trips and who may act.
extension Config {
    /// `chat: {slack: {signing_secret, response_url_prefix}, mattermost: {token}, users, may_act}`.
    mutating func loadChat(_ n: Node, _ reader: ConfigReader) {
        let file = reader.file
        guard var cm = file.map(n, what: "chat") else { return }
        if let sn = cm.value("slack"), var sm = file.map(sn, what: "chat.slack") {
            slackSigningSecret = reader.secret(&sm, "signing_secret", required: true, what: "chat.slack")
            if let pn = sm.value("response_url_prefix") {
                let given =
                    pn.scalar != nil
                    ? file.string(pn, what: "chat.slack.response_url_prefix").map { [$0] }
                    : file.stringList(pn, what: "chat.slack.response_url_prefix")
                if let given {
                    if let bad = given.first(where: { Self.responseURLPrefixProblem($0) != nil }) {
                        file.error(
                            pn,
                            "chat.slack.response_url_prefix \"\(String(bad.prefix(200)))\" \(Self.responseURLPrefixProblem(bad)!)"
                        )
                    } else if given.isEmpty {
                        file.error(pn, "chat.slack.response_url_prefix needs at least one URL prefix")
                    } else {
                        slackResponseURLPrefixes = given
                    }
                }
            }
            sm.rejectUnknown(known: ConfigKeys.chatSlack, what: "chat.slack")
        }
        if let mn = cm.value("mattermost"), var mm = file.map(mn, what: "chat.mattermost") {
            mattermostToken = reader.secret(&mm, "token", required: true, what: "chat.mattermost")
            mm.rejectUnknown(known: ConfigKeys.chatMattermost, what: "chat.mattermost")
        }
        if let tn = cm.value("telegram"), var tm = file.map(tn, what: "chat.telegram") {
            let token = reader.secret(&tm, "secret_token", required: true, what: "chat.telegram")
            // Telegram's own rule for `setWebhook`'s secret_token: 1 to 256 of A-Z, a-z, 0-9, _ and -.
            if let token, !Self.isTelegramSecretToken(token.value) {
                file.error(
                    tm.value("secret_token") ?? tm.value("secret_token_file") ?? tn,
                    "chat.telegram: secret_token must be 1 to 256 of A-Z, a-z, 0-9, _ and - (Telegram's rule)")
            } else {
                telegramSecretToken = token
            }
            tm.rejectUnknown(known: ConfigKeys.chatTelegram, what: "chat.telegram")
        }
        if let un = cm.value("users") { chatUsers = file.stringMap(un, what: "chat.users") ?? [:] }
        if let an = cm.value("may_act"), let names = file.stringList(an, what: "chat.may_act") {
            if let bad = names.first(where: {
                $0.trimmingCharacters(in: .whitespaces).isEmpty || $0.count > 200
            }) {
                file.error(an, "chat.may_act: \"\(String(bad.prefix(40)))\" is not a chat id or an owner name")
            } else {
                chatMayAct = names
            }
        }
        cm.rejectUnknown(known: ConfigKeys.chat, what: "chat")
    }

    static func isTelegramSecretToken(_ s: String) -> Bool {
        (1...256).contains(s.utf8.count)
            && s.utf8.allSatisfy {
                (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 45 || $0 == 95
            }
    }

    /// Why a string cannot be a `response_url` prefix (nil: it can): an absolute http(s) URL with a
    /// host, ending in `/` right after the host or a path (so `https://hooks.slack.com` cannot
    /// also allow `https://hooks.slack.com.evil.example/`), without credentials, query or spaces.
    static func responseURLPrefixProblem(_ prefix: String) -> String? {
        guard prefix.utf8.count <= 512 else { return "is longer than 512 bytes" }
        guard let c = URLComponents(string: prefix), let scheme = c.scheme?.lowercased(),
            scheme == "http" || scheme == "https", let host = c.host, !host.isEmpty
        else { return "must be an absolute http:// or https:// URL with a host" }
        if c.user != nil || c.password != nil || c.query != nil || c.fragment != nil {
            return "must not hold credentials, a query or a fragment"
        }
        if prefix.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7f }) {
            return "must not contain spaces"
        }
        guard prefix.hasSuffix("/"), !c.path.isEmpty else { return "must end with / (like https://hooks.slack.com/)" }
        return nil
    }
}
