import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

/// Issue 41's "Done when", per platform, through `klaxon run`: a flood rises action → minor →
/// moderate, is acked, and resolves; the platform's stand-in then holds exactly one message whose
/// text shows the whole timeline. The same with the daemon killed (SIGKILL) and started again
/// between the levels: the message's reference is in the database, so the next daemon edits the
/// same message. Every wait is on an event (the daemon's notification history, the stand-in's
/// message), never on a sleep.
@Suite("living messages through klaxon run, per platform", .serialized, .timeLimit(.minutes(10)))
struct LivingMessageDaemonTests {
    enum Platform: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case discord, slack, mattermost, telegram, matrix, ntfy
        var testDescription: String { rawValue }
    }

    /// A stand-in as the story sees it: the receiver's YAML, and the texts of its messages (top
    /// level: a Slack thread reply is not another message).
    struct Chat: Sendable {
        var receiver: String
        var texts: @Sendable () -> [String]
        var problems: @Sendable () -> [String]
    }

    static func withChat(_ platform: Platform, _ body: (Chat) async throws -> Void) async throws {
        switch platform {
        case .discord:
            try await DiscordStandIn.with { s in
                try await body(
                    Chat(
                        receiver: "{name: chat, type: webhook, preset: discord, url: \"\(s.url)\"}",
                        texts: { s.messages.map(\.content) }, problems: { s.problems }))
            }
        case .slack:
            try await SlackStandIn.with { s in
                try await body(
                    Chat(
                        receiver:
                            "{name: chat, type: webhook, preset: slack, url: \"\(s.url)\", bot_token: \"\(s.token)\", channel: \(s.channel)}",
                        texts: { s.topLevel.map(\.text) }, problems: { s.problems }))
            }
        case .mattermost:
            try await MattermostStandIn.with { s in
                try await body(
                    Chat(
                        receiver:
                            "{name: chat, type: webhook, preset: mattermost, url: \"\(s.url)\", bot_token: \"\(s.token)\", channel: \(s.channel)}",
                        texts: { s.posts.map(\.message) }, problems: { s.problems }))
            }
        case .telegram:
            try await TelegramStandIn.with { s in
                try await body(
                    Chat(
                        receiver:
                            "{name: chat, type: telegram, url: \"\(s.url)\", bot_token: \"\(s.token)\", chat_id: \"\(s.chat)\"}",
                        texts: { s.messages.map(\.text) }, problems: { s.problems }))
            }
        case .matrix:
            try await MatrixStandIn.with { s in
                try await body(
                    Chat(
                        receiver:
                            "{name: chat, type: matrix, url: \"\(s.url)\", access_token: \"\(s.token)\", room_id: \"\(s.room)\"}",
                        texts: { s.messages.map(\.body) }, problems: { s.problems }))
            }
        case .ntfy:
            try await NtfyStandIn.with { s in
                try await body(
                    Chat(
                        receiver:
                            "{name: chat, type: ntfy, url: \"\(s.url)\", topic: \(s.topic), token: \"\(s.token)\"}",
                        texts: { s.notifications.map(\.message) }, problems: { s.problems }))
            }
        }
    }

    /// The daemon's config: one gauge's flood levels, notified to `chat`.
    static func config(_ s: Scratch, receiver: String) throws -> String {
        try s.write(
            "rules/flood.yaml",
            """
            name: flood-stage
            kind: levels
            metric: gage_height
            levels: [{name: action, at: 9}, {name: minor, at: 11}, {name: moderate, at: 13}]
            notify: [chat]
            """)
        return try s.write(
            "klaxon.yaml",
            """
            database: k.sqlite
            rules: [rules]
            listen: 127.0.0.1:0
            api: {token: s3cret}
            receivers:
              - \(receiver)
            """)
    }

    /// `HH:MM` of a time, as a timeline shows it (UTC).
    static func clock(_ t: Int64) -> String { String(Timestamp.format(t).dropFirst(11).prefix(5)) }

    /// The daemon's deliveries to `chat` that went out, and the alert's id (from its history).
    static func delivered(_ daemon: DaemonProcess) async throws -> (count: Int, alert: Int64?) {
        let (status, text) = try await http(
            "GET", daemon.base + "/api/v1/notifications?receiver=chat", token: "s3cret")
        guard status == 200, let page = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let items = page["notifications"] as? [[String: Any]]
        else { return (0, nil) }
        let sent = items.filter { $0["state"] as? String == "delivered" }
        let id = (sent.first?["alert"] as? [String: Any])?["id"] as? Int
        return (sent.count, id.map(Int64.init))
    }

    @Test(
        "action → minor → moderate, acked, resolved: one message with the whole timeline", arguments: Platform.allCases)
    func story(_ platform: Platform) async throws {
        try await Self.withChat(platform) { chat in try await Self.tell(chat, killing: false) }
    }

    @Test("the same with the daemon SIGKILLed and started again between the levels", arguments: Platform.allCases)
    func storyAcrossKills(_ platform: Platform) async throws {
        try await Self.withChat(platform) { chat in try await Self.tell(chat, killing: true) }
    }

    static func tell(_ chat: Chat, killing: Bool) async throws {
        let s = try Scratch()
        let config = try Self.config(s, receiver: chat.receiver)
        // Whole minutes a quarter of an hour ago, so the timeline's HH:MM are the readings' own.
        let t0 = (Int64(Date().timeIntervalSince1970) - 900) / 60 * 60
        let levels: [(Int64, Double, String)] = [
            (t0, 9.5, "firing at action"), (t0 + 60, 11.5, "rose to minor"), (t0 + 120, 13.5, "rose to moderate"),
        ]
        var daemon = try await DaemonProcess.start(config: config, in: s.dir)
        do {
            var alert: Int64?
            for (i, (time, feet, words)) in levels.enumerated() {
                if killing && i > 0 {
                    // Killed between the levels: nothing in memory survives; the database does.
                    await daemon.killIfRunning()
                    daemon = try await DaemonProcess.start(config: config, in: s.dir)
                }
                let csv = "station,metric,time,value\nG1,gage_height,\(Timestamp.format(time)),\(feet)\n"
                let pushed = try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret")
                #expect(pushed.0 == 200, "\(pushed.1)")
                let d = daemon
                try await poll(until: "the \(words) notification is delivered and recorded") {
                    let (count, id) = try await Self.delivered(d)
                    alert = id ?? alert
                    return count == i + 1
                }
                #expect(chat.texts().count == 1, "\(chat.texts())")
                #expect(chat.texts().first?.contains("\(words) \(Self.clock(time))") == true, "\(chat.texts())")
            }
            let id = try #require(alert)
            let beforeAck = Int64(Date().timeIntervalSince1970)
            let acked = try await http(
                "POST", daemon.base + "/api/v1/alerts/\(id)/ack", body: #"{"by": "ana"}"#, token: "s3cret")
            #expect(acked.0 == 200, "\(acked.1)")
            // The ack's time (the daemon's clock, to the second) is before the resolve's reading:
            // wait for the next second, then read at it.
            let afterAck = Int64(Date().timeIntervalSince1970)
            try await poll(until: "the clock passes the ack's second") {
                Int64(Date().timeIntervalSince1970) > afterAck
            }
            let end = Int64(Date().timeIntervalSince1970)
            let csv = "station,metric,time,value\nG1,gage_height,\(Timestamp.format(end)),4.2\n"
            #expect(try await http("POST", daemon.base + "/api/v1/readings", body: csv, token: "s3cret").0 == 200)
            let d = daemon
            try await poll(until: "the resolve is delivered") { try await Self.delivered(d).count >= 4 }

            #expect(chat.problems() == [])
            let texts = chat.texts()
            #expect(texts.count == 1, "exactly one message: \(texts)")
            // The ack's minute: the one before or after the call (a minute may turn during it).
            let timelines = Set([beforeAck, afterAck]).map {
                "firing at action \(Self.clock(t0)) · rose to minor \(Self.clock(t0 + 60)) · rose to moderate \(Self.clock(t0 + 120)) · acked by ana \(Self.clock($0)) · resolved \(Self.clock(end))"
            }
            let text = texts.first ?? ""
            #expect(timelines.contains { text.contains($0) }, "\(text)\nwanted: \(timelines)")
        } catch {
            await daemon.killIfRunning()
            throw error
        }
        #expect(await daemon.stop() == 0)
    }
}
