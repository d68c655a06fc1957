import Foundation
import KlaxonApp
import KlaxonCore
import KlaxonDelivery
import KlaxonSQLite
import KlaxonServer
import KlaxonStore
import KlaxonTesting
import Logging
import Synchronization
import Testing

/// Issue 43: the daemon rebuilds its watch rules only when the watches or someone's quiet hours
/// changed (the store's `watchGeneration`), and a person's own quiet hours, set from chat, hold
/// their watches' notifications and resolves to the window's end (nothing dropped), through the
/// dispatcher's quiet-hours stage.
@Suite("watch rules kept, quiet hours of one's own", .serialized, .timeLimit(.minutes(10)))
struct WatchScaleTests {
    static let t0 = WatchChatTests.t0
    static let ana = ChatEndpoints.User(platform: "slack", team: "T1", user: "U-ANA", name: "ana", channel: "C-RIVER")
    static let bob = ChatEndpoints.User(platform: "slack", team: "T1", user: "U-BOB", name: "bob", channel: "C-RIVER")

    static func daemon(_ store: any Store, _ config: Config) -> Daemon {
        var logger = Logger(label: "test.watch")
        logger.logLevel = .critical
        return Daemon(config: config, store: store, rules: [], logger: logger)
    }

    static func reading(_ store: any Store, at: Int64, _ value: Double) async throws {
        try await store.write(
            SourceBatch(readings: [Reading(station: "01646500", metric: "gage_height", time: at, value: value)]),
            at: at)
    }

    @Test("unchanged watches are not rebuilt; an add, a removal or quiet hours are seen at the next evaluation")
    func rebuiltOnlyOnChange() async throws {
        let (store, config) = try await WatchChatTests.setup()
        let t0 = Self.t0
        let daemon = Self.daemon(store, config)
        let chat = ChatCommands(store: store, config: config, rules: [])
        _ = try await daemon.evaluate(now: t0)
        #expect(daemon.watchRuleBuilds.value == 1)
        for i in 1...5 { _ = try await daemon.evaluate(now: t0 + Int64(i)) }
        #expect(daemon.watchRuleBuilds.value == 1, "nothing changed: no rebuild")
        // Added from chat (through another daemon's chat, on the same store): seen at the next one.
        #expect(await chat.answer(Self.ana, text: "watch gauge 01646500 10ft").hasPrefix("Watch 1:"))
        try await Self.reading(store, at: t0 + 900, 11)
        _ = try await daemon.evaluate(now: t0 + 900)
        #expect(daemon.watchRuleBuilds.value == 2)
        let watch = try #require(try await store.watches(owner: "slack:T1:U-ANA").first)
        #expect(try await store.firingAlerts().map { $0.key.rule } == [watch.ruleName])
        for i in 1...3 { _ = try await daemon.evaluate(now: t0 + 900 + Int64(i)) }
        #expect(daemon.watchRuleBuilds.value == 2)
        // Another person's quiet hours change the rules (their label): rebuilt once.
        #expect(await chat.answer(Self.bob, text: "quiet 22:00-07:00").hasPrefix("Quiet hours 22:00–07:00 UTC"))
        _ = try await daemon.evaluate(now: t0 + 1000)
        _ = try await daemon.evaluate(now: t0 + 1001)
        #expect(daemon.watchRuleBuilds.value == 3)
        // Removed: rebuilt, and its firing alert resolved as before.
        #expect(await chat.answer(Self.ana, text: "unwatch 1").hasPrefix("Stopped watch 1"))
        _ = try await daemon.evaluate(now: t0 + 1100)
        _ = try await daemon.evaluate(now: t0 + 1101)
        #expect(daemon.watchRuleBuilds.value == 4)
        #expect(try await store.firingAlerts().isEmpty)
        // A second daemon builds once at its start, then keeps its rules too.
        let second = Self.daemon(store, config)
        for i in 0..<3 { _ = try await second.evaluate(now: t0 + 1200 + Int64(i)) }
        #expect(second.watchRuleBuilds.value == 1)
    }

    @Test("two daemons on one PostgreSQL: a watch made or removed through one is seen by the other's next evaluation")
    func twoDaemonsOnPostgres() async throws {
        let (_, config) = try await WatchChatTests.setup()
        let t0 = Self.t0
        var logger = Logger(label: "test.watch")
        logger.logLevel = .critical
        try await PostgresServer.withDatabase { db in
            let location = try StoreLocation.parse(db.url, environment: [:])
            try await location.withStore(logger: logger) { a in
                try await location.withStore(logger: logger) { b in
                    try await a.write(
                        SourceBatch(
                            gauges: [
                                GaugeInfo(
                                    lid: "BRKM2", usgsID: "01646500", name: "Potomac River at Little Falls",
                                    categories: FloodCategories(stage: ["minor": 10]))
                            ],
                            readings: [Reading(station: "01646500", metric: "gage_height", time: t0, value: 3)]),
                        at: t0)
                    let evaluator = Self.daemon(a, config)
                    _ = try await evaluator.evaluate(now: t0)
                    _ = try await evaluator.evaluate(now: t0 + 1)
                    #expect(evaluator.watchRuleBuilds.value == 1)
                    // Made through the other daemon's chat, on its own connections.
                    let chat = ChatCommands(store: b, config: config, rules: [])
                    #expect(await chat.answer(Self.ana, text: "watch gauge 01646500 10ft").hasPrefix("Watch 1:"))
                    try await Self.reading(b, at: t0 + 900, 11)
                    _ = try await evaluator.evaluate(now: t0 + 900)
                    #expect(evaluator.watchRuleBuilds.value == 2)
                    let w = try #require(try await b.watches(owner: "slack:T1:U-ANA").first)
                    #expect(try await a.firingAlerts().map { $0.key.rule } == [w.ruleName])
                    _ = try await evaluator.evaluate(now: t0 + 901)
                    #expect(evaluator.watchRuleBuilds.value == 2)
                    #expect(await chat.answer(Self.ana, text: "unwatch 1").hasPrefix("Stopped watch 1"))
                    _ = try await evaluator.evaluate(now: t0 + 1000)
                    _ = try await evaluator.evaluate(now: t0 + 1001)
                    #expect(evaluator.watchRuleBuilds.value == 3)
                    #expect(try await a.firingAlerts().isEmpty)
                }
            }
        }
    }

    @Test("quiet, quiet off and watching from chat: kept per person, shown, hostile zones refused")
    func quietVerbs() async throws {
        let (store, config) = try await WatchChatTests.setup()
        let chat = ChatCommands(store: store, config: config, rules: [])
        #expect(await chat.answer(Self.ana, text: "quiet off") == "You have no quiet hours of your own.")
        #expect(
            await chat.answer(Self.ana, text: "quiet 22:00-07:00 europe/berlin")
                == "Quiet hours 22:00–07:00 Europe/Berlin: your watches' alerts in that window wait until it ends, and come then (nothing is dropped). `quiet off` ends them."
        )
        #expect(try await store.watchQuietHours(owner: "slack:T1:U-ANA")?.timeZone == "Europe/Berlin")
        #expect(try await store.watchQuietHours(owner: "slack:T1:U-BOB") == nil)
        #expect(
            await chat.answer(Self.ana, text: "watching")
                == "You have no watches. Try `watch gauge ID minor` (`help` lists the commands).\nQuiet hours: 22:00–07:00 Europe/Berlin (`quiet off` ends them)."
        )
        #expect(await chat.answer(Self.ana, text: "watch gauge 01646500 minor").hasPrefix("Watch 1:"))
        #expect(
            await chat.answer(Self.ana, text: "watching").hasSuffix(
                "→ this channel\nQuiet hours: 22:00–07:00 Europe/Berlin (`quiet off` ends them)."))
        #expect(
            await chat.answer(Self.ana, text: "quiet 22:00-07:00 ../../etc/passwd").hasPrefix(
                "I don't know the time zone"))
        #expect(await chat.answer(Self.ana, text: "quiet 25:00-07:00").hasPrefix("usage: `quiet"))
        #expect(try await store.watchQuietHours(owner: "slack:T1:U-ANA")?.timeZone == "Europe/Berlin", "kept")
        #expect(
            await chat.answer(Self.ana, text: "quiet off") == "Quiet hours off: your watches' alerts come at any hour.")
        #expect(try await store.watchQuietHours(owner: "slack:T1:U-ANA") == nil)
        #expect(!(await chat.answer(Self.ana, text: "watching")).contains("Quiet hours"))
    }

    /// A receiver that keeps what it was told: `RULE STATE` per alert.
    final class Recorder: Notifier, Sendable {
        let got = Mutex<[String]>([])
        func render(_ notification: AlertNotification) throws -> String { "" }
        func send(_ notification: AlertNotification) async throws {
            got.withLock { got in
                for a in notification.alerts {
                    got.append(a.presented.transition.rule + " " + a.presented.transition.state.rawValue)
                }
            }
        }
        var told: [String] { got.withLock { $0 } }
    }

    /// The dispatcher's clock (ms): the wall clock until a test sets it.
    final class HandClock: Sendable {
        let value = Mutex<Int64?>(nil)
        var fixed: Int64? {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
        var ms: Int64 { fixed ?? Int64(Date().timeIntervalSince1970 * 1000) }
    }

    /// What passes of the dispatcher did, summed.
    struct Tally: Sendable {
        var sent = 0
        var deferred = 0
        var skipped = 0
        var dropped = 0
        var batches = 0
    }

    /// Quiet hours in Berlin from an hour before `now` to two hours after it, as `quiet` takes them.
    static func window(around now: Int64) -> String {
        var cal = Calendar(identifier: .gregorian)
        cal.timeZone = TimeZone(identifier: "Europe/Berlin")!
        let c = cal.dateComponents([.hour, .minute], from: Date(timeIntervalSince1970: TimeInterval(now)))
        let minute = (c.hour ?? 0) * 60 + (c.minute ?? 0)
        func clock(_ m: Int) -> String { String(format: "%02d:%02d", m / 60, m % 60) }
        return "\(clock((minute + 1440 - 60) % 1440))-\(clock((minute + 120) % 1440)) Europe/Berlin"
    }

    @Test("a person's quiet hours hold their watch's firing and resolve to the window's end; another's are sent")
    func quietHoursDelay() async throws {
        let (store, config) = try await WatchChatTests.setup()
        let t0 = Self.t0
        let daemon = Self.daemon(store, config)
        let chat = ChatCommands(store: store, config: config, rules: [])
        // Rows are queued on the wall clock (`Evaluate.run`'s `queuedAt`): the dispatcher's runs on
        // it until the test moves it to the ends of her windows.
        let wall = Int64(Date().timeIntervalSince1970)
        let clock = HandClock()
        let team = Recorder()
        let dispatcher = Dispatcher(
            store: store, notifiers: ["team-river": team, "ops": Recorder()], routing: config.routing,
            clock: { clock.ms })
        func dispatch() async throws -> Tally {
            var total = Tally()
            while true {
                let pass = try await dispatcher.dispatchOnce()
                guard pass.batches > 0 else { return total }
                total.sent += pass.sent
                total.deferred += pass.deferred
                total.skipped += pass.skipped
                total.dropped += pass.dropped
                total.batches += pass.batches
            }
        }
        #expect(await chat.answer(Self.ana, text: "watch gauge 01646500 10ft").hasPrefix("Watch 1:"))
        #expect(await chat.answer(Self.bob, text: "watch gauge 01646500 10ft").hasPrefix("Watch 1:"))
        let anas = try #require(try await store.watches(owner: "slack:T1:U-ANA").first).ruleName
        let bobs = try #require(try await store.watches(owner: "slack:T1:U-BOB").first).ruleName
        _ = try await daemon.evaluate(now: t0)
        try await Self.reading(store, at: t0 + 900, 11)
        _ = try await daemon.evaluate(now: t0 + 900)
        // No quiet hours yet: both firings are sent at once.
        #expect(try await dispatch().sent == 2)
        #expect(Set(team.told) == ["\(anas) firing", "\(bobs) firing"])

        // Ana keeps quiet hours around now; the river falls: her resolve waits, Bob's is sent.
        let window = Self.window(around: wall)
        #expect(await chat.answer(Self.ana, text: "quiet \(window)").hasPrefix("Quiet hours "))
        let quiet = try #require(try await store.watchQuietHours(owner: "slack:T1:U-ANA"))
        let end = try #require(quiet.quietHours.end(of: wall))
        try await Self.reading(store, at: t0 + 1800, 3)
        _ = try await daemon.evaluate(now: t0 + 1800)
        let held = try await dispatch()
        #expect(held.sent == 1 && held.deferred == 1 && held.dropped == 0 && held.skipped == 0, "\(held)")
        #expect(team.told.suffix(1) == ["\(bobs) resolved"])
        let waiting = try await store.outbox(state: nil, limit: 100).filter {
            $0.alert.hasPrefix(anas) && $0.state != .sent
        }
        #expect(waiting.count == 1)
        #expect(waiting.first?.dueAt == end * 1000, "held to the end of her window")

        // Just before the end nothing of hers is due; at the end her resolve is sent.
        clock.fixed = end * 1000 - 1000
        #expect(try await dispatch().batches == 0)
        clock.fixed = end * 1000
        let atEnd = try await dispatch()
        #expect(atEnd.sent == 1 && atEnd.dropped == 0, "\(atEnd)")
        #expect(team.told.suffix(1) == ["\(anas) resolved"], "\(team.told)")

        // The next night (22 hours after the end: inside her window again) the river rises: her
        // firing waits for that window's end, Bob's is sent.
        let nextEnd = try #require(quiet.quietHours.end(of: end + 22 * 3600))
        #expect(nextEnd > end + 22 * 3600)
        try await Self.reading(store, at: t0 + 2700, 11)
        _ = try await daemon.evaluate(now: t0 + 2700)
        clock.fixed = (end + 22 * 3600) * 1000
        let night = try await dispatch()
        #expect(night.sent == 1 && night.deferred == 1 && night.dropped == 0, "\(night)")
        #expect(team.told.suffix(1) == ["\(bobs) firing"])
        clock.fixed = nextEnd * 1000
        #expect(try await dispatch().sent == 1)
        #expect(team.told.suffix(1) == ["\(anas) firing"])
        #expect(
            try await store.outbox(state: nil, limit: 100).allSatisfy { $0.state == .sent },
            "nothing dropped, nothing left")
    }

    @Test("klaxon evaluate and dry-run evaluate watches as the daemon does; evaluate resolves a removed watch's alert")
    func evaluateCommand() async throws {
        let s = try Scratch()
        let rules = try s.write("r.yaml", levelsRule)
        let config = try s.write(
            "klaxon.yaml",
            """
            receivers:
              - {name: team-river, type: stdout}
              - {name: ops, type: stdout}
            default_receiver: ops
            watches:
              channels: {"slack:C-RIVER": team-river}
            """)
        let db = s.path("k.sqlite")
        let store = try SQLiteStore.open(path: db)
        try await Self.reading(store, at: Self.t0, 3)
        let owner = WatchOwner(platform: "slack", id: "T1:U-ANA", name: "ana")
        guard
            case .added(let w) = try await store.addWatch(
                Watch(
                    owner: owner, target: .gauge(station: "01646500", name: nil, level: .value(5)),
                    destination: .channel(platform: "slack", channel: "C-RIVER"), createdAt: Self.t0), limit: 10)
        else {
            Issue.record("not added")
            return
        }
        let first = await InProcess.evaluate(db: db, config: config, rules: [rules], now: "2026-01-01T00:00:00Z")
        #expect(first.status == 0, "\(first.stderr)")
        // 6 ft: over the watch's 5 ft, under the rule file's first level (10).
        try await Self.reading(store, at: Self.t0 + 900, 6)
        let second = await InProcess.evaluate(db: db, config: config, rules: [rules], now: "2026-01-01T00:15:00Z")
        #expect(second.status == 0, "\(second.stderr)")
        #expect(second.stderr.contains("1 transitions queued in the outbox"), "\(second.stderr)")
        #expect(try await store.firingAlerts().map { $0.key.rule } == [w.ruleName])
        let rows = try await store.outbox(state: nil, limit: 100)
        #expect(rows.map(\.receiver) == ["team-river"], "to the watch's receiver only")
        // dry-run over the database replays the watch too, and says it would be sent to its receiver.
        let dry = await InProcess.dryRun(rules: [rules], db: db, format: .json, config: config)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains(w.ruleName), "\(dry.stdout)")
        #expect(dry.stderr.contains(", 1 transitions,"), "\(dry.stderr)")
        #expect(dry.stderr.contains("1 notifications would be sent"), "\(dry.stderr)")
        // Removed between two runs: the next run resolves its alert, with the reason.
        #expect(try await store.removeWatch(id: w.id) == w)
        let third = await InProcess.evaluate(db: db, config: config, rules: [rules], now: "2026-01-01T00:30:00Z")
        #expect(third.status == 0, "\(third.stderr)")
        #expect(try await store.firingAlerts().isEmpty)
        let resolve = try #require(try await store.recentTransitions(limit: 1).first?.transition)
        #expect(resolve.rule == w.ruleName && resolve.state == .resolved)
        #expect(resolve.summary == "resolved: watch \(w.id) was removed")
    }
    /// A measurement, not a check: off unless `KLAXON_WATCH_EVALUATIONS=N` is set. N evaluations
    /// over 10,000 unchanged watches, then N evaluations each after a change (every evaluation
    /// rebuilds: what each one cost before the rules were kept).
    @Test(
        "measure: evaluations over many unchanged watches against a rebuild each time",
        .enabled(if: ProcessInfo.processInfo.environment["KLAXON_WATCH_EVALUATIONS"] != nil))
    func measureEvaluations() async throws {
        let n = Int(ProcessInfo.processInfo.environment["KLAXON_WATCH_EVALUATIONS"] ?? "") ?? 20
        let watches = Int(ProcessInfo.processInfo.environment["KLAXON_WATCHES"] ?? "") ?? 10_000
        let (store, config) = try await WatchChatTests.setup()
        for i in 0..<watches {
            let owner = WatchOwner(platform: "slack", id: "T1:U\(i)", name: "u\(i)")
            _ = try await store.addWatch(
                Watch(
                    owner: owner, target: .gauge(station: "01646500", name: nil, level: .value(10)),
                    destination: .channel(platform: "slack", channel: "C-RIVER"), createdAt: Self.t0), limit: 5)
        }
        let daemon = Self.daemon(store, config)
        _ = try await daemon.evaluate(now: Self.t0)
        let clock = ContinuousClock()
        let kept = try await clock.measure {
            for i in 0..<n { _ = try await daemon.evaluate(now: Self.t0 + 1 + Int64(i)) }
        }
        let builds = daemon.watchRuleBuilds.value
        let rebuilt = try await clock.measure {
            for i in 0..<n {
                try await store.setWatchQuietHours(
                    owner: "slack:T1:nobody", WatchQuietHours(from: i % 1440, to: (i + 60) % 1440), now: 0)
                _ = try await daemon.evaluate(now: Self.t0 + 1000 + Int64(i))
            }
        }
        #expect(builds == 1 && daemon.watchRuleBuilds.value == 1 + n)
        print(
            "watch evaluations: \(watches) watches, \(n) evaluations: unchanged \(kept / n) each; rebuilt each time \(rebuilt / n) each"
        )
    }
}
