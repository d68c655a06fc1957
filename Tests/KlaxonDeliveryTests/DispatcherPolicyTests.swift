import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Synchronization
import Testing

/// A clock the test moves by hand.
final class TestClock: Sendable {
    let ms: Mutex<Int64>
    init(_ iso: String) { ms = Mutex(Timestamp.parse(iso)! * 1000) }
    func set(_ iso: String) { ms.withLock { $0 = Timestamp.parse(iso)! * 1000 } }
    var now: Int64 { ms.withLock { $0 } }
}

@Suite(.serialized) struct DispatcherPolicyTests {
    func quietRouting(_ policy: QuietHours.Policy) -> Routing {
        let quiet = QuietHours(
            timeZone: TimeZone(identifier: "America/Chicago")!, from: 22 * 60, to: 7 * 60, policy: policy,
            bypassSeverity: .critical)
        return Routing(routes: [Route(receivers: ["hook"], quietHours: quiet)])
    }

    @Test func deferSendsOneDigestWhenQuietHoursEndAcrossDST() async throws {
        try await HTTPSink.with { sink in try await deferSendsOneDigestWhenQuietHoursEndAcrossDST(sink: sink) }
    }

    func deferSendsOneDigestWhenQuietHoursEndAcrossDST(sink: HTTPSink) async throws {
        let fixture = try OutboxFixture()
        // 23:00 CST on Saturday 2026-03-07; the clocks spring forward at 02:00; quiet ends 07:00 CDT = 12:00Z.
        let clock = TestClock("2026-03-08T05:00:00Z")
        let dispatcher = Dispatcher(
            store: fixture.store,
            notifiers: ["hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h")))],
            routing: quietRouting(.defer), settings: fastSettings(), clock: { clock.now })
        try await fixture.queue(
            [transition(station: "A"), transition(station: "B")], receivers: ["hook"], route: 0, now: clock.now)
        var pass = try await dispatcher.dispatchOnce()
        #expect(pass.deferred == 2)
        #expect(await sink.requests().isEmpty)
        await #expect(
            try fixture.store.outbox().allSatisfy { $0.dueAt == Timestamp.parse("2026-03-08T12:00:00Z")! * 1000 })
        // What the alert page says of them: held by quiet hours until they end (issue 39), not "queued".
        await #expect(
            try fixture.store.outbox().map(\.quietUntil)
                == Array(repeating: Timestamp.parse("2026-03-08T12:00:00Z"), count: 2))

        clock.set("2026-03-08T11:59:59Z")
        pass = try await dispatcher.dispatchOnce()
        #expect(pass.batches == 0)

        clock.set("2026-03-08T12:00:00Z")
        pass = try await dispatcher.dispatchOnce()
        #expect(pass.sent == 1)
        let requests = await sink.requests()
        #expect(requests.count == 1)
        let alerts = (requests.first?.json?["alerts"] as? [[String: Any]]) ?? []
        #expect(alerts.count == 2, "one digest with both alerts")
        #expect(requests.first?.headers["idempotency-key"]?.hasPrefix("digest-hook-") == true)
        await #expect(try fixture.store.outbox().allSatisfy { $0.state == .sent && $0.quietUntil == nil })
    }

    @Test func dropDiscardsButCriticalBypasses() async throws {
        try await HTTPSink.with { sink in try await dropDiscardsButCriticalBypasses(sink: sink) }
    }

    func dropDiscardsButCriticalBypasses(sink: HTTPSink) async throws {
        let fixture = try OutboxFixture()
        let clock = TestClock("2026-11-01T07:30:00Z")  // 01:30 on fall-back night: quiet
        let dispatcher = Dispatcher(
            store: fixture.store,
            notifiers: ["hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h")))],
            routing: quietRouting(.drop), settings: fastSettings(), clock: { clock.now })
        try await fixture.queue(
            [transition(station: "A", severity: .warning), transition(station: "B", severity: .critical)],
            receivers: ["hook"], route: 0,
            now: clock.now)
        let pass = try await dispatcher.dispatchOnce()
        #expect(pass.dropped == 1 && pass.sent == 1)
        let states = await Dictionary(uniqueKeysWithValues: try fixture.store.outbox().map { ($0.alert, $0.state) })
        #expect(states["river-levels|A|gage_height"] == .dropped)
        #expect(states["river-levels|B|gage_height"] == .sent)
        let labels =
            ((await sink.requests().first?.json?["alerts"] as? [[String: Any]])?.first?["labels"]) as? [String: String]
        #expect(labels?["station"] == "B")
    }

    @Test func silencedAlertsAreMutedNotSent() async throws {
        try await HTTPSink.with { sink in try await silencedAlertsAreMutedNotSent(sink: sink) }
    }

    func silencedAlertsAreMutedNotSent(sink: HTTPSink) async throws {
        let fixture = try OutboxFixture()
        let now = Int64(Date().timeIntervalSince1970)
        try await fixture.store.addSilence(
            Silence(
                id: "s1", matchers: [try Matcher.parse("station=A")], starts: now - 10, ends: now + 3600,
                comment: "work", createdBy: "t"),
            now: now)
        let dispatcher = Dispatcher(
            store: fixture.store,
            notifiers: ["hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/h")))],
            routing: Routing(), settings: fastSettings())
        try await fixture.queue([transition(station: "A"), transition(station: "B")], receivers: ["hook"])
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.muted == 1 && pass.sent == 1)
        #expect(await sink.requests().count == 1)
        let states = await Dictionary(uniqueKeysWithValues: try fixture.store.outbox().map { ($0.alert, $0.state) })
        #expect(states["river-levels|A|gage_height"] == .muted)
    }

    @Test func routingFollowsNotifyRoutesAndDefault() throws {
        let routing = Routing(
            routes: [
                Route(matchers: [try Matcher.parse("severity=critical")], receivers: ["pager"], continue: true),
                Route(matchers: [try Matcher.parse("rule=~river-.*")], receivers: ["chat"], sendResolved: false),
            ], defaultReceiver: "console")
        let critical = transition(severity: .critical)
        #expect(routing.deliveries(for: critical, notify: ["mail"]).map(\.receiver) == ["mail", "pager", "chat"])
        #expect(routing.deliveries(for: transition(), notify: []).map(\.receiver) == ["chat"])
        #expect(routing.deliveries(for: transition(rule: "other"), notify: []).map(\.receiver) == ["console"])
        // send_resolved: false skips the resolve for that route only.
        let resolved = transition(state: .resolved, level: nil, from: "minor")
        #expect(routing.deliveries(for: resolved, notify: []).map(\.receiver) == [])
        #expect(
            routing.deliveries(
                for: transition(state: .resolved, level: nil, from: "minor", severity: .critical), notify: []
            ).map(\.receiver) == ["pager"])
    }
}
