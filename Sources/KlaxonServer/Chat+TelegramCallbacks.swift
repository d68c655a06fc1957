import Foundation
import HTTPTypes
import Hummingbird
import KlaxonCore
import KlaxonStore
import NIOCore

/// `POST /chat/telegram`: the bot's webhook (Telegram's `setWebhook` with `secret_token`), which
/// receives the presses of a Telegram receiver's Ack and Silence 1h inline buttons as
/// `callback_query` updates. Telegram sends the secret token as `X-Telegram-Bot-Api-Secret-Token`
/// with every update: it is checked first, in constant time, before a byte of the body is read; a
/// request without it or with another is refused with 401. The button's `callback_data`
/// (`ack:123`) comes from the client and is read strictly (`TelegramCallbackData`); who pressed is
/// `from.id`, checked against `chat.may_act` by `act` like every other door. A press acts once (its
/// callback id is remembered a day): Telegram's resend of an update is answered, not acted on
/// again. The answer is the webhook's reply: an `answerCallbackQuery` method call whose `text`
/// (at most 200 characters) Telegram shows the presser.
enum TelegramCallbackEndpoint {
    /// An update is a small JSON object (a callback query with its message: a few kilobytes).
    static let maxBody = 64 << 10
    /// The header Telegram sends the webhook's secret token in.
    static let header = HTTPField.Name("X-Telegram-Bot-Api-Secret-Token")!
    /// How long a press's callback id is remembered.
    static let remember: Int64 = 86_400
    /// Telegram's limit on the text of `answerCallbackQuery`.
    static let answerLimit = 200

    static func add(
        to router: Router<BasicRequestContext>, settings: ChatEndpoints.Settings, seen: any ReplayGuard,
        now: @escaping @Sendable () -> Int64, answer command: @escaping ChatEndpoints.Answer,
        act: @escaping ChatEndpoints.Act
    ) {
        router.post("/chat/telegram") { request, _ -> Response in
            guard let secret = settings.telegramSecretToken else { return Response(status: .notFound) }
            // Never compare with an empty (or placeholder) token: anyone could send that.
            guard ServerSecrets.usable(secret), let given = request.headers[header], given.utf8.count <= 256,
                ChatEndpoints.equal(given, secret)
            else { return APIError(.unauthorized, "missing or wrong X-Telegram-Bot-Api-Secret-Token").response }
            let body = try await request.collectBody(upTo: maxBody)
            guard let update = JSONValue.parse(body.readableBytesView)?.object else {
                return APIError(.badRequest, "the update is not a JSON object").response
            }
            // A message to the bot: a command (issue 43).
            if let message = update["message"]?.object {
                return try await TelegramCommandEndpoint.handle(
                    message, updateID: update["update_id"]?.number, seen: seen, now: now(), answer: command)
            }
            // Anything else (an edited message, a member change): taken, ignored.
            guard let query = update["callback_query"]?.object else { return Response(status: .ok) }
            guard let id = query["id"]?.string, !id.isEmpty, id.utf8.count <= 64,
                let from = query["from"]?.object, let number = from["id"]?.number, number == number.rounded(),
                abs(number) < 1e15
            else { return APIError(.badRequest, "the callback query names no id or user").response }
            let userID = String(Int64(number))
            let shownName = from["username"]?.string.map { "@" + $0 } ?? from["first_name"]?.string ?? userID
            let user = ChatEndpoints.User(
                platform: "telegram", team: nil, user: userID, name: String(shownName.prefix(80)))
            guard let data = query["data"]?.string, let press = TelegramCallbackData.read(data) else {
                return answer(id, "This button does nothing.")
            }
            let at = now()
            let seenKey = "telegram:" + id
            guard try await seen.claimOnce(key: seenKey, expires: at + remember, now: at) else {
                return answer(id, "This press was already handled.")
            }
            let outcome = await act(ChatEndpoints.Press(user: user, action: press.action, episode: press.episode), at)
            switch outcome {
            case .done(let summary):
                let verb = press.action.doneVerb
                return answer(id, "\(verb) by \(user.name), \(ChatText.clock(at)) UTC: \(summary)")
            case .refused(let why), .failed(let why):
                // Nothing was done: the button may still be used (by someone who may act).
                try await seen.releaseOnce(key: seenKey)
                return answer(id, why)
            }
        }
    }

    /// The webhook's reply: `answerCallbackQuery` for the press, with `text` (plain, no parse mode:
    /// nothing in it is markup) cut to Telegram's 200 characters.
    static func answer(_ id: String, _ text: String) -> Response {
        let cut = text.count > answerLimit ? String(text.prefix(answerLimit - 1)) + "…" : text
        return KlaxonHTTP.json(
            encoded: Answer(method: "answerCallbackQuery", callbackQueryID: id, text: cut), status: .ok)
    }

    struct Answer: Encodable {
        var method: String
        var callbackQueryID: String
        var text: String

        enum CodingKeys: String, CodingKey {
            case method
            case callbackQueryID = "callback_query_id"
            case text
        }
    }
}
