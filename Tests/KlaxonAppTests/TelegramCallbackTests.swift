import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Testing

/// Issue 41: a Telegram receiver's Ack and Silence 1h inline buttons. A flood fires and is sent to
/// the Telegram stand-in with its buttons; a press reaches the daemon's HTTP server as Telegram
/// posts a `callback_query` update to the bot's webhook, with `X-Telegram-Bot-Api-Secret-Token`
/// checked before anything else; the answer is the webhook reply `answerCallbackQuery`.
@Suite("Telegram buttons through the daemon's HTTP server", .serialized, .timeLimit(.minutes(10)))
struct TelegramCallbackTests {
    let rules = ChatButtonTests().rules

    /// A flood fires at 01646500 and is sent to the Telegram stand-in (buttons on).
    func floodFires(store: any Store, standIn: TelegramStandIn) async throws -> TelegramStandIn.Message {
        let now = Int64(Date().timeIntervalSince1970)
        try await store.write(
            SourceBatch(readings: [
                Reading(station: "01646500", metric: "gage_height", time: now - 60, value: 12.2, unit: "ft")
            ]), at: now)
        let routing = Routing(routes: [Route(receivers: ["tg"])])
        _ = try await Evaluate.run(store: store, rules: rules, now: now, routing: routing)
        let notifier = TelegramNotifier(
            config: .init(
                name: "tg", token: Secret(standIn.token), chatID: standIn.chat, url: standIn.url, buttons: true))
        let dispatcher = Dispatcher(
            store: store, notifiers: ["tg": notifier], routing: routing, settings: Dispatcher.Settings())
        let pass = try await dispatcher.runUntilEmpty(deadline: Int64.max)
        #expect(pass.sent == 1)
        #expect(standIn.problems == [])
        return try #require(standIn.messages.first)
    }

    /// A `callback_query` update as Telegram posts it.
    static func update(id: String, user: Int64, data: String) throws -> String {
        let body: [String: Any] = [
            "update_id": 10_000,
            "callback_query": [
                "id": id, "chat_instance": "-4455", "data": data,
                "from": ["id": user, "is_bot": false, "first_name": "Ana", "username": "ana"],
                "message": ["message_id": 101, "date": 1_772_373_600, "chat": ["id": -1_001_234_567_890]],
            ],
        ]
        return String(decoding: try JSONSerialization.data(withJSONObject: body), as: UTF8.self)
    }

    @Test(
        "a press acks the alert once; no, a wrong or an empty secret token is 401 and changes nothing; hostile callback data does nothing; a user chat.may_act does not name is told so"
    )
    func pressAcks() async throws {
        try await TelegramStandIn.with { standIn in
            let store = try tempStore()
            let server = await ButtonServer.start(store: store, rules: rules, responsePrefix: "http://127.0.0.1:1/")
            let outcome = await Result {
                let message = try await floodFires(store: store, standIn: standIn)
                let row = try #require(message.buttons.first)
                #expect(row.count == 2 && row[0].hasPrefix("ack:") && row[1].hasPrefix("silence_1h:"))
                let secret = [("X-Telegram-Bot-Api-Secret-Token", ButtonServer.telegramSecret)]
                func press(_ id: String, _ user: Int64, _ data: String, headers: [(String, String)]) async throws
                    -> (Int, [String: Any])
                {
                    let r = try await server.post(
                        "/chat/telegram", body: try Self.update(id: id, user: user, data: data),
                        contentType: "application/json", headers: headers)
                    return (r.0, (try? JSONSerialization.jsonObject(with: Data(r.1.utf8)) as? [String: Any]) ?? [:])
                }
                #expect(try await press("q1", 4242, row[0], headers: []).0 == 401)
                #expect(
                    try await press("q1", 4242, row[0], headers: [("X-Telegram-Bot-Api-Secret-Token", "wrong")]).0
                        == 401)
                #expect(
                    try await press("q1", 4242, row[0], headers: [("X-Telegram-Bot-Api-Secret-Token", "")]).0 == 401)
                #expect(try await store.acks().isEmpty)

                for hostile in ["ack:0", "ack:-1", "ack:1 ", "nuke:1", "ack:" + String(repeating: "9", count: 70), ""] {
                    let r = try await press("h-\(hostile.count)", 4242, hostile, headers: secret)
                    #expect(r.0 == 200 && r.1["text"] as? String == "This button does nothing.", "\(hostile)")
                }
                let mallory = try await press("q2", 666, row[0], headers: secret)
                #expect(mallory.0 == 200 && (mallory.1["text"] as? String)?.contains("may not ack") == true)
                #expect(try await store.acks().isEmpty)

                let ana = try await press("q3", 4242, row[0], headers: secret)
                #expect(ana.0 == 200)
                #expect(
                    ana.1["method"] as? String == "answerCallbackQuery" && ana.1["callback_query_id"] as? String == "q3"
                )
                let text = try #require(ana.1["text"] as? String)
                #expect(text.hasPrefix("Acked by @ana, ") && text.contains("flood-stage at 01646500"), "\(text)")
                #expect(text.count <= 200)
                #expect(try await store.acks().values.map(\.by) == ["telegram:4242"])
                let again = try await press("q3", 4242, row[0], headers: secret)
                #expect(again.1["text"] as? String == "This press was already handled.")
                // An update that is not a press is taken and ignored.
                let other = try await server.post(
                    "/chat/telegram", body: #"{"update_id": 1, "message": {"text": "hi"}}"#,
                    contentType: "application/json", headers: secret)
                #expect(other.0 == 200)
            }
            #expect(await server.stop())
            try outcome.get()
        }
    }
}
