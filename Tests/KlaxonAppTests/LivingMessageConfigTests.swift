import Foundation
import KlaxonApp
import KlaxonDelivery
import Testing

/// Issue 41: `edit:` on every receiver (living messages on by default; `false` turns them off on any
/// platform); anything but a boolean is an error at its line.
@Suite struct LivingMessageConfigTests {
    static let yaml = """
        receivers:
          - name: on
            type: webhook
            preset: discord
            url: https://discord.com/api/webhooks/1/token
          - name: off
            type: webhook
            preset: discord
            url: https://discord.com/api/webhooks/1/token
            edit: false
          - name: mail
            type: email
            smtp_url: smtp://127.0.0.1:2525
            from: klaxon@example.org
            to: ops@example.org
            edit: false
          - name: out
            type: stdout
            edit: true
        """

    @Test("edit: defaults to true, is read on every receiver type, and false reaches the notifier")
    func editKey() throws {
        let s = try Scratch()
        let config = try Config.load(path: try s.write("klaxon.yaml", Self.yaml), environment: [:])
        let hooks = Dictionary(
            uniqueKeysWithValues: config.receivers.compactMap { r -> (String, Receiver.Webhook)? in
                if case .webhook(let w) = r { return (w.name, w) }
                return nil
            })
        #expect(hooks["on"]?.edit == true)
        #expect(hooks["off"]?.edit == false)
        #expect(try WebhookNotifier(config: try #require(hooks["on"])).editsMessages)
        #expect(try !WebhookNotifier(config: try #require(hooks["off"])).editsMessages)
        #expect(config.receivers.count == 4)
    }

    @Test("edit: that is not a boolean is an error at its line")
    func editMustBeBoolean() throws {
        let s = try Scratch()
        let bad = Self.yaml.replacingOccurrences(
            of: "edit: false\n  - name: mail", with: "edit: sometimes\n  - name: mail")
        #expect(bad != Self.yaml)
        let path = try s.write("klaxon.yaml", bad)
        do {
            _ = try Config.load(path: path, environment: [:])
            Issue.record("edit: sometimes was accepted")
        } catch {
            #expect("\(error)".contains("\(path):10:"), "\(error)")
        }
    }
    static let apps = """
        chat:
          telegram:
            secret_token: tg-secret_0123456789
        receivers:
          - name: slack-app
            type: webhook
            preset: slack
            bot_token: xoxb-1234-5678-abcdefghijklmnop
            channel: C0123ABCD
            thread_replies: true
          - name: mm-bot
            type: webhook
            preset: mattermost
            url: https://chat.example.org
            bot_token: mmbottoken0123456789abcdef
            channel: 4xp9fdt77pncbef59f4k1qe83o
          - name: slack-hook
            type: webhook
            preset: slack
            url: https://hooks.slack.com/services/T0/B0/XXXX
          - name: tg
            type: telegram
            bot_token: 123456789:AAHstandInToken_abcdefghijklmnopqrstu
            chat_id: -1001234567890
            buttons: true
          - name: mx
            type: matrix
            url: https://matrix.example.org
            access_token: syt_a2xheG9u_token_0a1b2c
            room_id: "!floodroom:example.org"
          - name: nt
            type: ntfy
            topic: floods
            token: tk_0123456789abcdef
        """

    @Test(
        "bot_token puts Slack and Mattermost receivers in app mode (they edit); Telegram is a receiver type of its own")
    func appModes() throws {
        let s = try Scratch()
        let config = try Config.load(path: try s.write("klaxon.yaml", Self.apps), environment: [:])
        var hooks: [String: Receiver.Webhook] = [:]
        var telegram: Receiver.Telegram?
        var matrix: Receiver.Matrix?
        var ntfy: Receiver.Ntfy?
        for r in config.receivers {
            switch r {
            case .webhook(let w): hooks[w.name] = w
            case .telegram(let t): telegram = t
            case .matrix(let m): matrix = m
            case .ntfy(let n): ntfy = n
            default: break
            }
        }
        let slack = try #require(hooks["slack-app"])
        #expect(slack.url.value == "https://slack.com/api" && slack.channel == "C0123ABCD" && slack.threadReplies)
        #expect(slack.botToken?.description == "<secret>")
        #expect(try WebhookNotifier(config: slack).editsMessages)
        let mm = try #require(hooks["mm-bot"])
        #expect(mm.url.value == "https://chat.example.org" && mm.botToken != nil)
        #expect(try WebhookNotifier(config: mm).editsMessages)
        #expect(try !WebhookNotifier(config: try #require(hooks["slack-hook"])).editsMessages)
        let tg = try #require(telegram)
        #expect(tg.chatID == "-1001234567890" && tg.buttons && tg.url == "https://api.telegram.org")
        #expect(TelegramNotifier(config: tg).editsMessages)
        #expect(config.telegramSecretToken?.value == "tg-secret_0123456789")
        let nt = try #require(ntfy)
        #expect(nt.url == "https://ntfy.sh" && nt.topic == "floods" && nt.token?.description == "<secret>")
        #expect(NtfyNotifier(config: nt).editsMessages)
        let mx = try #require(matrix)
        #expect(mx.roomID == "!floodroom:example.org" && mx.url == "https://matrix.example.org")
        #expect(MatrixNotifier(config: mx).editsMessages && mx.token.description == "<secret>")
    }

    @Test(
        "app-mode mistakes are errors at their line: bot_token on discord, no channel, a bad Slack or Mattermost channel, thread_replies on mattermost, a channel without bot_token",
        arguments: [
            ("preset: slack\n    bot_token: xoxb-1\n    channel: C1\n", "", nil),
            (
                "preset: discord\n    url: https://discord.com/api/webhooks/1/t\n    bot_token: x\n    channel: C1\n",
                "are for preset slack or mattermost", 6
            ),
            ("preset: slack\n    bot_token: xoxb-1\n", "needs the channel to post to", 2),
            ("preset: slack\n    bot_token: xoxb-1\n    channel: general\n", "must be a Slack channel id", 6),
            (
                "preset: mattermost\n    url: https://mm.example.org\n    bot_token: t\n    channel: C1\n",
                "must be a Mattermost channel id", 7
            ),
            ("preset: slack\n    channel: C1\n", "need bot_token or bot_token_file", 2),
            (
                "preset: mattermost\n    url: https://mm.example.org\n    bot_token: t\n    channel: 4xp9fdt77pncbef59f4k1qe83o\n    thread_replies: true\n",
                "thread_replies is for preset slack", 8
            ),
        ] as [(String, String, Int?)])
    func appMistakes(_ receiver: String, _ message: String, _ line: Int?) throws {
        let s = try Scratch()
        let path = try s.write(
            "klaxon.yaml", "receivers:\n  - name: r\n    type: webhook\n    " + receiver)
        do {
            _ = try Config.load(path: path, environment: [:])
            #expect(message.isEmpty, "accepted: \(receiver)")
        } catch {
            #expect(!message.isEmpty && "\(error)".contains(message), "\(error)")
            if let line { #expect("\(error)".contains("\(path):\(line):"), "\(error)") }
            #expect(!"\(error)".contains("xoxb-1"))
        }
    }

    @Test(
        "Telegram and Matrix mistakes are errors: a token that is not BotFather's, a chat that is not an id, a secret_token Telegram refuses, a room alias, no homeserver"
    )
    func telegramMistakes() throws {
        let s = try Scratch()
        for (yaml, message) in [
            (
                "receivers:\n  - name: t\n    type: telegram\n    bot_token: nope\n    chat_id: 1\n",
                "is not a Telegram bot token"
            ),
            (
                "receivers:\n  - name: t\n    type: telegram\n    bot_token: 1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n    chat_id: general\n",
                "chat_id must be"
            ),
            ("receivers:\n  - name: t\n    type: telegram\n    chat_id: 1\n", "needs bot_token or bot_token_file"),
            ("chat:\n  telegram:\n    secret_token: has spaces in it\n", "secret_token must be 1 to 256"),
            (
                "receivers:\n  - name: m\n    type: matrix\n    url: https://m.example.org\n    access_token: t\n    room_id: \"#alias:example.org\"\n",
                "room_id must be a room id"
            ),
            (
                "receivers:\n  - name: m\n    type: matrix\n    access_token: t\n    room_id: \"!r:x\"\n",
                "missing required key \"url\""
            ),
        ] {
            let path = try s.write("klaxon.yaml", yaml)
            do {
                _ = try Config.load(path: path, environment: [:])
                Issue.record("accepted: \(yaml)")
            } catch {
                #expect("\(error)".contains(message), "\(error)")
                #expect(!"\(error)".contains("AAAAAAAA"), "\(error)")
            }
        }
    }
}
