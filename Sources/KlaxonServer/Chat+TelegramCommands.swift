import Foundation
import Hummingbird
import KlaxonCore
import KlaxonStore

/// Messages to the bot through `POST /chat/telegram` (issue 43): `/watch gauge 01646500 minor`,
/// `/watching`, `/unwatch 1` and every other chat command, also as `/watch@BotName …`, and without
/// the slash in the person's private chat with the bot (in a group, only text that starts with
/// `/` is a command: the rest is people talking). The webhook's secret token was checked before
/// the update was read (`TelegramCallbackEndpoint`). The command is answered by the same
/// `answer(user, text)` as Slack's and Mattermost's, as the person (`from.id`) in that chat; a
/// watch made in a private chat is delivered as direct messages. The answer is the webhook's
/// reply: a `sendMessage` to that chat, HTML with everything escaped, within Telegram's 4,096
/// characters. An update Telegram sends again (`update_id`) is answered once.
enum TelegramCommandEndpoint {
    /// The most characters of an answer sent (Telegram's limit is 4,096 once entities are read).
    static let answerLimit = 4000
    /// The most bytes of a message's text read as a command (Telegram's own limit is 4,096 characters).
    static let maxText = 16 << 10

    /// Answers `message` (an update's `message` object): a `sendMessage` reply, or 200 and nothing
    /// for what is not a command (no text, a bot's message, chatter in a group, a resent update).
    static func handle(
        _ message: [String: JSONValue], updateID: Double?, seen: any ReplayGuard, now: Int64,
        answer: ChatEndpoints.Answer
    ) async throws -> Response {
        guard let text = message["text"]?.string, text.utf8.count <= maxText,
            let from = message["from"]?.object, from["is_bot"]?.bool != true,
            let userID = integer(from["id"]), userID > 0,
            let chat = message["chat"]?.object, let chatID = integer(chat["id"])
        else { return Response(status: .ok) }
        let isPrivate = chat["type"]?.string == "private"
        guard let command = command(text, isPrivate: isPrivate) else { return Response(status: .ok) }
        if let updateID, updateID == updateID.rounded(), abs(updateID) < 1e15 {
            let key = "telegram-update:\(Int64(updateID))"
            guard try await seen.claimOnce(key: key, expires: now + TelegramCallbackEndpoint.remember, now: now)
            else { return Response(status: .ok) }
        }
        let shownName = from["username"]?.string.map { "@" + $0 } ?? from["first_name"]?.string ?? String(userID)
        let user = ChatEndpoints.User(
            platform: "telegram", team: nil, user: String(userID), name: String(shownName.prefix(80)),
            channel: String(chatID), direct: isPrivate)
        let reply = await answer(user, command)
        return KlaxonHTTP.json(
            encoded: Send(method: "sendMessage", chatID: chatID, text: html(reply), parseMode: "HTML"), status: .ok)
    }

    /// A whole number of a JSON value, within ±10^15 (Telegram's ids fit in 52 bits).
    static func integer(_ v: JSONValue?) -> Int64? {
        guard let n = v?.number, n == n.rounded(), abs(n) < 1e15 else { return nil }
        return Int64(n)
    }

    /// The command of a message's text: `/watch@BotName gauge X minor` → `watch gauge X minor`;
    /// `/start` (what Telegram sends when a person opens the bot) → `help`; text without the slash
    /// only in a private chat. Nil: not a command.
    static func command(_ text: String, isPrivate: Bool) -> String? {
        let trimmed = text.drop { $0.isWhitespace }
        guard !trimmed.isEmpty else { return nil }
        guard trimmed.first == "/" else { return isPrivate ? String(trimmed) : nil }
        let first = trimmed.dropFirst().prefix { !$0.isWhitespace }
        let rest = trimmed.dropFirst(1 + first.count)
        var verb = Substring(first)
        if let at = verb.firstIndex(of: "@") {
            // `/watch@KlaxonBot`: a bot's username is 5 to 32 of ASCII letters, digits and `_`.
            let bot = verb[verb.index(after: at)...]
            guard (1...64).contains(bot.utf8.count),
                bot.utf8.allSatisfy({
                    ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || $0 == 95
                })
            else { return nil }
            verb = verb[..<at]
        }
        guard !verb.isEmpty else { return nil }
        if verb.lowercased() == "start" { return "help" }
        return String(verb) + rest
    }

    /// The answer as Telegram HTML: cut to `answerLimit` characters, every character escaped, and
    /// the answers' Markdown code (`` `watching` ``, a ```` ``` ```` block) as `<code>` and `<pre>`,
    /// tags only in pairs Klaxon writes (a stray backtick stays a backtick).
    static func html(_ text: String) -> String {
        var plain = text
        if plain.count > answerLimit { plain = String(plain.prefix(answerLimit - 1)) + "…" }
        let blocks = plain.components(separatedBy: "```")
        var out = ""
        for (i, block) in blocks.enumerated() {
            if i % 2 == 1 && i < blocks.count - 1 {
                var body = Substring(block)
                if body.hasPrefix("\n") { body = body.dropFirst() }
                if body.hasSuffix("\n") { body = body.dropLast() }
                out += "<pre>" + Escape.telegram(String(body)) + "</pre>"
                continue
            }
            if i % 2 == 1 { out += "```" }
            let spans = block.components(separatedBy: "`")
            for (j, span) in spans.enumerated() {
                if j % 2 == 1 && j < spans.count - 1 {
                    out += "<code>" + Escape.telegram(span) + "</code>"
                } else {
                    out += (j % 2 == 1 ? "`" : "") + Escape.telegram(span)
                }
            }
        }
        return out
    }

    struct Send: Encodable {
        var method: String
        var chatID: Int64
        var text: String
        var parseMode: String

        enum CodingKeys: String, CodingKey {
            case method
            case chatID = "chat_id"
            case text
            case parseMode = "parse_mode"
        }
    }
}
