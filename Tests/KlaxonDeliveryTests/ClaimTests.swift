import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Testing

/// Claims name their instance: a dead instance's claims come back at once; a live one's are renewed
/// while its send is in flight, so nobody else takes them.
@Suite(.serialized, .timeLimit(.minutes(10))) struct ClaimTests {
    func hook(_ sink: HTTPSink) throws -> [String: any Notifier] {
        ["hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h")))]
    }

    @Test("a restarted dispatcher takes back a dead process's claims at once, under the same key")
    func deadInstanceClaimsComeBackAtOnce() async throws {
        try await HTTPSink.with { sink in try await deadInstanceClaimsComeBackAtOnce(sink: sink) }
    }

    func deadInstanceClaimsComeBackAtOnce(sink: HTTPSink) async throws {
        let fixture = try OutboxFixture()
        try await fixture.queue([transition(station: "A"), transition(station: "B")], receivers: ["hook"])
        // A process on this host that no longer runs (no such pid) claimed both, with a 2-minute lease.
        let now = nowMillis()
        try await fixture.store.register(
            InstanceRecord(
                id: "dead", host: ProcessInfo.processInfo.hostName, pid: Int32.max, processStart: 1, registeredAt: now,
                heartbeatAt: now))
        let claimed = try await fixture.store.claim(now: now, lease: 120_000, limit: 10, instance: "dead")
        let keys = Set(claimed.map(\.key))
        #expect(claimed.count == 2)

        let dispatcher = Dispatcher(
            store: fixture.store, notifiers: try hook(sink), routing: Routing(), settings: fastSettings())
        // Well inside the old lease: only taking the claims back can deliver them.
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.sent == 2)
        let requests = await sink.requests()
        #expect(Set(requests.compactMap { $0.headers["idempotency-key"] }) == keys)
        await #expect(try fixture.store.outbox().allSatisfy { $0.state == .sent })
        #expect(try await fixture.store.claimHolders(excluding: dispatcher.instance.id).isEmpty)
    }

    @Test("a live instance's claims are left alone, even one of another dispatcher in this process")
    func liveInstanceClaimsAreKept() async throws {
        try await HTTPSink.with { sink in try await liveInstanceClaimsAreKept(sink: sink) }
    }

    func liveInstanceClaimsAreKept(sink: HTTPSink) async throws {
        let fixture = try OutboxFixture()
        try await fixture.queue([transition(station: "A")], receivers: ["hook"])
        let other = Dispatcher(
            store: fixture.store, notifiers: try hook(sink), routing: Routing(), settings: fastSettings())
        try await fixture.store.register(other.instance)
        _ = try await fixture.store.claim(now: nowMillis(), lease: 120_000, limit: 100, instance: other.instance.id)
        let dispatcher = Dispatcher(
            store: fixture.store, notifiers: try hook(sink), routing: Routing(), settings: fastSettings())
        #expect(try await dispatcher.reclaimFromDeadInstances() == 0)
        #expect(try await dispatcher.dispatchOnce().batches == 0)
        #expect(await sink.requests().isEmpty)
    }

    @Test("a send longer than the lease keeps its claim: renewed while in flight, sent once")
    func leaseIsRenewedWhileSending() async throws {
        try await HTTPSink.with { sink in try await leaseIsRenewedWhileSending(sink: sink) }
    }

    func leaseIsRenewedWhileSending(sink: HTTPSink) async throws {
        // The send is held until the test has moved the dispatchers' clock through three leases of 2 s, a
        // third of a lease at a time, each time waiting for the renewal that is then due: the test follows
        // the dispatcher's clock, not the machine's speed.
        await sink.script([.held])
        let clock = TestClock("2026-03-01T12:00:00Z")
        let fixture = try OutboxFixture()
        try await fixture.queue([transition(station: "A")], receivers: ["hook"], now: clock.now)
        var settings = fastSettings()
        settings.lease = 2_000
        let slow = Dispatcher(
            store: fixture.store,
            notifiers: [
                "hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h"), timeout: 30))
            ],
            routing: Routing(), settings: settings, clock: { clock.now })
        let rival = Dispatcher(
            store: fixture.store, notifiers: try hook(sink), routing: Routing(), settings: settings,
            clock: { clock.now })
        async let first = slow.dispatchOnce()
        try await poll(until: "the slow send arrives") { await !sink.requests().isEmpty }
        // While the slow send is in flight, a rival dispatcher tries to claim at every step.
        var rivalSent = 0
        for _ in 0..<9 {
            clock.ms.withLock { $0 += settings.lease / 3 + 1 }
            try await poll(until: "the lease is renewed") {
                try await fixture.store.outbox().first?.leaseUntil == clock.now + settings.lease
            }
            rivalSent += try await rival.dispatchOnce().sent
        }
        await sink.releaseHeld()
        let pass = try await first
        #expect(pass.sent == 1)
        #expect(rivalSent == 0)
        #expect(await sink.requests().count == 1)
    }

    @Test("an idle dispatcher only reads: another process holding the write lock does not touch it")
    func idleDispatcherDoesNotWrite() async throws {
        let fixture = try OutboxFixture()
        let dispatcher = Dispatcher(store: fixture.store, notifiers: [:], routing: Routing(), settings: fastSettings())
        let lock = try await WriteLock.hold(fixture.dir.appendingPathComponent("k.sqlite").path)
        // Each pass would otherwise open a write transaction, wait out the busy timeout and throw.
        var error: (any Error)?
        do {
            for _ in 0..<3 { #expect(try await dispatcher.dispatchOnce().batches == 0) }
        } catch let e {
            error = e
        }
        await lock.release()
        #expect(error == nil)
    }

    @Test("a pass records each send as it completes: one slow receiver does not hold back the record of the rest")
    func outcomesAreRecordedAsSendsComplete() async throws {
        try await HTTPSink.with { sink in try await outcomesAreRecordedAsSendsComplete(sink: sink) }
    }

    func outcomesAreRecordedAsSendsComplete(sink: HTTPSink) async throws {
        await sink.script([.ok, .ok, .ok, .never])
        let fixture = try OutboxFixture()
        try await fixture.queue(["A", "B", "C", "D"].map { transition(station: $0) }, receivers: ["hook"])
        let dispatcher = Dispatcher(
            store: fixture.store, notifiers: try hook(sink), routing: Routing(), settings: fastSettings())
        let pass = Task { try await dispatcher.dispatchOnce() }
        // Three sends finish at once; the fourth hangs. Their outcomes are recorded while it hangs.
        while try await fixture.store.outbox(state: .sent).count < 3 {
            try await Task.sleep(for: .milliseconds(20))
        }
        await #expect(try fixture.store.outbox(state: .sending).count == 1)
        // Cut off (as by a shutdown): the unsent row goes back, the three stay sent.
        pass.cancel()
        _ = await pass.result
        await #expect(try fixture.store.outbox(state: .sent).count == 3)
        await #expect(try fixture.store.outbox(state: .pending).count == 1)
    }
}
