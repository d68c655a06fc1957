import Foundation
import KlaxonCore
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Synchronization
import Testing

@testable import KlaxonDelivery

/// Issue 41, "no storms": a receiver with `budget: {messages: 5, per: 10m}` hit by 100 new alerts is
/// sent 5 of them and one summary of the other 95, edited in place where it edits (Discord), posted
/// once per window where it cannot (Slack's incoming webhook); the window survives a restart; the
/// folded alerts are in the history as `folded` and counted; their resolves lower the summary's
/// count and send nothing.
@Suite(.timeLimit(.minutes(10))) struct BudgetDispatchTests {
    static let budget = Budget(messages: 5, per: 600)

    static func flood(_ i: Int, _ state: TransitionState = .firing) -> Transition {
        var t = transition(station: "G\(i)", state: state, level: state == .resolved ? nil : "minor")
        t.place = "Gauge \(i)"
        return t
    }

    /// Alerts `observeFold` was told of.
    final class FoldCount: Sendable {
        let n = Mutex(0)
    }

    static func settings(folded: FoldCount? = nil) -> Dispatcher.Settings {
        var s = fastSettings()
        s.budgets = ["pager": budget]
        if let folded { s.observeFold = { _, n in folded.n.withLock { $0 += n } } }
        return s
    }

    static func discord(_ standIn: DiscordStandIn) throws -> WebhookNotifier {
        try WebhookNotifier(config: Receiver.Webhook(name: "pager", url: Secret(standIn.url), preset: .discord))
    }

    @Test("100 alerts, budget 5 per 10m, on Discord: 5 messages and one summary of the 95 others, edited in place")
    func discordStorm() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let folded = FoldCount()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["pager": try Self.discord(standIn)], routing: Routing(),
                settings: Self.settings(folded: folded))
            for i in 1...100 { store.queue(Self.flood(i), receivers: ["pager"], dueAt: nowMillis() - 1) }
            let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())

            #expect(pass.sent == 5 && pass.folded == 95, "\(pass)")
            #expect(standIn.problems == [])
            #expect(standIn.messages.count == 6)
            #expect(standIn.requests.filter { $0.method == "POST" }.count == 6)
            let summary = try #require(standIn.messages.first { $0.content.contains("Storm summary") })
            #expect(summary.content.contains("95 more alerts"), "\(summary.content)")
            #expect(standIn.messages.filter { !$0.content.contains("Storm summary") }.allSatisfy { $0.edits == 0 })
            #expect(folded.n.withLock { $0 } == 95)
            let rows = store.rows()
            #expect(rows.filter { $0.state == .sent }.count == 5)
            let skipped = rows.filter { $0.state == .skipped }
            #expect(skipped.count == 95)
            #expect(skipped.allSatisfy { $0.lastError?.hasPrefix(Budget.foldedPrefix) == true })
            #expect(skipped.allSatisfy { NotificationEntry(row: $0, transition: nil).state == "folded" })

            // Ten of the folded alerts resolve: no message is sent for them (the receiver never heard
            // them firing); the summary's count goes down, edited in place.
            let posts = standIn.requests.filter { $0.method == "POST" }.count
            let heard = Set(rows.filter { $0.state == .sent }.map(\.alert))
            let foldedStations = (1...100).filter { !heard.contains(OutboxRecord.alertKey(Self.flood($0))) }
            for i in foldedStations.prefix(10) {
                store.queue(Self.flood(i, .resolved), receivers: ["pager"], dueAt: nowMillis() - 1)
            }
            _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            #expect(standIn.requests.filter { $0.method == "POST" }.count == posts)
            let after = try #require(standIn.messages.first { $0.content.contains("Storm summary") })
            #expect(after.content.contains("85 more alerts"), "\(after.content)")
            #expect(standIn.problems == [])

            // A resolve of an alert it heard firing is sent past the budget (its living message edited).
            let sentStation = try #require((1...100).first { heard.contains(OutboxRecord.alertKey(Self.flood($0))) })
            store.queue(Self.flood(sentStation, .resolved), receivers: ["pager"], dueAt: nowMillis() - 1)
            let resolve = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            #expect(resolve.sent == 1 && resolve.folded == 0, "\(resolve)")
            #expect(standIn.messages.count == 6)
        }
    }

    @Test("a receiver that cannot edit (Slack incoming webhook): 5 messages and one summary per window")
    func slackStorm() async throws {
        try await HTTPSink.with { sink in
            let store = InMemoryDeliveryStore()
            let slack = try WebhookNotifier(
                config: Receiver.Webhook(name: "pager", url: Secret(sink.url + "/hook"), preset: .slack))
            let dispatcher = Dispatcher(
                store: store, notifiers: ["pager": slack], routing: Routing(), settings: Self.settings())
            for i in 1...100 { store.queue(Self.flood(i), receivers: ["pager"], dueAt: nowMillis() - 1) }
            let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            #expect(pass.sent == 5 && pass.folded == 95, "\(pass)")
            let requests = await sink.requests()
            #expect(requests.count == 6)
            #expect(requests.filter { $0.text.contains("Storm summary") }.count == 1)
            // More folds in the same window: no second summary.
            for i in 101...120 { store.queue(Self.flood(i), receivers: ["pager"], dueAt: nowMillis() - 1) }
            let more = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            #expect(more.folded == 20 && more.sent == 0)
            #expect(await sink.requests().count == 6)
        }
    }

    @Test("the window survives a restart: 50 alerts, a new store handle and dispatcher, 50 more: still 5 + 1")
    func survivesARestart() async throws {
        try await DiscordStandIn.with { standIn in
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
                "klaxon-budget-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("k.sqlite").path
            for half in [1...50, 51...100] {
                let store = try SQLiteStore.open(path: path)
                let dispatcher = Dispatcher(
                    store: store, notifiers: ["pager": try Self.discord(standIn)], routing: Routing(),
                    settings: Self.settings())
                try await store.record(
                    half.map { i in
                        let t = Self.flood(i)
                        return (t, t.summary, [PlannedDelivery(receiver: "pager", route: nil, groupKey: "g\(i)")])
                    }, now: nowMillis() - 1)
                _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            }
            #expect(standIn.problems == [])
            #expect(standIn.messages.count == 6)
            let summary = try #require(standIn.messages.first { $0.content.contains("Storm summary") })
            #expect(summary.content.contains("95 more alerts"), "\(summary.content)")
            // The history tells each folded alert as folded, with the reason.
            let store = try SQLiteStore.open(path: path)
            let page = try await store.notifications(NotificationFilter(receiver: "pager"), limit: 200, after: nil)
            #expect(page.entries.filter { $0.state == "folded" }.count == 95)
            #expect(page.entries.filter { $0.state == "delivered" }.count == 5)
            #expect(
                page.entries.first { $0.state == "folded" }?.reason
                    == "folded into the storm summary: pager is over its budget of 5 per 10m")
        }
    }

    @Test("a hostile place in the summary is escaped as Discord and Slack need")
    func hostileSummary() throws {
        let tally = FoldTally.of([
            (
                fold: FoldedAlert(
                    alert: "a|s|gage_height", episode: 1, subject: "gauge", station: "s",
                    place: "<!channel> @everyone [x](http://evil) *b*", at: 0),
                resolved: false
            )
        ])
        let dispatcher = Dispatcher(store: InMemoryDeliveryStore(), notifiers: [:], routing: Routing())
        let (n, _) = dispatcher.summaryNotification(
            tally, receiver: "pager", budget: Self.budget, stormStart: 1, now: 1_000)
        let slack = try WebhookNotifier(
            config: Receiver.Webhook(name: "pager", url: Secret("http://127.0.0.1:1/x"), preset: .slack)
        ).render(n)
        #expect(slack.contains("&lt;!channel&gt;") && !slack.contains("<!channel>"), "\(slack)")
        let discord = try WebhookNotifier(
            config: Receiver.Webhook(name: "pager", url: Secret("http://127.0.0.1:1/x"), preset: .discord)
        ).render(n)
        #expect(!discord.contains("](http://evil)"), "\(discord)")
        #expect(discord.contains("\"allowed_mentions\""))
    }
}
