import AsyncHTTPClient
import Foundation
import KlaxonCore
import KlaxonDelivery
import KlaxonServer
import KlaxonSources
import KlaxonStore
import Logging
import ServiceLifecycle
import Synchronization

/// `klaxon run`: one poller per source (its own interval with jitter, backoff while it fails), an
/// evaluator woken by each ingest, the dispatcher and the HTTP server, on swift-service-lifecycle.
/// SIGTERM/SIGINT stop polling and delivering; a notification claimed but not sent keeps its lease
/// and is sent after a restart, under the same idempotency key: nothing claimed is lost.
public final class Daemon: Sendable {
    /// The config and rules in force, with what is built from them: one value, swapped whole by a
    /// reload (`Daemon+Reload.swift`). Each evaluation, poll and dispatch takes one snapshot.
    let running: Mutex<RunningSet>
    /// The config in force (see `running`).
    public var config: Config { running.withLock { $0.config } }
    /// The rules in force (see `running`).
    public var rules: [Rule] { running.withLock { $0.rules } }
    /// The rules' templates, compiled once per set (the rules were checked when they were loaded).
    var renderer: MessageRenderer? { running.withLock { $0.renderer } }
    public let store: any Store
    public let logger: Logger
    /// The wall clock, or a compressed one (the demo).
    public let clock: DaemonClock
    /// `/metrics`: this daemon's own registry (no process-wide bootstrap), seeded from the store's totals.
    public let metrics = KlaxonMetrics()
    /// Which services are waiting out a database error (another process holding the lock, say).
    public let health = StoreHealth()
    /// Each polled source's run of failures, for its state-change log lines.
    let streaks = SourceStreaks()
    /// Wakes the evaluator (a signal, not a stream: an evaluator cancelled when its duty is lost must
    /// not end the wake-ups of the next one, as a cancelled `AsyncStream` consumer ends the stream).
    package let wake = Wake()
    /// Wakes the dispatcher when an evaluation queued notifications (set once it exists).
    let queued = Box<(@Sendable () -> Void)?>(nil)
    /// The running daemon's dispatcher (a reload gives it the new receivers and routing).
    let dispatcher = Box<Dispatcher?>(nil)

    /// Reads the config and rule files again, checked as at the start (nil: nothing to reload from).
    let loader: Loader?
    /// One reload at a time; `/-/reload` and SIGHUP wait their turn.
    let reloads = ReloadQueue()
    /// Ticks at each reload that took, for the services that rebuild what the config names.
    let reloaded = Generation()
    /// Rules a reload removed whose firing alerts are still to be resolved (`resolveRemovedRules`).
    let removedRules = RemovedRulesQueue()
    /// This daemon's evaluations, one at a time, and the resolves of removed rules between them.
    let evaluations = ReloadQueue()
    /// The silences and quiet hours in force at the last catch-up look (`CatchUps`).
    let catchUps = Box(CatchUps.Watch())
    /// The rules of people's watches at the last evaluation (`watchRules()`).
    let lastWatchRules = Box<[Rule]>([])
    /// What the last watch rules were built from: the store's `watchGeneration` and this daemon's
    /// reload count (a reload may change `watches:`); nil before the first build.
    let lastWatchBuild = Box<WatchBuild?>(nil)
    /// How many times the watch rules were built (tests: an unchanged watch set builds none).
    package let watchRuleBuilds = Box(0)
    /// Whether the alerts of watches removed before this daemon started were looked for.
    let watchesSeen = Box(false)

    public init(
        config: Config, store: any Store, rules: [Rule], logger: Logger, clock: DaemonClock = .wall,
        loader: Loader? = nil
    ) {
        running = Mutex(RunningSet(config: config, rules: rules))
        self.clock = clock
        self.store = store
        self.logger = logger
        self.loader = loader
        metrics.rules(rules)
    }

    var routing: Routing? { running.withLock { $0.routing } }

    var chat: ChatCommands {
        let set = running.withLock { $0 }
        return ChatCommands(store: store, config: set.config, rules: set.rules)
    }

    /// Evaluates what arrived, queues notifications (or prints transitions when there are no
    /// receivers), and queues reminders.
    @discardableResult
    public func evaluate(now: Int64? = nil) async throws -> EvaluationResult {
        try await evaluations.run { () async -> Result<EvaluationResult, any Error> in
            // People's watches as they are now; the alerts of watches removed since are resolved.
            let watchRules = await self.watchRules()
            // Alerts of rules a reload removed that it could not resolve then (the store was away).
            await self.resolveRemovedRules(trigger: "retry")
            do { return .success(try await self.evaluateNow(now: now, watchRules: watchRules)) } catch {
                return .failure(error)
            }
        }.get()
    }

    /// What a build of the watch rules was made from (`lastWatchBuild`).
    struct WatchBuild: Equatable, Sendable {
        var generation: Int64
        var reload: Int
    }

    /// The rules of the stored watches (issue 43), so a watch made from chat, on any daemon, is
    /// evaluated at the next evaluation. Each evaluation reads one number (`watchGeneration`, moved
    /// by every change of the watches or of quiet hours, on any daemon); the watches are read and
    /// their rules built again only when it moved or a reload took. A watch gone since the last
    /// build has its firing alerts resolved, as a rule a reload removed. A store that cannot answer
    /// keeps the last rules.
    func watchRules() async -> [Rule] {
        // The reload count before the config, the store's number before its rows: a change between
        // the two is built now and seen again at the next evaluation (one build more), never missed.
        let reload = reloaded.value
        let config = self.config
        let previous = lastWatchRules.value
        let current: [Rule]
        do {
            let build = WatchBuild(generation: try await store.watchGeneration(), reload: reload)
            if build == lastWatchBuild.value, watchesSeen.value {
                metrics.watches(previous.count)
                return previous
            }
            current = try await WatchWiring.storedRules(store: store, config: config)
            lastWatchBuild.set(build)
            watchRuleBuilds.set(watchRuleBuilds.value + 1)
        } catch {
            logger.warning("cannot read the watches; the last ones stay", metadata: ["error": "\(error)"])
            return previous
        }
        removedRules.note(old: previous, new: current)
        if !watchesSeen.value {
            // The first read: watches removed while no daemon ran still have their alerts active.
            if let counts = try? await store.alertCounts() {
                let gone = WatchWiring.gone(counts: counts, kept: current)
                removedRules.note(gone: Dictionary(uniqueKeysWithValues: gone.map { ($0, [String]()) }))
                watchesSeen.set(true)
            }
        }
        lastWatchRules.set(current)
        metrics.watches(current.count)
        return current
    }

    private func evaluateNow(now: Int64?, watchRules: [Rule] = []) async throws -> EvaluationResult {
        // Slices of 250 transitions: the dispatcher's claims share the one writer with the evaluator,
        // and a short slice lets them in between (a slice of 1,000 held a claim back 100 ms on a
        // busy machine).
        // One snapshot of the set in force for the whole evaluation (a reload meanwhile takes effect
        // at the next one).
        let set = running.withLock { $0 }
        let rules = set.rules + watchRules
        let routing = set.routing
        // The dispatcher is woken as each slice's notifications commit, not after the whole backlog,
        // and each slice claims for it what is due (`Dispatcher.handoffRoom`).
        var observer: any EvaluationObserver = NoObserver()
        if routing != nil, let dispatcher = dispatcher.value { observer = dispatcher }
        let result = try await Evaluate.run(
            store: store, rules: rules, now: now ?? clock.now(), routing: routing, renderer: set.renderer,
            sliceTransitions: 250, keepTransitions: routing == nil, observer: observer)
        metrics.evaluated()
        if routing == nil {
            let out = StdoutNotifier(format: .text)
            for (t, message) in result.transitions { out.write(t, message: message) }
        } else if let routing {
            let wall = Int64(Date().timeIntervalSince1970 * 1000)
            _ = try await Repeats.enqueue(store: store, rules: rules, routing: routing, now: wall)
            let escalated = try await Escalations.enqueue(store: store, rules: rules, routing: routing, now: wall)
            if escalated > 0 { logger.info("escalated", metadata: ["alerts": .stringConvertible(escalated)]) }
            // What a receiver last heard converges to the truth once a silence or quiet hours end.
            var watch = catchUps.value
            let caughtUp = try await CatchUps.afterEvaluation(
                store: store, rules: rules, routing: routing, watch: &watch, now: wall)
            catchUps.set(watch)
            if caughtUp > 0 {
                logger.info(
                    "queued the present state for receivers a silence or quiet hours kept it from",
                    metadata: ["notifications": .stringConvertible(caughtUp)])
                queued.value?()
            }
        }
        for t in result.unrouted {
            logger.warning(
                "transition reaches no receiver", metadata: ["rule": "\(t.rule)", "station": "\(t.station)"])
        }
        // A large evaluation's working memory (readings stepped, transitions and messages) goes back to
        // the system instead of staying with glibc.
        if result.transitionCount + result.newReadings > 10_000 { releaseFreeMemory() }
        if result.transitionCount > 0 || result.newReadings > 0 || result.suspectReadings > 0 {
            // At info when alerts changed or readings were set aside; a routine pass at debug.
            logger.log(
                level: result.transitionCount > 0 || result.suspectReadings > 0 ? .info : .debug,
                "evaluated",
                metadata: [
                    "readings": .stringConvertible(result.newReadings),
                    "transitions": .stringConvertible(result.transitionCount),
                    "late": .stringConvertible(result.lateReadings),
                    "suspect": .stringConvertible(result.suspectReadings),
                ])
        }
        return result
    }

    /// How long an instance on standby waits before it tries for a duty again. With a holder's death
    /// seen by the server at once (its session ends), the survivor takes over within this; with a
    /// connection gone silent, within the holder's 15 s of silence plus this.
    static let dutyRetry: Duration = .seconds(5)

    /// Runs `body` whenever this instance holds `duty`, until cancelled: on SQLite at once and for
    /// good; with several daemons on one PostgreSQL database, while no other instance holds it. On
    /// standby, or after losing the duty (`DutyLost`: the connection holding it ended), it tries again
    /// every `dutyRetry`. `/readyz` and `/metrics` show what is held (`health.duties`).
    func serve(duty: String, _ body: @escaping @Sendable () async throws -> Void) async {
        let duties = health.duties
        let logger = self.logger
        let shared = store.sharesDuties
        duties.want(duty)
        var onStandby = false
        while !Task.isCancelled {
            do {
                let ran: Void? = try await store.holding(duty: duty) {
                    duties.took(duty)
                    defer { duties.released(duty) }
                    if shared { logger.notice("duty taken", metadata: ["duty": "\(duty)"]) }
                    try await body()
                }
                duties.released(duty)
                if ran != nil { return }
                if !onStandby {
                    logger.info("duty held by another instance; on standby", metadata: ["duty": "\(duty)"])
                    onStandby = true
                }
            } catch is CancellationError {
                return
            } catch let lost as DutyLost {
                // Its work was cancelled, not waited for (it may hang on the lost connection).
                duties.released(duty)
                onStandby = false
                logger.warning("\(lost)", metadata: ["duty": "\(duty)"])
            } catch {
                if Task.isCancelled { return }
                logger.warning(
                    "cannot take a duty; trying again",
                    metadata: ["duty": "\(duty)", "error": "\(ErrorWords.describe(error))"])
            }
            try? await Task.sleep(for: Self.dutyRetry)
        }
    }

    /// Fetches one source once, records the outcome, and wakes the evaluator when it stored anything.
    func poll(_ source: ConfiguredSource, now: Int64) async -> Fetch.Outcome {
        let o = await Fetch.run(sources: [source], store: store, now: now, future: config.futureBound)[0]
        if o.error != nil {
            metrics.sourceFailed(o.source)
            streaks.record(o, at: now)?.log(to: logger)
        } else if o.skipped == nil {
            let change = streaks.record(o, at: now)
            change?.log(to: logger)
            // The first success since the start, or since failures, at info; every other poll at
            // debug (one line per source per poll is thousands a day).
            let first = streaks.firstSuccess(o.source)
            logger.log(
                level: first || change != nil ? .info : .debug,
                "fetched",
                metadata: [
                    "source": "\(o.source)", "new": .stringConvertible(o.stats.newTotal),
                    "revised": .stringConvertible(o.stats.revisedTotal),
                    "suspect": .stringConvertible(o.stats.suspect), "requests": .stringConvertible(o.requests),
                ])
            for refused in o.refused {
                logger.warning("readings refused", metadata: ["source": "\(o.source)", "reason": "\(refused)"])
            }
            for skip in o.forecastSkips {
                logger.info("forecast item skipped", metadata: ["source": "\(o.source)", "reason": "\(skip)"])
            }
            for conflict in o.stats.quakeConflicts.prefix(10) {
                logger.warning(
                    "quake ids conflict", metadata: ["source": "\(o.source)", "conflict": "\(conflict)"])
            }
            if o.stats.newTotal + o.stats.revisedTotal > 0 { wake.yield() }
        }
        return o
    }

    /// How loudly to log a source's failure: a warning when a streak starts, when the error changes,
    /// and at the 2nd, 4th, 8th … failure of one streak; the rest at debug. A source down for a day
    /// writes a dozen warnings, not thousands, and `/readyz` always has the latest.
    public static func failureLevel(streak: Int, error: String, previous: String?) -> Logger.Level {
        SourceStreak.level(streak: streak, error: error, previous: previous)
    }

    /// `--once`: every source once, evaluate, deliver until the outbox is empty or `deadline` seconds
    /// pass. For cron.
    public func once(deadline: Int64) async throws -> (
        outcomes: [Fetch.Outcome], evaluation: EvaluationResult, delivery: Dispatcher.Pass?
    ) {
        var outcomes: [Fetch.Outcome] = []
        for s in config.sources { outcomes.append(await poll(s, now: clock.now())) }
        let evaluation = try await evaluate()
        var pass: Dispatcher.Pass? = nil
        if routing != nil {
            let dispatcher = try DeliveryWiring.dispatcher(
                store: store, config: config, logger: logger, health: health, charts: emailCharts())
            pass = try await dispatcher.runUntilEmpty(
                deadline: Int64(Date().timeIntervalSince1970 * 1000) + deadline * 1000)
        }
        return (outcomes, evaluation, pass)
    }

    /// The services of a running daemon. `onListening` gets the HTTP port once it listens.
    public func services(onListening: @escaping @Sendable (Int) -> Void = { _ in }) throws -> [any Service] {
        var services: [any Service] = [
            PollerService(daemon: self), EvaluatorService(daemon: self),
            KlaxonHTTP.application(
                store: store,
                settings: .init(
                    host: config.listen.host, port: config.listen.port, apiToken: config.apiToken?.value,
                    sources: config.sources.map(\.source.name),
                    ownerTokens: config.ownerTokens.mapValues(\.value), maxPushBytes: config.maxPushBytes,
                    site: siteSettings(), connections: ConnectionLimits(reserve: FileLimits.reserve(config: config))
                ).with(future: config.futureBound).with(liveSources: { [self] in config.sources.map(\.source.name) })
                    .with(alertmanager: { [self, started = clock.now()] in
                        alertmanagerSettings(startedAt: started)
                    }),
                metrics: metrics, logger: logger, health: health,
                chat: ChatWiring.settings(config),
                answer: { [chat] user, text in await chat.answer(user, text: text) },
                act: { [chat] press, now in await chat.act(press, now: now) }, post: ChatWiring.post,
                onReadings: { [wake] in wake.yield() }, onRunning: onListening, now: { [clock] in clock.now() },
                reload: { [self] in
                    switch await reload(trigger: "POST /-/reload") {
                    case .reloaded(_, _, _, _, let warnings): (true, warnings)
                    case .failed(let errors): (false, errors)
                    }
                }),
        ]
        if config.retention.prunesAnything { services.append(PrunerService(daemon: self)) }
        services.append(DatabaseWatchService(daemon: self))
        // Always, even without receivers (then it finds nothing to send): a reload may add them.
        let dispatcher = try DeliveryWiring.dispatcher(
            store: store, config: config, logger: logger, health: health, charts: emailCharts(),
            observeSend: observeSend, observeFailure: observeFailure, observeUnsentResolve: observeUnsentResolve,
            observeFold: observeFold)
        metrics.receivers(dispatcher.integrations)
        queued.set({ dispatcher.nudge() })
        services.append(DispatcherService(dispatcher: dispatcher))
        self.dispatcher.set(dispatcher)
        return services
    }

    /// The charts email shows inline: the status site's own, drawn from the store (nil without an
    /// email receiver). A chart that cannot be drawn (librsvg missing, every renderer busy) is left
    /// out of that message, never holds it back.
    func emailCharts() -> ChartSource? { emailCharts(config) }

    func emailCharts(_ config: Config) -> ChartSource? {
        guard config.receivers.contains(where: { if case .email = $0 { true } else { false } }) else { return nil }
        let images = ChartImages(store: store, settings: siteSettings(), now: { [clock] in clock.now() })
        return { t in try? await images.png(station: t.station, metric: t.metric, range: "48h") }
    }

    /// Times each send for `klaxon_notification_latency_seconds{receiver}`.
    var observeSend: @Sendable (String, Double, Bool) -> Void {
        { [metrics] receiver, seconds, _ in metrics.sent(receiver: receiver, seconds: seconds) }
    }

    /// Counts failed sends for `klaxon_notifications_failed_total{receiver,integration,reason}`.
    var observeFailure: @Sendable (String, String, String) -> Void {
        { [metrics] receiver, integration, reason in
            metrics.notificationFailed(receiver: receiver, integration: integration, reason: reason)
        }
    }

    /// Counts resolves owed and not sent for `klaxon_resolves_unsent_total{receiver,reason}`.
    var observeUnsentResolve: @Sendable (String, String) -> Void {
        { [metrics] receiver, reason in metrics.resolveUnsent(receiver: receiver, reason: reason) }
    }

    /// Counts alerts folded past a receiver's budget for `klaxon_notifications_folded_total{receiver}`.
    var observeFold: @Sendable (String, Int) -> Void {
        { [metrics] receiver, alerts in metrics.folded(receiver: receiver, alerts: alerts) }
    }

    /// What the Alertmanager API shows of the routing (`/api/v2/*`).
    func alertmanagerSettings(startedAt: Int64) -> AlertmanagerAPISettings {
        let set = running.withLock { $0 }
        return AlertmanagerAPISettings(
            routing: set.routing,
            notify: Dictionary(set.rules.map { ($0.name, $0.notify) }, uniquingKeysWith: { a, _ in a }),
            receivers: set.config.receivers.map(\.name), externalURL: set.config.externalURL, startedAt: startedAt)
    }

    /// The status site's settings from `site:` and `api:`.
    func siteSettings() -> StatusSite.Settings {
        SiteSettings.make(config: config, rules: rules)
    }

    /// Runs until SIGTERM or SIGINT, or until `until` returns. Once a stop has been asked for (a
    /// signal, `until` returning, or the caller's cancellation), it returns within `stop.limit`
    /// whatever a service does (see `supervise`). A second signal cancels the services at once.
    public func run(
        onListening: @escaping @Sendable (Int) -> Void = { _ in },
        stop budget: StopBudget = .standard,
        until: (@Sendable () async -> Void)? = nil
    ) async throws {
        // First: the HTTP server's cap on connections is derived from the limit in force.
        let softLimit = FileLimits.raise(logger: logger)
        let connections = ConnectionLimits(reserve: FileLimits.reserve(config: config))
        logger.info(
            "HTTP connections capped",
            metadata: [
                "max_connections": .stringConvertible(connections.effectiveMaximum(softLimit: softLimit)),
                "reserve": .stringConvertible(connections.reserve),
            ])
        let services = try services(onListening: onListening)
        // The counters start from the store's totals, so they survive restarts (a failure here only
        // leaves it to the first scrape).
        if let counts = try? await store.metrics() {
            let metrics = self.metrics
            _ = try? await offPool { metrics.sync(counts) }
        }
        logger.info(
            "klaxon running",
            metadata: [
                "sources": .stringConvertible(config.sources.count), "rules": .stringConvertible(rules.count),
                "listen": "\(config.listen.host):\(config.listen.port)",
                // A file path, or postgres://host:port/database (never a password).
                "database": "\(store.path)",
            ])
        try await Self.supervise(
            services, logger: logger, stop: budget, until: until,
            onHangup: { [weak self] in
                guard let self else { return }
                Task { _ = await self.reload(trigger: "SIGHUP") }
            })
        logger.info("klaxon stopped")
    }
}

/// One loop per source: fetch, then wait `every` (± 10 % jitter); after a failure wait with
/// exponential backoff (capped at `every`), or until the server's Retry-After.
struct PollerService: Service {
    let daemon: Daemon

    func run() async throws {
        try await untilGracefulShutdown {
            // One task per source, keyed by what it is (its config, field by field). A reload starts
            // the pollers of sources added or changed and stops those removed or changed; the others
            // poll on undisturbed. No source (readings come through the API): it waits for a reload
            // or the shutdown.
            var pollers: [String: Task<Void, Never>] = [:]
            var seen = daemon.reloaded.value
            while !Task.isCancelled {
                var wanted: [String: ConfiguredSource] = [:]
                for source in daemon.config.sources { wanted[Self.identity(source)] = source }
                for (key, task) in pollers where wanted[key] == nil {
                    task.cancel()
                    pollers[key] = nil
                }
                for (key, source) in wanted where pollers[key] == nil {
                    pollers[key] = Task {
                        await daemon.serve(duty: "source:\(source.source.name)") { await loop(source) }
                    }
                }
                seen = await daemon.reloaded.next(after: seen)
            }
            for task in pollers.values { task.cancel() }
            for task in pollers.values { await task.value }
        }
    }

    /// A source's identity across reloads: its name and its whole config (compared, never logged).
    static func identity(_ source: ConfiguredSource) -> String {
        var text = ""
        dump(source, to: &text)
        return "\(source.source.name)\u{0}\(text)"
    }

    func loop(_ source: ConfiguredSource) async {
        switch source.source.shape {
        case .streaming(let ws):
            // A stream, not a poll: samples are stored as they come.
            let store = daemon.store
            let wake = daemon.wake
            let clock = daemon.clock
            await ws.stream(now: { clock.now() }, logger: daemon.logger) { readings in
                // Recorded under the source's name, like a polled fetch, so /readyz sees it working.
                let stats = try await store.write(SourceBatch(readings: readings), source: ws.name, at: clock.now())
                if stats.inserted > 0 { wake.yield() }
            }
            return
        case .polled, .perPlace:
            break
        }
        let backoff = Backoff(initial: 5, cap: Double(max(60, source.source.every)))
        var failures = 0
        while !Task.isCancelled {
            let now = daemon.clock.now()
            let o = await daemon.poll(source, now: now)
            var wait = Double(max(60, source.source.every)) * Double.random(in: 0.9...1.1)
            if o.error != nil {
                failures += 1
                wait = min(wait, max(1, backoff.delay(attempt: failures, random: Double.random(in: 0.5..<1))))
                if let nb = try? await daemon.store.sourceState(source.source.name)?.notBefore, nb > now {
                    wait = max(wait, Double(nb - now))
                }
            } else if o.skipped != nil {
                if let nb = try? await daemon.store.sourceState(source.source.name)?.notBefore, nb > now {
                    wait = Double(nb - now)
                }
            } else {
                failures = 0
            }
            try? await daemon.clock.sleep(wait)
        }
    }
}

/// Evaluates when an ingest wakes it, and at least once a minute (stale checks, reminders).
struct EvaluatorService: Service {
    let daemon: Daemon

    func run() async throws {
        try await untilGracefulShutdown {
            // One instance evaluates at a time (several daemons on one PostgreSQL database).
            await daemon.serve(duty: "evaluator") { try await evaluate() }
        }
    }

    func evaluate() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while !Task.isCancelled {
                    // A minute of the daemon's clock, but never more often than twice a second
                    // of real time (a compressed clock would otherwise evaluate 60 times a second).
                    try await Task.sleep(for: .seconds(max(0.5, daemon.clock.wallSeconds(60))))
                    daemon.wake.yield()
                }
            }
            group.addTask {
                // Readings another process stored (`klaxon ingest` from cron, a second daemon's
                // fetch) are evaluated within 20 ms, not at the next minute: one read of the ingest
                // log's newest entry (its primary key), never a write. Fifty such reads a second
                // cost about a millisecond of CPU.
                var seen = (try? await daemon.store.ingestMark()) ?? 0
                while !Task.isCancelled {
                    try await Task.sleep(for: .milliseconds(20))
                    guard let mark = try? await daemon.store.ingestMark() else { continue }
                    if mark > seen { daemon.wake.yield() }
                    seen = mark
                }
            }
            group.addTask {
                // At once, then at each wake-up (those that came during an evaluation make one).
                while !Task.isCancelled {
                    // A database error (another process holding the lock) waits and retries; it
                    // never ends the daemon. The evaluation awaits the store in bounded slices.
                    try await daemon.health.persist("evaluator", logger: daemon.logger) {
                        _ = try await daemon.evaluate()
                    }
                    await daemon.wake.next()
                }
            }
            try await group.next()
            group.cancelAll()
        }
    }
}

/// The dispatcher. On shutdown it claims nothing new and lets the pass in flight finish for up to
/// `drain` seconds; what is still unsent then is given back to the outbox (sent after a restart).
struct DispatcherService: Service {
    let dispatcher: Dispatcher
    var drain: Double = 10

    func run() async throws {
        let stopping = Box(false)
        let drain = self.drain
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await withGracefulShutdownHandler {
                    try await dispatcher.run(stop: { stopping.value })
                } onGracefulShutdown: {
                    stopping.set(true)
                }
            }
            group.addTask {
                // After shutdown begins, the pass in flight has `drain` seconds; then it is cut off.
                while !stopping.value { try await Task.sleep(for: .milliseconds(100)) }
                try await Task.sleep(for: .milliseconds(Int64(drain * 1000)))
            }
            _ = try await group.next()
            group.cancelAll()
        }
    }
}

/// The evaluator's wake-up: `yield` from anywhere; `next` returns at the first wake-up since the last
/// `next` (at once if one came meanwhile), or when the waiting task is cancelled.
package final class Wake: Sendable {
    private let nudge = Nudge()
    package func yield() { nudge.signal() }
    func next() async { await nudge.wait(milliseconds: 3_600_000) }
}
