import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Testing

/// Messages as people read them (issue 30): titles name the place and the state, every preset's body
/// stays within its platform's documented limits with one alert or sixty huge hostile ones, links are
/// offered where the platform can show them, and email threads under one subject with its chart.
@Suite struct MessageShapeTests {
    static let base = "https://klaxon.example.org/"

    /// A flood transition as the engine now words it.
    static func flood(
        _ state: TransitionState = .firing, level: String? = "minor", from: String? = nil,
        headline: String? = "minor flood stage", opening: String? = nil, message: String = "m",
        annotations: [String: String] = [:], place: String? = "Potomac River at Little Falls"
    ) -> Transition {
        var t = transition(state: state, level: level, from: from)
        t.place = place
        t.headline = headline
        t.opening = opening
        t.annotations = annotations
        t.explanation = "12.4 ft is at or above minor flood stage (12 ft); next: moderate flood stage at 14 ft"
        t.summary = message
        return t
    }

    static func one(_ t: Transition, id: Int64 = 41, path: [PathStep] = [], external: String = base)
        -> AlertNotification
    {
        AlertNotification(
            key: "key-\(id)", receiver: "r",
            alerts: [NotifiedAlert(transition: t, message: t.summary, id: id, path: path)], externalURL: external)
    }

    /// Sixty alerts whose every text is as long and as hostile as data can make it.
    static var flood60: AlertNotification {
        let huge = String(repeating: "<!channel> @everyone [x](https://evil) ", count: 300)
        let alerts = (1...60).map { i -> NotifiedAlert in
            var t = flood(message: huge, annotations: ["runbook_url": "https://wiki.example.org/flood", "team": huge])
            t.station = "G\(i)"
            t.place = huge
            t.explanation = huge
            return NotifiedAlert(transition: t, message: huge, id: Int64(i))
        }
        return AlertNotification(key: "k", receiver: "r", alerts: alerts, externalURL: base)
    }

    // MARK: Titles

    @Test func titlesNameThePlaceAndTheStateInWords() {
        let t = Self.flood()
        #expect(WebhookPayloads.title(t) == "🟠 Potomac River at Little Falls: minor flood stage")
        // No place known: the station id stands for it.
        #expect(WebhookPayloads.title(Self.flood(place: nil)) == "🟠 01646500: minor flood stage")
        // A transition logged before headlines keeps the engine's words.
        #expect(WebhookPayloads.title(transition()) == "🟠 WARNING river-levels 01646500 firing minor")
        // A change the receiver hears from another level than the one left: said from what it heard.
        var changed = Self.flood(
            .changed, level: "moderate", from: "minor", headline: "moderate flood stage, up from minor")
        changed.at += 1800
        let steps = [
            PathStep(state: .changed, level: "minor", from: "action", at: changed.at - 900, episode: 41),
            PathStep(state: .changed, level: "moderate", from: "minor", at: changed.at, episode: 41),
        ]
        let heard = NotifiedAlert(transition: changed, message: "m", id: 41, path: steps)
        #expect(
            WebhookPayloads.title(heard)
                == "🟠 Potomac River at Little Falls: moderate flood stage (was action, via minor)")
        // Logged as it is heard: the headline as written.
        #expect(
            WebhookPayloads.title(NotifiedAlert(transition: changed, message: "m", id: 41))
                == "🟠 Potomac River at Little Falls: moderate flood stage, up from minor")
    }

    // MARK: Platform limits

    @Test func discordStaysWithinItsDocumentedLimits() throws {
        for n in [Self.one(Self.flood()), Self.flood60] {
            let p = WebhookPayloads.discord(n).sent
            #expect((p["content"] as? String)?.count ?? 0 <= 2000)
            let embeds = try #require(p["embeds"] as? [[String: Any]])
            #expect(embeds.count <= 10 && !embeds.isEmpty)
            var total = 0
            for e in embeds {
                let title = e["title"] as? String ?? ""
                let description = e["description"] as? String ?? ""
                let footer = (e["footer"] as? [String: Any])?["text"] as? String ?? ""
                let fields = e["fields"] as? [[String: Any]] ?? []
                #expect(title.count <= 256 && description.count <= 4096 && footer.count <= 2048 && fields.count <= 25)
                for f in fields { #expect((f["value"] as? String ?? "").count <= 1024) }
                total += title.count + description.count + footer.count
                total += fields.reduce(0) {
                    $0 + ($1["name"] as? String ?? "").count + ($1["value"] as? String ?? "").count
                }
            }
            #expect(total <= 6000, "embeds total \(total)")
            #expect((p["allowed_mentions"] as? [String: Any])?["parse"] as? [Any] != nil)
        }
        // The single alert links its page, its gauge and its runbook.
        let one = WebhookPayloads.discord(
            Self.one(Self.flood(annotations: ["runbook_url": "https://wiki.example.org/flood"]))
        ).sent
        let embed = try #require((one["embeds"] as? [[String: Any]])?.first)
        #expect(embed["url"] as? String == Self.base + "alerts/41")
        let links = try #require((embed["fields"] as? [[String: Any]])?.first?["value"] as? String)
        #expect(links == "[River gauge](\(Self.base)gauges/01646500) · [Runbook](https://wiki.example.org/flood)")
        // The message once: in the embed, not again in `content`.
        #expect((one["content"] as? String)?.contains("\n") == false)
    }

    @Test func teamsCardIsAValidAdaptiveCardWithOpenUrlButtons() throws {
        for n in [Self.one(Self.flood(annotations: ["runbook_url": "https://wiki.example.org/flood"])), Self.flood60] {
            let p = WebhookPayloads.msteams(n).sent
            #expect(p["type"] as? String == "message")
            let attachment = try #require((p["attachments"] as? [[String: Any]])?.first)
            #expect(attachment["contentType"] as? String == "application/vnd.microsoft.card.adaptive")
            let card = try #require(attachment["content"] as? [String: Any])
            #expect(card["type"] as? String == "AdaptiveCard" && card["version"] as? String == "1.4")
            #expect(card["$schema"] as? String == "http://adaptivecards.io/schemas/adaptive-card.json")
            let actions = try #require(card["actions"] as? [[String: Any]])
            #expect(actions.count <= 5 && !actions.isEmpty)
            for a in actions {
                #expect(a["type"] as? String == "Action.OpenUrl")
                #expect(MessageRenderer.isLink(a["url"] as? String ?? ""))
            }
            let body = try #require(card["body"] as? [[String: Any]])
            for b in body { #expect(["TextBlock", "FactSet", "Image"].contains(b["type"] as? String ?? "")) }
            // The chart, for one alert, from the public external_url.
            #expect(
                body.contains { $0["type"] as? String == "Image" }
                    == (n.alerts.count == 1))
            // A Teams message is at most 28 KB; sixty alerts of 12 KB each are cut to twenty and a count.
            if n.alerts.count == 1 {
                #expect(actions.map { $0["title"] as? String } == ["Open alert #41", "River gauge", "Runbook"])
            } else {
                #expect((body.last?["text"] as? String)?.hasPrefix("…and 40 more") == true)
            }
        }
    }

    @Test func googleChatTextStaysWithinItsLimitAndLinksWithItsSyntax() throws {
        let one = try #require(
            WebhookPayloads.googlechat(
                Self.one(Self.flood(annotations: ["runbook_url": "https://wiki.example.org/f"]))
            ).sent[
                "text"] as? String)
        #expect(
            one.hasSuffix(
                "<\(Self.base)alerts/41|Open alert #41> · <\(Self.base)gauges/01646500|River gauge> · <https://wiki.example.org/f|Runbook>"
            ))
        let many = try #require(WebhookPayloads.googlechat(Self.flood60).sent["text"] as? String)
        #expect(many.count <= 4096)
    }

    // MARK: Annotations

    @Test func ruleAnnotationsAndRunbookReachTheGenericPayloadKlaxonsOwnWin() throws {
        let t = Self.flood(annotations: [
            "runbook_url": "https://wiki.example.org/flood", "dashboard": "https://grafana.example.org/d/x",
            "summary": "a rule may not replace Klaxon's summary",
        ])
        let parts = WebhookPayloads.genericParts(NotifiedAlert(transition: t, message: "the message", id: 41))
        #expect(parts.annotations["runbook_url"] == "https://wiki.example.org/flood")
        #expect(parts.annotations["dashboard"] == "https://grafana.example.org/d/x")
        #expect(parts.annotations["summary"] == "the message")
        // The byte-for-byte writer says the same.
        let n = Self.one(t)
        let text = WebhookPayloads.genericText(n, groupBy: ["alertname"])
        let decoded = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let a = try #require((decoded["alerts"] as? [[String: Any]])?.first?["annotations"] as? [String: String])
        #expect(a["dashboard"] == "https://grafana.example.org/d/x" && a["runbook_url"] != nil)
        #expect(
            text
                == String(
                    decoding: WebhookPayloads.Reference.encode(
                        WebhookPayloads.Reference.generic(n, groupBy: ["alertname"])), as: UTF8.self)
        )
    }

    @Test func chartsGoToChatOnlyFromAPublicAddress() {
        let a = NotifiedAlert(transition: Self.flood(), message: "m", id: 41)
        for external in [
            "https://klaxon.example.org", "https://status.river.gov/klaxon", "https://203.0.113.7",
        ] {
            let n = AlertNotification(key: "k", receiver: "r", alerts: [a], externalURL: external)
            #expect(n.publicChartLink(a) == external + "/gauges/01646500/chart.png?range=48h", "\(external)")
        }
        for external in [
            "http://klaxon.example.org", "https://localhost:9464", "https://klaxon", "https://klaxon.local",
            "https://status.corp.internal", "https://127.0.0.1:9464", "https://10.1.2.3", "https://192.168.1.5",
            "https://172.20.0.1", "https://169.254.1.1", "https://[::1]:9464", "https://[fd00::1]", "",
        ] {
            let n = AlertNotification(key: "k", receiver: "r", alerts: [a], externalURL: external)
            #expect(n.publicChartLink(a) == nil, "\(external)")
        }
    }

    @Test func onlyPlainHTTPLinksAreLinks() {
        for good in ["https://wiki.example.org/flood", "http://10.0.0.1:8080/r?a=1&b=2#x"] {
            #expect(MessageRenderer.isLink(good), "\(good)")
        }
        for bad in [
            "javascript:alert(1)", "https://", "https://a b", "https://x/\"onmouseover=", "https://x/<script>",
            "https://x/a|Click", "data:text/html,x", "//evil.example", "https://x/\u{0}", "https://x/\u{202E}",
            "ftp://x/y", "https://x/" + String(repeating: "a", count: 3000),
        ] {
            #expect(!MessageRenderer.isLink(bad), "\(bad)")
        }
    }

    // MARK: Email

    @Test func anEpisodesMailKeepsOneSubjectAndCarriesItsChartInline() async throws {
        let notifier = try EmailNotifier(
            config: .init(
                name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "Klaxon <klaxon@example.org>",
                to: ["ops@example.org"]), clock: { 1_772_345_700 })
        let png = Data([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) + Data(repeating: 7, count: 300)
        let firing = try notifier.render(Self.one(Self.flood()), chart: png)
        var later = Self.flood(
            .changed, level: "moderate", from: "minor", headline: "moderate flood stage, up from minor",
            opening: "minor flood stage")
        later.at += 3600
        let changed = try notifier.render(Self.one(later), chart: png)
        var end = Self.flood(
            .resolved, level: nil, from: "moderate", headline: "below action stage again", opening: "minor flood stage")
        end.at += 7200
        let resolved = try notifier.render(Self.one(end), chart: nil)
        let script = """
            import email, json, sys
            from email import policy
            out = []
            for raw in sys.stdin.read().split("\\0"):
                m = email.message_from_string(raw, policy=policy.default)
                parts = []
                for p in m.walk():
                    body = p.get_payload(decode=True) if not p.is_multipart() else None
                    parts.append({"type": p.get_content_type(), "cid": p.get("Content-ID"),
                                  "text": body.decode() if body is not None and p.get_content_maintype() == "text" else None,
                                  "size": len(body) if body is not None else 0})
                out.append({"subject": str(m["Subject"]), "id": m["Message-ID"], "refs": m["References"],
                            "reply": m["In-Reply-To"], "defects": [type(d).__name__ for d in m.defects], "parts": parts})
            json.dump(out, sys.stdout)
            """
        let data = try await python(script, input: Data([firing, changed, resolved].joined(separator: "\0").utf8))
        let mails = try #require(try JSONSerialization.jsonObject(with: data) as? [[String: Any]])
        #expect(mails.count == 3)
        // One subject for the episode's whole life: the place and the state it opened with.
        #expect(
            mails.map { $0["subject"] as? String }
                == Array(repeating: "Potomac River at Little Falls: minor flood stage", count: 3))
        #expect(mails[0]["id"] as? String == "<alert-41.r@example.org>" && mails[0]["refs"] is NSNull)
        for m in mails.dropFirst() {
            #expect(
                m["refs"] as? String == "<alert-41.r@example.org>"
                    && m["reply"] as? String == "<alert-41.r@example.org>")
        }
        for m in mails { #expect((m["defects"] as? [String])?.isEmpty == true) }
        // text, then HTML and its chart in a multipart/related.
        let parts = try #require(mails[0]["parts"] as? [[String: Any]])
        #expect(
            parts.map { $0["type"] as? String } == [
                "multipart/alternative", "text/plain", "multipart/related", "text/html", "image/png",
            ])
        let html = try #require(parts[3]["text"] as? String)
        let cid = try #require(parts[4]["cid"] as? String)
        #expect(cid == "<chart-41@example.org>" && parts[4]["size"] as? Int == png.count)
        #expect(html.contains("src=\"cid:chart-41@example.org\""))
        #expect(
            html.contains("href=\"\(Self.base)alerts/41\"") && html.contains("href=\"\(Self.base)gauges/01646500\""))
        #expect(html.contains("alt=\"Chart of Potomac River at Little Falls over the last 48 hours\""))
        // Without a chart: text and HTML only.
        #expect((mails[2]["parts"] as? [[String: Any]])?.count == 3)
    }

    /// WCAG 2.x relative luminance contrast of two `#rrggbb` colours.
    static func contrast(_ a: String, _ b: String) -> Double {
        func luminance(_ hex: String) -> Double {
            let v = Int(hex.dropFirst(), radix: 16)!
            func channel(_ x: Int) -> Double {
                let s = Double(x & 255) / 255
                return s <= 0.03928 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4)
            }
            let r: Double = channel(v >> 16)
            let g: Double = channel(v >> 8)
            let b: Double = channel(v)
            return 0.2126 * r + 0.7152 * g + 0.0722 * b
        }
        let (x, y) = (luminance(a), luminance(b))
        return (max(x, y) + 0.05) / (min(x, y) + 0.05)
    }

    @Test func theMailsColoursPassWCAGAA() throws {
        let notifier = try EmailNotifier(
            config: .init(name: "mail", smtpURL: "smtp://127.0.0.1:1", from: "k@example.org", to: ["o@example.org"]))
        let message = try notifier.render(Self.one(Self.flood()))
        let b64 = message.components(
            separatedBy: "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n")[1]
            .components(separatedBy: "\r\n--")[0].replacingOccurrences(of: "\r\n", with: "")
        let html = String(decoding: try #require(Data(base64Encoded: b64)), as: UTF8.self)
        // Every text colour the HTML uses, on the white page (and white on the button's blue).
        let colours = Set(html.matches(of: /[;"]color:(#[0-9a-f]{6})/).map { String($0.output.1) })
        #expect(colours == ["#1f1f1f", "#595959", "#0b57d0", "#ffffff"], "\(colours)")
        for c in colours where c != "#ffffff" { #expect(Self.contrast(c, "#ffffff") >= 4.5, "\(c)") }
        #expect(Self.contrast("#ffffff", "#0b57d0") >= 4.5)
    }
}
