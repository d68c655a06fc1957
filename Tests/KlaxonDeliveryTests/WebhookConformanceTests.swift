import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonStore
import KlaxonTesting
import Testing

/// Every webhook preset passes the same conformance checks against a real HTTP server on 127.0.0.1:
/// it delivers with an idempotency key, retries 5xx with the same key, honours 429 Retry-After, gives
/// up on other 4xx, signs when asked, and leaks no secret into logs, errors or the outbox.
@Suite(.serialized) struct WebhookConformanceTests {
    static let secretPath = "/hooks/T0SECRET/B0SECRET/tokenSECRET123"
    static let hmac = "hmac-SECRET-456"

    func setup(
        _ preset: Receiver.Webhook.Preset, sink: HTTPSink, rate: Double? = nil, timeout: Double? = nil,
        url: String? = nil
    )
        throws -> (OutboxFixture, Dispatcher, LogCapture)
    {
        let fixture = try OutboxFixture()
        let logs = LogCapture()
        var config = Receiver.Webhook(
            name: "hook", url: Secret(url ?? sink.url + Self.secretPath), preset: preset, hmacSecret: Secret(Self.hmac),
            rateLimit: rate)
        // The product's own request timeout, unless a test gives a short one to a request meant to hang.
        if let timeout { config.timeout = timeout }
        let dispatcher = Dispatcher(
            store: fixture.store, notifiers: ["hook": try WebhookNotifier(config: config)], routing: Routing(),
            settings: fastSettings(), logger: logs.logger())
        return (fixture, dispatcher, logs)
    }

    @Test(arguments: Receiver.Webhook.Preset.allCases)
    func deliversSignedWithIdempotencyKey(_ preset: Receiver.Webhook.Preset) async throws {
        try await HTTPSink.with { sink in try await deliversSignedWithIdempotencyKey(preset, sink: sink) }
    }

    func deliversSignedWithIdempotencyKey(_ preset: Receiver.Webhook.Preset, sink: HTTPSink) async throws {
        let (fixture, dispatcher, _) = try setup(preset, sink: sink)
        try await fixture.queue([transition()], receivers: ["hook"])
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.sent == 1)
        let requests = await sink.requests()
        #expect(requests.count == 1)
        let r = try #require(requests.first)
        #expect(r.method == "POST")
        #expect(r.path == Self.secretPath)
        #expect(r.headers["content-type"] == "application/json")
        let row = try await #require(try fixture.store.outbox().first)
        #expect(r.headers["idempotency-key"] == row.id)
        #expect(row.state == .sent)
        #expect(r.json != nil, "body is JSON")
        // Signature: sha256=HMAC(secret, "timestamp.body").
        let ts = try #require(r.headers["x-klaxon-timestamp"].flatMap { Int64($0) })
        #expect(abs(ts - Int64(Date().timeIntervalSince1970)) < 60)
        #expect(
            r.headers["x-klaxon-signature"] == WebhookNotifier.signature(secret: Self.hmac, timestamp: ts, body: r.body)
        )
        // Every message carries the explanation and the data time.
        #expect(r.text.contains("previous level action") && r.text.contains("2026-03-01T06:15:00Z"))
    }

    @Test(arguments: Receiver.Webhook.Preset.allCases)
    func retries5xxWithTheSameKey(_ preset: Receiver.Webhook.Preset) async throws {
        try await HTTPSink.with { sink in try await retries5xxWithTheSameKey(preset, sink: sink) }
    }

    func retries5xxWithTheSameKey(_ preset: Receiver.Webhook.Preset, sink: HTTPSink) async throws {
        await sink.script([.respond(status: 500), .respond(status: 503), .respond(status: 502)])
        let (fixture, dispatcher, _) = try setup(preset, sink: sink)
        try await fixture.queue([transition()], receivers: ["hook"])
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.retried == 3 && pass.sent == 1)
        let keys = await sink.requests().map { $0.headers["idempotency-key"] ?? "" }
        #expect(keys.count == 4)
        #expect(Set(keys).count == 1)
        await #expect(try fixture.store.outbox().first?.state == .sent)
    }

    @Test(arguments: Receiver.Webhook.Preset.allCases)
    func honours429RetryAfter(_ preset: Receiver.Webhook.Preset) async throws {
        try await HTTPSink.with { sink in try await honours429RetryAfter(preset, sink: sink) }
    }

    func honours429RetryAfter(_ preset: Receiver.Webhook.Preset, sink: HTTPSink) async throws {
        await sink.script([.respond(status: 429, headers: ["Retry-After": "1"])])
        let (fixture, dispatcher, _) = try setup(preset, sink: sink)
        try await fixture.queue([transition()], receivers: ["hook"])
        _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        let requests = await sink.requests()
        #expect(requests.count == 2)
        if requests.count == 2 {
            // Backoff alone would retry within 0.1 s here; Retry-After asks for 1 s.
            #expect(requests[1].receivedAt.timeIntervalSince(requests[0].receivedAt) >= 0.95)
        }
    }

    @Test(arguments: Receiver.Webhook.Preset.allCases)
    func leaksNoSecret(_ preset: Receiver.Webhook.Preset) async throws {
        try await HTTPSink.with { sink in try await leaksNoSecret(preset, sink: sink) }
    }

    func leaksNoSecret(_ preset: Receiver.Webhook.Preset, sink: HTTPSink) async throws {
        await sink.script([.respond(status: 500), .respond(status: 404, body: "no such hook")])
        let (fixture, dispatcher, logs) = try setup(preset, sink: sink)
        try await fixture.queue([transition()], receivers: ["hook"])
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.dead == 1)  // 404 is not retried
        let errors = try await fixture.store.outbox().compactMap(\.lastError)
        #expect(errors.count == 1)
        for text in logs.all + errors {
            #expect(!text.contains("SECRET"), "leaked: \(text)")
        }
        #expect(errors.contains { $0.contains("HTTP 404") })
    }

    @Test func refusedConnectionLeaksNoSecret() async throws {
        let fixture = try OutboxFixture()
        let logs = LogCapture()
        var settings = fastSettings()
        settings.giveUpAfter = 0
        // A request meant to hang: AsyncHTTPClient tries a refused connection again until the request's
        // deadline, so the refusal is only reported at the timeout.
        let url = "http://127.0.0.1:9" + Self.secretPath
        let dispatcher = Dispatcher(
            store: fixture.store,
            notifiers: [
                "hook": try WebhookNotifier(
                    config: .init(name: "hook", url: Secret(url), hmacSecret: Secret(Self.hmac), timeout: 1))
            ],
            routing: Routing(), settings: settings, logger: logs.logger())
        try await fixture.queue([transition()], receivers: ["hook"])
        #expect(try await dispatcher.runUntilEmpty(deadline: brokenAfter()).dead == 1)
        let errors = try await fixture.store.outbox().compactMap(\.lastError)
        #expect(errors.count == 1)
        for text in logs.all + errors {
            #expect(!text.contains("SECRET"), "leaked: \(text)")
        }
        #expect(errors.contains { $0.contains("connection failed") && $0.contains("127.0.0.1:9/…") })
    }

    @Test func timeoutIsRetried() async throws {
        try await HTTPSink.with { sink in try await timeoutIsRetried(sink: sink) }
    }

    func timeoutIsRetried(sink: HTTPSink) async throws {
        await sink.script([.never])
        let (fixture, dispatcher, logs) = try setup(.generic, sink: sink, timeout: 0.3)
        try await fixture.queue([transition()], receivers: ["hook"])
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.retried == 1 && pass.sent == 1)
        #expect(logs.all.contains { $0.contains("will retry") && $0.contains("timed out after 0.3 s") }, "\(logs.all)")
    }

    /// A receiver answering with a huge body: its status counts, the body is not kept, and the next
    /// send works (on a new connection).
    @Test func hugeResponseBodyIsDroppedAndTheStatusStands() async throws {
        try await HTTPSink.with { sink in
            await sink.script([
                .respond(status: 200, body: String(repeating: "x", count: 3 << 20)), .ok,
            ])
            let notifier = try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/big")))
            let n = AlertNotification(
                key: "k1", receiver: "hook", alerts: [NotifiedAlert(transition: transition(), message: "m", id: 1)])
            try await notifier.send(n)
            try await notifier.send(n)
            #expect(await sink.requests().count == 2)
        }
    }

    /// Many sends through one notifier, some at once: every one arrives, each with its own key.
    @Test func keepAliveConnectionsCarryManySends() async throws {
        try await HTTPSink.with { sink in
            let notifier = try WebhookNotifier(
                config: .init(name: "hook", url: Secret(sink.url + "/many?x=1"), connections: 4))
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<40 {
                    group.addTask {
                        try await notifier.send(
                            AlertNotification(
                                key: "k\(i)", receiver: "hook",
                                alerts: [NotifiedAlert(transition: transition(), message: "m", id: Int64(i))]))
                    }
                    if i % 4 == 3 { try await group.waitForAll() }
                }
            }
            let requests = await sink.requests()
            #expect(requests.count == 40)
            #expect(
                Set(requests.compactMap { $0.headers["idempotency-key"] ?? $0.headers["Idempotency-Key"] }).count == 40)
            #expect(requests.allSatisfy { $0.path == "/many" && $0.query == "x=1" && $0.method == "POST" })
        }
    }

    @Test func closedConnectionIsRetried() async throws {
        let closing = try ClosingServer()
        let fixture = try OutboxFixture()
        var settings = fastSettings()
        settings.giveUpAfter = 1
        let dispatcher = Dispatcher(
            store: fixture.store,
            notifiers: [
                "hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(closing.url + "/x")))
            ],
            routing: Routing(), settings: settings)
        try await fixture.queue([transition()], receivers: ["hook"])
        let first = try await dispatcher.dispatchOnce()
        #expect(first.retried == 1)
        await #expect(try fixture.store.outbox().first?.state == .pending)
    }

    @Test func deadRowRaisesDeliveryFailingToTheFallback() async throws {
        try await TestServers.with { servers in
            let (sink, fallback) = (try await servers.sink(), try await servers.sink())
            try await deadRowRaisesDeliveryFailingToTheFallback(sink: sink, fallback: fallback)
        }
    }

    func deadRowRaisesDeliveryFailingToTheFallback(sink: HTTPSink, fallback: HTTPSink) async throws {
        await sink.script([.respond(status: 400, body: "bad payload")])
        let fixture = try OutboxFixture()
        let dispatcher = Dispatcher(
            store: fixture.store,
            notifiers: [
                "hook": try WebhookNotifier(config: .init(name: "hook", url: Secret(sink.url + "/a"))),
                "pager": try WebhookNotifier(config: .init(name: "pager", url: Secret(fallback.url + "/b"))),
            ], routing: Routing(), settings: fastSettings(fallback: "pager"))
        try await fixture.queue([transition()], receivers: ["hook"])
        let pass = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        #expect(pass.dead == 1 && pass.sent == 1)
        let got = await fallback.requests()
        #expect(got.count == 1)
        let labels = ((got.first?.json?["alerts"] as? [[String: Any]])?.first?["labels"]) as? [String: String]
        #expect(labels?["alertname"] == "delivery-failing")
        #expect(labels?["station"] == "hook")
        #expect(labels?["severity"] == "critical")
    }

    @Test func rateLimitSpacesABurst() async throws {
        try await HTTPSink.with { sink in try await rateLimitSpacesABurst(sink: sink) }
    }

    func rateLimitSpacesABurst(sink: HTTPSink) async throws {
        let (fixture, dispatcher, _) = try setup(.generic, sink: sink, rate: 20)
        try await fixture.queue((0..<6).map { transition(station: "S\($0)") }, receivers: ["hook"])
        let started = ContinuousClock.now
        _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        let took = ContinuousClock.now - started
        #expect(await sink.requests().count == 6)
        // 6 messages at 20/s: sent in slots 50 ms apart, so the last cannot start before 250 ms, instead of a
        // burst. Measured where the pacing happens: on a loaded machine the first request's new connection can
        // arrive late and squeeze the gaps the sink sees.
        #expect(took >= .milliseconds(250), "\(took)")
    }

    @Test func firingIsDeliveredBeforeItsResolve() async throws {
        try await HTTPSink.with { sink in try await firingIsDeliveredBeforeItsResolve(sink: sink) }
    }

    func firingIsDeliveredBeforeItsResolve(sink: HTTPSink) async throws {
        await sink.script([.respond(status: 500), .respond(status: 500)])
        let (fixture, dispatcher, _) = try setup(.generic, sink: sink)
        try await fixture.queue(
            [transition(state: .firing), transition(state: .resolved, level: nil, from: "minor")], receivers: ["hook"])
        _ = try await dispatcher.runUntilEmpty(deadline: brokenAfter())
        let statuses = await sink.requests().compactMap { $0.json?["status"] as? String }
        #expect(statuses == ["firing", "firing", "firing", "resolved"])
    }
}
