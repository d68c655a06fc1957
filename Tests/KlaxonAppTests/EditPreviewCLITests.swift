import Foundation
import KlaxonCore
import KlaxonTesting
import Testing

/// Issue 41: `klaxon notify-test` and `klaxon dry-run --render` show the edit requests of a receiver
/// that edits beside its first post: `chat.update`, `PATCH …/messages/{id}`, Mattermost's patch,
/// `editMessageText`, Matrix's `m.replace`, ntfy's `X-Sequence-ID` publish. Bodies are JSON; no token
/// is ever printed (Telegram's and Discord's are in their request paths).
@Suite("edit bodies in notify-test and dry-run --render", .serialized, .timeLimit(.minutes(10)))
struct EditPreviewCLITests {
    /// The JSON bodies of an output: each block of lines after a `--- ` line, up to the next.
    static func blocks(_ stdout: String) -> [(header: String, body: [String: Any]?)] {
        var out: [(String, [String])] = []
        for line in stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("--- ") {
                out.append((String(line), []))
            } else if !out.isEmpty {
                out[out.count - 1].1.append(String(line))
            }
        }
        func object(_ text: String) -> [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        }
        // The body is the block, or its first line where a status line follows it (notify-test).
        return out.map { entry in
            (entry.0, object(entry.1.joined(separator: "\n")) ?? entry.1.first.flatMap(object))
        }
    }

    @Test("notify-test on a Slack app: posts, edits the same message in place, prints both bodies, no token")
    func notifyTestSlack() async throws {
        try await SlackStandIn.with { standIn in
            let s = try Scratch()
            let config = try s.write(
                "klaxon.yaml",
                """
                receivers:
                  - {name: chat, type: webhook, preset: slack, url: "\(standIn.url)", bot_token: "\(standIn.token)", channel: \(standIn.channel)}
                """)
            let run = try await klaxonAsync(["notify-test", "--config", config, "chat"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(standIn.problems == [])
            #expect(standIn.calls == ["chat.postMessage", "chat.update"])
            let message = try #require(standIn.messages.first)
            #expect(standIn.messages.count == 1 && message.edits == 1)
            #expect(message.text.contains("test sent") && message.text.contains("edited"), "\(message.text)")
            let blocks = Self.blocks(run.stdout)
            #expect(
                blocks.map { $0.header } == [
                    "--- post: message \(standIn.channel)/\(message.ts)", "--- edit: POST chat.update",
                ])
            #expect(blocks.first?.body?["channel"] as? String == standIn.channel)
            let edit = try #require(blocks.last?.body)
            #expect(edit["ts"] as? String == message.ts && edit["channel"] as? String == standIn.channel)
            #expect((edit["text"] as? String)?.contains("edited in place") == true)
            #expect(run.stdout.contains("edited it in place"))
            #expect(!run.stdout.contains(standIn.token) && !run.stderr.contains(standIn.token))
        }
    }

    @Test("notify-test on Telegram: editMessageText with the chat and message id; the token (in the path) never shown")
    func notifyTestTelegram() async throws {
        try await TelegramStandIn.with { standIn in
            let s = try Scratch()
            let config = try s.write(
                "klaxon.yaml",
                """
                receivers:
                  - {name: tg, type: telegram, url: "\(standIn.url)", bot_token: "\(standIn.token)", chat_id: "\(standIn.chat)"}
                """)
            let run = try await klaxonAsync(["notify-test", "--config", config, "tg"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(standIn.problems == [])
            let message = try #require(standIn.messages.first)
            #expect(standIn.messages.count == 1 && message.edits == 1)
            let blocks = Self.blocks(run.stdout)
            #expect(blocks.last?.header == "--- edit: POST …/bot<secret>/editMessageText")
            let edit = try #require(blocks.last?.body)
            #expect(edit["message_id"] as? Int == Int(message.id) && edit["parse_mode"] as? String == "HTML")
            #expect(!run.stdout.contains(standIn.token) && !run.stderr.contains(standIn.token))
            let tokenSecret = String(standIn.token.split(separator: ":").last ?? "")
            #expect(!run.stdout.contains(tokenSecret))
        }
    }

    @Test("notify-test on Discord: PATCH …/messages/{id}, the webhook's path (its token) not shown")
    func notifyTestDiscord() async throws {
        try await DiscordStandIn.with { standIn in
            let s = try Scratch()
            let config = try s.write(
                "klaxon.yaml", "receivers:\n  - {name: dc, type: webhook, preset: discord, url: \"\(standIn.url)\"}\n")
            let run = try await klaxonAsync(["notify-test", "--config", config, "dc"])
            #expect(run.status == 0, "\(run.stderr)")
            #expect(standIn.problems == [])
            let message = try #require(standIn.messages.first)
            #expect(standIn.messages.count == 1 && message.edits == 1)
            #expect(Self.blocks(run.stdout).map { $0.header }.last == "--- edit: PATCH …/messages/\(message.id)")
            #expect(Self.blocks(run.stdout).allSatisfy { $0.body != nil }, "\(run.stdout)")
            #expect(!run.stdout.contains(standIn.token) && !run.stderr.contains(standIn.token))
        }
    }

    @Test(
        "dry-run --render on a receiver that edits: the first post, then each change as the edit of it, with the timeline"
    )
    func dryRunRendersEdits() async throws {
        let s = try Scratch()
        try s.write(
            "rules/flood.yaml",
            """
            name: flood-stage
            kind: levels
            metric: gage_height
            levels: [{name: action, at: 9}, {name: minor, at: 11}]
            notify: [chat, mx]
            """)
        let config = try s.write(
            "klaxon.yaml",
            """
            rules: rules
            receivers:
              - {name: chat, type: webhook, preset: slack, url: "https://slack.example/api", bot_token: "xoxb-1234-5678-previewToken0123456789", channel: C0123ABCD}
              - {name: mx, type: matrix, url: "https://matrix.example.org", access_token: "syt_previewToken_0a1b2c", room_id: "!floodroom:example.org"}
            """)
        try s.write(
            "r.csv",
            """
            station,metric,time,value
            G1,gage_height,2026-03-01T14:00:00Z,9.5
            G1,gage_height,2026-03-01T14:05:00Z,11.5
            G1,gage_height,2026-03-01T16:40:00Z,4.0

            """)
        let run = await InProcess.dryRun(readings: [s.path("r.csv")], render: "chat", config: config)
        #expect(run.status == 0, "\(run.stderr)")
        let blocks = Self.blocks(run.stdout)
        #expect(blocks.count == 3, "\(run.stdout)")
        #expect(blocks.first?.header.hasSuffix("→ chat") == true)
        #expect(blocks.first?.body?["channel"] as? String == "C0123ABCD" && blocks.first?.body?["ts"] == nil)
        for b in blocks.dropFirst() {
            #expect(b.header.hasSuffix("→ chat, edits message-1: POST chat.update"), "\(b.header)")
            #expect(b.body?["ts"] as? String == "message-1" && b.body?["channel"] as? String == "C0123ABCD")
        }
        let last = blocks.last?.body?["text"] as? String ?? ""
        #expect(
            last.contains("firing at action 14:00 · rose to minor 14:05 · resolved 16:40"), "\(last)")
        #expect(!run.stdout.contains("previewToken"))

        let matrix = await InProcess.dryRun(readings: [s.path("r.csv")], render: "mx", config: config)
        #expect(matrix.status == 0, "\(matrix.stderr)")
        let events = Self.blocks(matrix.stdout)
        #expect(events.count == 3, "\(matrix.stdout)")
        let edit = try #require(events.last?.body)
        let relates = edit["m.relates_to"] as? [String: Any]
        #expect(relates?["rel_type"] as? String == "m.replace" && relates?["event_id"] as? String == "message-1")
        #expect(events.last?.header.contains("edits message-1: PUT /_matrix/client/v3/rooms/") == true)
        #expect(!matrix.stdout.contains("previewToken"))
    }
}
