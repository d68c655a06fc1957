import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Testing

/// Values from data (station ids, rule names, messages, explanations) reach every chat platform
/// escaped for it: nothing in data can ping, link or break a body.
@Suite struct ChatEscapingTests {
    /// Mentions, links, entities, JSON breakers, header breakers.
    static let hostile = [
        "<!channel>", "<!here|x>", "<@U1>", "<https://evil|Ack here>", "@everyone", "@here", "@channel", "@all",
        "<users/all>", "<users/123>", "&amp;", "a & b < c > d", "back\\slash", "quo\"te", "new\nline",
        "sep\u{2028}ar\u{2029}", "tab\there \u{1}\u{1F}", "=?utf-8?b?SGk=?=", "x\r\nBcc: x@y",
        "[Ack here](https://evil)",
        "[x][ref]\n[ref]: https://evil", "<@&123> <#C1>", "<at>Alice</at>", "{{station}}", "ünï 🌊",
    ]

    static let wordJoiner = "\u{2060}"

    /// A transition whose station, explanation and (optionally) rule name carry `h`; its message too.
    static func hostileAlert(_ h: String, inRule: Bool = false) -> NotifiedAlert {
        var t = transition(rule: inRule ? "rule \(h)" : "river-levels", station: "S \(h)")
        t.explanation = "why \(h)"
        t.labels["note"] = h
        return NotifiedAlert(transition: t, message: "msg \(h)", id: 7)
    }

    static func body(_ preset: Receiver.Webhook.Preset, _ a: NotifiedAlert, template: String? = nil) throws
        -> [String: Any]
    {
        let notifier = try WebhookNotifier(
            config: .init(name: "r", url: Secret("http://127.0.0.1:1/x"), preset: preset, template: template))
        let text = try notifier.render(AlertNotification(key: "k", receiver: "r", alerts: [a]))
        let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
        return try #require(object as? [String: Any], "\(preset): \(text)")
    }

    /// Every string in a JSON value.
    static func strings(_ value: Any) -> [String] {
        switch value {
        case let s as String: return [s]
        case let d as [String: Any]: return d.values.flatMap(strings)
        case let a as [Any]: return a.flatMap(strings)
        default: return []
        }
    }

    static func unescapeSlack(_ s: String) -> String {
        s.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
            .replacingOccurrences(of: "&amp;", with: "&")
    }

    /// True if every `mark` in `s` is followed by a word joiner.
    static func joined(after mark: Character, in s: String) -> Bool {
        let scalars = Array(s.unicodeScalars)
        for (i, c) in scalars.enumerated() where Character(c) == mark {
            if i + 1 >= scalars.count || scalars[i + 1] != "\u{2060}" { return false }
        }
        return true
    }

    /// `&` only as the start of Slack's three escapes.
    static func onlySlackEntities(_ s: String) -> Bool {
        var rest = s[...]
        while let amp = rest.firstIndex(of: "&") {
            let tail = rest[amp...]
            guard tail.hasPrefix("&amp;") || tail.hasPrefix("&lt;") || tail.hasPrefix("&gt;") else { return false }
            rest = rest[rest.index(after: amp)...]
        }
        return true
    }

    @Test func slackAndMattermostEscapeAmpersandAndAngleBrackets() throws {
        for h in Self.hostile {
            for inRule in [false, true] {
                let a = Self.hostileAlert(h, inRule: inRule)
                for preset in [Receiver.Webhook.Preset.slack, .mattermost] {
                    let p = try Self.body(preset, a)
                    for s in Self.strings(p) {
                        #expect(!s.contains("<") && !s.contains(">"), "\(preset) \(h): \(s)")
                        #expect(Self.onlySlackEntities(s), "\(preset) \(h): \(s)")
                        if preset == .mattermost {
                            #expect(Self.joined(after: "@", in: s), "mattermost @ in \(s)")
                            #expect(Self.joined(after: "]", in: s), "mattermost ] in \(s)")
                        }
                    }
                    // The text is exactly the data, once the escapes are undone.
                    let attachment = try #require((p["attachments"] as? [[String: Any]])?.first)
                    let shown = { (s: Any?) in
                        Self.unescapeSlack(((s as? String) ?? "").replacingOccurrences(of: Self.wordJoiner, with: ""))
                    }
                    if preset == .slack {
                        // Slack's words are in its blocks: the header, then the message and why.
                        let blocks = try #require(p["blocks"] as? [[String: Any]])
                        let text = { (i: Int) in shown((blocks[i]["text"] as? [String: Any])?["text"]) }
                        #expect(text(0).contains("S \(h)"))
                        #expect(text(1) == "msg \(h)\n*Why:* why \(h)")
                        #expect(shown(attachment["fallback"]).contains("msg \(h)"))
                    } else {
                        #expect(shown(attachment["text"]) == "msg \(h)")
                        let field = (attachment["fields"] as? [[String: Any]])?.first
                        #expect(shown(field?["value"]) == "why \(h)")
                        #expect(shown(attachment["title"]).contains("S \(h)"))
                    }
                    #expect(shown(p["text"]).contains("msg \(h)"))
                }
            }
        }
        // The example from the issue, exactly.
        let p = try Self.body(.slack, Self.hostileAlert("<!channel>"))
        let section = try #require((p["blocks"] as? [[String: Any]])?[1]["text"] as? [String: Any])
        #expect((section["text"] as? String)?.hasPrefix("msg &lt;!channel&gt;\n") == true)
        #expect(
            (try Self.body(.mattermost, Self.hostileAlert("@channel"))["text"] as? String)?.contains(
                "@\u{2060}channel") == true)
    }

    @Test func discordNeverParsesMentionsOrMaskedLinks() throws {
        for h in Self.hostile {
            let p = try Self.body(.discord, Self.hostileAlert(h, inRule: true))
            let allowed = try #require(p["allowed_mentions"] as? [String: Any])
            #expect((allowed["parse"] as? [Any])?.isEmpty == true)
            #expect(allowed.count == 1)
            for s in Self.strings(p) { #expect(Self.joined(after: "]", in: s), "discord: \(s)") }
            let embed = try #require((p["embeds"] as? [[String: Any]])?.first)
            let description = ((embed["description"] as? String) ?? "").replacingOccurrences(
                of: Self.wordJoiner, with: "")
            #expect(description == "msg \(h)\n\nWhy: why \(h)")
        }
    }

    @Test func teamsBreaksMarkdownLinks() throws {
        for h in Self.hostile {
            let p = try Self.body(.msteams, Self.hostileAlert(h))
            let strings = Self.strings(p)
            for s in strings { #expect(Self.joined(after: "]", in: s), "teams: \(s)") }
            let plain = strings.map { $0.replacingOccurrences(of: Self.wordJoiner, with: "") }
            #expect(plain.contains("msg \(h)"))
            #expect(plain.contains("why \(h)"))
            #expect(plain.contains("S \(h)"))
        }
    }

    @Test func googleChatBreaksMentionsAndLinks() throws {
        for h in Self.hostile {
            let p = try Self.body(.googlechat, Self.hostileAlert(h, inRule: true))
            let text = try #require(p["text"] as? String)
            #expect(Self.joined(after: "<", in: text), "google chat: \(text)")
            #expect(!text.contains("<users/") && !text.contains("<https:"))
            #expect(text.replacingOccurrences(of: Self.wordJoiner, with: "").contains("\nmsg \(h)\n_Why: why \(h);"))
        }
    }

    /// The Alertmanager-style body is JSON, whatever the strings hold, and carries them unchanged.
    @Test func genericCarriesDataExactly() throws {
        for h in Self.hostile {
            let a = Self.hostileAlert(h, inRule: true)
            let n = AlertNotification(key: "k", receiver: "r \(h)", alerts: [a])
            let text = WebhookPayloads.genericText(n, groupBy: ["rule", "station", "note"])
            let p = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let alert = try #require((p["alerts"] as? [[String: Any]])?.first)
            let labels = try #require(alert["labels"] as? [String: String])
            let annotations = try #require(alert["annotations"] as? [String: String])
            #expect(labels["station"] == "S \(h)" && labels["alertname"] == "rule \(h)" && labels["note"] == h)
            #expect(annotations["summary"] == "msg \(h)" && annotations["description"] == "why \(h)")
            #expect(p["receiver"] as? String == "r \(h)")
            #expect((p["groupLabels"] as? [String: String])?["note"] == h)
            // Only JSON's own escapes: no control character is written raw.
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 })
        }
    }

    /// `template:` bodies: variables are JSON-escaped (after the preset's chat escaping), so any
    /// value comes back exactly from the parsed body.
    @Test func templateVariablesAreJSONEscaped() throws {
        let template = #"{"text": "{{#alerts}}{{message}}|{{station}}|{{explanation}}|{{labels.note}}{{/alerts}}"}"#
        for h in Self.hostile {
            let p = try Self.body(.generic, Self.hostileAlert(h), template: template)
            #expect(p["text"] as? String == "msg \(h)|S \(h)|why \(h)|\(h)")
            #expect(p.count == 1)

            // With a chat preset, its escaping comes first.
            let slack = try Self.body(.slack, Self.hostileAlert(h), template: template)
            #expect(slack["text"] as? String == ChatEscape.slack("msg \(h)|S \(h)|why \(h)|\(h)"))
            let discord = try Self.body(.discord, Self.hostileAlert(h), template: template)
            #expect((discord["allowed_mentions"] as? [String: Any])?["parse"] as? [Any] != nil)
            let google = try Self.body(.googlechat, Self.hostileAlert(h), template: template)
            #expect(!(google["text"] as? String ?? "<").contains("<u"))
        }
        // The operator's own text is theirs (Slack markup in it stays); numbers and flags work outside strings.
        let own =
            #"{"text": "<!here> {{#alerts}}{{station}}{{/alerts}}", "v": {{#alerts}}{{value}}{{/alerts}}, "#
            + #""f": {{#alerts}}{{firing}}{{/alerts}}}"#
        let p = try Self.body(.slack, Self.hostileAlert("<!channel>"), template: own)
        #expect(p["text"] as? String == "<!here> S &lt;!channel&gt;")
        #expect(p["v"] as? Double == 12.4)
        #expect(p["f"] as? Bool == true)
        // A Discord template that sets its own allowed_mentions keeps it.
        let mine = try Self.body(
            .discord, Self.hostileAlert("x"), template: #"{"allowed_mentions": {"parse": ["users"]}, "content": "x"}"#)
        #expect((mine["allowed_mentions"] as? [String: Any])?["parse"] as? [String] == ["users"])
        #expect(
            try Self.body(.discord, Self.hostileAlert("x"), template: "{}").keys.sorted() == ["allowed_mentions"])
    }

    /// A value that starts with a combining mark or a joiner, or ends with a prepended mark, keeps
    /// them: the variable is escaped whole, not cut out of a quoted JSON string character by character
    /// (where the opening quote and a combining mark make one character).
    @Test func templateVariablesKeepMarksAtTheirEdges() throws {
        let template = #"{"text": "{{#alerts}}{{labels.note}}{{/alerts}}"}"#
        for h in ["\u{301}x", "\u{200D}x", "x\u{600}", "\u{301}", "\u{903}a\u{600}"] {
            for preset in Receiver.Webhook.Preset.allCases {
                let p = try Self.body(preset, Self.hostileAlert(h), template: template)
                #expect(p["text"] as? String == ChatEscape.escaper(for: preset)(h), "\(preset): \(h.debugDescription)")
            }
        }
    }

    /// A body that is not JSON (`{{{raw}}}` with a quote in data, or a template that is not JSON) is
    /// a rendering error that is not retried, never a request.
    @Test func aTemplateBodyThatIsNotJSONIsARenderingError() throws {
        for (template, h) in [
            (#"{"text": "{{#alerts}}{{{message}}}{{/alerts}}"}"#, "quo\"te"),
            (#"{"text": "{{#alerts}}{{{message}}}{{/alerts}}"}"#, "back\\"),
            (#"{"text": "{{#alerts}}{{{message}}}{{/alerts}}"}"#, "new\nline"),
            ("not json {{#alerts}}{{message}}{{/alerts}}", "x"),
        ] {
            let notifier = try WebhookNotifier(
                config: .init(name: "r", url: Secret("http://127.0.0.1:1/x"), template: template))
            do {
                _ = try notifier.render(AlertNotification(key: "k", receiver: "r", alerts: [Self.hostileAlert(h)]))
                Issue.record("rendered \(template) with \(h)")
            } catch let e as DeliveryError {
                #expect(e.kind == .rendering && !e.retryable)
                #expect(e.message.contains("receiver r: the template's body is not valid JSON"))
            }
        }
    }

    @Test func aBadTemplateBodyIsADeadRowWithItsReason() async throws {
        try await HTTPSink.with { sink in
            let fixture = try OutboxFixture()
            var good = transition(station: "S1")
            good.summary = "back\\slash \"quoted\" <!channel>"
            var bad = transition(station: "S2")
            bad.summary = "quo\"te"
            let notifiers: [String: any Notifier] = [
                "raw": try WebhookNotifier(
                    config: .init(
                        name: "raw", url: Secret(sink.url + "/raw"),
                        template: #"{"text": "{{#alerts}}{{{message}}}{{/alerts}}"}"#)),
                "safe": try WebhookNotifier(
                    config: .init(
                        name: "safe", url: Secret(sink.url + "/safe"),
                        template: #"{"text": "{{#alerts}}{{message}}{{/alerts}}"}"#)),
            ]
            let dispatcher = Dispatcher(
                store: fixture.store, notifiers: notifiers, routing: Routing(), settings: fastSettings())
            try await fixture.queue([bad], receivers: ["raw"])
            try await fixture.queue([good], receivers: ["safe"])
            let pass = try await dispatcher.dispatchOnce()
            #expect(pass.dead == 1 && pass.sent == 1)
            let rows = try await fixture.store.outbox()
            let dead = try #require(rows.first { $0.receiver == "raw" })
            #expect(dead.state == .dead)
            #expect(dead.lastError?.contains("not valid JSON") == true)
            let requests = await sink.requests()
            #expect(requests.count == 1)
            #expect(requests.first?.json?["text"] as? String == "back\\slash \"quoted\" <!channel>")
        }
    }

    /// Rule messages are plain text: a value is not HTML-escaped into them (each destination escapes
    /// the message for itself).
    @Test func ruleMessagesArePlainText() throws {
        let rule = Rule(
            name: "r", kind: ThresholdRule(metric: "m", direction: .above, threshold: 1),
            message: "{{station}} & {{explanation}} {{{station}}}")
        let renderer = try MessageRenderer(rules: [rule])
        var t = transition(rule: "r", station: "A&B <i>'\"")
        t.explanation = "x < y"
        #expect(renderer.render(t) == "A&B <i>'\" & x < y A&B <i>'\"")
    }

    /// A space from data in a `runbook_url` is percent-encoded even when a combining mark follows it
    /// (the two are one character; the space was left raw, and the runbook dropped).
    @Test func aSpaceBeforeACombiningMarkIsEncodedInARunbookURL() throws {
        let rule = Rule(
            name: "r", kind: ThresholdRule(metric: "m", direction: .above, threshold: 1),
            runbookURL: "https://wiki.example.org/{{station}}")
        let renderer = try MessageRenderer(rules: [rule])
        let annotations = renderer.annotations(transition(rule: "r", station: "a \u{301}b é"))
        #expect(annotations["runbook_url"] == "https://wiki.example.org/a%20%CC%81b%20%C3%A9")
    }

    /// A value from data inside a `runbook_url` template cannot close the runbook link and open its
    /// own (`[Runbook](https://wiki/x)[ACK_NOW](https://evil.example/phish)`): the URL is encoded
    /// for each platform's link syntax (issue 38).
    @Test func dataInARunbookURLCannotFormALinkOfItsOwn() throws {
        let rule = Rule(
            name: "r", kind: ThresholdRule(metric: "m", direction: .above, threshold: 1),
            runbookURL: "https://wiki.example.org/{{station}}")
        let renderer = try MessageRenderer(rules: [rule])
        for station in [
            "x)[ACK_NOW](https://evil.example/phish", "a_(b)_c", "x)](https://evil.example/phish)",
            "x)%20[ACK](https://evil.example)", "x)\u{2060}[ACK](https://evil.example)",
        ] {
            var t = transition(rule: "r", station: station)
            t.annotations = renderer.annotations(t)
            // `<`, `>` and `|` from data are not in a link at all: the runbook is dropped.
            #expect(renderer.annotations(transition(rule: "r", station: station + "<x|y>"))["runbook_url"] == nil)
            let url = try #require(t.annotations["runbook_url"], "\(station)")
            let n = AlertNotification(
                key: "k", receiver: "r", alerts: [NotifiedAlert(transition: t, message: "m", id: 7)])
            // Mattermost and Discord: one Markdown link, whose destination runs to the end.
            let mattermost = try #require(
                ((WebhookPayloads.mattermost(n).sent["attachments"] as? [[String: Any]])?.first?["fields"]
                    as? [[String: Any]])?.last?["value"] as? String)
            let discord = try #require(
                ((WebhookPayloads.discord(n).sent["embeds"] as? [[String: Any]])?.first?["fields"] as? [[String: Any]])?
                    .first?["value"] as? String)
            for links in [mattermost, discord] {
                #expect(
                    links.hasPrefix("[Runbook](https://wiki.example.org/x")
                        || links.hasPrefix("[Runbook](https://wiki.example.org/a"), "\(links)")
                #expect(links.components(separatedBy: "](").count == 2, "\(links)")
                #expect(links.components(separatedBy: "[").count == 2, "\(links)")
                #expect(links.filter { "()<>| ".contains($0) }.count == 2 && links.hasSuffix(")"), "\(links)")
                // The link still goes where the URL said, once decoded.
                #expect(
                    String(links.dropFirst("[Runbook](".count).dropLast()).removingPercentEncoding
                        == url.removingPercentEncoding)
            }
            // Google Chat: one angle-bracket link, whose `|` is its own.
            let google = try #require(WebhookPayloads.googlechat(n).sent["text"] as? String)
            let line = try #require(google.components(separatedBy: "\n").last)
            #expect(line.hasPrefix("<https://wiki.example.org/") && line.hasSuffix("|Runbook>"), "\(line)")
            #expect(line.filter { "<>|".contains($0) }.count == 3, "\(line)")
        }
    }

    /// Link text and URLs, escaped per platform.
    @Test func linkBuildersEncodeWhatCouldEndALink() {
        #expect(
            ChatEscape.linkURL("https://[::1]:8080/a b(c)[d]<e>|f")
                == "https://[::1]:8080/a%20b%28c%29%5Bd%5D%3Ce%3E%7Cf")
        #expect(
            ChatEscape.linkURL("https://wiki.example.org/Flood_stage?x=1%202#top")
                == "https://wiki.example.org/Flood_stage?x=1%202#top")
        #expect(ChatEscape.linkURL("https://w.example/ü") == "https://w.example/%C3%BC")
        #expect(
            ChatEscape.markdownLink("[x](https://evil)", "https://w.example/", escape: ChatEscape.discord)
                == "[[\u{2060}x]\u{2060}(https://evil)](https://w.example/)")
        #expect(
            ChatEscape.angleLink("https://w.example/a|b>c", "x|y>z", escape: ChatEscape.googlechat)
                == "<https://w.example/a%7Cb%3Ec|x¦y›z>")
        #expect(
            ChatEscape.angleLink("https://w.example/", "<!channel>", escape: ChatEscape.slack)
                == "<https://w.example/|&lt;!channel&gt;>")
    }
}
