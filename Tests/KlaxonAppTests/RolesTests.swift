import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import Synchronization
import Testing

/// What `/readyz` reads (`HealthReads`), and no more: whether the store answers, and the sources'
/// states (asked how often).
final class ProbeFake: HealthReads, Sendable {
    let reachable: Bool
    let asked = Mutex(0)

    init(reachable: Bool) { self.reachable = reachable }

    var path: String { "fake" }
    func metrics() async throws -> StoreMetrics { StoreMetrics() }
    func isReachable() async -> Bool { reachable }
    func sourceState(_ source: String) async throws -> SourceStateRecord? { nil }
    func sourceStates() async throws -> [SourceStateRecord] {
        asked.withLock { $0 += 1 }
        return []
    }
}

/// Services take the roles they use, so a test of one needs an in-memory store or a fake of a few
/// methods, not a database file.
@Suite("services over their roles")
struct RolesTests {
    @Test("/readyz over a fake of its role: an unreachable store is not asked for its sources")
    func readinessOverAFake() async throws {
        let away = ProbeFake(reachable: false)
        let (notReady, _) = await KlaxonHTTP.readiness(store: away, sources: ["usgs"])
        #expect(!notReady)
        #expect(away.asked.withLock { $0 } == 0)
        let up = ProbeFake(reachable: true)
        let (ready, _) = await KlaxonHTTP.readiness(store: up, sources: ["usgs"])
        #expect(ready)
        #expect(up.asked.withLock { $0 } == 1)
    }

    @Test("chat commands over an in-memory store: alerts lists the firing alert, ack acks it, silence adds one")
    func chatInMemory() async throws {
        let store = try SQLiteStore.inMemory()
        let rules = [
            Rule(name: "high", kind: ThresholdRule(metric: "gage_height", direction: .above, threshold: 10))
        ]
        let t: Int64 = 1_767_225_600
        try await store.write(
            SourceBatch(readings: [Reading(station: "S1", metric: "gage_height", time: t, value: 12)]), at: t)
        _ = try await Evaluate.run(store: store, rules: rules, now: t)
        let chat = ChatCommands(store: store, config: Config(), rules: rules)
        let user = ChatEndpoints.User(platform: "slack", team: nil, user: "U1", name: "alice")
        #expect(await chat.answer(user, text: "alerts", now: t).contains("high S1"))
        let id = try #require(try await store.firingAlerts().first?.transitionID)
        #expect(await chat.answer(user, text: "ack \(id)", now: t).hasPrefix("Acked high at S1"))
        #expect(try await store.acks().values.map(\.by) == ["slack:U1"])
        #expect(await chat.answer(user, text: "silence high 2h", now: t).hasPrefix("Silenced high for"))
        #expect(try await store.silences(now: t).count == 1)
    }
}
