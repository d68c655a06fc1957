import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Synchronization
import Testing

/// The daemon's dispatcher (`run`) claims while earlier sends are in flight: a send that hangs holds
/// up its own queue only. Each test holds a send until the end (`.held`): nothing here waits on time,
/// and the bounds only say "broken" (before, the second delivery waited for the first send's timeout).
@Suite(.serialized, .timeLimit(.minutes(10))) struct PipelineTests {
    /// Runs `dispatcher.run` while `body` runs; then stops it (as the daemon's graceful stop does)
    /// once the held sends are let go, and returns when it has returned.
    func running(_ dispatcher: Dispatcher, sink: HTTPSink, _ body: () async throws -> Void) async throws {
        let stop = Atomic(false)
        let run = Task { try await dispatcher.run(poll: 20, stop: { stop.load(ordering: .relaxed) }) }
        let outcome = await Result { try await body() }
        stop.store(true, ordering: .relaxed)
        await sink.releaseHeld()
        try await run.value
        try outcome.get()
    }

    /// These tests are about what a hanging send holds up, not about leases (see `longLease`).
    static func settings() -> Dispatcher.Settings { fastSettings(lease: longLease) }

    func hook(_ sink: HTTPSink, path: String = "/h", connections: Int = 32) throws -> any Notifier {
        try WebhookNotifier(
            config: .init(name: "hook", url: Secret(sink.url + path), timeout: 600, connections: connections))
    }

    @Test("a send that never ends holds up no other alert's delivery to the same receiver")
    func hangingSendDoesNotBlockTheNext() async throws {
        try await HTTPSink.with { sink in
            await sink.script([.held])
            let fixture = try OutboxFixture()
            let dispatcher = Dispatcher(
                store: fixture.store, notifiers: ["hook": try hook(sink)], routing: Routing(), settings: Self.settings()
            )
            try await running(dispatcher, sink: sink) {
                try await fixture.queue([transition(station: "A")], receivers: ["hook"])
                dispatcher.nudge()
                try await poll(until: "A's send arrives") { await sink.requests().count == 1 }
                // A is in flight and stays so; B is queued after it.
                try await fixture.queue([transition(station: "B")], receivers: ["hook"])
                dispatcher.nudge()
                try await poll(until: "B is delivered while A's send hangs") {
                    try await fixture.store.outbox(state: .sent).count == 1
                }
                #expect(await sink.requests().last?.text.contains("\"B\"") == true)
            }
            // Let go, A is delivered too; nothing is left claimed.
            let rows = try await fixture.store.outbox()
            #expect(rows.allSatisfy { $0.state == .sent || $0.state == .pending }, "\(rows.map(\.state))")
            #expect(rows.filter { $0.state == .sent }.count >= 1)
        }
    }

    @Test("a receiver that hangs fills only its own lane: the other receivers' alerts keep going")
    func hangingReceiverDoesNotBlockOthers() async throws {
        try await HTTPSink.with { sink in
            // The slow receiver's first send is held, and it has one connection: everything queued to it
            // waits. Its lane takes a few batches, then its rows are left unclaimed.
            await sink.script([.held])
            let fixture = try OutboxFixture()
            var settings = Self.settings()
            settings.claimLimit = 20
            settings.laneLimit = 4
            let dispatcher = Dispatcher(
                store: fixture.store,
                notifiers: [
                    "slow": try hook(sink, path: "/slow", connections: 1), "fast": try hook(sink, path: "/fast"),
                ],
                routing: Routing(), settings: settings)
            try await running(dispatcher, sink: sink) {
                try await fixture.queue((0..<30).map { transition(station: "S\($0)") }, receivers: ["slow"])
                dispatcher.nudge()
                try await poll(until: "the slow receiver's first send arrives") { await sink.requests().count == 1 }
                try await fixture.queue((0..<5).map { transition(station: "F\($0)") }, receivers: ["fast"])
                dispatcher.nudge()
                try await poll(until: "the fast receiver's five are delivered") {
                    await sink.requests().filter { $0.path == "/fast" }.count == 5
                }
                // The slow lane holds at most two claims' worth; the rest of its rows were never claimed.
                let sending = try await fixture.store.outbox(state: .sending).filter { $0.receiver == "slow" }.count
                #expect(sending <= 2 * settings.laneLimit, "\(sending) claimed for the hanging receiver")
                await #expect(
                    try fixture.store.outbox(state: .pending).filter { $0.receiver == "slow" }.count
                        >= 30 - 2 * settings.laneLimit)
            }
        }
    }

    @Test("the pipeline keeps the order per alert and receiver: a resolve never goes before its firing")
    func orderHolds() async throws {
        try await HTTPSink.with { sink in
            let fixture = try OutboxFixture()
            var settings = Self.settings()
            settings.laneLimit = 3
            let dispatcher = Dispatcher(
                store: fixture.store, notifiers: ["hook": try hook(sink, connections: 8)], routing: Routing(),
                settings: settings)
            try await running(dispatcher, sink: sink) {
                for round in 0..<5 {
                    let stations = (0..<10).map { "S\($0)" }
                    try await fixture.queue(
                        stations.map { transition(station: $0, state: round % 2 == 0 ? .firing : .resolved) },
                        receivers: ["hook"])
                    dispatcher.nudge()
                }
                try await poll(until: "all 50 are delivered") {
                    try await fixture.store.outbox(state: .sent, limit: 100).count == 50
                }
            }
            // Per station, the requests alternate firing, resolved, firing, … as queued.
            var seen: [String: [String]] = [:]
            for r in await sink.requests() {
                let alerts = r.json?["alerts"] as? [[String: Any]] ?? []
                for a in alerts {
                    let labels = a["labels"] as? [String: String] ?? [:]
                    seen[labels["station"] ?? "?", default: []].append(a["status"] as? String ?? "?")
                }
            }
            #expect(seen.count == 10)
            for (station, states) in seen {
                #expect(
                    states == ["firing", "resolved", "firing", "resolved", "firing"], "\(station): \(states)")
            }
        }
    }
}
