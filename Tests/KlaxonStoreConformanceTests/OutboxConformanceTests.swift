import Foundation
import KlaxonCore
import KlaxonStore
import Synchronization
import Testing

/// The outbox: claims under a lease, in order per alert and receiver, never one row to two claimers.
@Suite(.timeLimit(.minutes(10))) struct OutboxConformanceTests {
    let now: Int64 = 1_772_000_000_000

    @Test("concurrent claimers never get one row twice, and together get every row", arguments: Backend.allCases)
    func claimNeverGivesOneRowToTwoClaimers(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            let count = 120
            try await store.queue(
                (0..<count).map { transition(station: "S\($0)") }, receivers: ["ops", "chat"], now: now)
            let claimed = Collected()
            let now = now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for claimer in 0..<4 {
                    group.addTask {
                        while true {
                            let batches = try await store.claim(
                                now: now, lease: 600_000, limit: 7, instance: "claimer-\(claimer)")
                            if batches.isEmpty { return }
                            claimed.add(batches.flatMap { $0.rows.map(\.id) })
                        }
                    }
                }
                try await group.waitForAll()
            }
            let ids = claimed.all
            #expect(ids.count == 2 * count)
            #expect(Set(ids).count == ids.count)
            #expect(try await store.outboxCounts() == [.sending: 2 * count])
        }
    }

    @Test("a claim leaves the excluded receivers' rows, in order, for a later claim", arguments: Backend.allCases)
    func claimExcludesReceivers(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await store.queue(
                ["A", "B", "C"].map { transition(station: $0) }, receivers: ["slow", "fast", "other"], now: now)
            let first = try await store.claim(
                now: now, lease: 60_000, limit: 100, instance: "i", excluding: ["slow", "other"])
            #expect(first.map(\.receiver) == ["fast", "fast", "fast"])
            #expect(first.flatMap(\.transitions).map(\.station) == ["A", "B", "C"])
            let rest = try await store.claim(now: now, lease: 60_000, limit: 100, instance: "i", excluding: [])
            #expect(Set(rest.map(\.receiver)) == ["slow", "other"])
            #expect(rest.count == 6)
        }
    }

    @Test("an expired lease's rows come back, under the same key", arguments: Backend.allCases)
    func expiredLeaseComesBack(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await store.queue([transition(station: "A")], receivers: ["ops"], now: now)
            let first = try await store.claim(now: now, lease: 60_000, limit: 10, instance: "dead")
            #expect(first.count == 1 && first.first?.attempt == 1)
            #expect(try await store.nextDue() == now + 60_000)
            // Within the lease nobody else gets it.
            #expect(try await store.claim(now: now + 59_999, lease: 60_000, limit: 10, instance: "live").isEmpty)
            let again = try await store.claim(now: now + 60_000, lease: 60_000, limit: 10, instance: "live")
            #expect(again.map(\.key) == first.map(\.key))
            #expect(again.first?.attempt == 2)
            #expect(again.first?.transitions.map(\.station) == ["A"])
            #expect(again.first?.rows.first?.batch == first.first?.key)
        }
    }

    @Test("a firing goes out before its resolve, per alert and receiver", arguments: Backend.allCases)
    func firingBeforeResolve(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await store.queue([transition(station: "A")], receivers: ["ops", "chat"], now: now)
            try await store.queue([transition(station: "A", state: .resolved)], receivers: ["ops", "chat"], now: now)
            var batches = try await store.claim(now: now, lease: 60_000, limit: 10, instance: nil)
            #expect(batches.count == 2)
            #expect(batches.allSatisfy { $0.transitions.map(\.state) == ["firing"] })
            // While the firing is being sent, the resolve waits.
            #expect(try await store.claim(now: now, lease: 60_000, limit: 10, instance: nil).isEmpty)
            // Sent to ops, retried later for chat: only ops's resolve is next.
            try await store.apply([
                .finish(batches.first { $0.receiver == "ops" }!, state: .sent, now: now + 1, retryAt: nil, error: nil),
                .finish(
                    batches.first { $0.receiver == "chat" }!, state: .pending, now: now + 1, retryAt: now + 5_000,
                    error: "HTTP 503"),
            ])
            batches = try await store.claim(now: now + 1, lease: 60_000, limit: 10, instance: nil)
            #expect(batches.map(\.receiver) == ["ops"])
            #expect(batches.first?.transitions.map(\.state) == ["resolved"])
            let chat = try await store.claim(now: now + 5_000, lease: 60_000, limit: 10, instance: nil)
            #expect(chat.map(\.receiver) == ["chat"])
            #expect(chat.first?.transitions.map(\.state) == ["firing"])
            #expect(chat.first?.attempt == 2)
            let failed = try await store.outbox(state: nil).first { $0.receiver == "chat" && $0.lastError != nil }
            #expect(failed?.lastError == "HTTP 503")
        }
    }

    @Test("released rows and a dead instance's claims go back to the queue", arguments: Backend.allCases)
    func releaseAndDeadInstances(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await store.queue([transition(station: "A"), transition(station: "B")], receivers: ["ops"], now: now)
            let live = InstanceRecord(
                id: "live", host: "h", pid: 2, processStart: 1, registeredAt: now, heartbeatAt: now)
            let dead = InstanceRecord(
                id: "dead", host: "h", pid: 1, processStart: 1, registeredAt: now, heartbeatAt: now)
            try await store.register(live)
            try await store.register(dead)
            let claimed = try await store.claim(now: now, lease: 60_000, limit: 1, instance: "dead")
            #expect(claimed.count == 1)
            #expect(try await store.claimHolders(excluding: "live").map(\.id) == ["dead"])
            #expect(try await store.claimHolders(excluding: "dead").isEmpty)
            #expect(
                try await store.renewLeases(
                    instance: "dead", ids: claimed.flatMap { $0.rows.map(\.id) }, until: now + 120_000, now: now) == 1)
            #expect(try await store.releaseClaims(of: ["dead"]) == 1)
            #expect(try await store.claimHolders(excluding: "live").isEmpty)
            let back = try await store.claim(now: now, lease: 60_000, limit: 10, instance: "live")
            #expect(back.count == 2)
            #expect(back.contains { $0.key == claimed[0].key })
            try await store.release(back)
            #expect(try await store.outboxCounts() == [.pending: 2])
            #expect(try await store.claim(now: now, lease: 60_000, limit: 10, instance: "live").count == 2)
        }
    }

    @Test(
        "a renewal extends only the rows named: a claim whose answer was lost runs out and is claimed again",
        arguments: Backend.allCases)
    func renewalExtendsOnlyTheRowsNamed(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await store.queue([transition(station: "A"), transition(station: "B")], receivers: ["ops"], now: now)
            let me = InstanceRecord(id: "me", host: "h", pid: 2, processStart: 1, registeredAt: now, heartbeatAt: now)
            try await store.register(me)
            // Two claims by one instance; the answer to the second is lost (the connection died as it
            // committed), so the instance holds only the first.
            let held = try await store.claim(now: now, lease: 5_000, limit: 1, instance: "me")
            let lost = try await store.claim(now: now, lease: 5_000, limit: 1, instance: "me")
            #expect(held.count == 1 && lost.count == 1)
            let ids = held.flatMap { $0.rows.map(\.id) }
            #expect(try await store.renewLeases(instance: "me", ids: ids, until: now + 60_000, now: now + 1_000) == 1)
            // Another instance's rows are not renewed under this one's name.
            let other = lost.flatMap { $0.rows.map(\.id) }
            #expect(try await store.renewLeases(instance: "else", ids: other, until: now + 60_000, now: now) == 0)
            // Once the lost claim's lease runs out, it is claimed again (under the same key); the
            // renewed one is not.
            let again = try await store.claim(now: now + 6_000, lease: 5_000, limit: 10, instance: "me")
            #expect(again.map(\.key) == lost.map(\.key))
            #expect(again.flatMap { $0.rows.map(\.id) } == other)
        }
    }

    @Test("a reschedule keeps the batch key and gives back the attempt", arguments: Backend.allCases)
    func rescheduleKeepsKey(_ backend: Backend) async throws {
        try await backend.withStore { f in
            let store = f.store
            try await store.queue([transition(station: "A")], receivers: ["ops"], now: now)
            let batch = try #require(try await store.claim(now: now, lease: 60_000, limit: 10, instance: nil).first)
            try await store.apply([.reschedule(batch, batchKey: "digest-1", dueAt: now + 10_000)])
            #expect(try await store.nextDue() == now + 10_000)
            let later = try await store.claim(now: now + 10_000, lease: 60_000, limit: 10, instance: nil)
            #expect(later.map(\.key) == ["digest-1"])
            #expect(later.first?.attempt == 1)
            try await store.apply([
                .finish(later[0], state: .sent, now: now + 10_001, retryAt: nil, error: nil),
                .system(transition(rule: "klaxon", station: "self"), message: "m", receiver: "ops", now: now + 10_001),
            ])
            #expect(try await store.outboxCounts() == [.sent: 1, .pending: 1])
            #expect(try await store.outbox(state: .sent).first?.sentAt == now + 10_001)
        }
    }
}

/// Ids collected from concurrent tasks.
final class Collected: Sendable {
    private let ids = Mutex<[String]>([])
    func add(_ more: [String]) { ids.withLock { $0 += more } }
    var all: [String] { ids.withLock { $0 } }
}
