import Foundation
import KlaxonCore
import KlaxonStore
import KlaxonTesting
import Synchronization
import Testing

@testable import KlaxonDelivery

/// Issue 41, "no storms": a storm summary whose post (or edit) fails is tried again, with backoff,
/// at a later pass of the dispatcher, also when no fold or resolve follows to bring it up to date.
@Suite(.timeLimit(.minutes(10))) struct BudgetSummaryRetryTests {
    @Test("a summary refused with 429 is posted by a later pass, with no new fold or resolve")
    func failedSummaryIsRetried() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["pager": try BudgetDispatchTests.discord(standIn)], routing: Routing(),
                settings: BudgetDispatchTests.settings())
            for i in 1...5 {
                store.queue(BudgetDispatchTests.flood(i), receivers: ["pager"], dueAt: nowMillis() - 1)
            }
            _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            #expect(standIn.messages.count == 5)
            // The summary's post, and its first retry, are refused.
            standIn.rateLimit(2, retryAfter: 0)
            store.queue(BudgetDispatchTests.flood(6), receivers: ["pager"], dueAt: nowMillis() - 1)
            let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            #expect(pass.folded == 1, "\(pass)")
            #expect(standIn.messages.count == 5, "the summary was refused")
            // Nothing more is queued: only the retry can post it.
            try await poll(until: "a later pass posts the summary") {
                _ = try await dispatcher.dispatchOnce()
                return standIn.messages.count == 6
            }
            #expect(standIn.problems == [])
            let summary = try #require(standIn.messages.last)
            #expect(summary.content.contains("Storm summary"), "\(summary.content)")
            // Up to date: no retry is left, further passes send nothing.
            #expect(dispatcher.budgetSummaries.failures("pager") == 0)
            _ = try await dispatcher.dispatchOnce()
            #expect(standIn.messages.count == 6 && standIn.messages.allSatisfy { $0.edits == 0 })
        }
    }

    @Test("the daemon's loop (run) tries a refused summary again too")
    func runRetriesTheSummary() async throws {
        try await DiscordStandIn.with { standIn in
            let store = InMemoryDeliveryStore()
            let dispatcher = Dispatcher(
                store: store, notifiers: ["pager": try BudgetDispatchTests.discord(standIn)], routing: Routing(),
                settings: BudgetDispatchTests.settings())
            for i in 1...5 {
                store.queue(BudgetDispatchTests.flood(i), receivers: ["pager"], dueAt: nowMillis() - 1)
            }
            _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
            standIn.rateLimit(3, retryAfter: 0)
            store.queue(BudgetDispatchTests.flood(6), receivers: ["pager"], dueAt: nowMillis() - 1)
            let stop = Atomic(false)
            let run = Task { try await dispatcher.run(poll: 20, stop: { stop.load(ordering: .relaxed) }) }
            let outcome = await Result {
                try await poll(until: "run posts the summary") { standIn.messages.count == 6 }
            }
            stop.store(true, ordering: .relaxed)
            try await run.value
            try outcome.get()
            #expect(standIn.problems == [])
            #expect(standIn.messages.last?.content.contains("Storm summary") == true)
        }
    }
}
