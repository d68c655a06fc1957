import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonStore
import KlaxonTesting
import Logging
import Synchronization
import Testing

/// The resolve contract (issue 41, docs/receivers.md): a receiver that was sent an alert's firing
/// (on a route with `send_resolved`) is sent its resolve, whatever came between. One case per test,
/// each on SQLite and on a real PostgreSQL, through the evaluation and the dispatcher as the daemon
/// runs them, with a clock the test moves.
@Suite("the resolve contract: a resolve for every firing", .timeLimit(.minutes(10)))
struct ResolveContractTests {
    enum Kind: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// The flood of a gauge: minor at 11 ft, moderate at 13 ft.
    static let rules = [
        Rule(
            name: "flood-stage",
            kind: LevelsRule(
                metric: "gage_height",
                levels: [
                    LevelsRule.Level(name: "minor", at: 11), LevelsRule.Level(name: "moderate", at: 13),
                ]), severity: .warning)
    ]
    /// 2026-03-02 12:00 UTC, a Monday.
    static let base = Timestamp.parse("2026-03-02T12:00:00Z")!

    static func routing(
        _ receivers: [String] = ["chat"], groupInterval: Int64 = 0, quiet: QuietHours? = nil, notifyMaxAge: Int64 = 0
    ) -> Routing {
        Routing(routes: [
            Route(
                receivers: receivers, groupInterval: groupInterval, quietHours: quiet, notifyMaxAge: notifyMaxAge)
        ])
    }

    /// Runs `body` with a fresh store of `kind`, and a way to open a second one on the same database
    /// (another daemon's view), closed before this returns.
    static func withStore(
        _ kind: Kind,
        _ body: (any Store, _ other: ((any Store) async throws -> Void) async throws -> Void) async throws
            -> Void
    ) async throws {
        let logger = Logger(label: "klaxon.test", factory: { _ in SwiftLogNoOpLogHandler() })
        switch kind {
        case .sqlite:
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("klaxon-resolve-\(UUID())")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let path = dir.appendingPathComponent("k.sqlite").path
            try await body(try SQLiteStore.open(path: path)) { inner in
                try await inner(try SQLiteStore.open(path: path))
            }
        case .postgres:
            try await PostgresServer.withDatabase { db in
                let location = try StoreLocation.parse(db.url, environment: [:])
                try await location.withStore(logger: logger) { store in
                    try await body(store) { inner in
                        try await location.withStore(logger: logger) { other in try await inner(other) }
                    }
                }
            }
        }
    }

    /// One gauge's story: readings written and evaluated at the test clock's time, and the outbox
    /// dispatched to in-process receivers that keep what they were told.
    final class Story: Sendable {
        let store: any Store
        /// Seconds.
        let clock: Shared<Int64>
        let inboxes: [String: Inbox]
        let routing: Mutex<Routing>
        let dispatcher: Dispatcher
        /// What `observeUnsentResolve` was told: `receiver reason`.
        let unsentLog: Shared<[String]>
        let settings: Dispatcher.Settings
        /// The daemon's catch-up watch, looked at after each evaluation as the daemon does.
        let watch = Shared(CatchUps.Watch())

        init(store: any Store, routing: Routing, receivers: [String] = ["chat", "pager"]) {
            self.store = store
            let inboxes = Dictionary(uniqueKeysWithValues: receivers.map { ($0, Inbox()) })
            self.inboxes = inboxes
            self.routing = Mutex(routing)
            var settings = Dispatcher.Settings()
            settings.lease = 30_000
            let (clock, unsent) = (Shared(ResolveContractTests.base), Shared<[String]>([]))
            (self.clock, self.unsentLog) = (clock, unsent)
            settings.observeUnsentResolve = { receiver, reason in
                unsent.value.withLock { $0.append("\(receiver) \(reason)") }
            }
            self.settings = settings
            self.dispatcher = Dispatcher(
                store: store, notifiers: inboxes, routing: routing, settings: settings,
                clock: { clock.value.withLock { $0 } * 1000 })
        }

        var now: Int64 { clock.value.withLock { $0 } }
        var unsent: [String] { unsentLog.value.withLock { $0 } }
        /// Moves the clock to `base + seconds`.
        func at(_ seconds: Int64) { clock.value.withLock { $0 = ResolveContractTests.base + seconds } }
        func told(_ receiver: String) -> [String] { inboxes[receiver]?.told ?? [] }

        /// A reading of `feet` at the clock's time (or `dataAt`), evaluated now.
        func reading(_ feet: Double, dataAt: Int64? = nil) async throws {
            try await readings([(dataAt ?? now, feet)])
        }

        /// Readings (data time in seconds, feet), evaluated together now.
        func readings(_ values: [(Int64, Double)]) async throws {
            try await store.write(
                SourceBatch(
                    readings: values.map {
                        Reading(station: "01646500", metric: "gage_height", time: $0.0, value: $0.1, unit: "ft")
                    }), at: now)
            let routing = self.routing.withLock { $0 }
            _ = try await Evaluate.run(
                store: store, rules: ResolveContractTests.rules, now: now, routing: routing, queuedAt: now * 1000)
            var watch = self.watch.value.withLock { $0 }
            try await CatchUps.afterEvaluation(
                store: store, rules: ResolveContractTests.rules, routing: routing, watch: &watch, now: now * 1000)
            self.watch.value.withLock { $0 = watch }
        }

        /// What the passes of one `dispatch` did.
        struct Tally {
            var sent = 0
            var muted = 0
            var skipped = 0
            var deferred = 0
            var dropped = 0
        }

        /// Dispatches what is due now, until nothing is.
        @discardableResult
        func dispatch(with dispatcher: Dispatcher? = nil) async throws -> Tally {
            var total = Tally()
            let d = dispatcher ?? self.dispatcher
            while true {
                let p = try await d.dispatchOnce()
                if p.batches == 0 { return total }
                total.sent += p.sent
                total.muted += p.muted
                total.skipped += p.skipped
                total.deferred += p.deferred
                total.dropped += p.dropped
            }
        }

        /// A reload: the evaluation and the dispatcher take `routing` (and only the receivers named).
        func reload(_ routing: Routing, receivers: [String]) {
            self.routing.withLock { $0 = routing }
            dispatcher.reconfigure(
                notifiers: inboxes.filter { receivers.contains($0.key) }, routing: routing, settings: settings)
        }

        /// The alert firing at minor, told to its receivers.
        func firing() async throws {
            try await reading(11.5)
            try await dispatch()
        }

        func silence(until seconds: Int64) async throws {
            try await store.addSilence(
                Silence(
                    id: "s-\(now)", matchers: [try Matcher.parse("station=01646500")], starts: now - 1,
                    ends: ResolveContractTests.base + seconds, comment: "levee work", createdBy: "ana"), now: now)
        }
    }

    /// A value shared between the test and the closures it hands out.
    final class Shared<T: Sendable>: Sendable {
        let value: Mutex<T>
        init(_ value: T) { self.value = Mutex(value) }
    }

    /// A receiver that keeps what it was told: `state level` per alert, in order.
    final class Inbox: Notifier, Sendable {
        let got = Mutex<[String]>([])
        func render(_ notification: AlertNotification) throws -> String { "" }
        func send(_ notification: AlertNotification) async throws {
            got.withLock { got in
                for a in notification.alerts {
                    let t = a.presented.transition
                    got.append(t.state.rawValue + (t.level.map { " " + $0 } ?? ""))
                }
            }
        }
        var told: [String] { got.withLock { $0 } }
    }

    @Test("a silence added after the firing does not swallow the resolve", arguments: Kind.allCases)
    func silenceAfterFiring(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing())
            try await story.firing()
            story.at(600)
            try await story.silence(until: 7200)
            story.at(1200)
            try await story.reading(5)
            let pass = try await story.dispatch()
            #expect(pass.sent == 1 && pass.muted == 0)
            #expect(story.told("chat") == ["firing minor", "resolved"])
        }
    }

    @Test("an ack after the firing does not swallow the resolve", arguments: Kind.allCases)
    func ackAfterFiring(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing())
            try await story.firing()
            story.at(600)
            let id = try #require(try await store.outbox().first?.transitionID)
            #expect(try await store.ack(transitionID: id, by: "ana", at: story.now) != nil)
            story.at(1200)
            try await story.reading(5)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved"])
        }
    }

    /// Quiet hours 12:30–13:30 UTC, every day.
    static func quiet(_ policy: QuietHours.Policy) -> QuietHours {
        QuietHours(timeZone: TimeZone(identifier: "UTC")!, from: 12 * 60 + 30, to: 13 * 60 + 30, policy: policy)
    }

    @Test(
        "quiet hours that begin after the firing delay the resolve to their end, with either policy",
        arguments: Kind.allCases, [QuietHours.Policy.defer, .drop])
    func quietHoursAfterFiring(kind: Kind, policy: QuietHours.Policy) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(quiet: Self.quiet(policy)))
            try await story.firing()
            story.at(45 * 60)
            try await story.reading(5)
            let pass = try await story.dispatch()
            #expect(pass.deferred == 1 && pass.dropped == 0)
            #expect(story.told("chat") == ["firing minor"], "held while quiet")
            story.at(90 * 60 - 1)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor"])
            story.at(90 * 60)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved"], "at the end of quiet hours")
        }
    }

    @Test("a level change in quiet hours with drop is dropped; the resolve after it is not", arguments: Kind.allCases)
    func dropKeepsOnlyResolves(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(quiet: Self.quiet(.drop)))
            try await story.firing()
            story.at(40 * 60)
            try await story.reading(13.5)
            #expect(try await story.dispatch().dropped == 1)
            story.at(50 * 60)
            try await story.reading(5)
            #expect(try await story.dispatch().deferred == 1, "held to the end, not dropped")
            story.at(90 * 60)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved"])
        }
    }

    @Test("a long group_interval delays the resolve to the group's next turn, never drops it", arguments: Kind.allCases)
    func longGroupInterval(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(groupInterval: 4 * 3600))
            try await story.firing()
            story.at(600)
            try await story.reading(5)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor"], "not before group_interval")
            story.at(4 * 3600)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved"])
        }
    }

    @Test(
        "a long group_interval, and the alert fires again before the group's turn: the resolve still goes, before the new firing",
        arguments: Kind.allCases)
    func longGroupIntervalFiresAgain(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(groupInterval: 4 * 3600))
            try await story.firing()
            story.at(600)
            try await story.reading(5)
            story.at(1200)
            try await story.reading(11.5)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor"], "not before group_interval")
            story.at(4 * 3600)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved", "firing minor"])
        }
    }

    @Test(
        "a resolve and a new firing in one evaluation: the receiver that heard the firing gets the resolve, then the new firing",
        arguments: Kind.allCases)
    func resolveAndFiringInOneEvaluation(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing())
            try await story.firing()
            story.at(1200)
            try await story.readings([(Self.base + 600, 5), (Self.base + 900, 11.5)])
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved", "firing minor"])
        }
    }

    @Test(
        "data that resolves the alert older than notify_max_age still sends the resolve (once caught up)",
        arguments: Kind.allCases)
    func oldDataResolves(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(notifyMaxAge: 3600))
            try await story.firing()
            // The gauge fell at 12:10; the reading arrives three hours later.
            story.at(3 * 3600)
            try await story.reading(5, dataAt: Self.base + 600)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved"])
        }
    }

    @Test(
        "a reload that moves the alert's route to another receiver: the resolve goes to the receiver that heard the firing",
        arguments: Kind.allCases)
    func reloadChangedRoute(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(["chat"]))
            try await story.firing()
            story.at(600)
            story.reload(Self.routing(["pager"]), receivers: ["chat", "pager"])
            story.at(1200)
            try await story.reading(5)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "resolved"])
            #expect(story.told("pager").isEmpty, "the new receiver never heard it firing")
            #expect(story.unsent.isEmpty)
        }
    }

    @Test(
        "a reload that removes the receiver that heard the firing: the resolve is recorded with the reason and counted",
        arguments: Kind.allCases)
    func reloadRemovedReceiver(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(["chat"]))
            try await story.firing()
            story.at(600)
            story.reload(Self.routing(["pager"]), receivers: ["pager"])
            story.at(1200)
            try await story.reading(5)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor"])
            #expect(story.unsent == ["chat receiver_removed"])
            let row = try #require(try await store.outbox().first { $0.receiver == "chat" && $0.state != .sent })
            #expect(row.state == .skipped)
            #expect(row.lastError == "not sent: receiver chat heard this alert firing but is no longer configured")
        }
    }

    @Test(
        "the daemon killed between the firing and the resolve (its claim of the resolve left behind): the next one sends it",
        arguments: Kind.allCases)
    func killedBetween(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing())
            try await story.firing()
            story.at(600)
            try await story.reading(5)
            // The first daemon claims the resolve and dies before sending it.
            let claimed = try await store.claim(
                now: story.now * 1000, lease: 30_000, limit: 100, instance: "dead-daemon")
            #expect(claimed.count == 1)
            let next = Story(store: store, routing: Self.routing())
            next.at(600 + 31)
            try await next.dispatch()
            #expect(story.told("chat") == ["firing minor"])
            #expect(next.told("chat") == ["resolved"], "sent once the dead claim's lease ran out")
        }
    }

    @Test(
        "two daemons on one database: the resolve of a firing the other daemon sent goes out from this one",
        arguments: Kind.allCases)
    func otherDaemon(kind: Kind) async throws {
        try await Self.withStore(kind) { store, other in
            let first = Story(store: store, routing: Self.routing())
            try await first.firing()
            try await other { store in
                let second = Story(store: store, routing: Self.routing())
                second.at(600)
                try await second.silence(until: 7200)
                try await second.reading(5)
                try await second.dispatch()
                #expect(second.told("chat") == ["resolved"])
            }
            #expect(first.told("chat") == ["firing minor"])
        }
    }

    @Test(
        "a level change muted by a silence: once the silence has expired, the receiver is told the present at the group's next turn",
        arguments: Kind.allCases)
    func convergesAfterSilence(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(groupInterval: 300))
            try await story.firing()
            story.at(60)
            try await story.silence(until: 1800)
            story.at(600)
            try await story.reading(13.5)
            #expect(try await story.dispatch().muted == 1)
            story.at(1200)
            try await story.reading(13.6)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor"], "silenced")
            // The silence has ended; the next readings change nothing, and the receiver is told.
            story.at(2400)
            try await story.reading(13.7)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "changed moderate"])
            story.at(3000)
            try await story.reading(13.8)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "changed moderate"], "once")
        }
    }

    @Test(
        "a level change dropped in quiet hours: once they end, the receiver is told the present",
        arguments: Kind.allCases)
    func convergesAfterQuietHours(kind: Kind) async throws {
        try await Self.withStore(kind) { store, _ in
            let story = Story(store: store, routing: Self.routing(quiet: Self.quiet(.drop)))
            try await story.firing()
            story.at(40 * 60)
            try await story.reading(13.5)
            #expect(try await story.dispatch().dropped == 1)
            story.at(100 * 60)
            try await story.reading(13.6)
            try await story.dispatch()
            #expect(story.told("chat") == ["firing minor", "changed moderate"])
        }
    }
}
